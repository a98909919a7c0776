"""Tests for audit/facts.py: claims, checkable tokens, their normal forms and look-alikes, verdicts.

Every passage and answer here is written by hand for the test.
"""

from __future__ import annotations

import pytest

from groundqa.audit import Claim, audit_answer, extract_tokens, split_claims
from groundqa.audit.facts import check_claim, passage_facts
from groundqa.generate import cite
from groundqa.verdicts import TokenCheck
from tests.auditkit import BASIN, METHANE, passage, run, verdicts


def normalised(text: str) -> list[str]:
    return [t.normalised for t in extract_tokens(text)]


# ------------------------------------------------ the seed system's worked examples


def test_figure_kept_from_its_source_is_not_contradicted() -> None:
    report = run("Operators must capture at least 90% of the methane. [1]", METHANE, BASIN)
    [claim] = report.claims
    assert claim.verdict == "NOT_CONTRADICTED"
    assert claim.cites == (1,)
    assert claim.tokens == (TokenCheck("90%", "percent", "90%", (1,), "cited"),)


def test_same_claim_with_another_figure_is_unsupported() -> None:
    [claim] = run("Operators must capture at least 75% of the methane. [1]", METHANE, BASIN).claims
    assert claim.verdict == "UNSUPPORTED"
    assert claim.tokens[0].status == "missing"
    assert claim.tokens[0].found_in == ()


def test_right_figure_cited_to_the_wrong_passage_is_misattributed() -> None:
    answer = "A detention basin must hold the first 15 millimetres of runoff. [1]"
    [claim] = run(answer, METHANE, BASIN).claims
    assert claim.verdict == "MISATTRIBUTED"
    assert claim.tokens[0].found_in == (2,)
    assert claim.tokens[0].status == "elsewhere"


def test_claim_with_nothing_checkable_is_unverifiable() -> None:
    report = run("Operators should speak to their neighbours before works start. [1]", METHANE)
    [claim] = report.claims
    assert claim.verdict == "UNVERIFIABLE"
    assert claim.tokens == ()
    assert report.checkable_share == 0.0


def test_the_worst_token_decides_the_verdict() -> None:
    # 90% is cited, 15 millimetres sits only in passage 2, 75% is nowhere.
    facts = [passage_facts(METHANE), passage_facts(BASIN)]
    claim = Claim("Capture 90% and hold 15 millimetres.", (1,))
    assert check_claim(claim, {1: 1}, facts).verdict == "MISATTRIBUTED"
    claim = Claim("Capture 90%, hold 15 millimetres and 75% more.", (1,))
    assert check_claim(claim, {1: 1}, facts).verdict == "UNSUPPORTED"


# ------------------------------------------------------------------- derived

FEES = (
    "Lodging a report late attracts 60 penalty units. One penalty unit is TRD 330. "
    "The application fee is TRD 420 plus TRD 85 for each hectare. "
    "A levy of 2% applies to a contract worth TRD 50,000."
)


@pytest.mark.parametrize(
    ("answer", "how"),
    [
        ("A late report costs 60 penalty units, which is TRD 19,800. [1]", "330 × 60"),
        ("For a single hectare the fee comes to TRD 505. [1]", "85 + 420"),
        ("The levy on that contract is TRD 1,000. [1]", "2% of 50000"),
        ("The hectare rate is TRD 335 below the base fee. [1]", "420 − 85"),
    ],
)
def test_arithmetic_over_cited_numbers_is_derived(answer: str, how: str) -> None:
    [claim] = run(answer, FEES).claims
    assert claim.verdict == "DERIVED"
    assert [t.derivation for t in claim.tokens if t.status == "derived"] == [how]


def test_a_wrong_product_is_not_derived() -> None:
    assert verdicts(run("A late report costs TRD 19,900. [1]", FEES)) == ["UNSUPPORTED"]


def test_derivation_uses_only_the_cited_passages() -> None:
    # The operands sit in passage 2, which the claim does not cite.
    assert verdicts(run("A late report costs TRD 19,800. [1]", METHANE, FEES)) == ["UNSUPPORTED"]


def test_percentage_as_a_ratio_of_two_amounts_is_derived() -> None:
    text = "Of the 400 tonnes received, 100 tonnes were recycled."
    assert verdicts(run("A quarter, 25%, of the waste was recycled. [1]", text)) == ["DERIVED"]


