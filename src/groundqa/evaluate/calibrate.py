"""Calibrating the gate on a probe set, and measuring it honestly.

`calibrate` runs every probe through retrieval once, within the probe's `scope`
as `eval` asks it, collects the gate's features (`screen`), fits the
logistic model on all of them and sets the threshold for the target
false-refusal rate from out-of-fold probabilities. The figures it reports come
from nested cross-validation (`calibration.cross_validate`): no question is
judged by a model or a threshold fitted to it or to one of its paraphrases.

Refusals are counted twice: at the gate, and end to end, where a question the
gate lets through still counts as refused when the generator declines it (the
extractive reader when its best sentence covers too little; an LLM backend when
it says it cannot answer). The same counts are given for fixed raw-score
cutoffs, so what calibration adds is visible:

- `coverage>=0.4`: the lexical gate groundqa used before calibration;
- `cosine>=0.3`: the "cosine distance under 0.7" gate many RAG systems use
  (indexes with vectors only).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from groundqa.chunking import ChunkerSettings
from groundqa.engine import Engine
from groundqa.errors import CalibrationError
from groundqa.evaluate.probes import KINDS, Probe
from groundqa.evaluate.synthetic import SyntheticProbes, make_probes
from groundqa.gate import (
    DENSE_FEATURES,
    LEXICAL_FEATURES,
    READER_FEATURES,
    Gate,
    calibrated_gate,
    gate_features,
)
from groundqa.gate.features import FEATURES_VERSION
from groundqa.gate.model import (
    DEFAULT_FOLDS,
    DEFAULT_TARGET,
    Array,
    check_labels,
    cross_validate,
    cuts_from_folds,
    fit_logistic,
    group_codes,
    probe_fingerprint,
    refusal_at,
    roc_auc,
)
from groundqa.generate import Evidence, GeneratorOptions
from groundqa.index.manifest import Manifest
from groundqa.index.open import current_manifest, set_gate
from groundqa.ingestion import corpus_fingerprint, ingest_documents, reload_recorded
from groundqa.models import Document
from groundqa.query import Query
from groundqa.text import DEFAULT_ANALYZER

# Fixed cutoffs shown beside the calibrated gate: (name, feature, minimum to answer).
BASELINES = (("coverage>=0.4", "coverage", 0.4), ("cosine>=0.3", "dense_top", 0.3))
RELIABILITY_BINS = 5


@dataclass(frozen=True)
class ProbeFeatures:
    """Every probe's gate features and whether the generator declines its evidence."""

    probes: tuple[Probe, ...]
    names: tuple[str, ...]
    x: Array
    y: Array
    generator_refused: npt.NDArray[np.bool_]
    empty: npt.NDArray[np.bool_]  # no topic words or no passage: refused before any model

    @property
    def kinds(self) -> list[str]:
        return [p.kind for p in self.probes]


def probes_fingerprint(probes: Sequence[Probe]) -> str:
    """A probe set's identity as a calibration records it: its (question, kind) pairs."""
    return probe_fingerprint([(p.question, p.kind) for p in probes])


def feature_names(engine: Engine) -> tuple[str, ...]:
    """The features a model for this index uses: the dense ones only where it has vectors,
    the answer model's where the engine reads with it."""
    return (
        LEXICAL_FEATURES
        + (DENSE_FEATURES if "dense" in engine.retrievers else ())
        + (READER_FEATURES if engine.reader_kind == "model" else ())
    )


def screen(
    engine: Engine, question: Query | str, **fields: Any
) -> tuple[Evidence, dict[str, float]]:
    """What `ask` would hand the gate and the generator, without deciding: calibration
    fits the gate on these, and replays generators on the same evidence."""
    query = Query.of(question, **fields)
    retrieval = engine.retrieval(query)
    reading = engine.read(retrieval)
    evidence = Evidence.of(query, retrieval, reading, engine.passage_text)
    return evidence, gate_features(retrieval, reading)


