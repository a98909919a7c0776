"""groundqa: answers questions from a document corpus, and only from it.

>>> from groundqa import Engine, ingest
>>> ingest(["examples/regpack"], "/tmp/idx")          # doctest: +SKIP
>>> Engine.open("/tmp/idx").ask("When is a NEER report due?")  # doctest: +SKIP
"""

import os
from typing import TYPE_CHECKING, Any

# onnxruntime (1.32 and later) records usage events in ~/.cache/Microsoft and sends them
# when it can reach the network. groundqa never phones home: the switch must be set
# before onnxruntime is first imported. A user who wants the events can set it to 0.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from groundqa._version import __version__
from groundqa.errors import (
    CorpusError,
    EmptyCorpusError,
    GroundqaError,
    IndexCorruptError,
    IndexLockedError,
    IndexMissingError,
    IndexVersionError,
    IndexWriteError,
    Interrupted,
    LoadError,
    ProbeError,
    UsageError,
    ValidationBlocked,
)
from groundqa.models import (
    REFUSAL,
    Answer,
    Chunk,
    Citation,
    Document,
    Finding,
    GateDecision,
    Hit,
    Section,
)

__all__ = [
    "REFUSAL",
    "Answer",
    "Chunk",
    "Citation",
    "CorpusError",
    "Document",
    "EmptyCorpusError",
    "Engine",
    "Finding",
    "GateDecision",
    "GroundqaError",
    "Hit",
    "IndexCorruptError",
    "IndexLockedError",
    "IndexMissingError",
    "IndexVersionError",
    "IndexWriteError",
    "IngestReport",
    "Interrupted",
    "LoadError",
    "ProbeError",
    "Section",
    "UsageError",
    "ValidationBlocked",
    "__version__",
    "ingest",
]

if TYPE_CHECKING:
    from groundqa.engine import Engine
    from groundqa.ingestion import IngestReport, ingest

# The engine and ingest pull in numpy and bm25s; importing them on first use keeps
# `import groundqa` (and the CLI's --help) fast.
_LAZY = {
    "Engine": "groundqa.engine",
    "IngestReport": "groundqa.ingestion",
    "ingest": "groundqa.ingestion",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'groundqa' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
