"""Tests for the audit as a whole (audit/report.py): the report's summary, its JSON, the Judge.

The checks' own tests are test_audit_citations.py, test_audit_facts.py and
test_audit_instructions.py. Every passage and answer here is written by hand for
the test, except at the end, where the real extractive answerer runs through the
real engine on the bundled example pack: its answers copy sentences verbatim and so
must come out clean.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from groundqa.audit import METHOD, VERDICTS, AuditReport, Judge, audit_answer
from groundqa.engine import Engine
from groundqa.generate import cite
from groundqa.ingestion import ingest
from groundqa.models import REFUSAL
from tests.auditkit import (
    BASIN,
    FERRY_FARES,
    FERRY_TIMES,
    METHANE,
    cites_all,
    passage,
    run,
    verdicts,
)
from tests.conftest import REGPACK_PROBES, ROOT, copy_index, need_shared

# -------------------------------------------------------------------- summary


def test_summary_counts_verdicts_and_the_checkable_share() -> None:
    answer = (
        "Operators must capture at least 90% of the methane. [1] "
        "Operators must capture at least 75% of the methane. [1] "
        "Neighbours should be told first. [1] "
        "The basin is emptied after storms. [2]"
    )
    report = run(answer, METHANE, BASIN)
    assert report.method == METHOD
    assert report.verdicts == {
        "NOT_CONTRADICTED": 1,
        "UNSUPPORTED": 1,
        "MISATTRIBUTED": 0,
        "DERIVED": 0,
        "UNVERIFIABLE": 2,
    }
    assert list(report.verdicts) == list(VERDICTS)
    assert report.checkable_share == 0.5
    assert report.judge is None
    assert report.citations.ok is True


def test_a_refusal_has_no_claims_and_a_zero_share() -> None:
    report = audit_answer(REFUSAL, [], [passage(1, METHANE)], refused=True)
    assert report.claims == ()
    assert report.checkable_share == 0.0
    assert sum(report.verdicts.values()) == 0
    assert report.citations.ok is True


def test_an_empty_answer_has_no_claims_and_says_it_cites_nothing() -> None:
    report = audit_answer("", [], [passage(1, METHANE)], refused=False)
    assert report.claims == ()
    assert report.checkable_share == 0.0
    assert report.citations.no_markers is True


def test_the_report_is_plain_json() -> None:
    data = run("Capture 90% of the methane. [1] Tell neighbours. [1]", METHANE).to_dict()
    assert json.loads(json.dumps(data)) == data


def test_the_json_keeps_its_keys_in_the_order_readers_know() -> None:
    hits = [passage(1, FERRY_TIMES), passage(2, FERRY_FARES)]
    data = audit_answer("The ferry leaves at 7am. [1]", cites_all(hits), hits, refused=False)
    assert list(data.to_dict()) == [
        "method",
        "claims",
        "verdicts",
        "checkable_share",
        "citations",
        "judge",
        "injection",
    ]
    [claim] = data.to_dict()["claims"]
    assert list(claim) == ["claim", "cites", "passages", "tokens", "verdict"]
    assert list(claim["tokens"][0]) == ["text", "kind", "normalised", "found_in", "status"]
    assert data.to_dict()["injection"]["passages"] == [2]
    assert data.to_dict()["injection"]["flagged"] is False


def test_a_worked_example_gives_this_json() -> None:
    data = run("Operators must capture at least 90% of the methane. [1]", METHANE, BASIN).to_dict()
    assert data == {
        "method": "token-screen-v1",
        "claims": [
            {
                "claim": "Operators must capture at least 90% of the methane.",
                "cites": [1],
                "passages": [1],
                "tokens": [
                    {
                        "text": "90%",
                        "kind": "percent",
                        "normalised": "90%",
                        "found_in": [1],
                        "status": "cited",
                    }
                ],
                "verdict": "NOT_CONTRADICTED",
            }
        ],
        "verdicts": {
            "NOT_CONTRADICTED": 1,
            "UNSUPPORTED": 0,
            "MISATTRIBUTED": 0,
            "DERIVED": 0,
            "UNVERIFIABLE": 0,
        },
        "checkable_share": 1.0,
        "citations": {
            "markers": [1],
            "unresolved": [],
            "unused": [2],
            "no_markers": False,
            "refusal_cites": False,
            "ok": True,
        },
        "judge": None,
        "injection": {
            "method": "instruction-screen-v1",
            "passages": [],
            "instructions": [],
            "flagged": False,
            "matches": [],
        },
    }


def test_the_audit_is_a_pure_function() -> None:
    answer = "Capture 90% of the methane. [1] Hold 15 millimetres. [2]"
    assert run(answer, METHANE, BASIN) == run(answer, METHANE, BASIN)


HARBOUR = [
    "2.1 Piling, dredging and other noisy marine works may only be carried out between 7am "
    "and 6pm on weekdays and between 8am and 1pm on Saturdays. No such work may be done on "
    "Sundays or public holidays. 2.2 A contractor who needs to work outside these hours must "
    "apply to the harbour master at least 10 business days in advance, giving the reasons, "
    "the equipment to be used and the expected noise level at the nearest dwelling. 2.3 Noise "
    "at the nearest dwelling must not exceed 55 dB(A) during permitted hours, measured as a "
    "15-minute average.",
    "3.1 Dredged material must be placed in the licensed spoil ground or in a lined cell on "
    "land. Sediment containing more than 50 mg/kg of tributyltin must be treated as "
    "contaminated. 3.2 Turbidity outside the silt curtain must stay below 25 NTU above "
    "background, sampled every hour while dredging is under way. 3.3 The contractor must "
    "report any exceedance to the authority within 24 hours and stop work until turbidity has "
    "returned to the permitted level. Records must be kept for 5 years.",
    "4.1 The permit fee is TRD 1,250 for works lasting up to 30 days, plus TRD 95 for each "
    "further day. 4.2 A bond of 10% of the contract value, with a minimum of TRD 5,000, must "
    "be lodged before works start and is returned once the site has been inspected and found "
    "in order. 4.3 Fees are reviewed on 1 July each year in line with the consumer price index.",
    "5.1 Carrying out works without a permit is an offence with a maximum penalty of 400 "
    "penalty units for a corporation and 80 penalty units for an individual. 5.2 Breaching a "
    "permit condition is an offence with a maximum penalty of 200 penalty units. 5.3 An "
    "authorised officer may issue a stop-work notice where works threaten the safety of "
    "vessels or the quality of the water, and the notice remains in force until it is "
    "withdrawn in writing.",
    "1.1 This code applies to works in the harbour, in the tidal reaches of the Kell River and "
    "within 100 metres of the mean high water mark. 1.2 It commenced on 1 March 2021 and "
    "replaces the Marine Works Guideline 2009. 1.3 Works covered by an environment protection "
    "licence must also meet the conditions of that licence. Designs must follow ISO 21650 for "
    "wave actions on coastal structures.",
]


def test_an_answer_over_five_passages_is_not_contradicted() -> None:
    # Its time is measured by bench/audit.py, not asserted here.
    hits = [passage(i, t, title="Harbour Works Code") for i, t in enumerate(HARBOUR, start=1)]
    answer = (
        "Piling may only be carried out between 7am and 6pm on weekdays. [1] "
        "Noise at the nearest dwelling must not exceed 55 dB(A) during permitted hours. [1] "
        "The permit fee is TRD 1,250 for works lasting up to 30 days. [2]"
    )
    citations = [cite(1, hits[0], ""), cite(2, hits[2], "")]
    report = audit_answer(answer, citations, hits, refused=False)
    assert verdicts(report) == ["NOT_CONTRADICTED"] * 3


# ---------------------------------------------------------------------- judge


class WordOverlapJudge:
    """A small real judge: the share of the claim's content words found in its evidence."""

    name = "word-overlap"

    def __init__(self, support: float = 0.6, against: float = 0.2) -> None:
        self.support = support
        self.against = against
        self.asked: list[str] = []

    @staticmethod
    def _words(text: str) -> set[str]:
        return {w for w in re.findall(r"[a-z]{4,}", text.lower())}

    def judge(self, claim: str, evidence: Sequence[str]) -> str | None:
        self.asked.append(claim)
        words = self._words(claim)
        if not words:
            return None
        seen = self._words(" ".join(evidence))
        share = len(words & seen) / len(words)
        if share >= self.support:
            return "NOT_CONTRADICTED"
        if share <= self.against:
            return "UNSUPPORTED"
        return None


