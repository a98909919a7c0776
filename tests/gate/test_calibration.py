"""The calibration maths, checked against values worked out by hand.

Nothing here touches an index: `calibration` is pure numpy. The gate that uses
the fitted model is tested in `test_gate.py`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from groundqa.errors import CalibrationError
from groundqa.gate.model import (
    MIN_PROBES,
    CrossValidation,
    Logistic,
    check_labels,
    cross_validate,
    fit_logistic,
    fold_count,
    group_codes,
    out_of_fold,
    probe_fingerprint,
    refusal_at,
    roc_auc,
    stratified_folds,
    threshold_for,
)


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def logit(p: float) -> float:
    return math.log(p / (1.0 - p))


# ------------------------------------------------------------------ fit_logistic


def test_single_binary_feature_without_penalty_is_the_closed_form_mle() -> None:
    # x = 0: 10 probes, 3 answerable (p = 0.3); x = 1: 15 probes, 12 answerable (p = 0.8).
    # The unpenalised MLE puts each group's log-odds exactly on its observed share.
    x = np.asarray([[0.0]] * 10 + [[1.0]] * 15)
    y = np.asarray([1.0] * 3 + [0.0] * 7 + [1.0] * 12 + [0.0] * 3)
    model = fit_logistic(x, y, ["flag"], l2=0.0)
    mean, scale = 0.6, math.sqrt(0.6 * 0.4)
    assert model.names == ("flag",)
    assert model.mean == pytest.approx((mean,), abs=1e-12)
    assert model.scale == pytest.approx((scale,), abs=1e-12)
    low, high = logit(0.3), logit(0.8)
    # intercept + coef * (x - 0.6) / scale hits `low` at x = 0 and `high` at x = 1.
    assert model.coef[0] == pytest.approx((high - low) * scale, abs=1e-4)
    assert model.intercept == pytest.approx(low + mean * (high - low), abs=1e-4)
    assert model.predict(np.asarray([[0.0], [1.0]])) == pytest.approx([0.3, 0.8], abs=1e-4)
    assert model.probability({"flag": 1.0}) == pytest.approx(0.8, abs=1e-4)
    # The L2 penalty shrinks the slope towards 0 (the intercept is not penalised).
    shrunk = fit_logistic(x, y, ["flag"], l2=5.0)
    assert 0.0 < shrunk.coef[0] < model.coef[0] - 0.1


def test_coefficients_follow_the_signal_strength_and_sign() -> None:
    rng = np.random.default_rng(7)
    n = 3000
    x = rng.normal(size=(n, 3))
    x = np.hstack([x, np.full((n, 1), 4.0)])  # a constant column says nothing
    truth = 2.0 * x[:, 0] + 0.5 * x[:, 1] - 1.0 * x[:, 2]
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-truth))).astype(np.float64)
    model = fit_logistic(x, y, ["strong", "weak", "negative", "constant"])
    strong, weak, negative, constant = model.coef
    assert strong > -negative > weak > 0 > negative
    # Standardised columns of unit variance: the coefficients estimate the true ones.
    assert (strong, weak, negative) == pytest.approx((2.0, 0.5, -1.0), abs=0.25)
    assert model.mean[3] == 4.0 and model.scale[3] == 1.0
    assert abs(constant) < 1e-9


# ------------------------------------------------------------------ threshold_for


POSITIVES = np.asarray([0.7, 0.1, 1.0, 0.4, 0.2, 0.9, 0.3, 0.6, 0.5, 0.8])


@pytest.mark.parametrize(
    ("target", "cut", "below"),
    [
        (0.0, 0.1, 0),  # refuse none: the lowest positive itself still answers
        (0.05, 0.1, 0),  # floor(0.5) = 0 may fall below
        (0.10, 0.2, 1),  # floor(1.0) = 1: exactly the 0.1 falls below
        (0.15, 0.2, 1),
        (0.25, 0.3, 2),
        (0.5, 0.6, 5),
        (1.0, 1.0, 9),  # cannot refuse more than all but the best
    ],
)
def test_threshold_refuses_at_most_floor_target_n_positives(
    target: float, cut: float, below: int
) -> None:
    got = threshold_for(POSITIVES, target)
    assert got == cut
    refused = int(np.less(POSITIVES, got).sum())  # refusing means p < threshold
    assert refused == below <= math.floor(target * POSITIVES.size)


def test_threshold_with_ties_and_without_positives() -> None:
    tied = np.asarray([0.2, 0.2, 0.2, 0.9])
    assert threshold_for(tied, 0.5) == 0.2  # the cut falls inside the tie: nobody below
    with pytest.raises(CalibrationError, match="no answerable probabilities"):
        threshold_for(np.asarray([]), 0.05)


def test_refusal_at_reads_the_curve() -> None:
    y = np.asarray([1.0, 1.0, 1.0, 1.0, 0.0, 0.0])
    p = np.asarray([0.2, 0.4, 0.6, 0.8, 0.3, 0.7])
    # 25% of 4 positives: one may fall below, so the cut is the second lowest, 0.4;
    # of the negatives only 0.3 is below it.
    assert refusal_at(y, p, 0.25) == {
        "threshold": 0.4,
        "false_refusal": 0.25,
        "refused_unanswerable": 0.5,
    }
    assert refusal_at(y, p, 0.0) == {
        "threshold": 0.2,
        "false_refusal": 0.0,
        "refused_unanswerable": 0.0,
    }


# ------------------------------------------------------------------ roc_auc


def test_auc_counts_ties_as_half() -> None:
    y = np.asarray([1.0, 1.0, 0.0, 0.0, 1.0])
    p = np.asarray([0.9, 0.5, 0.5, 0.1, 0.3])
    # pairs (pos, neg): 0.9>0.5, 0.9>0.1, 0.5=0.5 (half), 0.5>0.1, 0.3<0.5, 0.3>0.1 -> 4.5 / 6
    assert roc_auc(y, p) == 0.75
    assert roc_auc(y, np.full(5, 0.4)) == 0.5
    assert roc_auc(y, y) == 1.0
    assert roc_auc(y, 1.0 - y) == 0.0
    assert math.isnan(roc_auc(np.ones(3), np.asarray([0.1, 0.2, 0.3])))


# ------------------------------------------------------------------ folds


# 13 answerable and 7 unanswerable, interleaved.
LABELS = np.asarray([1.0, 0.0, 1.0, 1.0, 0.0] * 3 + [1.0, 1.0, 1.0, 1.0, 0.0])


def test_stratified_folds_partition_every_row_once_with_balanced_labels() -> None:
    assert int(LABELS.sum()) == 13 and LABELS.size == 20
    folds = stratified_folds(LABELS, 5)
    assert len(folds) == 5
    assert sorted(np.concatenate(folds).tolist()) == list(range(20))
    # Round robin per label: 13 answerable as 3,3,3,2,2 and 7 unanswerable as 2,2,1,1,1.
    counts = [(int(LABELS[f].sum()), int((LABELS[f] == 0).sum())) for f in folds]
    assert counts == [(3, 2), (3, 2), (3, 1), (2, 1), (2, 1)]
    again = stratified_folds(LABELS, 5)
    assert all(np.array_equal(a, b) for a, b in zip(folds, again, strict=True))
    other = stratified_folds(LABELS, 5, seed=1)
    assert not all(np.array_equal(a, b) for a, b in zip(folds, other, strict=True))


def test_fold_count_never_exceeds_the_rarer_label() -> None:
    assert fold_count(LABELS, 5) == 5
    assert fold_count(LABELS, 10) == 7
    assert fold_count(np.asarray([1.0, 1.0, 1.0, 0.0]), 5) == 2
    # more folds than members of a label: the empty ones are dropped
    folds = stratified_folds(np.asarray([1.0, 1.0, 0.0]), 5)
    assert len(folds) == 2 and sorted(np.concatenate(folds).tolist()) == [0, 1, 2]


def test_group_codes_number_groups_and_give_each_ungrouped_row_its_own() -> None:
    codes = group_codes(["train", None, "train", "trail", None, "trail"])
    assert codes.tolist() == [0, 1, 0, 2, 3, 2]
    assert group_codes([None, None]).tolist() == [0, 1]


def test_without_paraphrases_group_aware_folds_are_the_plain_ones() -> None:
    # One row per group is the round robin of before, for every seed: the figures of a
    # probe set without groups do not move.
    singletons = group_codes([None] * LABELS.size)
    named = group_codes([f"q{i}" for i in range(LABELS.size)])
    for seed in range(4):
        plain = stratified_folds(LABELS, 5, seed)
        for groups in (singletons, named):
            folds = stratified_folds(LABELS, 5, seed, groups)
            assert all(np.array_equal(a, b) for a, b in zip(plain, folds, strict=True))


# 28 answerable rows in paraphrase groups of 4, 3, 3, 2, 2, 2 and 12 alone; 12 unanswerable
# rows, a pair of near misses among them.
GROUPED_Y = np.asarray([1.0] * 28 + [0.0] * 12)
GROUP_NAMES = (
    ["a"] * 4 + ["b"] * 3 + ["c"] * 3 + ["d"] * 2 + ["e"] * 2 + ["f"] * 2 + [None] * 12
) + (["n"] * 2 + [None] * 10)


def test_paraphrases_share_a_fold_and_labels_stay_balanced() -> None:
    groups = group_codes(GROUP_NAMES)
    for seed in range(6):
        folds = stratified_folds(GROUPED_Y, 5, seed, groups)
        assert sorted(np.concatenate(folds).tolist()) == list(range(40))
        fold_of = {int(r): n for n, fold in enumerate(folds) for r in fold}
        for g in set(groups.tolist()):
            assert len({fold_of[int(r)] for r in np.flatnonzero(groups == g)}) == 1, g
        # 28 answerable over 5 folds is 5 or 6 each when nothing is split; whole groups
        # of up to 4 may push a fold one past that, never further.
        answerable = sorted(int(GROUPED_Y[f].sum()) for f in folds)
        assert answerable[0] >= 5 and answerable[-1] <= 7 and sum(answerable) == 28
        unanswerable = sorted(int((GROUPED_Y[f] == 0).sum()) for f in folds)
        assert unanswerable[-1] - unanswerable[0] <= 1
    assert not all(
        np.array_equal(a, b)
        for a, b in zip(
            stratified_folds(GROUPED_Y, 5, 0, groups),
            stratified_folds(GROUPED_Y, 5, 1, groups),
            strict=True,
        )
    )


def test_fold_count_counts_groups_not_rows() -> None:
    y = np.asarray([1.0] * 10 + [0.0] * 6)
    assert fold_count(y, 5) == 5
    # the six unanswerable rows are three pairs of paraphrases: three folds at most
    groups = group_codes([None] * 10 + ["x", "x", "y", "y", "z", "z"])
    assert fold_count(y, 5, groups) == 3
    assert len(stratified_folds(y, 3, 0, groups)) == 3


def _twins(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """20 questions asked twice (identical features), labels that the features do not
    carry: only a model that saw a question's twin can tell its label."""
    rng = np.random.default_rng(seed)
    labels = np.asarray([1.0] * 12 + [0.0] * 8)
    rng.shuffle(labels)
    x = np.repeat(rng.normal(size=(20, 12)), 2, axis=0)
    return x, np.repeat(labels, 2), group_codes([f"q{i // 2}" for i in range(40)])


