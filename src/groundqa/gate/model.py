"""Calibration: from gate features to P(answerable), fitted on a probe set.

The model is a logistic regression over standardised features, fitted by
Newton's method with a small L2 penalty: a handful of numbers a reader can
print and check (`groundqa inspect` does). Its operating threshold is chosen
for a target false-refusal rate on the answerable probes, from out-of-fold
probabilities, never from the probabilities of the questions a model was
fitted to.

Everything here is pure numpy and deterministic: folds are stratified and
assigned by a fixed shuffle, so the same probes give the same figures. Paraphrases
of one question (a probe `group`) always share a fold: a model that saw one
phrasing would otherwise judge the others nearly in-sample, and the cross-validated
figures would flatter it.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from groundqa.errors import CalibrationError

Array = npt.NDArray[np.float64]

# A calibration needs at least this many questions, and both kinds among them.
MIN_PROBES = 10
DEFAULT_TARGET = 0.05
DEFAULT_FOLDS = 5
# The threshold is read off out-of-fold probabilities pooled over this many fold shuffles:
# with a few dozen answerable probes, one shuffle moves the 5% quantile a lot.
THRESHOLD_REPEATS = 5
L2 = 1.0


@dataclass(frozen=True)
class Logistic:
    """P(answerable) = sigmoid(intercept + sum(coef * (x - mean) / scale))."""

    names: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float

    def logit(self, features: Mapping[str, float]) -> float:
        return self.intercept + sum(self.factors(features).values())

    def probability(self, features: Mapping[str, float]) -> float:
        return _sigmoid(self.logit(features))

    def factors(self, features: Mapping[str, float]) -> dict[str, float]:
        """Each feature's push on the log-odds, relative to an average probe (0 = no push)."""
        return {
            name: c * (float(features.get(name, 0.0)) - m) / s
            for name, m, s, c in zip(self.names, self.mean, self.scale, self.coef, strict=True)
        }

    def predict(self, x: Array) -> Array:
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        out: Array = 1.0 / (1.0 + np.exp(-(self.intercept + z @ np.asarray(self.coef))))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "logistic",
            "features": list(self.names),
            "mean": [round(v, 6) for v in self.mean],
            "scale": [round(v, 6) for v in self.scale],
            "coef": [round(v, 6) for v in self.coef],
            "intercept": round(self.intercept, 6),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Logistic:
        try:
            names = tuple(str(n) for n in d["features"])
            model = cls(
                names=names,
                mean=tuple(float(v) for v in d["mean"]),
                scale=tuple(float(v) for v in d["scale"]),
                coef=tuple(float(v) for v in d["coef"]),
                intercept=float(d["intercept"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationError(f"the stored gate model is incomplete ({exc})") from None
        if not len(names) == len(model.mean) == len(model.scale) == len(model.coef):
            raise CalibrationError("the stored gate model has lists of different lengths")
        numbers = (*model.mean, *model.scale, *model.coef, model.intercept)
        if not all(math.isfinite(v) for v in numbers):
            raise CalibrationError("the stored gate model holds a number that is not finite")
        if any(s <= 0 for s in model.scale):
            raise CalibrationError("the stored gate model has a non-positive feature scale")
        return model


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def fit_logistic(x: Array, y: Array, names: Sequence[str], l2: float = L2) -> Logistic:
    """L2-penalised logistic regression on standardised columns (the intercept is not penalised)."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    z = (x - mean) / scale
    design = np.hstack([np.ones((len(z), 1)), z])
    w = np.zeros(design.shape[1])
    penalty = np.full(design.shape[1], l2)
    penalty[0] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(design @ w)))
        grad = design.T @ (p - y) + penalty * w
        hess = (design * (p * (1 - p))[:, None]).T @ design + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return Logistic(
        names=tuple(names),
        mean=tuple(float(v) for v in mean),
        scale=tuple(float(v) for v in scale),
        coef=tuple(float(v) for v in w[1:]),
        intercept=float(w[0]),
    )


def threshold_for(positives: Array, target: float) -> float:
    """The highest cut that refuses at most `target` of these answerable probabilities.

    Refusing means p < threshold; with n positives at most floor(target * n) fall below.
    """
    if positives.size == 0:
        raise CalibrationError("no answerable probabilities to set a threshold from")
    ordered = np.sort(positives)
    allowed = math.floor(target * ordered.size + 1e-9)
    return float(ordered[min(allowed, ordered.size - 1)])


def floor_for(outside: Array, threshold: float) -> float:
    """The lowest cut that refuses every one of these out-of-scope probabilities, never
    above `threshold` (no out-of-scope probability: `threshold`, so nothing is cautious).

    Below the floor the gate refuses; from the floor to the threshold it answers with
    caution; at the threshold and above, with confidence.
    """
    if outside.size == 0:
        return threshold
    return min(threshold, float(np.nextafter(float(outside.max()), 1.0)))


def group_codes(groups: Sequence[str | None]) -> npt.NDArray[np.intp]:
    """One integer per row naming its group; a row without a group is a group of its own."""
    codes: dict[str, int] = {}
    out = np.empty(len(groups), dtype=np.intp)
    for row, name in enumerate(groups):
        key = f"row:{row}" if name is None else f"group:{name}"
        out[row] = codes.setdefault(key, len(codes))
    return out


def _members(y: Array, groups: npt.NDArray[np.intp] | None) -> list[npt.NDArray[np.intp]]:
    """The rows of each group, groups in order of first appearance (no groups: one row each)."""
    if groups is None:
        return [np.asarray([row], dtype=np.intp) for row in range(len(y))]
    if len(groups) != len(y):
        raise ValueError(f"{len(groups)} group codes for {len(y)} rows")
    _, first, inverse = np.unique(groups, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    return [np.flatnonzero(inverse == g) for g in order]


def _majority(y: Array, rows: npt.NDArray[np.intp]) -> float:
    """The label a group is balanced as: its majority label (a tie counts as answerable)."""
    return 1.0 if float(y[rows].mean()) >= 0.5 else 0.0


def stratified_folds(
    y: Array, k: int, seed: int = 0, groups: npt.NDArray[np.intp] | None = None
) -> list[npt.NDArray[np.intp]]:
    """k index sets, each with about the same share of each label, fixed by `seed`.

    The rows of one group (`group_codes`) always land in the same set. Per label,
    the groups are shuffled, then placed largest first, each in the set that holds
    the fewest rows of that label so far (the first such set on a tie). Without
    groups, or with one row per group, that is a round robin over the shuffled rows.
    """
    rng = np.random.default_rng(seed)
    members = _members(y, groups)
    folds: list[list[int]] = [[] for _ in range(k)]
    held = np.zeros((k, 2), dtype=np.intp)  # rows of label 0 and of label 1 in each set
    for label in (0.0, 1.0):
        mine = [rows for rows in members if _majority(y, rows) == label]
        shuffled = np.arange(len(mine))
        rng.shuffle(shuffled)
        # Stable: groups of one size keep their shuffled order.
        for g in sorted(shuffled.tolist(), key=lambda g: -len(mine[g])):
            rows = mine[g]
            target = int(np.argmin(held[:, int(label)]))
            folds[target].extend(int(r) for r in rows)
            held[target, 1] += int((y[rows] == 1).sum())
            held[target, 0] += len(rows) - int((y[rows] == 1).sum())
    return [np.asarray(sorted(f), dtype=np.intp) for f in folds if f]


def fold_count(
    y: Array, wanted: int = DEFAULT_FOLDS, groups: npt.NDArray[np.intp] | None = None
) -> int:
    """As many folds as asked, but never more than the rarer label has groups (members,
    without groups): a fold with none of a label could not be scored on it."""
    labels = [_majority(y, rows) for rows in _members(y, groups)]
    smaller = min(labels.count(1.0), labels.count(0.0))
    return max(2, min(wanted, smaller))


def out_of_fold(
    x: Array,
    y: Array,
    names: Sequence[str],
    k: int,
    seed: int = 0,
    groups: npt.NDArray[np.intp] | None = None,
) -> Array:
    """Each probe's probability from a model fitted without it (nor its paraphrases)."""
    p = np.zeros(len(y))
    for test in stratified_folds(y, k, seed, groups):
        train = np.setdiff1d(np.arange(len(y)), test)
        p[test] = fit_logistic(x[train], y[train], names).predict(x[test])
    return p


def cuts_from_folds(
    x: Array,
    y: Array,
    names: Sequence[str],
    target: float,
    folds: int,
    seed: int = 0,
    groups: npt.NDArray[np.intp] | None = None,
    outside: npt.NDArray[np.bool_] | None = None,
) -> tuple[float, float]:
    """The threshold for `target` false refusals and the caution floor (`floor_for`), from
    one set of out-of-fold probabilities pooled over `THRESHOLD_REPEATS` fold shuffles:
    the answerable probes' for the threshold, the out-of-scope ones' (`outside`) for the
    floor (the threshold itself when there are none)."""
    k = fold_count(y, folds, groups)
    pooled = [out_of_fold(x, y, names, k, seed + r, groups) for r in range(THRESHOLD_REPEATS)]
    threshold = threshold_for(np.concatenate([p[y == 1] for p in pooled]), target)
    if outside is None or not outside.any():
        return threshold, threshold
    return threshold, floor_for(np.concatenate([p[outside] for p in pooled]), threshold)


def roc_auc(y: Array, p: Array) -> float:
    """Area under the ROC curve: P(answerable scores above unanswerable), ties count half."""
    pos = p[y == 1]
    neg = p[y == 0]
    if pos.size == 0 or neg.size == 0:
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return float((greater + 0.5 * ties) / (pos.size * neg.size))


def refusal_at(y: Array, p: Array, false_refusal: float) -> dict[str, float]:
    """Reading the curve: the cut that refuses `false_refusal` of answerable, and what it refuses."""
    cut = threshold_for(p[y == 1], false_refusal)
    return {
        "threshold": cut,
        "false_refusal": float((p[y == 1] < cut).mean()),
        "refused_unanswerable": float((p[y == 0] < cut).mean()),
    }


@dataclass(frozen=True)
class CrossValidation:
    """Honest figures for a calibration: every decision from a model that never saw the probe."""

    probability: Array  # out-of-fold P(answerable) per probe
    refused: npt.NDArray[np.bool_]  # refusal below the floor chosen on the training folds
    thresholds: tuple[float, ...]  # one per outer fold
    folds: int
    # Answered with caution: at or over the fold's floor, under its threshold (none
    # without out-of-scope probes: the floor is then the threshold).
    cautious: npt.NDArray[np.bool_] | None = None
    floors: tuple[float, ...] = ()  # one per outer fold

    def auc(self, y: Array) -> float:
        return roc_auc(y, self.probability)


def cross_validate(
    x: Array,
    y: Array,
    names: Sequence[str],
    *,
    target: float = DEFAULT_TARGET,
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    groups: npt.NDArray[np.intp] | None = None,
    outside: npt.NDArray[np.bool_] | None = None,
) -> CrossValidation:
    """Nested cross-validation: each outer fold's model, threshold and floor come from
    the other folds.

    The threshold for a fold is set from inner out-of-fold probabilities on its
    training part, and its caution floor from those of the out-of-scope probes there
    (`outside`; both by `cuts_from_folds`), exactly as `calibrate`
    sets the stored ones, so the refusals reported here are what a deployed calibration
    would do on unseen questions. With `groups` (`group_codes`), no fold, outer or
    inner, splits a group, so no probe is judged by a model that saw one of its
    paraphrases.
    """
    check_labels(y)
    k = fold_count(y, folds, groups)
    outside = np.zeros(len(y), dtype=bool) if outside is None else outside
    p = np.zeros(len(y))
    refused = np.zeros(len(y), dtype=bool)
    cautious = np.zeros(len(y), dtype=bool)
    cuts: list[float] = []
    floors: list[float] = []
    for test in stratified_folds(y, k, seed, groups):
        train = np.setdiff1d(np.arange(len(y)), test)
        inner = None if groups is None else groups[train]
        model = fit_logistic(x[train], y[train], names)
        cut, floor = cuts_from_folds(
            x[train], y[train], names, target, folds, seed + 1, inner, outside[train]
        )
        p[test] = model.predict(x[test])
        refused[test] = p[test] < floor
        cautious[test] = (p[test] >= floor) & (p[test] < cut)
        cuts.append(cut)
        floors.append(floor)
    return CrossValidation(p, refused, tuple(cuts), k, cautious, tuple(floors))


def check_labels(y: Array) -> None:
    """A calibration needs enough questions, and both answerable and unanswerable ones."""
    n = len(y)
    positives = int((y == 1).sum())
    if n < MIN_PROBES:
        raise CalibrationError(
            f"calibration needs at least {MIN_PROBES} probes and the file has {n}; "
            "add answerable questions and out_of_scope or near_miss ones"
        )
    if positives == n:
        raise CalibrationError(
            "the probe file has no negative questions; calibration needs some the corpus "
            'cannot answer (`"kind": "out_of_scope"` or `"near_miss"`) to learn when to refuse'
        )
    if positives < 2 or n - positives < 2:
        raise CalibrationError(
            f"calibration needs at least 2 answerable and 2 unanswerable probes "
            f"(has {positives} and {n - positives})"
        )


def probe_fingerprint(items: Sequence[tuple[str, str]]) -> str:
    """Identifies a probe set by its (question, kind) pairs, in any order."""
    canon = json.dumps(sorted(items), ensure_ascii=False)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()[:16]
