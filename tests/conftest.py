"""Shared fixtures: small real corpora on disk, and the ../shared data when present."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fakes import FakeServer, Reply

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
EXAMPLES = ROOT / "examples"
REGPACK = EXAMPLES / "regpack"
REGPACK_PROBES = EXAMPLES / "regpack.probes.jsonl"

GUIDE_ALDER = """---
area: Alder
category: town
---
# Alderby

Alderby is a river town of 4,000 people on the east bank.

## Getting there

Trains run from Portmere every 40 minutes and take 25 minutes. The last train back leaves at 11:15pm.

## Eat and drink

The smokehouse on Quay Street opens at 7am and closes when the fish runs out, usually by 2pm.
The tea room serves lunch from 12 until 3 and charges 4 pounds for a pot of tea.

## Empty

## Where to stay

There are three guesthouses and a campsite with twenty pitches that opens from April to October.
"""

GUIDE_BRAMBLE = """---
area: Bramble
category: town
---
# Bramblecote

Bramblecote is a hill village known for its orchards and a cider press that dates from 1790.

## Getting there

A bus runs from Alderby twice a day, at 9am and 4pm, and the journey takes 50 minutes on narrow lanes.

## What to see

The orchard trail is four miles long and passes the old press, which opens to visitors on Saturdays.
"""


def write_small_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "alderby.md").write_text(GUIDE_ALDER, encoding="utf-8")
    (folder / "bramblecote.md").write_text(GUIDE_BRAMBLE, encoding="utf-8")
    return folder


@pytest.fixture
def small_corpus(tmp_path: Path) -> Path:
    return write_small_corpus(tmp_path / "corpus")


def need_shared(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs {path} (the ../shared data folder beside the project)")
    return path


@pytest.fixture
def serve() -> Iterator[Callable[[Reply], FakeServer]]:
    """Start fake servers for one test; every one is closed when the test ends."""
    servers: list[FakeServer] = []

    def start(reply: Reply) -> FakeServer:
        servers.append(FakeServer(reply))
        return servers[-1]

    yield start
    for s in servers:
        s.close()