TWELVE = [f"f{i}" for i in range(12)]


def test_a_paraphrase_never_trains_the_model_that_judges_its_twin() -> None:
    x, y, groups = _twins(0)
    fold = stratified_folds(y, 5, 0, groups)[1]
    i = int(fold[0])
    twin = i + 1 if i % 2 == 0 else i - 1
    moved = x.copy()
    moved[twin] = 9.0  # an absurd outlier
    before = out_of_fold(x, y, TWELVE, 5, groups=groups)
    after = out_of_fold(moved, y, TWELVE, 5, groups=groups)
    assert twin in fold and after[i] == before[i]
    honest = cross_validate(x, y, TWELVE, groups=groups)
    for f, cut in zip(stratified_folds(y, 5, 0, groups), honest.thresholds, strict=True):
        assert np.array_equal(honest.refused[f], honest.probability[f] < cut)


@pytest.mark.parametrize("seed", range(4))
def test_twins_split_across_folds_make_noise_look_like_signal(seed: int) -> None:
    # What the groups are for: the same data, cross-validated with the twins free to
    # split, scores a far higher AUC than the features can earn.
    x, y, groups = _twins(seed)
    leaky = cross_validate(x, y, TWELVE).auc(y)
    honest = cross_validate(x, y, TWELVE, groups=groups).auc(y)
    assert leaky > 0.8 and leaky - honest > 0.15