def probe_features(
    engine: Engine,
    probes: Sequence[Probe],
    *,
    retriever: str | None = None,
    generator: str = "extractive",
    options: GeneratorOptions | None = None,
    progress: Callable[[int], None] | None = None,
) -> ProbeFeatures:
    """Screen every probe once, within its `scope` as `eval` asks it; the generator reads
    the same evidence `ask` would give it."""
    names = feature_names(engine)
    gen = engine.generator(generator, options)
    rows: list[list[float]] = []
    declined: list[bool] = []
    empty: list[bool] = []
    for probe in probes:
        evidence, feats = screen(engine, probe.question, retriever=retriever, scope=probe.scope)
        rows.append([feats.get(n, 0.0) for n in names])
        nothing = not feats or not evidence.weights
        empty.append(nothing)
        declined.append(nothing or gen.generate(evidence).refused)
        if progress is not None:
            progress(1)
    return ProbeFeatures(
        probes=tuple(probes),
        names=names,
        x=np.asarray(rows, dtype=np.float64).reshape(len(rows), len(names)),
        y=np.asarray([1.0 if p.answerable else 0.0 for p in probes]),
        generator_refused=np.asarray(declined, dtype=bool),
        empty=np.asarray(empty, dtype=bool),
    )


def outcome(
    kinds: Sequence[str],
    gate_refused: npt.NDArray[np.bool_],
    generator_refused: npt.NDArray[np.bool_],
    gate_cautious: npt.NDArray[np.bool_] | None = None,
) -> dict[str, dict[str, int]]:
    """Per probe kind: how many there are, refused at the gate, refused by the generator
    after the gate let them through, refused end to end, and of those answered, how many
    with caution (`gate_cautious`: between the gate's floor and its threshold) and how
    many with confidence."""
    out: dict[str, dict[str, int]] = {}
    for kind in KINDS:
        rows = np.asarray([k == kind for k in kinds], dtype=bool)
        if not rows.any():
            continue
        gate = gate_refused & rows
        generator = ~gate_refused & generator_refused & rows
        refused = gate | generator
        cautious = 0 if gate_cautious is None else int((gate_cautious & rows & ~refused).sum())
        out[kind] = {
            "n": int(rows.sum()),
            "gate": int(gate.sum()),
            "generator": int(generator.sum()),
            "refused": int(refused.sum()),
            "cautious": cautious,
            "confident": int(rows.sum()) - int(refused.sum()) - cautious,
        }
    return out


def reliability(y: Array, p: Array, bins: int = RELIABILITY_BINS) -> list[dict[str, float]]:
    """Probabilities in equal-width bins against the share of answerable probes in each."""
    rows = []
    for i in range(bins):
        lo, hi = i / bins, (i + 1) / bins
        inside = (p >= lo) & ((p < hi) if i < bins - 1 else (p <= hi))
        if inside.any():
            rows.append(
                {
                    "lo": lo,
                    "hi": hi,
                    "n": int(inside.sum()),
                    "mean_confidence": round(float(p[inside].mean()), 4),
                    "answerable_share": round(float(y[inside].mean()), 4),
                }
            )
    return rows


def judged(
    data: ProbeFeatures,
    refused: npt.NDArray[np.bool_],
    score: Array,
    cautious: npt.NDArray[np.bool_] | None = None,
) -> dict[str, Any]:
    """A gate's figures on `data`: the ROC AUC of its score, and its outcomes by kind (a
    probe with nothing to look for, or nothing found, counts as refused whatever the gate)."""
    return {
        "auc": round(roc_auc(data.y, score), 4),
        "outcome": outcome(data.kinds, refused | data.empty, data.generator_refused, cautious),
    }


def gate_probability(gate: Gate, data: ProbeFeatures) -> Array:
    """The gate's P(answerable) for each probe, from the features its model reads; 0 for a
    probe with nothing to look for or nothing found."""
    columns = [data.names.index(n) for n in gate.model.names]
    p: Array = gate.model.predict(data.x[:, columns])
    return np.where(data.empty, 0.0, p)


def gate_outcomes(gate: Gate, data: ProbeFeatures) -> dict[str, Any]:
    """`judged` for a gate applied as it stands (its model, threshold, floor and band, as
    `Gate.decide` applies them) to `data`."""
    p = gate_probability(gate, data)
    passes = p >= gate.floor
    if gate.band is not None:
        passes |= gate_probability(gate.band, data) >= gate.band.floor
    return judged(data, ~passes, p, passes & (p < gate.threshold))


def baselines(data: ProbeFeatures) -> dict[str, dict[str, Any]]:
    """`judged` for each fixed cutoff in `BASELINES` whose feature `data` has."""
    out: dict[str, dict[str, Any]] = {}
    for name, feature, cutoff in BASELINES:
        if feature in data.names:
            column = data.x[:, data.names.index(feature)]
            out[name] = judged(data, column < cutoff, column)
    return out