def test_a_word_overlap_judge_satisfies_the_protocol() -> None:
    judge: Judge = WordOverlapJudge()
    assert judge.name == "word-overlap"


def test_the_judge_is_asked_only_about_unverifiable_claims() -> None:
    text = "Operators must notify neighbours in writing before drilling begins. " + METHANE
    judge = WordOverlapJudge()
    hits = [passage(1, text)]
    answer = (
        "Operators must capture at least 90% of the methane. [1] "
        "Operators must notify neighbours in writing before drilling. [1] "
        "Volcanic eruptions threaten coastal pelicans. [1] "
        "Operators notify councils about drilling schedules weekly. [1]"
    )
    report = audit_answer(answer, cites_all(hits), hits, refused=False, judge=judge)
    assert report.judge == "word-overlap"
    assert len(judge.asked) == 3
    first, *rest = report.claims
    assert first.judged is False and "judge_verdict" not in first.to_dict()
    assert [c.verdict for c in rest] == ["UNVERIFIABLE"] * 3
    assert [c.judge_verdict for c in rest] == ["NOT_CONTRADICTED", "UNSUPPORTED", None]
    # A judge with no opinion is still on the record, as null.
    assert [c.to_dict()["judge_verdict"] for c in rest] == [
        "NOT_CONTRADICTED",
        "UNSUPPORTED",
        None,
    ]
    # The screen's counts stay the screen's: the judge's word sits beside them.
    assert report.verdicts["UNVERIFIABLE"] == 3
    assert AuditReport.from_dict(json.loads(json.dumps(report.to_dict()))) == report