def test_a_year_plus_a_term_is_derived() -> None:
    text = "A licence granted in 2019 is granted for 15 years and may be renewed."
    assert verdicts(run("That licence runs until 2034. [1]", text)) == ["DERIVED"]


def test_percentages_are_not_derived_from_sums_or_multiples() -> None:
    # 17.6 + 35.4 = 53 and 9 x 10 = 90: figures that agree by accident, not arithmetic.
    text = "Rates were 17.6% in towns and 35.4% in villages, across 9 sites in 10 regions."
    assert verdicts(run("Rates reached 53% overall. [1]", text)) == ["UNSUPPORTED"]
    assert verdicts(run("Rates reached 90% overall. [1]", text)) == ["UNSUPPORTED"]


def test_a_derived_amount_must_come_out_close() -> None:
    # 7 x $750 million is $5.25 billion: within "5 billion"'s last digit, not within 0.5%.
    text = "The programme costs $750 million a year and runs for 7 years."
    assert verdicts(run("It costs $5 billion in all. [1]", text)) == ["UNSUPPORTED"]
    assert verdicts(run("It costs $5.25 billion in all. [1]", text)) == ["DERIVED"]


# ------------------------------------------------------------- normalisation

SAME = [
    ("25,000 tonnes", "25000 tonnes"),
    ("25,000 tonnes", "25,000 t"),
    ("25,000 tonnes", "25 kilotonnes"),
    ("1.5 hectares", "15,000 square metres"),
    ("1,500 metres", "1.5 km"),
    ("30 m", "30 metres"),
    ("100 TJ", "100 terajoules"),
    ("35 dB(A)", "35 dBA"),
    ("48 hours", "2 days"),
    ("90%", "90 per cent"),
    ("90%", "90 percent"),
    ("11am", "11 a.m."),
    ("11am", "11:00 am"),
    ("11am", "11.00am"),
    ("10:30pm", "10.30 p.m."),
    ("7am", "7 AM"),
    ("midnight", "12am"),
    ("£2", "2 pounds"),
    ("TRD 19,800", "TRD 19800"),
    ("$5.50", "$5.5"),
    ("€2 million", "2,000,000 euros"),
    ("31 October", "October 31"),
    ("31 October", "31st of October"),
    ("1 July 2024", "July 1, 2024"),
    ("1 July 2024", "2024-07-01"),
    ("ISO 31000", "ISO-31000"),
    ("ISO 31000", "ISO31000"),
    ("ARS 4282", "ARS-4282"),
    ("2012/18/EU", "2012/18/EU"),
    ("s.3.2.1", "section 3.2.1"),
    ("cl.42", "clause 42"),
    ("reg.12", "regulation 12"),
    ("clause 4.6.1", "4.6.1"),
    ("ss. 4", "sections 4"),
    ("§ 7", "s. 7"),
]


@pytest.mark.parametrize(("a", "b"), SAME)
def test_normalisation_makes_equal_forms_equal(a: str, b: str) -> None:
    assert normalised(a) and normalised(a) == normalised(b)


@pytest.mark.parametrize(("source", "claim"), SAME)
def test_an_equal_form_in_the_claim_is_found_in_the_passage(source: str, claim: str) -> None:
    report = run(f"The figure given is {claim} here. [1]", f"The figure stated is {source} there.")
    assert verdicts(report) == ["NOT_CONTRADICTED"]


