"""The public surface is deliberate: `groundqa.__all__` is exactly this list."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

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
}


def test_all_is_the_documented_surface() -> None:
    assert set(groundqa.__all__) == EXPECTED
    for name in groundqa.__all__:
        assert getattr(groundqa, name) is not None


# Run in a fresh interpreter: this test process has long since imported everything.
_LAZINESS_PROBE = """
import json, sys
import groundqa
heavy = {heavy!r}
seen = {{"bare": sorted(m for m in heavy if m in sys.modules)}}
engine = groundqa.Engine
seen["engine"] = sorted(m for m in heavy if m in sys.modules)
seen["engine_module"] = engine.__module__
ingest = groundqa.ingest
seen["ingest"] = sorted(m for m in heavy if m in sys.modules)
seen["ingest_module"] = ingest.__module__
print(json.dumps(seen))
"""

# What `import groundqa` must not pull in: the pipeline and every third-party
# dependency that costs start-up time (the CLI's --help imports the package).
HEAVY = [
    "bm25s",
    "fastapi",
    "groundqa.engine",
    "groundqa.ingestion",
    "httpx",
    "numpy",
    "onnxruntime",
    "psycopg",
]


def test_engine_and_ingest_load_lazily() -> None:
    probe = _LAZINESS_PROBE.format(heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    seen = json.loads(done.stdout)
    assert seen["bare"] == []
    # Attribute access is what loads them, and it hands back the real objects.
    assert "groundqa.engine" in seen["engine"]
    assert "numpy" in seen["engine"]
    assert seen["engine_module"] == "groundqa.engine"
    assert "groundqa.ingestion" in seen["ingest"]
    assert seen["ingest_module"] == "groundqa.ingestion"


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Engin'"):
        _ = groundqa.Engin
