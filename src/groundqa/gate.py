"""The gate: answer or refuse, decided from what retrieval found.

The lexical gate asks one question: how much of what the question is about
does the best passage actually mention? It weighs each topic term of the
question by its idf (a term the corpus never uses weighs the most, because a
corpus that has never heard of "Mongolia" cannot answer about it) and takes
the weighted share present in the best of the top passages. Below
`min_coverage` it refuses. This is transparent and cheap; its false-answer and
false-refusal rates are measured by `groundqa eval`, and a calibrated gate can
replace it behind the same `decide` call.

It refuses to answer a question with no topic words at all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from groundqa.models import GateDecision, Hit


def coverage(
    query_terms: Sequence[str], passage_terms: set[str], weight: Callable[[str], float]
) -> float:
    """Weighted share of `query_terms` present in `passage_terms` (0 when there are none)."""
    total = sum(weight(t) for t in query_terms)
    if total <= 0:
        return 0.0
    return sum(weight(t) for t in query_terms if t in passage_terms) / total


@dataclass(frozen=True)
class LexicalGate:
    min_coverage: float = 0.5
    top_n: int = 3

    name = "lexical-coverage-v1"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.name,
            "min_coverage": self.min_coverage,
            "top_n": self.top_n,
            "calibrated": False,
        }

    def decide(
        self,
        query_terms: Sequence[str],
        hits: Sequence[Hit],
        passage_terms: Callable[[Hit], set[str]],
        weight: Callable[[str], float],
    ) -> GateDecision:
        if not query_terms:
            return GateDecision(False, "the question has no topic words", 0.0, self.min_coverage)
        if not hits:
            return GateDecision(
                False,
                "no passage matched the question",
                0.0,
                self.min_coverage,
                {"query_terms": float(len(query_terms))},
            )
        covered = [coverage(query_terms, passage_terms(h), weight) for h in hits[: self.top_n]]
        best = max(covered)
        features = {
            "coverage": round(best, 4),
            "coverage_top1": round(covered[0], 4),
            "top_score": round(hits[0].score, 4),
            "margin": round(hits[0].score - hits[1].score, 4)
            if len(hits) > 1
            else round(hits[0].score, 4),
            "query_terms": float(len(query_terms)),
        }
        if best < self.min_coverage:
            return GateDecision(
                False,
                f"the best passage covers {best:.0%} of the question's topic "
                f"(needs {self.min_coverage:.0%})",
                best,
                self.min_coverage,
                features,
            )
        return GateDecision(True, "covered", best, self.min_coverage, features)
