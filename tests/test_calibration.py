"""The calibration maths and the gate, checked against values worked out by hand.

Nothing here touches an index: `calibration` is pure numpy, `gate.features` and
`Gate.decide` take plain dicts and sets, and the extractive reader's `reading`
is given real passages built in the test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from groundqa.calibration import (
    MIN_PROBES,
    Logistic,
    check_labels,
    cross_validate,
    fit_logistic,
    fold_count,
    out_of_fold,
    probe_fingerprint,
    refusal_at,
    roc_auc,
    stratified_folds,
    threshold_for,
)
from groundqa.errors import CalibrationError
from groundqa.gate import (
    DEFAULT_GATE,
    DEFAULT_MODEL,
    DEFAULT_THRESHOLD,
    DENSE_FEATURES,
    LEXICAL_FEATURES,
    Gate,
    Reading,
    features,
    gate_for,
)
from groundqa.generate import Evidence
from groundqa.generate.extractive import ExtractiveGenerator
from groundqa.models import Chunk, Hit
from groundqa.text import Analyzer, PassageTerms


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
    assert cv.auc(y) == roc_auc(y, cv.probability)
    assert cv.auc(y) > 0.8  # the features do carry the label


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


# ------------------------------------------------------------------ features


WEIGHTS = {"a": 2.0, "b": 1.0, "c": 1.0}
LEXICAL = [(7, 8.0), (3, 6.0), (1, 1.0)]
PASSAGES = [{"a"}, {"a", "b"}, {"b", "c"}, {"a", "b", "c"}]


def test_features_on_hand_made_inputs() -> None:
    got = features(
        WEIGHTS,
        unknown={"c", "zzz"},
        passages=PASSAGES,
        lexical=LEXICAL,
        bm25_ceiling=20.0,
        reading=Reading(0.6, asked=True, found=False),
    )
    assert got == {
        "coverage": 0.75,  # best of the first three: {a, b} = 3/4; the 4th (full) is too deep
        "coverage_top1": 0.5,  # {a} = 2/4
        "unknown_share": 0.25,  # c = 1/4; "zzz" is not a topic term
        "bm25_top": 0.4,  # 8 / 20
        "bm25_margin": 0.25,  # (8 - 6) / 8
        "sentence_coverage": 0.6,
        "type_missing": 1.0,
    }
    assert set(got) == set(LEXICAL_FEATURES)


def test_dense_features_and_agreement() -> None:
    dense = [(3, 0.8), (9, 0.5), (7, 0.4), (2, 0.3), (5, 0.2), (1, 0.1)]
    got = features(WEIGHTS, set(), PASSAGES, LEXICAL, 20.0, Reading(1.0, True, True), dense)
    assert set(got) == set(LEXICAL_FEATURES) | set(DENSE_FEATURES)
    assert got["dense_top"] == 0.8
    assert got["dense_margin"] == 0.3
    # both top-5 lists hold rows 3 and 7 (row 1 is sixth in the dense list)
    assert got["agreement"] == 0.4
    assert got["type_missing"] == 0.0 and got["unknown_share"] == 0.0
    single = features(WEIGHTS, set(), PASSAGES, LEXICAL, 20.0, Reading(), [(4, 0.7)])
    assert (single["dense_top"], single["dense_margin"], single["agreement"]) == (0.7, 0.0, 0.0)


def test_features_at_the_edges() -> None:
    nothing = features({}, set(), [], [], 0.0, Reading())
    assert nothing == {
        "coverage": 0.0,
        "coverage_top1": 0.0,
        "unknown_share": 1.0,  # no topic words: nothing the corpus is known to use
        "bm25_top": 0.0,
        "bm25_margin": 0.0,
        "sentence_coverage": 0.0,
        "type_missing": 0.0,
    }
    capped = features(WEIGHTS, set(), [set()], [(0, 30.0)], 20.0, Reading(0.123456789))
    assert capped["bm25_top"] == 1.0 and capped["bm25_margin"] == 1.0
    assert capped["sentence_coverage"] == 0.123457  # rounded to 6 places
    assert (
        features(WEIGHTS, set(), [], [], 1.0, Reading(0.0, asked=False, found=False))[
            "type_missing"
        ]
        == 0.0
    )


# ------------------------------------------------------------------ Gate.decide

ONE = Logistic(names=("coverage",), mean=(0.5,), scale=(0.25,), coef=(2.0,), intercept=0.0)


def test_decide_answers_at_or_above_the_threshold_and_refuses_below() -> None:
    gate = Gate(ONE, 0.5, calibrated=False)
    weights = {"t": 1.0}
    high = gate.decide(weights, {"coverage": 0.75})  # logit 2
    assert high.answer and high.reason == "confident enough to answer"
    assert high.score == round(sigmoid(2.0), 4) == 0.8808
    assert high.factors == {"coverage": 2.0} and high.features == {"coverage": 0.75}
    assert high.threshold == 0.5 and high.calibrated is False
    low = gate.decide(weights, {"coverage": 0.25})  # logit -2
    assert not low.answer and low.score == 0.1192
    assert low.reason == "confidence 0.12 is below the default gate's threshold 0.50"
    assert low.factors == {"coverage": -2.0}
    edge = gate.decide(weights, {"coverage": 0.5})  # p = 0.5 exactly: not below
    assert edge.answer and edge.score == 0.5
    calibrated = Gate(ONE, 0.9, calibrated=True).decide(weights, {"coverage": 0.75})
    assert not calibrated.answer and calibrated.calibrated
    assert calibrated.reason == "confidence 0.88 is below the calibrated gate's threshold 0.90"


def test_decide_refuses_outright_without_topic_words_or_passages() -> None:
    gate = Gate(ONE, 0.0, calibrated=True)  # a threshold of 0 would answer anything scored
    empty = gate.decide({}, {"coverage": 1.0})
    assert (empty.answer, empty.reason, empty.score) == (
        False,
        "the question has no topic words",
        0.0,
    )
    assert empty.features == {} and empty.factors == {} and empty.calibrated
    unmatched = gate.decide({"t": 1.0}, {})
    assert (unmatched.answer, unmatched.reason, unmatched.score) == (
        False,
        "no passage matched the question",
        0.0,
    )


def test_default_gate_factors_plus_intercept_give_its_confidence() -> None:
    at_mean = dict(zip(DEFAULT_MODEL.names, DEFAULT_MODEL.mean, strict=True))
    neutral = DEFAULT_GATE.decide({"t": 1.0}, at_mean)
    assert set(neutral.factors.values()) == {0.0}  # an average probe: no push either way
    assert neutral.score == round(sigmoid(DEFAULT_MODEL.intercept), 4)
    feats = {
        "coverage": 0.2,
        "coverage_top1": 0.1,
        "unknown_share": 0.5,
        "bm25_top": 0.05,
        "bm25_margin": 0.3,
        "sentence_coverage": 0.25,
        "type_missing": 1.0,
    }
    d = DEFAULT_GATE.decide({"t": 1.0}, feats)
    assert set(d.factors) == set(LEXICAL_FEATURES)
    exact = DEFAULT_MODEL.intercept + sum(DEFAULT_MODEL.factors(feats).values())
    assert DEFAULT_MODEL.logit(feats) == pytest.approx(exact, abs=1e-12)
    assert DEFAULT_MODEL.intercept + sum(d.factors.values()) == pytest.approx(exact, abs=4e-4)
    assert d.score == round(sigmoid(exact), 4)
    assert d.answer == (sigmoid(exact) >= DEFAULT_THRESHOLD)


def test_describe_says_which_gate_is_in_use() -> None:
    assert DEFAULT_GATE.describe().startswith(
        f"not calibrated: the built-in default (fitted on the bundled example corpus), "
        f"threshold {DEFAULT_THRESHOLD:.3f};"
    )
    info = {
        "probes": {"answerable": 52, "unanswerable": 29},
        "probe_fingerprint": "abc123",
        "calibrated_at": "2024-01-01T00:00:00Z",
        "target_false_refusal": 0.05,
        "cv_auc": 0.84,
    }
    assert Gate(ONE, 0.4, calibrated=True, info=info).describe() == (
        "calibrated on 52 answerable and 29 unanswerable probes (probe set abc123, "
        "2024-01-01T00:00:00Z); threshold 0.400 for 5% false refusal; cross-validated AUC 0.84"
    )


# ------------------------------------------------------------------ gate_for


def _stored(fingerprint: str = "F" * 64) -> dict[str, object]:
    return {
        **Gate(ONE, 0.3, calibrated=True).to_dict(),
        "index_fingerprint": fingerprint,
        "probe_fingerprint": "p" * 16,
    }


def test_gate_for_uses_a_calibration_made_for_this_index() -> None:
    gate = gate_for(_stored(), "F" * 64)
    assert gate.calibrated and gate.kind == "calibrated-logistic" and gate.note == ""
    assert gate.model == ONE and gate.threshold == 0.3
    assert gate.info == {"index_fingerprint": "F" * 64, "probe_fingerprint": "p" * 16}
    assert gate.to_dict() == _stored()


def test_gate_for_sets_aside_what_it_cannot_use() -> None:
    assert gate_for({}, "F" * 64) is DEFAULT_GATE
    assert gate_for(DEFAULT_GATE.to_dict(), "F" * 64) is DEFAULT_GATE
    other = gate_for(_stored("E" * 64), "F" * 64)
    assert not other.calibrated and other.kind == "default-logistic"
    assert other.model == DEFAULT_MODEL and other.threshold == DEFAULT_THRESHOLD
    assert other.note == "the stored calibration was made for another index; using the default gate"
    assert other.describe().startswith(other.note + "; the built-in default")
    broken = _stored()
    broken["model"] = {**ONE.to_dict(), "coef": [1.0, 2.0]}
    unreadable = gate_for(broken, "F" * 64)
    assert not unreadable.calibrated and unreadable.model == DEFAULT_MODEL
    assert unreadable.note == (
        "the stored calibration cannot be read (the stored gate model has lists of "
        "different lengths); using the default gate"
    )
    no_threshold = {k: v for k, v in _stored().items() if k != "threshold"}
    assert gate_for(no_threshold, "F" * 64).note == (
        "the stored calibration cannot be read (the calibration has no numeric `threshold`); "
        "using the default gate"
    )
    for threshold, why in (
        ("high", "the calibration has no numeric `threshold`"),
        (1.5, "the calibration's threshold 1.5 is not a probability"),
    ):
        assert gate_for({**_stored(), "threshold": threshold}, "F" * 64).note == (
            f"the stored calibration cannot be read ({why}); using the default gate"
        )
    not_finite = _stored()
    not_finite["model"] = {**ONE.to_dict(), "coef": [float("nan")]}
    assert gate_for(not_finite, "F" * 64).note == (
        "the stored calibration cannot be read (the stored gate model holds a number "
        "that is not finite); using the default gate"
    )


# ------------------------------------------------------------------ reading

ANALYZER = Analyzer()


def _reading(question: str, *texts: str) -> Reading:
    hits = tuple(
        Hit(Chunk(f"c{n}", f"d{n}", f"d{n}#s", "Town notes", (), text, f"/c/d{n}.md"), 1.0, n)
        for n, text in enumerate(texts, 1)
    )
    weights = dict.fromkeys(ANALYZER.query_terms(question), 1.0)
    evidence = Evidence(question, weights, hits, PassageTerms(ANALYZER))
    return ExtractiveGenerator().reading(evidence)


WHO = "Who chairs the heritage council?"  # topic: chair, heritag, council


def test_a_who_question_wants_a_name_in_the_sentence_quoted() -> None:
    assert _reading(WHO, "The heritage council is chaired by Margaret Olsen.") == Reading(
        1.0, True, True
    )
    assert _reading(WHO, "The heritage council is chaired by the mayor.") == Reading(
        1.0, True, False
    )
    # the name may sit in the sentence right after the best one
    follow = "The heritage council is chaired by a resident. Margaret Olsen holds the chair now."
    assert _reading(WHO, follow) == Reading(1.0, True, True)


WHEN = "What time does the smokehouse open?"  # topic: time, smokehous, open


def test_a_what_time_question_wants_a_time() -> None:
    assert _reading(WHEN, "The smokehouse opens at 7am on weekdays.") == Reading(2 / 3, True, True)
    assert _reading(WHEN, "The smokehouse opens early on weekdays.") == Reading(2 / 3, True, False)
    # nothing in the passages mentions the topic: asked, nothing found, no coverage
    assert _reading(WHEN, "Trains run from Portmere every forty minutes.") == Reading(
        0.0, True, False
    )


def test_a_cost_question_wants_money_and_a_where_question_nothing() -> None:
    cost = "How much does a pot of tea cost?"
    assert _reading(cost, "The tea room charges 4 pounds for a pot of tea.").found
    assert not _reading(cost, "A pot of tea in the tea room costs four.").found
    assert _reading(cost, "A pot of tea in the tea room costs four.").asked
    where = _reading("Where is the smokehouse?", "The smokehouse is on Quay Street.")
    assert where == Reading(1.0, False, False)
