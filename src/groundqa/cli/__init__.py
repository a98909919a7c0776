"""The `groundqa` command: a thin shell over the library.

Every command calls library functions and formats what they return; none holds
pipeline logic. A `GroundqaError` becomes one line on stderr and its exit code
(1 for a problem with the data or index, 2 for a usage mistake, 130 when
interrupted); `--json` prints one JSON object on stdout.

Exit codes: 0 success (an honest refusal is a success), 1 a data or index
problem (and `validate` with a BLOCK finding), 2 a usage error, 130 interrupted.

    corpus      validate, ingest, inspect
    questions   ask, chat
    measure     eval, calibrate, tune
    server      serve
    assist      mcp (the index as MCP tools for an assistant)
    common      the consoles, option parsers, shared options and progress bars
"""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.markup import escape

from groundqa._version import __version__
from groundqa.cli.assist import mcp_command
from groundqa.cli.common import err
from groundqa.cli.corpus import ingest, inspect, validate
from groundqa.cli.measure import calibrate, evaluate, tune
from groundqa.cli.questions import ask, chat
from groundqa.cli.server import serve
from groundqa.errors import GroundqaError, Interrupted

__all__ = ["main"]


class GroundqaGroup(click.Group):
    """Turns our errors into one line and an exit code, and Ctrl-C into exit 130."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GroundqaError as exc:
            self._fail(exc)
        except KeyboardInterrupt:
            self._fail(Interrupted("interrupted"))
        except OSError as exc:
            # The system refused something the library did not expect to fail (a full
            # disk, a vanished file): still one line, never a traceback.
            self._fail(GroundqaError(_os_problem(exc)))

    @staticmethod
    def _fail(exc: GroundqaError) -> None:
        err.print(f"[bold red]error:[/] {escape(exc.message)}")
        sys.exit(exc.exit_code)


def _os_problem(exc: OSError) -> str:
    where = f" ({exc.filename})" if exc.filename else ""
    reason = exc.strerror or str(exc) or exc.__class__.__name__
    return f"{reason}{where}; check the disk, the path and its permissions, then run it again"


@click.group(cls=GroundqaGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="groundqa")
def main() -> None:
    """Answer questions from a document corpus, and only from it, with citations."""


for _command in (
    validate,
    ingest,
    inspect,
    ask,
    chat,
    evaluate,
    calibrate,
    tune,
    serve,
    mcp_command,
):
    main.add_command(_command)
