"""The decision: a logistic model over the features, and the two cuts that split its
probability into three outcomes.

- at or over the `threshold`: a confident answer;
- from the `floor` up to the threshold: a cautious one, the closest passage, which
  may not answer the question, cited and marked as such;
- under the floor: a refusal. The floor is the lowest cut that refused every
  out-of-scope question the gate was fitted on (`model.floor_for`), so what sits
  under it looks like a question the corpus does not cover at all.

The default gate may carry a `band`: a second gate that its index fitted on questions
made from its own text (`evaluate.selffit`). It only widens the cautious band: what
the default would refuse is answered with caution when the band's own probability
reaches the band's floor. It never makes an answer confident, and it never refuses.

An index's own calibration (`groundqa calibrate`) is used when it was made for
this very build; otherwise the built-in default, with a note saying why. A
refusal carries no citation.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from groundqa.errors import CalibrationError
from groundqa.gate.features import FEATURES_VERSION, LEXICAL_FEATURES, READER_FEATURES
from groundqa.gate.model import Logistic
from groundqa.models import GateDecision
from groundqa.read import Reading

CONFIDENT = "confident"
CAUTIOUS = "cautious"
REFUSED = "refused"
OUTCOMES = (CONFIDENT, CAUTIOUS, REFUSED)


@dataclass(frozen=True)
class Gate:
    """A model that maps features to P(answerable), the threshold for a confident answer,
    and the floor below which it refuses (the floor is the threshold when no cautious
    band was fitted: a calibration made before there was one, or one without out-of-scope
    probes)."""

    model: Logistic
    threshold: float
    calibrated: bool
    info: dict[str, Any] = field(default_factory=dict)  # probe/index fingerprints, CV figures
    note: str = ""  # why an index's own calibration is not in use, if it is not
    origin: str = "the bundled example corpus"  # what a built-in default was fitted on
    floor_at: float | None = None  # None: no cautious band
    # A gate the index fitted on its own made questions: cautious, too, from its floor up.
    band: Gate | None = None

    @property
    def floor(self) -> float:
        """Refused below this; the threshold itself where there is no cautious band."""
        return self.threshold if self.floor_at is None else min(self.floor_at, self.threshold)

    @property
    def kind(self) -> str:
        return "calibrated-logistic" if self.calibrated else "default-logistic"

    @cached_property
    def digest(self) -> str:
        """A short hash of everything that decides (model, cuts, fitted-on figures)."""
        settings = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(settings.encode("utf-8")).hexdigest()[:12]

    def for_reading(self, reading: Reading) -> Gate:
        """The gate for this reading: this one, unless it weighs the answer model's scores
        and the model did not read (a question not in its language)."""
        if reading.scored or not set(self.model.names) & set(READER_FEATURES):
            return self
        return default_gate(reader=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "calibrated": self.calibrated,
            "threshold": round(self.threshold, 6),
            "floor": self.floor,  # not rounded: rounded down, it would answer what it refuses
            "model": self.model.to_dict(),
            **({"band": self.band.to_dict()} if self.band else {}),
            **self.info,
        }

    def describe(self) -> str:
        """One line for `inspect`: which gate is in use and what it rests on."""
        if not self.calibrated:
            why = f"{self.note}; " if self.note else "not calibrated: "
            return (
                f"{why}the built-in default (fitted on {self.origin}), "
                f"{self._cuts()}; run `groundqa calibrate --index DIR "
                "--probes FILE` to fit one for this index"
            )
        n = self.info.get("probes", {})
        target = float(self.info.get("target_false_refusal", 0.0))
        made = " made from this corpus" if self.info.get("synthetic") else ""
        return (
            f"calibrated on {n.get('answerable', '?')} answerable and "
            f"{n.get('unanswerable', '?')} unanswerable probes{made} "
            f"(probe set {self.info.get('probe_fingerprint', '?')}, "
            f"{self.info.get('calibrated_at', '?')}); {self._cuts()}, the threshold set "
            f"for {target:.0%} of answerable questions short of it; cross-validated AUC "
            f"{self.info.get('cv_auc', '?')}"
        )

    def _cuts(self) -> str:
        if self.floor >= self.threshold:
            return f"threshold {self.threshold:.3f} (no cautious band)"
        fit = self.info.get("self_fit", {})
        fitted = (
            f" (a floor fitted on {fit.get('questions', '?')} out-of-scope questions made "
            "for this index)"
            if fit
            else ""
        )
        band = ""
        if self.band is not None:
            made = fit.get("band", {}).get("probes", {})
            band = (
                f", or where a gate fitted on {sum(made.values()) or '?'} questions made from "
                f"this corpus gives {self.band.floor:.3f} or more (its cross-validated AUC "
                f"{self.band.info.get('cv_auc', '?')})"
            )
        return (
            f"confident from {self.threshold:.3f}, cautious from {self.floor:.3f}{fitted}"
            f"{band}, refused below"
        )

    def outcome(self, p: float) -> str:
        """`CONFIDENT` at or over the threshold, `CAUTIOUS` from the floor, else `REFUSED`."""
        if p >= self.threshold:
            return CONFIDENT
        return CAUTIOUS if p >= self.floor else REFUSED

    def decide(self, weights: Mapping[str, float], feats: Mapping[str, float]) -> GateDecision:
        """Answer with confidence when P(answerable) reaches the threshold, with caution
        when it reaches the floor; a question with nothing to look for, or nothing found,
        is refused outright."""
        label = "calibrated" if self.calibrated else "default"
        if not weights:
            return self._decision(REFUSED, "the question has no topic words", 0.0, {}, label)
        if not feats:
            return self._decision(REFUSED, "no passage matched the question", 0.0, {}, label)
        p = self.model.probability(feats)
        factors = {k: round(v, 4) for k, v in self.model.factors(feats).items()}
        outcome = self.outcome(p)
        band = self.band.model.probability(feats) if self.band and outcome == REFUSED else None
        if band is not None and self.band and band >= self.band.floor:
            reason = (
                f"confidence {p:.2f} is below the {label} gate's floor {self.floor:.2f}, but "
                f"the gate fitted on this corpus's own questions gives {band:.2f}, at or over "
                f"its floor {self.band.floor:.2f}: the closest passage, which may not answer this"
            )
            return self._decision(CAUTIOUS, reason, p, dict(feats), label, factors, band)
        if outcome == REFUSED:
            cut = "floor" if self.floor < self.threshold else "threshold"
            reason = f"confidence {p:.2f} is below the {label} gate's {cut} {self.floor:.2f}"
        elif outcome == CAUTIOUS:
            reason = (
                f"confidence {p:.2f} is below the {label} gate's threshold "
                f"{self.threshold:.2f} for a confident answer: the closest passage, which "
                "may not answer this"
            )
        else:
            reason = "confident enough to answer"
        return self._decision(outcome, reason, p, dict(feats), label, factors, band)

    def _decision(
        self,
        outcome: str,
        reason: str,
        p: float,
        feats: dict[str, float],
        label: str,
        factors: dict[str, float] | None = None,
        band: float | None = None,
    ) -> GateDecision:
        return GateDecision(
            answer=outcome != REFUSED,
            reason=reason,
            score=round(p, 4),
            threshold=round(self.threshold, 4),
            features=feats,
            factors=factors or {},
            calibrated=self.calibrated,
            outcome=outcome,
            floor=round(self.floor, 4),
            self_fit=bool(self.info.get("self_fit")),
            band=None if band is None else round(band, 4),
            band_floor=None if self.band is None else round(self.band.floor, 4),
        )


# Fitted by `python bench/default_gate.py` on examples/regpack.probes.jsonl over the
# bundled example corpus (a BM25-only build: these features read the same on any index).
# The floor is the lowest cut under which every out-of-scope probe's out-of-fold
# probability falls; from it to the threshold answers are cautious.
DEFAULT_MODEL = Logistic(
    names=LEXICAL_FEATURES,
    mean=(0.589183, 0.548247, 0.210331, 0.088898, 0.211530, 0.536623, 0.049383),
    scale=(0.264969, 0.269360, 0.313895, 0.033426, 0.148901, 0.243235, 0.216666),
    coef=(0.448854, 1.289801, 0.229490, -0.054701, 0.150616, 0.329700, -0.962245),
    intercept=0.747787,
)
DEFAULT_THRESHOLD = 0.383252
DEFAULT_FLOOR = 0.370485

DEFAULT_GATE = Gate(DEFAULT_MODEL, DEFAULT_THRESHOLD, calibrated=False, floor_at=DEFAULT_FLOOR)

# Fitted by `python bench/default_gate.py --reader` on training data only: ClapNQ's
# shared half (its answerable and near-miss questions) and 300 questions of the answer
# model's other training sets as out-of-scope ones. For engines that read with the
# answer model (`--reader model`).
# fmt: off
DEFAULT_READER_MODEL = Logistic(
    names=LEXICAL_FEATURES + READER_FEATURES,
    mean=(0.480024, 0.449341, 0.159718, 0.118981, 0.261280,
          0.347885, 0.074783, 0.331336, 0.114546, 0.235613),
    scale=(0.240290, 0.263718, 0.221807, 0.054155, 0.217742,
           0.259198, 0.263040, 0.321766, 0.148554, 0.257228),
    coef=(-0.274897, 0.370405, -0.541899, -0.208927, 0.774334,
          0.245453, -0.185034, 0.622100, -0.037512, 1.793815),
    intercept=-2.375700,
)
# fmt: on
DEFAULT_READER_THRESHOLD = 0.139977
# Out-of-scope training questions reach past the threshold: no cautious band.
DEFAULT_READER_FLOOR = 0.139977

DEFAULT_READER_GATE = Gate(
    DEFAULT_READER_MODEL,
    DEFAULT_READER_THRESHOLD,
    calibrated=False,
    origin="training data, with the answer model's features",
    floor_at=DEFAULT_READER_FLOOR,
)


# A gate fitted on what the features meant before (see `features.FEATURES_VERSION`).
STALE_CALIBRATION = (
    "the stored calibration was fitted on an earlier version of the gate's features; "
    "using the default gate: run `groundqa calibrate` again"
)
STALE_FLOOR = (
    "not calibrated (the floor this index fitted is for an earlier version of the gate's "
    "features; the next `groundqa ingest` fits it again)"
)


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
    try:  # a calibration made before the cautious band has no floor: it is the threshold
        floor = float(stored.get("floor", threshold))
    except (TypeError, ValueError):
        raise CalibrationError("the calibration's `floor` is not a number") from None
    if not 0.0 <= floor <= threshold:
        raise CalibrationError(
            f"the calibration's floor {floor} is not a probability at or under its threshold"
        )
    info = {
        k: v
        for k, v in stored.items()
        if k not in ("kind", "calibrated", "threshold", "floor", "model")
    }
    return Gate(model, threshold, calibrated=True, info=info, floor_at=floor)


def default_gate(reader: bool = False) -> Gate:
    """The built-in default for an engine that reads with the answer model, or without it."""
    return DEFAULT_READER_GATE if reader else DEFAULT_GATE


def self_fitted(default: Gate, entry: Any, index_fingerprint: str, reader: bool) -> Gate:
    """The default gate with what an index fitted for itself (`evaluate.selffit`), when
    the entry was made for this build: its floor, and the band gate that widens the
    cautious band. The lexical default's only: the answer model's default has no
    cautious band to move."""
    if (
        reader
        or not isinstance(entry, Mapping)
        or entry.get("index_fingerprint") != index_fingerprint
    ):
        return default
    if entry.get("features") != FEATURES_VERSION:
        return replace(default, note=STALE_FLOOR)
    band = _band(entry.get("band"))
    if "skipped" in entry:
        return replace(
            default,
            note=f"not calibrated (the floor was not fitted: {entry['skipped']})",
            band=band,
            info={"self_fit": dict(entry)} if band else {},
        )
    try:
        floor = float(entry["floor"])
    except (KeyError, TypeError, ValueError):
        return default
    if not 0.0 <= floor <= default.threshold:
        return default
    return replace(default, floor_at=floor, info={"self_fit": dict(entry)}, band=band)


def _band(stored: Any) -> Gate | None:
    """The band gate an index fitted (see `Gate.band`), or None where there is none or it
    cannot be read, or it weighs features the lexical default does not give."""
    if not isinstance(stored, Mapping) or "skipped" in stored:
        return None
    try:
        gate = calibrated_gate(stored)
    except CalibrationError:
        return None
    return gate if set(gate.model.names) <= set(LEXICAL_FEATURES) else None


def gate_for(stored: Mapping[str, Any], index_fingerprint: str, reader: bool = False) -> Gate:
    """The gate an index's manifest asks for: its calibration when that was made for this
    index (and reads features this engine gives), else the default for an engine that
    reads with the answer model or without it (with a note saying why, when a calibration
    was set aside)."""
    default = default_gate(reader)
    if not stored.get("calibrated"):
        return self_fitted(default, stored.get("self_fit"), index_fingerprint, reader)
    if stored.get("index_fingerprint") != index_fingerprint:
        return replace(
            default,
            note="the stored calibration was made for another index; using the default gate",
        )
    if stored.get("features") != FEATURES_VERSION:
        return replace(default, note=STALE_CALIBRATION)
    try:
        gate = calibrated_gate(stored)
    except CalibrationError as exc:
        return replace(
            default,
            note=f"the stored calibration cannot be read ({exc.message}); using the default gate",
        )
    if not reader and set(gate.model.names) & set(READER_FEATURES):
        return replace(
            default,
            note="the stored calibration reads the answer model, which this engine does not "
            "run; using the default gate",
        )
    return gate
