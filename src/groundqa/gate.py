"""The gate: answer or refuse, decided from what retrieval and a first reading found.

For every question the engine measures a few signals (`features`), and a small
logistic model turns them into a probability that the corpus can answer it:

- `coverage`: the idf-weighted share of the question's topic terms found in the
  best of the top three passages; `coverage_top1` the same for the first passage.
- `unknown_share`: the idf-weighted share of topic terms the corpus never uses
  (a corpus that has never heard of "Mongolia" cannot answer about it).
- `bm25_top`: the best BM25 score over the most the question's terms could
  score (each term's idf times k1+1), so it reads the same across corpora;
  `bm25_margin`: how far the first passage leads the second, relative to it.
- `dense_top`, `dense_margin`: the best cosine and its lead over the runner-up
  (indexes with vectors only).
- `agreement`: the share of the five best passages that BM25 and the vectors
  both rank there (indexes with vectors only).
- `sentence_coverage`: topic coverage of the best sentence the extractive reader
  would quote, and `type_missing`: 1 when the question asks for a kind of fact
  (a time, an amount, a number, a name) and that sentence does not hold one.

`groundqa calibrate` fits the model on a probe set for one index and stores it,
with its threshold, in the manifest (see `calibration`). An index without one
uses `DEFAULT_GATE`: the same kind of model over the features that read the same
on any corpus, fitted on the bundled example corpus's probes
(`bench/default_gate.py` refits it), with a threshold set for 5% false refusals
there. `groundqa inspect` says which one an index uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import Any

from groundqa.calibration import Logistic
from groundqa.errors import CalibrationError
from groundqa.models import GateDecision

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
# How many of the top passages `coverage` looks at, and `agreement` compares.
COVERAGE_DEPTH = 3
AGREEMENT_DEPTH = 5


def coverage(weights: Mapping[str, float], passage_terms: AbstractSet[str]) -> float:
    """Weighted share of the question's terms (term -> weight) present in `passage_terms`."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in weights.items() if t in passage_terms) / total


@dataclass(frozen=True)
class Reading:
    """What the extractive reader would quote: its best sentence's coverage and fact type."""

    coverage: float = 0.0
    asked: bool = False  # the question asks for a kind of fact (a time, an amount, ...)
    found: bool = False  # the best sentence (or the one after it) holds that kind of fact


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
    if dense is not None:
        d1 = dense[0][1] if dense else 0.0
        d2 = dense[1][1] if len(dense) > 1 else d1
        both = {r for r, _ in lexical[:AGREEMENT_DEPTH]} & {r for r, _ in dense[:AGREEMENT_DEPTH]}
        out["dense_top"] = d1
        out["dense_margin"] = d1 - d2
        out["agreement"] = len(both) / AGREEMENT_DEPTH
    return {k: round(float(v), 6) for k, v in out.items()}


