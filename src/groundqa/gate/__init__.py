"""The gate: answer or refuse, decided from what retrieval and a first reading found.

    features    the signals, a pure function of the Retrieval and the Reading
    model       the logistic model, its folds, AUC and thresholds (calibration)
    decision    the Gate: the model, its threshold, and which one an index uses

The gate never searches: every signal below was computed once by retrieval (each
method's own best, the term weights) or by the reader (the passages' terms, the
best sentence). A small logistic model turns them into a probability that the
corpus can answer the question:

- `coverage`: the idf-weighted share of the question's topic terms found in the
  best of the top three passages; `coverage_top1` the same for the first passage.
  Every coverage (and `sentence_coverage`) is weighed by the question's specificity
  (`features.specificity`): a question whose words say less than two words that each
  one chunk holds ("What about the fees?") counts as covered only in that part.
- `unknown_share`: the idf-weighted share of topic terms the corpus never uses
  (a corpus that has never heard of "Mongolia" cannot answer about it).
- `bm25_top`: the best BM25 score over the most the question's terms could
  score (each term's idf times k1+1), so it reads the same across corpora;
  `bm25_margin`: how far the first passage leads the second, relative to it.
- `dense_top`, `dense_margin`: the best cosine and its lead over the runner-up
  (indexes with vectors only).
- `agreement`: the share of the five best passages that BM25 and the vectors
  both rank there (indexes with vectors only).
- `sentence_coverage`: topic coverage of the best sentence the reader found
  (the one the extractive generator would quote), and `type_missing`: 1 when the question asks for a kind of fact
  (a time, an amount, a number, a name) and that sentence does not hold one.
- `reader_best`, `reader_margin`, `reader_mean3`: the answer model's P(answers) for
  its best sentence, that score's lead over the runner-up, and the mean of the best
  three (engines that read with the model, the default).

The probability falls in one of three outcomes (see `gate.decision`): a confident
answer at or over the threshold, a cautious one (the closest passage, which may not
answer the question) from the floor up, and a refusal below the floor.

`groundqa calibrate` fits the model on a probe set for one index and stores it,
with its threshold and floor, in the manifest (see `gate.model`). An index without one
uses a built-in default: `DEFAULT_READER_GATE` over the features that read the
same on any corpus and the answer model's, fitted on training data only (ClapNQ's
shared half; `bench/default_gate.py --reader` refits it), or, for an engine that
runs without the model, `DEFAULT_GATE` over the lexical features, fitted on the
bundled example corpus's probes (`bench/default_gate.py`). `groundqa inspect` says which one an index uses.
"""

from groundqa.gate.decision import (
    CAUTIOUS,
    CONFIDENT,
    DEFAULT_FLOOR,
    DEFAULT_GATE,
    DEFAULT_MODEL,
    DEFAULT_READER_GATE,
    DEFAULT_THRESHOLD,
    OUTCOMES,
    REFUSED,
    Gate,
    calibrated_gate,
    default_gate,
    gate_for,
)
from groundqa.gate.features import (
    AGREEMENT_DEPTH,
    DENSE_FEATURES,
    LEXICAL_FEATURES,
    READER_FEATURES,
    features,
    gate_features,
)

__all__ = [
    "AGREEMENT_DEPTH",
    "CAUTIOUS",
    "CONFIDENT",
    "DEFAULT_FLOOR",
    "DEFAULT_GATE",
    "DEFAULT_MODEL",
    "DEFAULT_READER_GATE",
    "DEFAULT_THRESHOLD",
    "DENSE_FEATURES",
    "LEXICAL_FEATURES",
    "OUTCOMES",
    "READER_FEATURES",
    "REFUSED",
    "Gate",
    "calibrated_gate",
    "default_gate",
    "features",
    "gate_features",
    "gate_for",
]
