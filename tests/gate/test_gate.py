"""The gate: its features, a pure function of Retrieval and Reading, and the decision.

Hand-worked examples throughout: `features` takes plain dicts and sets,
`gate_features` a Retrieval and a Reading built in the test, `Gate.decide` a
small model whose arithmetic is written out beside each expected number.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from groundqa.errors import CalibrationError
from groundqa.gate import (
    DEFAULT_FLOOR,
    DEFAULT_GATE,
    DEFAULT_MODEL,
    DEFAULT_READER_GATE,
    DEFAULT_THRESHOLD,
    DENSE_FEATURES,
    LEXICAL_FEATURES,
    READER_FEATURES,
    Gate,
    calibrated_gate,
    features,
    gate_features,
    gate_for,
)
from groundqa.gate.features import FEATURES_VERSION, specificity
from groundqa.gate.model import Logistic, floor_for
from groundqa.models import Chunk, GateDecision, Hit
from groundqa.query import Query
from groundqa.read import Reading, Sentence
from groundqa.retrieve import Retrieval


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def _read(coverage: float, *, asked: bool = False, found: bool = False) -> Reading:
    """A Reading whose best sentence covers `coverage` of the question."""
    sentence = Sentence(0, 0, "A sentence.", coverage, coverage, found)
    return Reading((sentence,), asked=asked, found=found)


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
        reading=_read(0.6, asked=True, found=False),
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


def test_a_question_that_says_little_counts_its_coverage_in_part() -> None:
    # In 100 chunks a word held by one has idf ln(1 + 99.5 / 1.5) = 4.2097; two such words
    # say 8.4195. The topic words' idf adds up to 4: specificity 4 / 8.4195 = 0.4751, and
    # every coverage counts for that part of itself.
    says = 4 / (2 * math.log(1 + 99.5 / 1.5))
    assert (
        specificity(WEIGHTS, chunks=100) == pytest.approx(says) == pytest.approx(0.4751, abs=1e-4)
    )
    got = features(WEIGHTS, set(), PASSAGES, LEXICAL, 20.0, _read(0.6), chunks=100)
    assert got["coverage"] == round(says * 0.75, 6)
    assert got["coverage_top1"] == round(says * 0.5, 6)
    assert got["sentence_coverage"] == round(says * 0.6, 6)
    assert got["bm25_top"] == 0.4 and got["unknown_share"] == 0.0  # not weighed
    # Words that say as much as two such words count in full (in 4 chunks a unique word
    # has idf ln(1 + 3.5 / 1.5) = 1.204: 4 > 2.41); so does any question in an index
    # under 30 chunks, or of unknown size, whose idfs say too little.
    assert specificity({"a": 2.5}, chunks=4) == 1.0
    assert specificity(WEIGHTS, chunks=29) == 1.0
    assert specificity(WEIGHTS, chunks=0) == 1.0
    assert specificity({}, chunks=100) == 0.0
    full = features(WEIGHTS, set(), PASSAGES, LEXICAL, 20.0, _read(0.6), chunks=29)
    assert full["coverage"] == 0.75 and full["sentence_coverage"] == 0.6


def test_gate_features_weigh_by_the_size_of_the_index() -> None:
    hit = Hit(Chunk("c1", "d.md", "d.md#s", "T", (), "text", "d.md"), 1.0, 1)
    retrieval = Retrieval(
        query=Query("What about the fees?"),
        plan="bm25",
        text="fees",
        hits=(hit,),
        lexical=((0, 3.0),),
        dense=None,
        weights={"fee": 2.0},
        unknown=frozenset(),
        bm25_ceiling=6.0,
        chunks=100,
    )
    reading = Reading((Sentence(0, 0, "A fee is due.", 1.0, 1.0, False),), passage_terms=({"fee"},))
    got = gate_features(retrieval, reading)
    # 2 / 8.4195 = 0.2375 of a full coverage, where it was 1.0 before
    weighed = round(2 / (2 * math.log(1 + 99.5 / 1.5)), 6)
    assert got["coverage"] == got["coverage_top1"] == got["sentence_coverage"] == weighed
    assert Retrieval.from_dict(retrieval.to_dict()).chunks == 100


def test_dense_features_and_agreement() -> None:
    dense = [(3, 0.8), (9, 0.5), (7, 0.4), (2, 0.3), (5, 0.2), (1, 0.1)]
    got = features(
        WEIGHTS, set(), PASSAGES, LEXICAL, 20.0, _read(1.0, asked=True, found=True), dense
    )
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
    capped = features(WEIGHTS, set(), [set()], [(0, 30.0)], 20.0, _read(0.123456789))
    assert capped["bm25_top"] == 1.0 and capped["bm25_margin"] == 1.0
    assert capped["sentence_coverage"] == 0.123457  # rounded to 6 places
    assert features(WEIGHTS, set(), [], [], 1.0, _read(0.0))["type_missing"] == 0.0


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


# Worked by hand: a factor is coef * (x - mean) / scale.
TWO = Logistic(
    names=("a", "b"), mean=(0.5, 0.0), scale=(0.25, 0.5), coef=(1.0, -0.5), intercept=0.5
)


def test_factors_and_intercept_give_the_confidence() -> None:
    feats = {"a": 1.0, "b": 1.0}
    # a: 1.0 * (1.0 - 0.5) / 0.25 = 2.0; b: -0.5 * (1.0 - 0.0) / 0.5 = -1.0;
    # logit 0.5 + 2.0 - 1.0 = 1.5; 1 / (1 + e^-1.5) = 0.81757
    answered = Gate(TWO, 0.8, calibrated=False).decide({"t": 1.0}, feats)
    assert answered.factors == {"a": 2.0, "b": -1.0}
    assert answered.score == 0.8176 and answered.answer
    refused = Gate(TWO, 0.9, calibrated=True).decide({"t": 1.0}, feats)
    assert refused.score == 0.8176 and not refused.answer
    assert refused.reason == "confidence 0.82 is below the calibrated gate's threshold 0.90"
    # mirrored: logit 0.5 - 2.0 + 1.0 = -0.5 at a = 0, b = -1; 1 / (1 + e^0.5) = 0.37754
    low = Gate(TWO, 0.3, calibrated=False).decide({"t": 1.0}, {"a": 0.0, "b": -1.0})
    assert low.factors == {"a": -2.0, "b": 1.0} and low.score == 0.3775 and low.answer


def test_default_gate_reads_every_lexical_feature() -> None:
    at_mean = dict(zip(DEFAULT_MODEL.names, DEFAULT_MODEL.mean, strict=True))
    neutral = DEFAULT_GATE.decide({"t": 1.0}, at_mean)
    assert set(neutral.factors) == set(LEXICAL_FEATURES)
    assert set(neutral.factors.values()) == {0.0}  # an average probe: no push either way
    # the intercept alone: 1 / (1 + e^-0.747787) = 0.67870, above the threshold 0.383
    assert neutral.score == 0.6787 and neutral.answer
    for i, name in enumerate(DEFAULT_MODEL.names):
        # one scale above its mean, a feature pushes by exactly its coefficient
        up = {**at_mean, name: DEFAULT_MODEL.mean[i] + DEFAULT_MODEL.scale[i]}
        assert DEFAULT_GATE.decide({"t": 1.0}, up).factors[name] == round(DEFAULT_MODEL.coef[i], 4)
    # coverage_top1 one scale up: logit 0.747787 + 1.289801 = 2.037588, p = 0.88467
    top1 = {**at_mean, "coverage_top1": 0.548247 + 0.269360}
    assert DEFAULT_GATE.decide({"t": 1.0}, top1).score == 0.8847


def test_describe_says_which_gate_is_in_use() -> None:
    assert DEFAULT_GATE.describe().startswith(
        f"not calibrated: the built-in default (fitted on the bundled example corpus), "
        f"confident from {DEFAULT_THRESHOLD:.3f}, cautious from {DEFAULT_FLOOR:.3f}, "
        "refused below;"
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
        "2024-01-01T00:00:00Z); threshold 0.400 (no cautious band), the threshold set for 5% "
        "of answerable questions short of it; cross-validated AUC 0.84"
    )
    banded = Gate(ONE, 0.4, calibrated=True, info=info, floor_at=0.25).describe()
    assert "confident from 0.400, cautious from 0.250, refused below" in banded


# ------------------------------------------------------------------ three outcomes


def test_the_floor_and_threshold_split_confidence_into_three_outcomes() -> None:
    gate = Gate(ONE, 0.6, calibrated=False, floor_at=0.3)
    assert [gate.outcome(p) for p in (0.0, 0.2999, 0.3, 0.5999, 0.6, 1.0)] == [
        "refused",
        "refused",
        "cautious",
        "cautious",
        "confident",
        "confident",
    ]
    # a floor over the threshold, or none, leaves no cautious band
    assert Gate(ONE, 0.6, calibrated=False, floor_at=0.9).floor == 0.6
    assert Gate(ONE, 0.6, calibrated=False).outcome(0.59) == "refused"


def test_a_cautious_decision_still_answers_and_says_why() -> None:
    feats = dict.fromkeys(ONE.names, 0.0)
    p = ONE.probability(feats)
    gate = Gate(ONE, min(1.0, p + 0.1), calibrated=False, floor_at=max(0.0, p - 0.1))
    decision = gate.decide({"t": 1.0}, feats)
    assert decision.outcome == "cautious" and decision.answer
    assert "the closest passage, which may not answer this" in decision.reason
    assert decision.floor == round(gate.floor, 4)
    again = GateDecision.from_dict(decision.to_dict())
    assert again == decision
    refused = Gate(ONE, min(1.0, p + 0.2), calibrated=False, floor_at=min(1.0, p + 0.1))
    below = refused.decide({"t": 1.0}, feats)
    assert below.outcome == "refused" and not below.answer and "floor" in below.reason
    assert gate.decide({}, feats).outcome == "refused"


# The band reads `b` where the gate reads `coverage`: each can pass what the other does not.
BAND = Logistic(names=("b",), mean=(0.5,), scale=(0.25,), coef=(2.0,), intercept=0.0)


def test_the_band_turns_only_refusals_into_cautious_answers() -> None:
    band = Gate(BAND, 0.7, calibrated=True, floor_at=0.4, info={"cv_auc": 0.9})
    gate = Gate(ONE, 0.6, calibrated=False, floor_at=0.5, band=band)
    weights = {"t": 1.0}
    # coverage 0.25: P 0.12, under the floor; b 0.5: the band's P 0.5, over its floor 0.4
    rescued = gate.decide(weights, {"coverage": 0.25, "b": 0.5})
    assert rescued.outcome == "cautious" and rescued.answer
    assert rescued.score == 0.1192 and rescued.band == 0.5 and rescued.band_floor == 0.4
    assert "the gate fitted on this corpus's own questions gives 0.50" in rescued.reason
    assert "the closest passage, which may not answer this" in rescued.reason
    assert GateDecision.from_dict(rescued.to_dict()) == rescued
    # under both floors: refused, and the band's P is shown
    refused = gate.decide(weights, {"coverage": 0.25, "b": 0.0})
    assert refused.outcome == "refused" and refused.band == round(sigmoid(-4.0), 4) == 0.018
    # the default's own outcomes stand: the band is not asked, and never refuses
    confident = gate.decide(weights, {"coverage": 0.75, "b": 0.0})
    cautious = gate.decide(weights, {"coverage": 0.5, "b": 0.0})
    assert (confident.outcome, confident.band) == ("confident", None)
    assert (cautious.outcome, cautious.band) == ("cautious", None)
    assert "band" not in cautious.reason and cautious.band_floor == 0.4
    # and it never makes an answer confident, however sure it is
    assert gate.decide(weights, {"coverage": 0.0, "b": 1.0}).outcome == "cautious"
    assert "or where a gate fitted on" in gate.describe() and "0.9" in gate.describe()
    assert gate.digest != replace(gate, band=None).digest


def test_an_index_band_is_read_back_only_when_the_lexical_default_can_use_it() -> None:
    band = Gate(DEFAULT_MODEL, 0.6, calibrated=True, floor_at=0.2).to_dict()
    entry = {
        "index_fingerprint": "F" * 64,
        "features": FEATURES_VERSION,
        "floor": 0.3,
        "questions": 100,
        "band": {**band, "probes": {"answerable": 200, "near_miss": 100}},
    }
    gate = gate_for({"self_fit": entry}, "F" * 64)
    assert gate.band is not None and gate.band.floor == 0.2 and gate.floor == 0.3
    assert "or where a gate fitted on 300 questions made from this corpus" in gate.describe()
    # a floor not fitted keeps its note, and the band still serves
    skipped = {k: v for k, v in entry.items() if k != "floor"} | {"skipped": "too few"}
    assert gate_for({"self_fit": skipped}, "F" * 64).band == gate.band
    # the answer model's default has no band; a band that is unreadable, skipped or reads
    # the answer model is set aside
    assert gate_for({"self_fit": entry}, "F" * 64, reader=True).band is None
    reads = Logistic(("reader_best",), (0.5,), (0.2,), (1.0,), 0.0).to_dict()
    for bad in ({**band, "threshold": "x"}, {"skipped": "one class"}, {**band, "model": reads}):
        assert gate_for({"self_fit": {**entry, "band": bad}}, "F" * 64).band is None


def test_a_decision_stored_before_three_outcomes_reads_as_two() -> None:
    old = {"answer": True, "reason": "", "score": 0.7, "threshold": 0.4}
    assert GateDecision.from_dict(old).outcome == "confident"
    assert GateDecision.from_dict(old).floor == 0.4
    assert GateDecision.from_dict({**old, "answer": False}).outcome == "refused"


def test_the_floor_refuses_every_out_of_scope_probability() -> None:
    outside = np.asarray([0.05, 0.31, 0.2])
    floor = floor_for(outside, 0.5)
    assert floor > 0.31 and all(p < floor for p in outside)
    assert floor_for(outside, 0.3) == 0.3  # never over the threshold
    assert floor_for(np.asarray([]), 0.5) == 0.5  # nothing to place it by: no band


def test_a_stored_floor_is_read_back_and_checked() -> None:
    stored = Gate(ONE, 0.4, calibrated=True, floor_at=0.2).to_dict()
    assert stored["floor"] == 0.2
    assert calibrated_gate(stored).floor == 0.2
    without = {k: v for k, v in stored.items() if k != "floor"}
    assert calibrated_gate(without).floor == 0.4  # made before the band: none
    for bad in (0.5, -0.1, "x", float("nan")):
        with pytest.raises(CalibrationError, match="floor"):
            calibrated_gate({**stored, "floor": bad})


# ------------------------------------------------------------------ gate_for


def _stored(fingerprint: str = "F" * 64) -> dict[str, object]:
    return {
        **Gate(ONE, 0.3, calibrated=True).to_dict(),
        "index_fingerprint": fingerprint,
        "probe_fingerprint": "p" * 16,
        "features": FEATURES_VERSION,
    }


def test_gate_for_uses_a_calibration_made_for_this_index() -> None:
    gate = gate_for(_stored(), "F" * 64)
    assert gate.calibrated and gate.kind == "calibrated-logistic" and gate.note == ""
    assert gate.model == ONE and gate.threshold == 0.3
    assert gate.info == {
        "index_fingerprint": "F" * 64,
        "probe_fingerprint": "p" * 16,
        "features": FEATURES_VERSION,
    }
    assert gate.to_dict() == _stored()


def test_gate_for_picks_the_default_for_the_engines_reader() -> None:
    assert gate_for({}, "F" * 64, reader=True) is DEFAULT_READER_GATE
    assert set(READER_FEATURES) <= set(DEFAULT_READER_GATE.model.names)
    assert gate_for({}, "F" * 64) is DEFAULT_GATE
    assert not set(READER_FEATURES) & set(DEFAULT_GATE.model.names)
    assert "training data" in DEFAULT_READER_GATE.describe()
    assert "example corpus" in DEFAULT_GATE.describe()
    # A calibration that reads the answer model is set aside by an engine that runs without it.
    reads = _stored()
    reads["model"] = Logistic(("reader_best",), (0.5,), (0.2,), (1.0,), 0.0).to_dict()
    assert gate_for(reads, "F" * 64, reader=True).calibrated
    without = gate_for(reads, "F" * 64)
    assert without.model == DEFAULT_MODEL and "does not run" in without.note


def test_gate_for_sets_aside_a_gate_fitted_on_earlier_features() -> None:
    # Fitted before the coverages were weighed by specificity (no `features`): its
    # threshold was set on numbers that no longer mean the same.
    earlier = {k: v for k, v in _stored().items() if k != "features"}
    gate = gate_for(earlier, "F" * 64)
    assert not gate.calibrated and gate.model == DEFAULT_MODEL
    assert gate.note == (
        "the stored calibration was fitted on an earlier version of the gate's features; "
        "using the default gate: run `groundqa calibrate` again"
    )
    # An index's own floor, fitted by an earlier version: the built-in floor until the
    # next ingest fits it again.
    entry = {"index_fingerprint": "F" * 64, "floor": 0.2, "questions": 50}
    stale = gate_for({"self_fit": entry}, "F" * 64)
    assert stale.floor == DEFAULT_FLOOR and "fits it again" in stale.note
    fresh = gate_for({"self_fit": {**entry, "features": FEATURES_VERSION}}, "F" * 64)
    assert fresh.floor == 0.2 and fresh.note == ""


def test_gate_for_sets_aside_what_it_cannot_use() -> None:
    assert gate_for({}, "F" * 64, reader=False) is DEFAULT_GATE
    assert gate_for(DEFAULT_GATE.to_dict(), "F" * 64, reader=False) is DEFAULT_GATE
    other = gate_for(_stored("E" * 64), "F" * 64, reader=False)
    assert not other.calibrated and other.kind == "default-logistic"
    assert other.model == DEFAULT_MODEL and other.threshold == DEFAULT_THRESHOLD
    assert other.note == "the stored calibration was made for another index; using the default gate"
    assert other.describe().startswith(other.note + "; the built-in default")
    assert gate_for(_stored("E" * 64), "F" * 64, reader=True).model == DEFAULT_READER_GATE.model
    broken = _stored()
    broken["model"] = {**ONE.to_dict(), "coef": [1.0, 2.0]}
    unreadable = gate_for(broken, "F" * 64, reader=False)
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


# ------------------------------------------------------------------ gate_features


def _retrieval(hits: int, dense: list[tuple[int, float]] | None = None) -> Retrieval:
    chunks = [
        Chunk(f"c{n}", "d.md", f"d.md#{n}", "D", (), f"Passage {n}.", "d.md") for n in range(hits)
    ]
    return Retrieval(
        query=Query("What about a and b?"),
        plan="bm25",
        text="What about a and b?",
        hits=tuple(Hit(c, 1.0, n) for n, c in enumerate(chunks, 1)),
        lexical=tuple(LEXICAL),
        dense=None if dense is None else tuple(dense),
        weights=WEIGHTS,
        unknown=frozenset({"c", "zzz"}),
        bm25_ceiling=20.0,
    )


def test_gate_features_read_the_retrieval_and_the_reading() -> None:
    reading = Reading(
        (Sentence(0, 0, "A sentence.", 0.6, 0.6, False),),
        asked=True,
        found=False,
        passage_terms=tuple(frozenset(p) for p in PASSAGES),
    )
    # The same numbers as test_features_on_hand_made_inputs: the passages' terms come from
    # the reading, the rest from the retrieval.
    assert gate_features(_retrieval(4), reading) == {
        "coverage": 0.75,
        "coverage_top1": 0.5,
        "unknown_share": 0.25,
        "bm25_top": 0.4,
        "bm25_margin": 0.25,
        "sentence_coverage": 0.6,
        "type_missing": 1.0,
    }
    dense = [(3, 0.8), (9, 0.5), (7, 0.4), (2, 0.3), (5, 0.2), (1, 0.1)]
    with_vectors = gate_features(_retrieval(4, dense), reading)
    assert (with_vectors["dense_top"], with_vectors["dense_margin"]) == (0.8, 0.3)
    assert with_vectors["agreement"] == 0.4


def test_gate_features_of_a_retrieval_without_hits_are_empty() -> None:
    # empty: the decision then refuses with "no passage matched the question"
    assert gate_features(_retrieval(0), _read(1.0)) == {}
    decision = DEFAULT_GATE.decide(WEIGHTS, gate_features(_retrieval(0), _read(1.0)))
    assert not decision.answer and decision.reason == "no passage matched the question"