@dataclass(frozen=True)
class Gate:
    """A model that maps features to P(answerable), and the threshold below which it refuses."""

    model: Logistic
    threshold: float
    calibrated: bool
    info: dict[str, Any] = field(default_factory=dict)  # probe/index fingerprints, CV figures
    note: str = ""  # why an index's own calibration is not in use, if it is not

    @property
    def kind(self) -> str:
        return "calibrated-logistic" if self.calibrated else "default-logistic"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "calibrated": self.calibrated,
            "threshold": round(self.threshold, 6),
            "model": self.model.to_dict(),
            **self.info,
        }

    def describe(self) -> str:
        """One line for `inspect`: which gate is in use and what it rests on."""
        if not self.calibrated:
            why = f"{self.note}; " if self.note else "not calibrated: "
            return (
                f"{why}the built-in default (fitted on the bundled example corpus), "
                f"threshold {self.threshold:.3f}; run `groundqa calibrate --index DIR "
                "--probes FILE` to fit one for this index"
            )
        n = self.info.get("probes", {})
        target = float(self.info.get("target_false_refusal", 0.0))
        return (
            f"calibrated on {n.get('answerable', '?')} answerable and "
            f"{n.get('unanswerable', '?')} unanswerable probes "
            f"(probe set {self.info.get('probe_fingerprint', '?')}, "
            f"{self.info.get('calibrated_at', '?')}); threshold {self.threshold:.3f} "
            f"for {target:.0%} false refusal; cross-validated AUC {self.info.get('cv_auc', '?')}"
        )

    def decide(self, weights: Mapping[str, float], feats: Mapping[str, float]) -> GateDecision:
        """Answer when P(answerable) reaches the threshold; a question with nothing to look for,
        or nothing found, is refused outright."""
        label = "calibrated" if self.calibrated else "default"
        if not weights:
            return self._decision(False, "the question has no topic words", 0.0, {}, label)
        if not feats:
            return self._decision(False, "no passage matched the question", 0.0, {}, label)
        p = self.model.probability(feats)
        factors = {k: round(v, 4) for k, v in self.model.factors(feats).items()}
        if p < self.threshold:
            reason = (
                f"confidence {p:.2f} is below the {label} gate's threshold {self.threshold:.2f}"
            )
            return self._decision(False, reason, p, dict(feats), label, factors)
        return self._decision(True, "confident enough to answer", p, dict(feats), label, factors)

    def _decision(
        self,
        answer: bool,
        reason: str,
        p: float,
        feats: dict[str, float],
        label: str,
        factors: dict[str, float] | None = None,
    ) -> GateDecision:
        return GateDecision(
            answer=answer,
            reason=reason,
            score=round(p, 4),
            threshold=round(self.threshold, 4),
            features=feats,
            factors=factors or {},
            calibrated=self.calibrated,
        )


# Fitted by `python bench/default_gate.py` on examples/regpack.probes.jsonl over the
# bundled example corpus (a BM25-only build: these features read the same on any index).
DEFAULT_MODEL = Logistic(
    names=LEXICAL_FEATURES,
    mean=(0.595889, 0.554953, 0.210331, 0.088866, 0.211458, 0.539413, 0.049383),
    scale=(0.270641, 0.275938, 0.313895, 0.033382, 0.148808, 0.251884, 0.216666),
    coef=(0.555927, 1.410151, 0.260910, -0.103852, 0.093793, 0.187463, -0.959599),
    intercept=0.767506,
)
DEFAULT_THRESHOLD = 0.431171

DEFAULT_GATE = Gate(DEFAULT_MODEL, DEFAULT_THRESHOLD, calibrated=False)


def calibrated_gate(stored: Mapping[str, Any]) -> Gate:
    """A stored calibration read back as a gate, or a `CalibrationError` that says what is
    wrong with it (an unreadable model, a threshold that is not a probability)."""
    model = Logistic.from_dict(stored.get("model", {}))
    try:
        threshold = float(stored["threshold"])
    except (KeyError, TypeError, ValueError):
        raise CalibrationError("the calibration has no numeric `threshold`") from None
    if not 0.0 <= threshold <= 1.0:  # also false for NaN
        raise CalibrationError(f"the calibration's threshold {threshold} is not a probability")
    info = {
        k: v for k, v in stored.items() if k not in ("kind", "calibrated", "threshold", "model")
    }
    return Gate(model, threshold, calibrated=True, info=info)


def gate_for(stored: Mapping[str, Any], index_fingerprint: str) -> Gate:
    """The gate an index's manifest asks for: its calibration when that was made for this
    index, else the default (with a note saying why, when a calibration was set aside)."""
    if not stored.get("calibrated"):
        return DEFAULT_GATE
    if stored.get("index_fingerprint") != index_fingerprint:
        return replace(
            DEFAULT_GATE,
            note="the stored calibration was made for another index; using the default gate",
        )
    try:
        return calibrated_gate(stored)
    except CalibrationError as exc:
        return replace(
            DEFAULT_GATE,
            note=f"the stored calibration cannot be read ({exc.message}); using the default gate",
        )
