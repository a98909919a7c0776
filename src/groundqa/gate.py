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

from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from groundqa.models import GateDecision, Hit


def coverage(weights: Mapping[str, float], passage_terms: AbstractSet[str]) -> float:
    """Weighted share of the question's terms (term -> weight) present in `passage_terms`."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in weights.items() if t in passage_terms) / total


@dataclass(frozen=True)
class LexicalGate:
    min_coverage: float = 0.4
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
        weights: Mapping[str, float],
        hits: Sequence[Hit],
        passage_terms: Callable[[Hit], AbstractSet[str]],
    ) -> GateDecision:
        """`weights` maps each topic term of the question to its idf."""
        if not weights:
            return GateDecision(False, "the question has no topic words", 0.0, self.min_coverage)
        if not hits:
            return GateDecision(
                False,
                "no passage matched the question",
                0.0,
                self.min_coverage,
                {"query_terms": float(len(weights))},
            )
        covered = [coverage(weights, passage_terms(h)) for h in hits[: self.top_n]]
        best = max(covered)
        features = {
            "coverage": round(best, 4),
            "coverage_top1": round(covered[0], 4),
            "top_score": round(hits[0].score, 4),
            "margin": round(hits[0].score - hits[1].score, 4)
            if len(hits) > 1
            else round(hits[0].score, 4),
            "query_terms": float(len(weights)),
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