@pytest.mark.parametrize(
    ("text", "kind", "norm"),
    [
        ("25,000 tonnes", "quantity", "25000000 kg"),
        ("1.5 hectares", "quantity", "15000 m2"),
        ("100 TJ", "quantity", "100000 GJ"),
        ("35 dB(A)", "quantity", "35 dBA"),
        ("1,500 metres", "quantity", "1500 m"),
        ("30 m", "quantity", "30 m"),
        ("90 per cent", "percent", "90%"),
        ("11 a.m.", "time", "11:00"),
        ("8:30", "time", "08:30"),
        ("10:30pm", "time", "22:30"),
        ("£2", "money", "GBP 2"),
        ("TRD 19,800", "money", "TRD 19800"),
        ("$5.50", "money", "USD 5.5"),
        ("2 pounds", "money", "GBP 2"),
        ("2012", "date", "2012"),
        ("31 October", "date", "--10-31"),
        ("1 July 2024", "date", "2024-07-01"),
        ("ISO-31000", "standard", "ISO 31000"),
        ("AS/NZS 4360", "standard", "AS/NZS 4360"),
        ("EN 62305", "standard", "EN 62305"),
        ("ARS 4282", "standard", "ARS 4282"),
        ("2012/18/EU", "directive", "2012/18/EU"),
        ("s.3.2.1", "clause", "§3.2.1"),
        ("section 3.2", "clause", "§3.2"),
        ("cl.42", "clause", "§42"),
        ("4.6.1", "clause", "§4.6.1"),
        ("regs. 12", "clause", "§12"),
        ("paragraph 9", "clause", "§9"),
    ],
)
def test_each_kind_is_read_and_normalised(text: str, kind: str, norm: str) -> None:
    [token] = extract_tokens(f"It says {text} in the rules.")
    assert (token.kind, token.normalised) == (kind, norm)
    assert token.text == text


def test_a_bare_clock_time_may_be_either_half_of_the_day() -> None:
    # "8:30" with no a.m./p.m. is found where the passage says 8:30pm, and vice versa.
    assert verdicts(run("Doors close at 8:30. [1]", "Doors close at 8:30pm daily.")) == [
        "NOT_CONTRADICTED"
    ]
    assert verdicts(run("Doors close at 8:30pm. [1]", "Doors close at 8:30 daily.")) == [
        "NOT_CONTRADICTED"
    ]


def test_a_date_is_found_from_its_day_and_year_in_one_passage() -> None:
    text = "Reports for the 2024 year are due by 31 October."
    assert verdicts(run("The report is due by 31 October 2024. [1]", text)) == ["NOT_CONTRADICTED"]
    assert verdicts(run("The report is due by 31 October 2025. [1]", text)) == ["UNSUPPORTED"]


def test_a_rounded_figure_holds_within_its_last_digit() -> None:
    text = "The reserve covers 15.3 hectares of dune, 76.3% of the shore."
    assert verdicts(run("The reserve covers 15 hectares. [1]", text)) == ["NOT_CONTRADICTED"]
    assert verdicts(run("The reserve covers 16 hectares. [1]", text)) == ["UNSUPPORTED"]
    assert verdicts(run("It covers 76% of the shore. [1]", text)) == ["NOT_CONTRADICTED"]
    assert verdicts(run("It covers 77% of the shore. [1]", text)) == ["UNSUPPORTED"]


def test_money_holds_only_exactly() -> None:
    text = "A pot of tea costs £2.40 at the kiosk."
    assert verdicts(run("Tea costs £2. [1]", text)) == ["UNSUPPORTED"]
    assert verdicts(run("Tea costs £2.40. [1]", text)) == ["NOT_CONTRADICTED"]


def test_a_standard_with_its_year_answers_for_the_standard() -> None:
    text = "Risk registers follow ISO 31000:2018 throughout."
    assert verdicts(run("Registers follow ISO 31000. [1]", text)) == ["NOT_CONTRADICTED"]
    assert verdicts(run("Registers follow ISO 31000:2009. [1]", text)) == ["UNSUPPORTED"]


def test_a_clause_number_heading_a_passage_line_answers_for_a_clause_reference() -> None:
    text = "4.2 A turbine must be set back at least 1,500 metres from any dwelling."
    report = run("Under clause 4.2 the setback is 1,500 metres. [1]", text)
    assert verdicts(report) == ["NOT_CONTRADICTED"]


# ----------------------------------------------------------------- look-alikes

LOOK_ALIKES = [
    ("ISO 31000", "ISO 3100"),
    ("clause 4.6.1", "clause 4.6.1.1"),
    ("4.6.1", "4.6.1.1"),
    ("25,000 tonnes", "2,500 tonnes"),
    ("TRD 25,000", "TRD 2,500"),
    ("11am", "11pm"),
    ("2012/18/EU", "2012/18/EC"),
    ("10%", "100%"),
    ("1.5 hectares", "15 hectares"),
    ("35 dB(A)", "35 dB(C)"),
    ("AS/NZS 4360", "AS/NZS 4630"),
    ("1 July 2024", "1 June 2024"),
    ("10 mM", "10 mm"),  # millimolar is not millimetres
    ("12:30", "2:30"),
]


