"""`reader`: the answer model as a reranker of retrieved passages.

Each passage scores as its best sentence's P(answers) (at most `MAX_SENTENCES` of its
first sentences are read, with the passage's section title as context). Measured in
`bench/reader.py` against the default plan; it is not the default.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from groundqa.errors import UsageError
from groundqa.models import Hit
from groundqa.providers import GeneratorOptions
from groundqa.read import section_title
from groundqa.read.model import AnswerModel, load_answer_model
from groundqa.retrieve.rerank import check_top_n, reorder
from groundqa.text import split_sentences

MAX_SENTENCES = 12


@dataclass
class ReaderReranker:
    """Reorders hits by the answer model's best score over each passage's sentences."""

    model: AnswerModel = field(repr=False)
    name: str = "reader"

    @classmethod
    def from_spec(cls, arg: str, options: GeneratorOptions) -> ReaderReranker:
        if arg.strip():
            raise UsageError(f"the reader reranker takes no argument, not {arg!r}")
        return cls(load_answer_model())

    def rerank(self, question: str, hits: Sequence[Hit], top_n: int | None = None) -> list[Hit]:
        check_top_n(top_n)
        pairs: list[tuple[str, str]] = []
        owner: list[int] = []
        for i, hit in enumerate(hits):
            title = section_title(hit.chunk.breadcrumb)
            for sentence in split_sentences(hit.chunk.text)[:MAX_SENTENCES]:
                pairs.append((title, sentence))
                owner.append(i)
        scores = [0.0] * len(hits)
        for i, p in zip(owner, self.model.score(question, pairs), strict=True):
            scores[i] = max(scores[i], float(p))
        return reorder(hits, scores, top_n)
