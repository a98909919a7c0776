"""Write constraints.txt: the exact version of every package installed in the project venv.

`make lock` runs it after a dependency changes; `make install` applies the file with
`pip install -c`, so a fresh venv (CI's included) gets the versions that were tested.
"""

from __future__ import annotations

import importlib.metadata
import re
import sys
from pathlib import Path

HEADER = (
    "# Exact versions of every package in the project venv (make install applies them with -c).\n"
    "# Regenerate with 'make lock' after changing a dependency; tests/test_supply_chain.py "
    "checks it.\n"
)
# The project itself and pip's own tooling are not pinned here.
SKIP = {"groundqa", "pip", "setuptools", "wheel"}


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed() -> dict[str, str]:
    found: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name and normal(name) not in SKIP:
            found[normal(name)] = dist.version
    return found


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0]) if args else Path("constraints.txt")
    pins = "".join(f"{name}=={version}\n" for name, version in sorted(installed().items()))
    target.write_text(HEADER + pins, encoding="utf-8")
    print(f"wrote {target}: {pins.count(chr(10))} packages")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
