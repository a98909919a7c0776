"""The default gate fitted to each index by itself, from questions made of its own text.

The built-in default gate refuses under a floor set on the example corpus's
out-of-scope probes (`gate.decision`). An index knows better what lies outside it:
after a build, `self_fit` makes out-of-scope questions for it
(`synthetic.out_of_scope_questions`: written about other things, kept where the
index knows at most a third of their topic words), asks each of them of the new
build exactly as `ask` would (retrieve, read, the default gate's features), and
stores the lowest cut that refuses every one of them as the index's floor
(`gate.model.floor_for`, never above the default's threshold).

It then fits a second gate, the band (`Gate.band`), on about `BAND_PROBES` probes made
from the index's own chunks (`synthetic.make_probes`, `BAND_METHOD`: half answerable,
a quarter near misses whose sentences are cut from a scratch build, a quarter out of
scope), as `calibrate --synthetic` fits one. Fitted alone, such a gate refuses far
fewer answerable questions than the default and answers more near misses with
confidence (`bench/synthetic.py`), so it is not let decide alone: a question the
default would refuse is answered with caution where the band passes it.

The model and the threshold stay the default's, so no answer becomes confident that
was not: only questions that the default would refuse may now be answered with
caution.

Labels come from how the questions were made, and none of them is a question the
benchmarks score. Whatever goes wrong leaves the built-in default, with a note, and
never fails the build: a corpus under `MIN_CHUNKS`, too few questions the index does
not know (`MIN_QUESTIONS`), too few probes for the band (`MIN_BAND_PROBES`), or an
error while asking.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from groundqa.engine import Engine
from groundqa.errors import CalibrationError
from groundqa.evaluate.calibrate import fit_report, synthetic_features
from groundqa.evaluate.planfit import MAX_TEXT, documents_of, sample_chunks
from groundqa.evaluate.synthetic import out_of_scope_questions
from groundqa.gate import DEFAULT_GATE, gate_features
from groundqa.gate.features import FEATURES_VERSION
from groundqa.gate.model import floor_for
from groundqa.index.manifest import Manifest
from groundqa.index.open import current_manifest, set_gate
from groundqa.retrieve import Retrieval

QUESTIONS = 100
MIN_CHUNKS = 30
MIN_QUESTIONS = 20
METHOD = "keywords"
SEED = 0
# The band's probes: `keywords` questions, whose gate refused every out-of-scope question
# on the visible sets where `mixed` and `heading` let a few through (bench/synthetic.py).
BAND_PROBES = 400
BAND_METHOD = "keywords"
MIN_BAND_PROBES = 100


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


def fit_band(engine: Engine, n: int = BAND_PROBES) -> dict[str, Any]:
    """The band gate for `engine`'s index (see the module doc): its model, threshold and
    floor, and what it was fitted on, or `skipped` with the reason there is none. Made
    from the index's own chunks (a sample of them past `planfit.MAX_TEXT`), so it needs
    neither the sources nor a directory index. No clock in it, as in `fit_floor`."""
    base: dict[str, Any] = {"method": BAND_METHOD, "seed": SEED}
    chunks = engine.store.chunks
    sample = sample_chunks(chunks, MAX_TEXT)
    if len(sample) < len(chunks):
        base["sample"] = {"chunks": len(sample), "of": len(chunks)}
    made, data = synthetic_features(
        documents_of(sample),
        engine.manifest.chunker,
        n=n,
        method=BAND_METHOD,
        seed=SEED,
        analyzer=engine.manifest.analyzer,
    )
    counts = made.counts()
    if len(made.probes) < MIN_BAND_PROBES:
        return {
            **base,
            "skipped": f"only {len(made.probes)} questions could be made from the corpus "
            f"(needs {MIN_BAND_PROBES})",
        }
    try:
        report = fit_report(data)
    except CalibrationError as exc:
        return {**base, "skipped": exc.message}
    gate = report.gate
    return {
        **base,
        "probes": counts,
        "threshold": round(gate.threshold, 6),
        "floor": gate.floor,  # not rounded, as the floor above
        "model": gate.model.to_dict(),
        "cv_auc": report.results["calibrated"]["auc"],
    }


def self_fit(location: str | Path) -> str:
    """Fit the floor and the band of the index at `location` (a directory or a store URL)
    and store them in its manifest, unless a calibration is there; a one-line note for
    the build report."""
    started = time.perf_counter()
    try:
        engine = Engine.open(location, reader="lexical")
        if engine.gate.calibrated:
            return ""
        entry = fit_floor(engine)
        # Every entry says what became of the band: an index fitted before there was one
        # lacks the key, and its next `ingest` fits both again.
        if engine.store.num_docs < MIN_CHUNKS:
            entry["band"] = {"method": BAND_METHOD, "skipped": entry["skipped"]}
        else:
            try:
                entry["band"] = fit_band(engine)
            except Exception as exc:  # the floor stands without it
                entry["band"] = {"method": BAND_METHOD, "skipped": f"it failed ({exc})"}
        set_gate(location, {"self_fit": entry}, engine.manifest.fingerprint)
    except Exception as exc:
        return f"the gate's floor could not be fitted ({exc}); the built-in default is kept"
    seconds = f"({time.perf_counter() - started:.1f}s)"
    band = entry.get("band", {})
    also = (
        f"; cautious, too, where a gate fitted on {sum(band['probes'].values())} questions "
        f"made from it passes (cross-validated AUC {band['cv_auc']:.2f})"
        if "probes" in band
        else ""
    )
    if "skipped" in band and "skipped" not in entry:
        also = f"; no band: {band['skipped']}"
    if "skipped" in entry:
        return f"the gate keeps the built-in floor: {entry['skipped']}{also}"
    return (
        f"gate: cautious from {entry['floor']:.3f}, a floor fitted on {entry['questions']} "
        f"out-of-scope questions made for this index{also} {seconds}"
    )


def reset(index_dir: str | Path) -> Manifest:
    """Put the built-in default gate back, with the floor and band fitted to this index
    (as a new build gets)."""
    set_gate(index_dir, DEFAULT_GATE.to_dict())
    self_fit(index_dir)
    return current_manifest(index_dir)