def _probe_set() -> tuple[np.ndarray, np.ndarray]:
    """30 probes, three noisy features that carry the label; labels alternate."""
    rng = np.random.default_rng(3)
    y = np.asarray([1.0, 0.0] * 15)
    x = rng.normal(size=(30, 3)) + np.outer(y, [2.0, 1.0, -0.5])
    return x, y


def _same_fold_swap(y: np.ndarray, k: int) -> tuple[int, int, np.ndarray]:
    """An answerable i and an unanswerable j in one fold whose labels can be swapped
    without moving any probe to another fold (the folds are stratified by label)."""
    folds = stratified_folds(y, k)
    for fold in folds:
        for i in fold[y[fold] == 1]:
            for j in fold[y[fold] == 0]:
                swapped = y.copy()
                swapped[[i, j]] = swapped[[j, i]]
                moved = stratified_folds(swapped, k)
                if all(np.array_equal(a, b) for a, b in zip(folds, moved, strict=True)):
                    return int(i), int(j), fold
    raise AssertionError("no label swap keeps the folds; the fixture needs another seed")


def test_a_probes_own_label_never_reaches_its_out_of_fold_probability() -> None:
    x, y = _probe_set()
    names = ["a", "b", "c"]
    i, j, fold = _same_fold_swap(y, 5)
    swapped = y.copy()
    swapped[[i, j]] = [0.0, 1.0]
    before = out_of_fold(x, y, names, 5)
    after = out_of_fold(x, swapped, names, 5)
    # i and j (and their fold-mates) are scored by a model fitted on the other folds only
    assert np.array_equal(after[fold], before[fold])
    others = np.setdiff1d(np.arange(30), fold)
    assert not np.allclose(after[others], before[others])  # the labels did reach those models

    cv = cross_validate(x, y, names, target=0.1, folds=5)
    cv2 = cross_validate(x, swapped, names, target=0.1, folds=5)
    f = next(n for n, rows in enumerate(stratified_folds(y, 5)) if i in rows)
    assert np.array_equal(cv2.probability[fold], cv.probability[fold])
    assert np.array_equal(cv2.refused[fold], cv.refused[fold])
    assert cv2.thresholds[f] == cv.thresholds[f]
    assert cv2.thresholds != cv.thresholds


