"""The public surface is deliberate: `groundqa.__all__` is exactly this list."""

from __future__ import annotations

import groundqa

EXPECTED = {
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
    "IngestReport",
    "Interrupted",
    "LoadError",
    "ProbeError",
    "Section",
    "UsageError",
    "ValidationBlocked",
    "__version__",
    "ingest",
}


def test_all_is_the_documented_surface() -> None:
    assert set(groundqa.__all__) == EXPECTED
    for name in groundqa.__all__:
        assert getattr(groundqa, name) is not None


def test_engine_and_ingest_load_lazily() -> None:
    assert callable(groundqa.ingest)
    assert groundqa.Engine.__name__ == "Engine"
