"""The gate's features: a pure function of one `Retrieval` and its `Reading`.

Nothing here searches: every signal was computed by retrieval (each method's own
best, the term weights, the BM25 ceiling) or by the reader (the passages' terms,
the best sentence), once per question. See the `gate` package docstring for what
each feature means.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet

from groundqa.index.base import bm25_idf
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
# What the features mean, stored with every fitted gate: a gate fitted on another version
# is set aside. 2: the coverages are weighed by the question's specificity.
FEATURES_VERSION = 2


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
        retrieval.chunks,
    )


# How many words, each held by a single chunk, a question must say as much as before its
# coverage counts in full: a topic, and something asked of it.
SPECIFIC_WORDS = 2
# Under this many chunks, idf says too little about a word (in a handful of documents on
# one subject every word of a fair question is common): coverage counts in full.
SPECIFIC_MIN_CHUNKS = 30


def specificity(weights: Mapping[str, float], chunks: int) -> float:
    """How much the question's topic words say, from 0 to 1: their summed idf over that of
    `SPECIFIC_WORDS` words each found in one of the index's `chunks` (1 at or past it, and
    1 for an index under `SPECIFIC_MIN_CHUNKS` chunks or of unknown size).

    Coverage is a share of the question's words. "What about the fees?" is covered in
    full by any passage that mentions a fee, as "What fee does a plant emitting over
    25,000 tonnes pay?" is only by the one that answers it: the share of one word is no
    evidence that the corpus answers. A question names a topic and asks something of it;
    one whose words say less than that counts as covered only in that part."""
    if chunks < SPECIFIC_MIN_CHUNKS:
        return 1.0
    unique = bm25_idf(1, chunks)
    return min(1.0, sum(weights.values()) / (SPECIFIC_WORDS * unique))


def features(
    weights: Mapping[str, float],
    unknown: AbstractSet[str],
    passages: Sequence[AbstractSet[str]],
    lexical: Sequence[tuple[int, float]],
    bm25_ceiling: float,
    reading: Reading,
    dense: Sequence[tuple[int, float]] | None = None,
    chunks: int = 0,
) -> dict[str, float]:
    """The gate's inputs for one question (see the module doc for each).

    `weights` maps topic terms to idf, `unknown` holds those the corpus never uses,
    `passages` the term sets of the answer's top passages in rank order, `lexical`
    and `dense` each method's own best (row, score) pairs, and `chunks` the size of the
    index the idfs were counted over (see `specificity`, which weighs every coverage).
    """
    says = specificity(weights, chunks)
    covered = [says * coverage(weights, terms) for terms in passages[:COVERAGE_DEPTH]]
    total = sum(weights.values())
    top = lexical[0][1] if lexical else 0.0
    second = lexical[1][1] if len(lexical) > 1 else 0.0
    out = {
        "coverage": max(covered, default=0.0),
        "coverage_top1": covered[0] if covered else 0.0,
        "unknown_share": sum(weights[t] for t in unknown if t in weights) / total if total else 1.0,
        "bm25_top": min(1.0, top / bm25_ceiling) if bm25_ceiling > 0 else 0.0,
        "bm25_margin": (top - second) / top if top > 0 else 0.0,
        "sentence_coverage": says * reading.coverage,
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