def test_a_probes_features_reach_no_model_that_scores_its_fold() -> None:
    x, y = _probe_set()
    names = ["a", "b", "c"]
    fold = stratified_folds(y, 5)[2]
    i = int(fold[0])
    moved = x.copy()
    moved[i] = [9.0, -9.0, 9.0]  # an absurd outlier
    before = out_of_fold(x, y, names, 5)
    after = out_of_fold(moved, y, names, 5)
    mates = fold[fold != i]
    assert np.array_equal(after[mates], before[mates])
    others = np.setdiff1d(np.arange(30), fold)
    assert not np.allclose(after[others], before[others])


def test_cross_validation_refuses_below_its_own_folds_threshold() -> None:
    x, y = _probe_set()
    cv = cross_validate(x, y, ["a", "b", "c"], target=0.1, folds=5)
    assert cv.folds == 5 and len(cv.thresholds) == 5
    for fold, cut in zip(stratified_folds(y, 5), cv.thresholds, strict=True):
        assert np.array_equal(cv.refused[fold], cv.probability[fold] < cut)
    assert cv.auc(y) > 0.8  # the features do carry the label


def test_cross_validation_auc_is_over_the_out_of_fold_probabilities() -> None:
    # The pairs of test_auc_counts_ties_as_half: 4.5 of 6 (answerable, unanswerable)
    # pairs are ordered right, so 0.75; the refusals and thresholds play no part.
    y = np.asarray([1.0, 1.0, 0.0, 0.0, 1.0])
    p = np.asarray([0.9, 0.5, 0.5, 0.1, 0.3])
    cv = CrossValidation(p, np.ones(5, dtype=bool), (0.99, 0.99), 2)
    assert cv.auc(y) == 0.75
    assert cv.auc(1.0 - y) == 0.25


