"""The extractive answerer: verbatim sentences from the passages, each with its `[n]`.

Real passages built in the test; which sentences are quoted follows from the
scores worked out beside each case (coverage of the question's topic terms, plus
0.25 for a sentence that holds the kind of fact asked for, plus 0.05 / passage
number; see `read`).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundqa.cli import main
from groundqa.engine import Engine
from groundqa.errors import UsageError
from groundqa.generate import Evidence, Generation, get_generator
from groundqa.generate.extractive import ExtractiveGenerator
from groundqa.ingestion import ingest
from groundqa.models import REFUSAL, Chunk, Hit
from groundqa.read import Reader, Reading, Sentence
from groundqa.text import Analyzer, PassageTerms
from tests.conftest import REGPACK

ANALYZER = Analyzer()
WHEN = "What time does the smokehouse open?"  # topic: time, smokehous, open
WHO = "Who chairs the heritage council?"  # topic: chair, heritag, council


def _evidence(question: str, *texts: str, reading: Reading | None = None) -> Evidence:
    hits = tuple(
        Hit(Chunk(f"c{n}", f"d{n}.md", f"d{n}.md#s", "Town notes", (), text, f"d{n}.md"), 1.0, n)
        for n, text in enumerate(texts, 1)
    )
    weights = dict.fromkeys(ANALYZER.query_terms(question), 1.0)
    return Evidence(question, weights, hits, PassageTerms(ANALYZER), reading=reading)


OPENING = (
    "The smokehouse opens early on weekdays.",  # 2/3 + 0.05 = 0.717
    "The smokehouse opens at 7am daily.",  # 2/3 + 0.25 + 0.025 = 0.942
    "The smokehouse opens at 9am on Sundays.",  # 2/3 + 0.25 + 0.017 = 0.933
)


# The default: every sentence within `keep_ratio` of the best, whatever it adds.
EVERY_CLOSE = ExtractiveGenerator()
# `extractive:concise`: a further sentence only for what the quoted ones leave out.
CONCISE = ExtractiveGenerator(concise=True)


def test_the_best_sentences_are_quoted_and_numbered_by_first_use() -> None:
    # All three score at least 0.75 x 0.942 = 0.706: best first, passages numbered as used.
    got = EVERY_CLOSE.generate(_evidence(WHEN, *OPENING))
    assert not got.refused and got.reason == ""
    assert got.text == (
        "The smokehouse opens at 7am daily. [1] The smokehouse opens at 9am on Sundays. [2] "
        "The smokehouse opens early on weekdays. [3]"
    )
    assert [(c.n, c.chunk_id, c.snippet) for c in got.citations] == [
        (1, "c2", OPENING[1]),
        (2, "c3", OPENING[2]),
        (3, "c1", OPENING[0]),
    ]


def test_max_sentences_and_keep_ratio_bound_the_answer() -> None:
    two = replace(EVERY_CLOSE, max_sentences=2).generate(_evidence(WHEN, *OPENING))
    assert [c.chunk_id for c in two.citations] == ["c2", "c3"]
    # 0.8 x 0.942 = 0.753: the 0.717 sentence without a time is left out
    close = replace(EVERY_CLOSE, keep_ratio=0.8).generate(_evidence(WHEN, *OPENING))
    assert close.text.endswith("on Sundays. [2]") and len(close.citations) == 2


def test_a_sentence_that_only_repeats_the_quoted_topic_is_not_quoted() -> None:
    # All three hold the same topic words (smokehous, open); the best (0.942) is quoted
    # alone: the 0.933 one is no tie, and the others add no word of the question.
    got = CONCISE.generate(_evidence(WHEN, *OPENING))
    assert got.text == "The smokehouse opens at 7am daily. [1]"
    assert [c.chunk_id for c in got.citations] == ["c2"]


def test_a_sentence_for_another_part_of_the_question_is_quoted() -> None:
    # topic: time, smokehous, bakeri, open. Best: the smokehouse at 7am (2/4 + 0.25 +
    # 0.05 = 0.80); the bakery (2/4 + 0.25 + 0.025 = 0.775) adds "bakeri"; the smokehouse
    # on Sundays (0.767) adds nothing the two quoted do not hold.
    question = "What time do the smokehouse and the bakery open?"
    got = CONCISE.generate(_evidence(question, OPENING[1], "The bakery opens at 6am.", OPENING[2]))
    assert got.text == "The smokehouse opens at 7am daily. [1] The bakery opens at 6am. [2]"


def test_sentences_the_reader_cannot_tell_apart_are_quoted_together() -> None:
    # One passage, two sentences of the same score (same topic words, both a time): a tie.
    text = "The smokehouse opens at 7am daily. The smokehouse opens at 9am on Sundays."
    tied = CONCISE.generate(_evidence(WHEN, text))
    assert tied.text.count("[1]") == 2
    untied = replace(CONCISE, quote_ties=False).generate(_evidence(WHEN, text))
    assert untied.text == "The smokehouse opens at 7am daily. [1]"


def test_the_concise_mode_is_named_in_the_generator_spec() -> None:
    assert get_generator("extractive") == EVERY_CLOSE
    assert get_generator("extractive:concise") == CONCISE
    with pytest.raises(UsageError, match="unknown extractive mode 'brief'"):
        get_generator("extractive:brief")


def test_the_same_sentence_in_two_passages_is_quoted_once() -> None:
    got = ExtractiveGenerator().generate(_evidence(WHEN, OPENING[1], OPENING[1]))
    assert got.text == "The smokehouse opens at 7am daily. [1]"
    assert [c.chunk_id for c in got.citations] == ["c1"]


def test_sentences_of_one_passage_share_its_number_and_snippet() -> None:
    text = "The smokehouse opens at 7am daily. The smokehouse opens at 9am on Sundays."
    got = ExtractiveGenerator().generate(_evidence(WHEN, text))
    assert got.text == (
        "The smokehouse opens at 7am daily. [1] The smokehouse opens at 9am on Sundays. [1]"
    )
    assert len(got.citations) == 1 and got.citations[0].snippet == text


def test_the_sentence_after_the_best_comes_along_when_it_holds_the_fact() -> None:
    # best: "... chaired by a resident." (1.0 + 0.05, no name); the next sentence scores
    # 1/3 + 0.25 + 0.05 = 0.63, below 0.75 x 1.05, yet holds the name the question asks for.
    text = "The heritage council is chaired by a resident. Margaret Olsen holds the chair now."
    got = ExtractiveGenerator().generate(_evidence(WHO, text))
    assert got.text == (
        "The heritage council is chaired by a resident. [1] Margaret Olsen holds the chair now. [1]"
    )
    # without a kind of fact asked for, nothing comes along
    alone = "What does the heritage council chair do?"
    assert ExtractiveGenerator().generate(_evidence(alone, text)).text == (
        "The heritage council is chaired by a resident. [1]"
    )


def test_no_sentence_on_the_topic_is_a_refusal() -> None:
    got = ExtractiveGenerator().generate(
        _evidence(WHEN, "Trains run from Portmere every forty minutes.")
    )
    assert (got.text, got.citations, got.refused) == (REFUSAL, (), True)
    assert got.reason == "no sentence in the passages mentions the question's topic"


def test_too_little_of_the_question_covered_is_a_refusal() -> None:
    # topic: time, smokehous, quay, street, open; the sentence holds only smokehous: 1/5
    question = "What time does the smokehouse on Quay Street open?"
    got = ExtractiveGenerator().generate(
        _evidence(question, "Ferries leave at noon, the smokehouse says.")
    )
    assert got.refused and got.citations == ()
    assert got.reason == "the best sentence covers 20% of the question (needs 30%)"
    lenient = ExtractiveGenerator(min_coverage=0.2).generate(
        _evidence(question, "Ferries leave at noon, the smokehouse says.")
    )
    assert lenient.text == "Ferries leave at noon, the smokehouse says. [1]"


def test_a_reading_given_with_the_evidence_is_quoted_not_made_again() -> None:
    evidence = _evidence(WHEN, *OPENING)
    made = ExtractiveGenerator().reading(evidence)
    assert made == Reader(PassageTerms(ANALYZER)).read(WHEN, evidence.weights, evidence.hits)
    # A Reading that says passage 1's first sentence is the only candidate: it is quoted,
    # though the passages alone would have put another first.
    given = Reading((Sentence(0, 0, OPENING[0], 1.0, 1.0, True),), asked=True, found=True)
    with_reading = replace(evidence, reading=given)
    assert ExtractiveGenerator().reading(with_reading) is given
    got = ExtractiveGenerator().generate(with_reading)
    assert got.text == f"{OPENING[0]} [1]" and got.citations[0].chunk_id == "c1"


def test_stream_yields_one_piece_per_cited_sentence_then_the_generation() -> None:
    items = list(EVERY_CLOSE.stream(_evidence(WHEN, *OPENING)))
    *pieces, last = items
    assert isinstance(last, Generation)
    assert pieces == [
        "The smokehouse opens at 7am daily. [1]",
        " The smokehouse opens at 9am on Sundays. [2]",
        " The smokehouse opens early on weekdays. [3]",
    ]
    assert "".join(str(p) for p in pieces) == last.text
    refusal = list(ExtractiveGenerator().stream(_evidence(WHEN, "Nothing on ferries.")))
    assert refusal[0] == REFUSAL and isinstance(refusal[1], Generation) and refusal[1].refused
    assert len(refusal) == 2


OFFSET = "What offset ratio applies when clearing high conservation value vegetation in Northmere?"


@pytest.fixture(scope="module")
def regpack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    index = tmp_path_factory.mktemp("extractive") / "index"
    ingest([REGPACK], index, dense=None)
    return index


def test_ask_quotes_concisely_when_asked_to(regpack: Path) -> None:
    engine = Engine.open(regpack, reader="lexical")
    full = engine.ask(OFFSET)
    concise = engine.ask(OFFSET, generator="extractive:concise")
    sentences = re.split(r"(?<=\]) ", full.answer)
    # The default quotes three: the 2:1 ratio (offset, ratio, clear, veget), the HCV
    # definition (high, conserv, valu), and "For HCV vegetation the ratio is 4:1.", whose
    # words the first two already hold, so the concise answer leaves it out.
    assert len(sentences) == 3 and sentences[2] == "For HCV vegetation the ratio is 4:1. [1]"
    assert concise.answer == " ".join(sentences[:2])
    assert concise.outcome == full.outcome == "confident"
    runner = CliRunner()
    got = runner.invoke(
        main,
        ["ask", "--index", str(regpack), "--generator", "extractive:concise", "--json", OFFSET],
    )
    assert got.exit_code == 0, got.output
    assert json.loads(got.output)["answer"] == concise.answer
    bad = runner.invoke(
        main, ["ask", "--index", str(regpack), "--generator", "extractive:x", OFFSET]
    )
    assert bad.exit_code == 2 and "unknown extractive mode 'x'" in bad.output
