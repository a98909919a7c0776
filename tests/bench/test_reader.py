"""bench/reader.py's figures and its blend of the model with the untrained cosine. The
scoring itself is the benchmark's."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import reader  # noqa: E402


def _rows(labels: dict[str, list[int]]) -> list[dict[str, Any]]:
    return [
        {"q": group, "c": "", "s": f"{group} sentence {i}", "y": y, "group": group}
        for group, ys in labels.items()
        for i, y in enumerate(ys)
    ]


def test_the_blend_is_the_model_logit_plus_the_weighted_cosine() -> None:
    model = np.array([0.5, 0.9, 0.1])
    cosine = np.array([0.2, 0.0, -0.1])
    got = reader.blended(model, cosine, 10.0)
    assert np.allclose(got, [2.0, np.log(9.0), -np.log(9.0) - 1.0])


def test_the_weight_is_the_one_that_best_separates_answerable_questions() -> None:
    # Two answerable questions and two without an answer. The model alone ranks an
    # unanswerable question's best sentence highest; the cosine puts it right, so only a
    # large enough weight gives a question AUC of 1.
    rows = _rows({"a1": [1, 0], "a2": [1, 0], "u1": [0, 0], "u2": [0, 0]})
    model = np.array([0.6, 0.2, 0.6, 0.2, 0.9, 0.1, 0.3, 0.1])
    cosine = np.array([0.8, 0.1, 0.8, 0.1, 0.0, 0.0, 0.0, 0.0])
    assert reader.figures(rows, model, None)["question_auc"] == 0.5
    weight = reader.blend_weight(rows, model, cosine)
    # logit(0.6) + w * 0.8 passes logit(0.9) = 2.197 from w = 5 on (at w = 2 it is 2.005):
    # the smallest such weight, not a larger one.
    assert weight == 5.0
    assert reader.figures(rows, reader.blended(model, cosine, weight), None)["question_auc"] == 1


def test_figures_read_refusal_off_each_questions_best_sentence() -> None:
    rows = _rows({"a1": [0, 1], "a2": [1], "u1": [0, 0]})
    scores = np.array([0.1, 0.9, 0.8, 0.2, 0.3])
    f = reader.figures(rows, scores, cut=0.5)
    assert (f["questions"], f["answerable"]) == (3, 2)
    assert f["mrr"] == 1.0
    assert f["question_auc"] == 1.0
    shipped = f["refusal_at_shipped_cut"]
    assert (shipped["precision"], shipped["recall"], shipped["false_refusal"]) == (1.0, 1.0, 0.0)


def test_a_candidate_page_names_each_file_and_its_training_beside_the_baselines() -> None:
    rows = _rows({"a1": [0, 1], "u1": [0, 0]})
    scores = {"model": [0.1, 0.9, 0.2, 0.3], "frozen4": [0.6, 0.5, 0.1, 0.2]}
    data = {
        "candidates": {
            "frozen4": {"file": "frozen4.onnx", "sha256": "ab" * 32, "training": {"frozen": 4}},
            "distill1": {"file": "distill1.onnx", "sha256": "cd" * 32, "training": None},
        },
        "sets": {"tiny": {k: reader.figures(rows, np.array(v), None) for k, v in scores.items()}},
    }
    page = reader.candidate_markdown(data)
    assert "bench/reader.py --candidate frozen4.onnx distill1.onnx" in page
    assert '`frozen4` (sha256 `abababababab`): `{"frozen": 4}`' in page
    assert "`distill1` (sha256 `cdcdcdcdcdcd`): `null`" in page
    # the model puts the answering sentence above all three others (sentence AUC 1, first
    # in its question); the candidate above two of three, second in its question
    assert "| tiny (2 q) | model | 1.000 | 1.0 | 1.0 |" in page
    assert "| tiny (2 q) | frozen4 | 0.667 | 0.5 | 1.0 |" in page
