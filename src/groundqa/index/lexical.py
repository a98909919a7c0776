"""The BM25 index: bm25s over terms from the shared `Analyzer`.

Scores come from bm25s' sparse matrix; top-k, filtering and the document
frequencies the gate needs are read from the same matrix, so there is one
source of truth for what a term weighs.

Two fields: the body (title, section path and text together) and, optionally,
the breadcrumb (title and section path) in a second BM25 index whose score is
added with `heading_weight`. A heading written for one section ("Identification
of critical equipment") says what the section is about better than any sentence
in it; a heading shared by many passages, or a paper title, does not, which is
why the weight is a setting (see `ingestion.default_bm25`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from groundqa.text import Analyzer


@dataclass(frozen=True)
class BM25Settings:
    k1: float = 1.5
    b: float = 0.75
    method: str = "lucene"
    heading_weight: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        import bm25s

        return {"kind": "bm25s", "bm25s": bm25s.__version__, **asdict(self)}


def _bm25(settings: BM25Settings) -> Any:
    import bm25s

    return bm25s.BM25(k1=settings.k1, b=settings.b, method=settings.method)


class LexicalIndex:
    """A built or loaded body index (and optional heading index) with document frequencies."""

    def __init__(
        self, model: Any, analyzer: Analyzer, heading: Any = None, heading_weight: float = 0.0
    ) -> None:
        self._model = model
        self._heading = heading if heading_weight > 0 else None
        self.heading_weight = heading_weight
        self.analyzer = analyzer
        indptr = np.asarray(model.scores["indptr"])
        self.num_docs = int(model.scores["num_docs"])
        # bm25s stores one column per vocabulary id; its length is that term's document count.
        self._df = np.diff(indptr)
        self._vocab: dict[str, int] = model.vocab_dict

    @classmethod
    def build(
        cls,
        texts: Sequence[str],
        analyzer: Analyzer,
        settings: BM25Settings,
        headings: Sequence[str] | None = None,
    ) -> LexicalIndex:
        model = _bm25(settings)
        model.index(analyzer.many(texts), show_progress=False)
        heading = None
        if headings is not None and settings.heading_weight > 0:
            heading_terms = analyzer.many(headings)
            if any(heading_terms):
                heading = _bm25(settings)
                heading.index(heading_terms, show_progress=False)
        return cls(model, analyzer, heading, settings.heading_weight if heading else 0.0)

    def save(self, directory: Path) -> None:
        self._model.save(str(directory / "body"), show_progress=False)
        if self._heading is not None:
            self._heading.save(str(directory / "heading"), show_progress=False)

    @classmethod
    def load(cls, directory: Path, analyzer: Analyzer, heading_weight: float = 0.0) -> LexicalIndex:
        import bm25s

        # Memory-mapped: the worker processes that serve one index share its pages.
        model = bm25s.BM25.load(str(directory / "body"), mmap=True, show_progress=False)
        heading = None
        if heading_weight > 0 and (directory / "heading").is_dir():
            heading = bm25s.BM25.load(str(directory / "heading"), mmap=True, show_progress=False)
        return cls(model, analyzer, heading, heading_weight if heading is not None else 0.0)

    def idf(self, term: str) -> float:
        """Robertson-Sparck Jones idf; a term the corpus never uses gets the highest value."""
        df = self.df(term)
        n = self.num_docs
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def df(self, term: str) -> int:
        """How many chunks contain `term` (0 for a term the corpus never uses)."""
        idx = self._vocab.get(term)
        return int(self._df[idx]) if idx is not None and idx < len(self._df) else 0

    def scores(
        self, terms: Sequence[str], mask: npt.NDArray[np.float32] | None = None
    ) -> npt.NDArray[np.float32]:
        """BM25 score of every chunk for `terms`; masked-out chunks score 0."""
        out = _field_scores(self._model, terms, self.num_docs, mask)
        if self._heading is not None:
            out = out + self.heading_weight * _field_scores(
                self._heading, terms, self.num_docs, mask
            )
        return out


def _field_scores(
    model: Any, terms: Sequence[str], num_docs: int, mask: npt.NDArray[np.float32] | None
) -> npt.NDArray[np.float32]:
    vocab: dict[str, int] = model.vocab_dict
    ids = [vocab[t] for t in terms if t in vocab and t != ""]
    if not ids:
        return np.zeros(num_docs, dtype=np.float32)
    out: npt.NDArray[np.float32] = model.get_scores_from_ids(ids, weight_mask=mask)
    return out


def top_k(
    scores: npt.NDArray[np.float32], k: int, allowed: npt.NDArray[np.bool_] | None = None
) -> list[tuple[int, float]]:
    """Indices and scores of the k best positive scores, best first, ties by index."""
    candidates = (
        np.flatnonzero(scores > 0) if allowed is None else np.flatnonzero((scores > 0) & allowed)
    )
    if candidates.size == 0 or k <= 0:
        return []
    if candidates.size > k:
        part = np.argpartition(-scores[candidates], k - 1)[:k]
        candidates = candidates[part]
    order = np.lexsort((candidates, -scores[candidates]))
    return [(int(i), float(scores[i])) for i in candidates[order]]


def save_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True), "utf-8")
