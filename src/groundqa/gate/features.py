"""The gate's features: a pure function of one `Retrieval` and its `Reading`.

Nothing here searches: every signal was computed by retrieval (each method's own
best, the term weights, the BM25 ceiling) or by the reader (the passages' terms,
the best sentence), once per question. See the `gate` package docstring for what
each feature means.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet

from groundqa.read import COVERAGE_DEPTH, Reading, coverage
from groundqa.retrieve import Retrieval

LEXICAL_FEATURES = (
    "coverage",
    "coverage_top1",
    "unknown_share",
    "bm25_top",
    "bm25_margin",
    "sentence_coverage",
    "type_missing",
)
DENSE_FEATURES = ("dense_top", "dense_margin", "agreement")
# The answer model's reading (engines that read with it): its best sentence's P(answers),
# that score's lead over the runner-up, and the mean of the best three.
READER_FEATURES = ("reader_best", "reader_margin", "reader_mean3")
# How many of the top passages `agreement` compares (`coverage` looks at `COVERAGE_DEPTH`).
AGREEMENT_DEPTH = 5


def gate_features(retrieval: Retrieval, reading: Reading) -> dict[str, float]:
    """What the gate weighs for this question: empty when no passage was found."""
    if not retrieval.hits:
        return {}
    return features(
        retrieval.weights,
        retrieval.unknown,
        reading.passage_terms,
        retrieval.lexical,
        retrieval.bm25_ceiling,
        reading,
        retrieval.dense,
    )


def features(
    weights: Mapping[str, float],
    unknown: AbstractSet[str],
    passages: Sequence[AbstractSet[str]],
    lexical: Sequence[tuple[int, float]],
    bm25_ceiling: float,
    reading: Reading,
    dense: Sequence[tuple[int, float]] | None = None,
) -> dict[str, float]:
    """The gate's inputs for one question (see the module doc for each).

    `weights` maps topic terms to idf, `unknown` holds those the corpus never uses,
    `passages` the term sets of the answer's top passages in rank order, `lexical`
    and `dense` each method's own best (row, score) pairs.
    """
    covered = [coverage(weights, terms) for terms in passages[:COVERAGE_DEPTH]]
    total = sum(weights.values())
    top = lexical[0][1] if lexical else 0.0
    second = lexical[1][1] if len(lexical) > 1 else 0.0
    out = {
        "coverage": max(covered, default=0.0),
        "coverage_top1": covered[0] if covered else 0.0,
        "unknown_share": sum(weights[t] for t in unknown if t in weights) / total if total else 1.0,
        "bm25_top": min(1.0, top / bm25_ceiling) if bm25_ceiling > 0 else 0.0,
        "bm25_margin": (top - second) / top if top > 0 else 0.0,
        "sentence_coverage": reading.coverage,
        "type_missing": float(reading.asked and not reading.found),
    }
    answers = reading.answers()
    if answers:
        out["reader_best"] = answers[0]
        out["reader_margin"] = answers[0] - (answers[1] if len(answers) > 1 else 0.0)
        out["reader_mean3"] = sum(answers[:3]) / len(answers[:3])
    if dense is not None:
        d1 = dense[0][1] if dense else 0.0
        d2 = dense[1][1] if len(dense) > 1 else d1
        both = {r for r, _ in lexical[:AGREEMENT_DEPTH]} & {r for r, _ in dense[:AGREEMENT_DEPTH]}
        out["dense_top"] = d1
        out["dense_margin"] = d1 - d2
        out["agreement"] = len(both) / AGREEMENT_DEPTH
    return {k: round(float(v), 6) for k, v in out.items()}