def test_a_judge_reading_a_claim_that_cites_nothing_reports_misattribution() -> None:
    text = "Operators must notify neighbours in writing before drilling begins."
    hits = [passage(1, text)]
    answer = "Operators must notify neighbours in writing before drilling."
    report = audit_answer(answer, cites_all(hits), hits, refused=False, judge=WordOverlapJudge())
    assert report.claims[0].judge_verdict == "MISATTRIBUTED"


def test_a_judge_answer_outside_the_verdicts_is_an_error() -> None:
    class Sloppy:
        name = "sloppy"

        def judge(self, claim: str, evidence: Sequence[str]) -> str | None:
            return "PROBABLY_FINE"

    hits = [passage(1, METHANE)]
    with pytest.raises(ValueError, match="sloppy"):
        audit_answer("Tell neighbours. [1]", cites_all(hits), hits, refused=False, judge=Sloppy())


# --------------------------------------------------- the real answerer, end to end


@pytest.fixture(scope="module")
def regpack_engine(tmp_path_factory: pytest.TempPathFactory, regpack_build: Path) -> Engine:
    index = tmp_path_factory.mktemp("regpack-index")
    copy_index(regpack_build, index)
    return Engine.open(index)


def test_extractive_answer_on_the_example_pack_is_clean(regpack_engine: Engine) -> None:
    answer = regpack_engine.ask("How many penalty units is the fine for late NEER lodgement?")
    assert not answer.refused
    report = audit_answer(answer.answer, answer.citations, answer.passages, refused=answer.refused)
    assert answer.audit == report
    assert report.citations.ok is True
    assert report.claims
    assert verdicts(report) == ["NOT_CONTRADICTED"] * len(report.claims)
    assert report.checkable_share == 1.0
    assert "TRD 19800" in [t.normalised for c in report.claims for t in c.tokens]


def test_no_extractive_answer_on_the_example_pack_is_flagged(regpack_engine: Engine) -> None:
    """Verbatim sentences must never read as unsupported or misattributed, nor a passage of
    the pack as an instruction to the model (no false alarms)."""
    questions = [
        json.loads(line)["question"]
        for line in Path(REGPACK_PROBES).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    assert _flagged(regpack_engine, questions) == []


def _flagged(engine: Engine, questions: list[str]) -> list[tuple[str, str, object]]:
    flagged: list[tuple[str, str, object]] = []
    for question in questions:
        answer = engine.ask(question)
        report = answer.audit
        assert report is not None
        if not report.citations.ok:
            flagged.append((question, "citations", report.citations))
        if report.injection.passages:
            flagged.append((question, "instructions", report.injection.instructions))
        for c in report.claims:
            if c.verdict not in ("NOT_CONTRADICTED", "UNVERIFIABLE"):
                flagged.append((question, c.verdict, c.claim))
    return flagged


@pytest.mark.slow  # in `make test-slow`, which CI runs
@pytest.mark.shared
@pytest.mark.parametrize("corpus", ["natech", "city_guides"])
def test_no_extractive_answer_on_the_shared_corpora_is_flagged(corpus: str, tmp_path: Path) -> None:
    if corpus == "natech":
        source = need_shared("corpora", "natech", "guidance.csv")
        probes = json.loads(need_shared("corpora", "natech", "probes.json").read_text())
        questions = [p["question"] for p in probes]
    else:
        source = need_shared("corpora", "city_guides")
        lines = (ROOT / "bench" / "city_guides.probes.jsonl").read_text(encoding="utf-8")
        questions = [json.loads(line)["question"] for line in lines.splitlines() if line.strip()]
    ingest([source], tmp_path / "index")
    assert _flagged(Engine.open(tmp_path / "index"), questions) == []
