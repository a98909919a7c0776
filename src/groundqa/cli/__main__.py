"""`python -m groundqa.cli`, the same as the `groundqa` command."""

from groundqa.cli import main

main()
