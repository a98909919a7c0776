"""The CLI reference: `groundqa --help` and every command's `--help`, run when the site is
built and put in place of the marker in docs/cli.md, so the page cannot drift from the CLI.

It runs the installed console script (the one beside this Python), as a user would, at a
fixed width of 80 columns; it refuses to build the page when the script is missing or a
`--help` fails, rather than publish a reference with a command left out.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

MARKER = "<!-- cli:help -->"


def groundqa() -> str:
    """The console script of the environment this runs in."""
    beside = Path(sys.executable).with_name("groundqa")
    found = str(beside) if beside.exists() else shutil.which("groundqa")
    if not found:
        raise RuntimeError("the CLI reference needs the groundqa script: pip install -e .")
    return found


def help_text(*command: str) -> str:
    env = {**os.environ, "COLUMNS": "80"}
    proc = subprocess.run(
        [groundqa(), *command, "--help"], capture_output=True, text=True, env=env, timeout=120
    )
    if proc.returncode != 0:
        raise RuntimeError(f"groundqa {' '.join(command)} --help failed:\n{proc.stderr}")
    return proc.stdout.rstrip()


def subcommands(text: str) -> list[str]:
    """The command names click lists under "Commands:" in a help text."""
    _, found, rest = text.partition("\nCommands:\n")
    if not found:
        return []
    names = []
    for line in rest.splitlines():
        if not line.strip():
            break
        m = re.match(r"^  (\S+)", line)
        if m:
            names.append(m.group(1))
    return names


def helps(*command: str) -> list[tuple[tuple[str, ...], str]]:
    """(command, its --help) for `command` and every command under it, depth first."""
    text = help_text(*command)
    found = [(command, text)]
    for name in subcommands(text):
        found += helps(*command, name)
    return found


def reference() -> str:
    """The generated part of the page: one section per command."""
    parts = []
    for command, text in helps():
        title = " ".join(("groundqa", *command))
        parts.append(f"## `{title}`\n\n```text\n{text}\n```\n")
    return "\n".join(parts)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, reference())