# ------------------------------------------------------------------ check_labels


def test_check_labels_explains_what_is_missing() -> None:
    with pytest.raises(CalibrationError) as nine:
        check_labels(np.asarray([1.0] * 5 + [0.0] * 4))
    assert nine.value.message.startswith(
        f"calibration needs at least {MIN_PROBES} probes and the file has 9;"
    )
    with pytest.raises(CalibrationError) as none:
        check_labels(np.ones(12))
    assert none.value.message.startswith("the probe file has no negative questions;")
    assert '"out_of_scope"' in none.value.message
    with pytest.raises(CalibrationError) as one_negative:
        check_labels(np.asarray([1.0] * 11 + [0.0]))
    assert one_negative.value.message == (
        "calibration needs at least 2 answerable and 2 unanswerable probes (has 11 and 1)"
    )
    with pytest.raises(CalibrationError, match=r"\(has 0 and 10\)"):
        check_labels(np.zeros(10))
    check_labels(np.asarray([1.0] * 8 + [0.0] * 2))  # enough of each: no error


def test_probe_fingerprint_ignores_order_but_not_kind() -> None:
    items = [("Q one?", "answerable"), ("Q two?", "out_of_scope")]
    fp = probe_fingerprint(items)
    assert len(fp) == 16 and int(fp, 16) >= 0
    assert probe_fingerprint(items[::-1]) == fp
    assert probe_fingerprint([("Q one?", "answerable"), ("Q two?", "near_miss")]) != fp


# ------------------------------------------------------------------ Logistic

TINY = Logistic(
    names=("a", "b"), mean=(1.0, 0.0), scale=(2.0, 1.0), coef=(0.5, -1.0), intercept=0.25
)


def test_factors_are_each_features_push_and_sum_to_the_logit() -> None:
    feats = {"a": 3.0, "b": 0.5, "ignored": 7.0}
    # a: 0.5 * (3 - 1) / 2 = 0.5; b: -1 * (0.5 - 0) / 1 = -0.5
    assert TINY.factors(feats) == {"a": 0.5, "b": -0.5}
    assert TINY.logit(feats) == 0.25
    assert TINY.probability(feats) == sigmoid(0.25)
    assert TINY.factors({}) == {"a": -0.25, "b": -0.0}  # a missing feature reads as 0
    rows = np.asarray([[3.0, 0.5], [1.0, 0.0]])
    assert TINY.predict(rows) == pytest.approx([sigmoid(0.25), sigmoid(0.25)], abs=1e-15)
    # far out, the sigmoid neither overflows nor leaves [0, 1]
    assert TINY.probability({"b": 1000.0}) == 0.0
    assert TINY.probability({"b": -1000.0}) == 1.0


def test_model_dict_round_trip_and_validation() -> None:
    assert Logistic.from_dict(TINY.to_dict()) == TINY
    assert TINY.to_dict()["kind"] == "logistic"
    good = TINY.to_dict()
    with pytest.raises(CalibrationError, match="lists of different lengths"):
        Logistic.from_dict({**good, "coef": [0.5]})
    with pytest.raises(CalibrationError, match="lists of different lengths"):
        Logistic.from_dict({**good, "features": ["a", "b", "c"]})
    with pytest.raises(CalibrationError, match="non-positive feature scale"):
        Logistic.from_dict({**good, "scale": [2.0, 0.0]})
    with pytest.raises(CalibrationError, match="non-positive feature scale"):
        Logistic.from_dict({**good, "scale": [-1.0, 1.0]})
    with pytest.raises(CalibrationError, match="incomplete"):
        Logistic.from_dict({k: v for k, v in good.items() if k != "intercept"})
    with pytest.raises(CalibrationError, match="incomplete"):
        Logistic.from_dict({**good, "mean": ["x", 0.0]})
