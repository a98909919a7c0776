"""The gate's floor fitted to each index by itself, from questions its corpus cannot answer.

The built-in default gate refuses under a floor set on the example corpus's
out-of-scope probes (`gate.decision`). An index knows better what lies outside it:
after a build, `self_fit` makes out-of-scope questions for it
(`synthetic.out_of_scope_questions`: written about other things, kept where the
index knows at most a third of their topic words), asks each of them of the new
build exactly as `ask` would (retrieve, read, the default gate's features), and
stores the lowest cut that refuses every one of them as the index's floor
(`gate.model.floor_for`, never above the default's threshold). The model and the
threshold stay the default's, so no answer becomes confident that was not: only
questions that the default would refuse may now be answered with caution.

Labels come from how the questions were made, and none of them is a question the
benchmarks score. Whatever goes wrong leaves the built-in default, with a note, and
never fails the build: a corpus under `MIN_CHUNKS`, too few questions the index does
not know (`MIN_QUESTIONS`), or an error while asking.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from groundqa.engine import Engine
from groundqa.evaluate.synthetic import out_of_scope_questions
from groundqa.gate import DEFAULT_GATE, gate_features
from groundqa.gate.features import FEATURES_VERSION
from groundqa.gate.model import floor_for
from groundqa.index.open import set_gate
from groundqa.retrieve import Retrieval

QUESTIONS = 100
MIN_CHUNKS = 30
MIN_QUESTIONS = 20
METHOD = "keywords"
SEED = 0


def known_share(retrieval: Retrieval) -> float:
    """The share of the question's topic terms the index uses (1 with none: a question
    without topic words is not out of scope by its words)."""
    terms = set(retrieval.weights)
    return 1.0 - len(terms & retrieval.unknown) / len(terms) if terms else 1.0


def fit_floor(engine: Engine, n: int = QUESTIONS) -> dict[str, Any]:
    """The self-fit entry for `engine`'s index: its floor and what it rests on, or
    `skipped` with the reason the built-in floor stays. The same build gives the same
    entry (no clock in it), so a cached answer's key does not move."""
    chunks = engine.store.num_docs
    base = {
        "method": METHOD,
        "seed": SEED,
        "index_fingerprint": engine.manifest.fingerprint,
        "features": FEATURES_VERSION,
    }
    if chunks < MIN_CHUNKS:
        return {
            **base,
            "skipped": f"the index has {chunks} chunks, under {MIN_CHUNKS}: too few to make "
            "questions it cannot answer",
        }

    asked: dict[str, Retrieval] = {}  # each question is retrieved once

    def known(question: str) -> float:
        retrieval = asked[question] = engine.retrieval(question)
        return known_share(retrieval)

    questions = out_of_scope_questions(known, n=n, method=METHOD, seed=SEED)
    if len(questions) < MIN_QUESTIONS:
        return {
            **base,
            "skipped": f"only {len(questions)} questions made were ones the index does not know "
            f"(needs {MIN_QUESTIONS})",
        }
    scores = []
    for probe in questions:
        retrieval = asked[probe.question]
        feats = gate_features(retrieval, engine.read(retrieval))
        scores.append(DEFAULT_GATE.model.probability(feats) if retrieval.weights and feats else 0.0)
    highest = float(max(scores))
    return {
        **base,
        # Not rounded: a floor rounded down would answer its highest question with caution.
        "floor": floor_for(np.asarray(scores), DEFAULT_GATE.threshold),
        "questions": len(questions),
        "highest": round(highest, 6),
    }


def self_fit(location: str | Path) -> str:
    """Fit the floor of the index at `location` (a directory or a store URL) and store it
    in its manifest, unless a calibration is there; a one-line note for the build report."""
    started = time.perf_counter()
    try:
        engine = Engine.open(location, reader="lexical")
        if engine.gate.calibrated:
            return ""
        entry = fit_floor(engine)
        set_gate(location, {"self_fit": entry}, engine.manifest.fingerprint)
    except Exception as exc:
        return f"the gate's floor could not be fitted ({exc}); the built-in default is kept"
    if "skipped" in entry:
        return f"the gate keeps the built-in floor: {entry['skipped']}"
    return (
        f"gate: cautious from {entry['floor']:.3f}, a floor fitted on {entry['questions']} "
        f"out-of-scope questions made for this index ({time.perf_counter() - started:.1f}s)"
    )