@dataclass
class CalibrationReport:
    """The fitted gate, and how it and the fixed cutoffs do on questions they did not see."""

    gate: Gate
    data: ProbeFeatures
    probability: Array  # nested out-of-fold P(answerable) per probe
    refused: npt.NDArray[np.bool_]  # the cross-validated gate's refusal of each probe
    results: dict[str, dict[str, Any]]  # method -> {"auc", "outcome", ...}
    operating: dict[str, dict[str, float]]  # "5%", "10%" -> reading of the out-of-fold curve

    def to_dict(self) -> dict[str, Any]:
        return {
            "gate": self.gate.to_dict(),
            "results": self.results,
            "operating_points": self.operating,
            "reliability": reliability(self.data.y, self.probability),
            "probes": [
                {
                    "id": p.id,
                    "kind": p.kind,
                    "confidence_cv": round(float(self.probability[i]), 4),
                    "gate_refused_cv": bool(self.refused[i]),
                    "generator_refused": bool(self.data.generator_refused[i]),
                    "features": dict(zip(self.data.names, self.data.x[i].tolist(), strict=True)),
                }
                for i, p in enumerate(self.data.probes)
            ],
        }


def calibrate(
    engine: Engine,
    probes: Sequence[Probe],
    *,
    target: float = DEFAULT_TARGET,
    folds: int = DEFAULT_FOLDS,
    retriever: str | None = None,
    generator: str = "extractive",
    options: GeneratorOptions | None = None,
    progress: Callable[[int], None] | None = None,
) -> CalibrationReport:
    """Fit the gate for `engine`'s index on `probes` and measure it by cross-validation."""
    y = np.asarray([1.0 if p.answerable else 0.0 for p in probes])
    check_labels(y)
    data = probe_features(
        engine,
        probes,
        retriever=retriever,
        generator=generator,
        options=options,
        progress=progress,
    )
    return fit_report(
        data,
        target=target,
        folds=folds,
        info={
            "index_fingerprint": engine.manifest.fingerprint,
            "build_id": engine.manifest.build_id,
            "retriever": retriever or engine.default_retriever,
            "generator": generator,
        },
    )