@pytest.mark.parametrize(("a", "b"), LOOK_ALIKES)
def test_look_alikes_normalise_apart(a: str, b: str) -> None:
    assert normalised(a) != normalised(b)


@pytest.mark.parametrize(("a", "b"), [*LOOK_ALIKES, *[(b, a) for a, b in LOOK_ALIKES]])
def test_a_look_alike_in_the_claim_is_not_found(a: str, b: str) -> None:
    report = run(f"The figure given is {b} here. [1]", f"The figure stated is {a} there.")
    assert verdicts(report) in (["UNSUPPORTED"], ["UNVERIFIABLE"])
    assert verdicts(report) != ["NOT_CONTRADICTED"]


@pytest.mark.parametrize("text", ["3", "two", "There are three guesthouses.", "Item 12 of 40"])
def test_a_bare_number_is_not_checkable(text: str) -> None:
    assert extract_tokens(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "HIV-1 and CD4 counts",  # gene and virus names, not standards
        "CYP450 activity",
        "the COVID-19 period",
        "It is 2 to 3 times higher",
        "I am here at the site",  # `am` without a number is not a time
        "They may be late",  # `may` is not the month
        "It ran for several hundred hours",  # a vague amount, not a figure
        "See Annex 2 and Division 3",  # divisions are not read as clauses in prose
    ],
)
def test_names_and_words_that_look_numeric_are_not_tokens(text: str) -> None:
    assert extract_tokens(text) == []


def test_a_year_before_a_time_word_is_a_year_not_a_span() -> None:
    assert [(t.kind, t.normalised) for t in extract_tokens("the 2024 reporting year")] == [
        ("date", "2024")
    ]
    assert [(t.kind, t.normalised) for t in extract_tokens("the 2024 year")] == [("date", "2024")]


def test_a_clause_list_does_not_swallow_the_quantity_after_it() -> None:
    assert normalised("Under section 3, 25,000 tonnes may be stored.") == [
        "§3",
        "25000000 kg",
    ]


def test_a_range_gives_both_ends() -> None:
    assert normalised("between 20-40% of cases over 5-6 years") == [
        "20%",
        "40%",
        "5 year",
        "6 year",
    ]


# --------------------------------------------------------------------- claims


def test_markers_after_the_full_stop_belong_to_the_sentence_they_close() -> None:
    text = "Gates open at 7am. [1] Parking costs £2 [2] per hour. [1][3] Ask staff. [1, 2]"
    assert split_claims(text) == [
        Claim("Gates open at 7am.", (1,)),
        Claim("Parking costs £2 per hour.", (2, 1, 3)),
        Claim("Ask staff.", (1, 2)),
    ]


def test_a_marker_before_the_full_stop_is_stripped_cleanly() -> None:
    assert split_claims("The limit is 35 dB(A) [2].") == [Claim("The limit is 35 dB(A).", (2,))]


def test_a_claim_citing_two_passages_is_checked_against_both() -> None:
    answer = "Capture 90% of the methane and hold 15 millimetres of runoff [1, 2]."
    assert verdicts(run(answer, METHANE, BASIN)) == ["NOT_CONTRADICTED"]


def test_a_claim_citing_nothing_is_misattributed_when_its_tokens_are_found() -> None:
    report = run("Capture 90% of the methane. The basin is large. [1]", METHANE)
    assert verdicts(report) == ["MISATTRIBUTED", "UNVERIFIABLE"]


def test_citation_numbers_follow_the_citations_not_the_passage_order() -> None:
    # The extractive answerer numbers citations by first use: [1] may be passage 2.
    hits = [passage(1, METHANE), passage(2, BASIN)]
    citations = [cite(1, hits[1], ""), cite(2, hits[0], "")]
    answer = "The basin holds 15 millimetres. [1] Capture 90% of it. [2]"
    report = audit_answer(answer, citations, hits, refused=False)
    assert verdicts(report) == ["NOT_CONTRADICTED", "NOT_CONTRADICTED"]
    assert [c.passages for c in report.claims] == [(2,), (1,)]
