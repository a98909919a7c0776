"""train/reader_train.py's batch order and distillation terms, on torch (so only in the
reference venv: `make test-slow`). The training itself is measured in bench/reader.py
--candidate, not here."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rt() -> ModuleType:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "train"))
    import reader_train

    return reader_train


@pytest.fixture(scope="module")
def torch(rt: ModuleType) -> Any:
    import torch

    return torch


def _questions() -> list[str]:
    # Sizes 1 to 9 rows, and one question with more rows than a batch holds.
    sizes = {f"q{i}": i for i in range(1, 10)} | {"big": 12}
    return [q for q, n in sizes.items() for _ in range(n)]


def test_grouped_order_keeps_each_question_whole_and_every_row_once_an_epoch(
    rt: ModuleType,
) -> None:
    questions = _questions()
    batches = rt.grouped_order(questions, epochs=2, batch=8, seed=3)
    # A question with more rows than a batch holds keeps its first 8; every other row is
    # seen once in each epoch.
    kept = {i for q in set(questions) for i in _rows_of(questions, q)[:8]}
    seen = Counter(i for b in batches for i in b)
    assert set(seen) == kept
    assert set(seen.values()) == {2}
    for b in batches:
        assert len(b) <= 8
        for q in {questions[i] for i in b}:
            assert set(_rows_of(questions, q)[:8]) <= set(b), f"{q} split across batches"


def _rows_of(questions: list[str], question: str) -> list[int]:
    return [i for i, q in enumerate(questions) if q == question]


def test_grouped_order_is_fixed_by_its_seed(rt: ModuleType) -> None:
    questions = _questions()
    first = rt.grouped_order(questions, 2, 8, seed=5)
    assert first == rt.grouped_order(questions, 2, 8, seed=5)
    assert first != rt.grouped_order(questions, 2, 8, seed=6)


def test_the_per_question_term_ignores_each_questions_level(rt: ModuleType, torch: Any) -> None:
    # Within each question the logits rank as the teacher does; only the levels across
    # questions differ. The per-question distance is 0, the batch-wise one is not.
    teacher = torch.tensor([0.9, 0.5, 0.1, 0.8, 0.4])
    logits = torch.tensor([3.0, 2.0, 1.0, -4.0, -5.0])
    questions = ["a", "a", "a", "b", "b"]
    distance = rt.per_question_distance(logits, teacher, questions)
    assert distance is not None
    assert float(distance) == pytest.approx(0.0, abs=1e-6)
    assert 1 - float(rt.correlation(logits, teacher)) > 0.1


def test_the_per_question_term_grows_as_a_questions_ranking_turns(
    rt: ModuleType, torch: Any
) -> None:
    teacher = torch.tensor([0.9, 0.5, 0.1])
    same = rt.per_question_distance(torch.tensor([3.0, 2.0, 1.0]), teacher, ["a"] * 3)
    turned = rt.per_question_distance(torch.tensor([1.0, 2.0, 3.0]), teacher, ["a"] * 3)
    assert same is not None and turned is not None
    assert float(turned) == pytest.approx(2.0, abs=1e-6)
    assert float(same) < float(turned)


def test_the_per_question_term_is_none_without_a_question_of_two_sentences(
    rt: ModuleType, torch: Any
) -> None:
    got = rt.per_question_distance(torch.tensor([1.0, 2.0]), torch.tensor([0.1, 0.2]), ["a", "b"])
    assert got is None


def test_the_per_question_term_passes_its_gradient_to_the_logits(
    rt: ModuleType, torch: Any
) -> None:
    logits = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    distance = rt.per_question_distance(logits, torch.tensor([0.9, 0.5, 0.1]), ["a"] * 3)
    assert distance is not None
    distance.backward()
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0