def fit_report(
    data: ProbeFeatures,
    *,
    target: float = DEFAULT_TARGET,
    folds: int = DEFAULT_FOLDS,
    info: Mapping[str, Any] | None = None,
) -> CalibrationReport:
    """The gate fitted on all of `data`, and cross-validated figures for it and the baselines."""
    x, y = data.x, data.y
    check_labels(y)
    names = data.names
    # Paraphrases of one question share a fold, in the threshold's folds as in the figures'.
    groups = group_codes([p.group for p in data.probes])
    model = fit_logistic(x, y, names)
    outside = np.asarray([k == "out_of_scope" for k in data.kinds], dtype=bool)
    threshold, floor = cuts_from_folds(x, y, names, target, folds, groups=groups, outside=outside)
    cv = cross_validate(x, y, names, target=target, folds=folds, groups=groups, outside=outside)
    # A question with no topic words or no passage is refused before any model runs.
    refused = cv.refused | data.empty
    probability = np.where(data.empty, 0.0, cv.probability)
    results = {
        "calibrated": {
            **judged(data, refused, probability, cv.cautious),
            "thresholds": [round(t, 4) for t in cv.thresholds],
            "floors": [round(t, 4) for t in cv.floors],
        },
        **baselines(data),
    }
    operating = {f"{rate:.0%}": refusal_at(y, probability, rate) for rate in (0.05, 0.10)}
    answerable = int(y.sum())
    stored = {
        **(info or {}),
        "probe_fingerprint": probes_fingerprint(data.probes),
        "features": FEATURES_VERSION,
        "target_false_refusal": target,
        "probes": {"answerable": answerable, "unanswerable": len(y) - answerable},
        "folds": cv.folds,
        "cv_auc": results["calibrated"]["auc"],
        "calibrated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    gate = Gate(model, threshold, calibrated=True, info=stored, floor_at=floor)
    return CalibrationReport(gate, data, probability, refused, results, operating)


def install(index_dir: str | Path, stored: Mapping[str, Any]) -> Manifest:
    """Store a calibration in the index's manifest, refusing one made for another index.

    `stored` is a gate as `Gate.to_dict()` writes it (what `calibrate --export`
    saves); its `index_fingerprint` must name the index's current build.
    """
    if not stored.get("calibrated") or "index_fingerprint" not in stored:
        raise CalibrationError(
            "that file holds no calibration (no `calibrated` gate with an `index_fingerprint`); "
            "write one with `groundqa calibrate --export FILE`"
        )
    model = calibrated_gate(stored).model
    manifest = current_manifest(index_dir)
    fingerprint = str(stored["index_fingerprint"])
    if fingerprint != manifest.fingerprint:
        raise CalibrationError(
            f"this calibration was made for another index (fingerprint {fingerprint[:12]}, "
            f"this one is {manifest.fingerprint[:12]}); run `groundqa calibrate --index "
            f"{index_dir} --probes FILE` on this index"
        )
    missing = (
        set(model.names)
        - set(LEXICAL_FEATURES)
        - set(READER_FEATURES)
        - (set(DENSE_FEATURES) if manifest.dense else set())
    )
    if missing:
        raise CalibrationError(
            f"the calibration uses features this index cannot give ({', '.join(sorted(missing))})"
        )
    return set_gate(index_dir, dict(stored), fingerprint)


SYNTHETIC_PROBES = 400
SYNTHETIC_METHOD = "mixed"


def calibrate_synthetic(
    engine: Engine,
    *,
    n: int = SYNTHETIC_PROBES,
    method: str = SYNTHETIC_METHOD,
    seed: int = 0,
    target: float = DEFAULT_TARGET,
    folds: int = DEFAULT_FOLDS,
    progress: Callable[[int], None] | None = None,
) -> CalibrationReport:
    """Fit the gate for `engine`'s index on probes made from its own corpus (see
    `synthetic.make_probes`), without a probe set.

    The corpus is read again from the sources the build records, and must be the one it
    was built from. The probes are asked of a BM25-only build of it, made in a scratch
    directory with the index's chunking, whose near misses' sentences are removed; the
    gate is fitted on the lexical features, which read the same on the index itself,
    and stored for the index. Its figures are cross-validated on the made probes, not
    on real questions.
    """
    manifest = engine.manifest
    sources = [str(s) for s in manifest.corpus.get("sources", [])]
    missing = [s for s in sources if not Path(s).exists()]
    if not sources or missing:
        where = f" ({missing[0]} is gone)" if missing else ""
        raise CalibrationError(
            f"the sources this index was built from cannot be read again{where}; "
            "calibrate it on a probe set (--probes FILE) instead"
        )
    documents = reload_recorded(manifest).documents
    if corpus_fingerprint(documents) != manifest.corpus.get("fingerprint"):
        raise CalibrationError(
            "the sources changed since this build; run ingest again, then calibrate"
        )
    made, data = synthetic_features(
        documents, manifest.chunker, n=n, method=method, seed=seed, progress=progress
    )
    return fit_report(
        data,
        target=target,
        folds=folds,
        info={
            "index_fingerprint": manifest.fingerprint,
            "build_id": manifest.build_id,
            "retriever": engine.default_retriever,
            "generator": "extractive",
            "synthetic": {"method": method, "seed": seed, "made": made.counts()},
        },
    )


def synthetic_features(
    documents: Sequence[Document],
    chunker: Mapping[str, Any],
    *,
    n: int,
    method: str,
    seed: int,
    analyzer: str = DEFAULT_ANALYZER,
    progress: Callable[[int], None] | None = None,
) -> tuple[SyntheticProbes, ProbeFeatures]:
    """About `n` probes made from `documents` (`synthetic.make_probes`), and their features
    as `ask` reads them from a BM25-only build of the documents without the near misses'
    sentences, made in a scratch directory with the `chunker` settings of the index they
    stand for. The lexical features read the same on that build as on the index itself."""
    made = make_probes(documents, n=n, method=method, seed=seed, analyzer=analyzer)
    with tempfile.TemporaryDirectory(prefix="groundqa-synthetic-") as scratch:
        ingest_documents(
            made.documents,
            Path(scratch) / "index",
            chunker=ChunkerSettings.from_dict(dict(chunker)),
            dense=None,
        )
        engine = Engine.open(Path(scratch) / "index", reader="lexical")
        try:
            data = probe_features(engine, made.probes, progress=progress)
        finally:
            engine.store.close()
    return made, data
