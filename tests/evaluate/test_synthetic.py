"""Probes made from a corpus's own text: labels that hold by construction, on the bundled
example corpus and on small corpora written here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from groundqa.engine import Engine
from groundqa.errors import UsageError
from groundqa.evaluate.synthetic import (
    FUNCTION_WORDS,
    METHODS,
    NUMBER_WORDS,
    OUTSIDE_KNOWN,
    SAME_FACT,
    make_probes,
)
from groundqa.ingestion import ingest_documents
from groundqa.loaders import load
from groundqa.models import Document, Section
from groundqa.text import DEFAULT_ANALYZER, Analyzer, split_sentences
from tests.conftest import ROOT

REGPACK = ROOT / "examples" / "regpack"
ANALYZER = Analyzer(DEFAULT_ANALYZER)


@pytest.fixture(scope="module")
def documents() -> list[Document]:
    return load([REGPACK]).documents


def corpus_text(documents: list[Document] | tuple[Document, ...]) -> str:
    return "\n".join(s.text for d in documents for s in d.sections)


def terms(text: str) -> set[str]:
    return ANALYZER.term_set(text)


def content_terms(text: str) -> set[str]:
    """The stems of a sentence's content words: no function word, number or short word."""
    words = re.findall(r"[A-Za-z][A-Za-z'’-]*[A-Za-z]", text)
    return {
        ANALYZER.terms(w)[0]
        for w in words
        if len(w) > 2 and w.lower() not in FUNCTION_WORDS | NUMBER_WORDS and ANALYZER.terms(w)
    }


@pytest.mark.parametrize("method", METHODS)
def test_the_same_seed_makes_the_same_probes_and_another_seed_others(
    documents: list[Document], method: str
) -> None:
    first = make_probes(documents, n=120, method=method, seed=3)
    again = make_probes(documents, n=120, method=method, seed=3)
    other = make_probes(documents, n=120, method=method, seed=4)
    assert first == again
    assert [p.question for p in first.probes] != [p.question for p in other.probes]


@pytest.mark.parametrize("method", METHODS)
def test_a_corpus_with_enough_text_gets_the_shares_asked_for(
    documents: list[Document], method: str
) -> None:
    made = make_probes(documents, n=200, method=method, seed=0)
    assert made.counts() == {"answerable": 100, "near_miss": 50, "out_of_scope": 50}
    assert len({p.id for p in made.probes}) == 200
    assert {p.id for p in made.probes} == {pid for pid, _ in made.sources}


@pytest.mark.parametrize("method", METHODS)
def test_an_answerable_probe_s_sentence_stays_in_its_expected_section(
    documents: list[Document], method: str
) -> None:
    made = make_probes(documents, n=200, method=method, seed=0)
    sections = {s.section_id: s.text for d in made.documents for s in d.sections}
    answerable = [p for p in made.probes if p.kind == "answerable"]
    for probe in answerable:
        (expected,) = probe.expected
        assert made.source(probe.id) in sections[expected]
        assert probe.group == f"syn:{expected}"


@pytest.mark.parametrize("method", METHODS)
def test_a_near_miss_s_sentence_and_every_sentence_stating_its_fact_are_gone(
    documents: list[Document], method: str
) -> None:
    made = make_probes(documents, n=200, method=method, seed=0)
    left = [s for d in made.documents for sec in d.sections for s in split_sentences(sec.text)]
    left_terms = [content_terms(s) for s in left]
    near = [p for p in made.probes if p.kind == "near_miss"]
    assert near and all(not p.expected for p in near)
    for probe in near:
        source = made.source(probe.id)
        assert source not in corpus_text(made.documents)
        own = content_terms(source)
        for other in left_terms:
            assert len(own & other) / len(own) < SAME_FACT, (source, other)
    # What was removed is exactly what the original corpus lost, and no section emptied.
    original = corpus_text(documents)
    assert all(sentence in original for _, sentence in made.removed)
    assert all(s.text.strip() for d in made.documents for s in d.sections)
    assert len(made.removed) >= len(near)


def test_a_fact_written_many_times_is_cut_everywhere_or_not_made_a_near_miss() -> None:
    # A log that repeats a handful of lines hundreds of times, beside an ordinary section.
    lines = [
        f"The {who} inspects the {what} before the {when} tide."
        for who in ("harbour master", "ferry crew")
        for what in ("slipway", "north wall", "fuel berth")
        for when in ("morning", "evening")
    ]
    log = " ".join(lines[i % len(lines)] for i in range(600))
    other = "Dredging of the inner basin is booked every third spring by the port board."
    documents = [
        Document(
            doc_id="log",
            title="Harbour log",
            source="log.md",
            format="markdown",
            sections=(Section("log#1", "Log", log), Section("log#2", "Dredging", other)),
        )
    ]
    made = make_probes(documents, n=40, method="keywords", seed=0)
    assert made.counts()["near_miss"] and made.counts()["answerable"]
    # A line cut went at each of its 50 places (with the lines that state the same fact).
    assert len(made.removed) % 50 == 0 and len(made.removed) >= 50 * made.counts()["near_miss"]
    left = split_sentences(corpus_text(made.documents))
    for probe in (p for p in made.probes if p.kind == "near_miss"):
        source = made.source(probe.id)
        assert source not in left  # every copy of it went, not the first alone
    for probe in (p for p in made.probes if p.answerable):
        assert made.source(probe.id) in left
    assert all(s.text.strip() for d in made.documents for s in d.sections)


@pytest.mark.parametrize("method", METHODS)
def test_a_question_holds_back_the_answer_and_does_not_copy_its_sentence(
    documents: list[Document], method: str
) -> None:
    made = make_probes(documents, n=200, method=method, seed=0)
    for probe in made.probes:
        source = made.source(probe.id)
        assert probe.question.endswith("?")
        figures = set(re.findall(r"\d[\d.,:]*", source))
        assert not figures & set(re.findall(r"\d[\d.,:]*", probe.question)), probe.question
        asked = terms(probe.question)
        assert asked and not terms(source) <= asked, (probe.question, source)


@pytest.mark.parametrize("method", METHODS)
def test_out_of_scope_queries_use_few_words_the_corpus_knows(
    documents: list[Document], method: str
) -> None:
    made = make_probes(documents, n=200, method=method, seed=0)
    known = terms(corpus_text(documents))
    for probe in (p for p in made.probes if p.kind == "out_of_scope"):
        asked = ANALYZER.query_terms(probe.question)
        assert sum(t in known for t in asked) / len(asked) <= OUTSIDE_KNOWN, probe.question
        assert made.source(probe.id) not in corpus_text(documents)


def test_a_figure_held_out_is_asked_for_by_its_kind() -> None:
    sections = (
        Section("t#Times", "Times", "The ferry to Halden Bay leaves the north quay at 9am daily."),
        Section("t#Fares", "Fares", "A return ticket on the Halden Bay ferry costs 12 pounds."),
        Section("t#Crew", "Crew", "The ferry carries 14 crew members on every summer crossing."),
    )
    doc = Document("t", "Ferry", "t.md", "markdown", sections)
    made = make_probes([doc], n=6, method="keywords", seed=0)
    words = {made.source(p.id): p.question.split()[0:2] for p in made.probes if p.expected}
    asked = {s: " ".join(w) for s, w in words.items()}
    for sentence, opening in asked.items():
        if "9am" in sentence:
            assert opening.startswith("When")
        elif "pounds" in sentence:
            assert opening == "How much"
        else:
            assert opening == "How many"


def test_a_tiny_corpus_gets_fewer_probes_and_keeps_every_section(tmp_path: Path) -> None:
    sections = (
        Section("s#A", "Harbour", "The harbour master inspects the slipway every Monday morning."),
        Section("s#B", "Market", "Stalls on the market square open before eight on Saturdays."),
    )
    doc = Document("s", "Town", "s.md", "markdown", sections)
    made = make_probes([doc], n=40, method="keywords", seed=0)
    counts = made.counts()
    # A section never loses its only sentence, so neither can become a near miss.
    assert counts.get("near_miss", 0) == 0
    assert counts["answerable"] == 2
    assert [s.text for s in made.documents[0].sections] == [s.text for s in sections]


def test_an_unknown_method_is_a_usage_error(documents: list[Document]) -> None:
    with pytest.raises(UsageError, match="keywords, heading"):
        make_probes(documents, method="llm")


def test_the_corpus_made_with_the_probes_indexes_and_answers_its_answerable_ones(
    documents: list[Document], tmp_path: Path
) -> None:
    made = make_probes(documents, n=80, method="keywords", seed=0)
    ingest_documents(made.documents, tmp_path / "idx", dense=None)
    engine = Engine.open(tmp_path / "idx", reader="lexical")
    found = 0
    answerable = [p for p in made.probes if p.kind == "answerable"]
    for probe in answerable:
        hits = engine.search(probe.question, depth=5)
        found += any(h.chunk.section_id in probe.expected for h in hits)
    # Keyword queries find their section most of the time (they are meant to be harder than
    # the sentence itself, not impossible).
    assert found / len(answerable) >= 0.6


def test_the_probes_do_not_depend_on_python_s_string_hashing(tmp_path: Path) -> None:
    # Sets of words iterate in another order in every process; ties must not follow it.
    script = (
        "import hashlib, json\n"
        "from groundqa.evaluate.synthetic import make_probes\n"
        "from groundqa.loaders import load\n"
        f"docs = load([{str(REGPACK)!r}]).documents\n"
        "made = make_probes(docs, n=200, method='mixed', seed=5)\n"
        "text = json.dumps([p.to_dict() for p in made.probes] + list(made.removed))\n"
        "print(hashlib.sha256(text.encode()).hexdigest())\n"
    )
    seen = set()
    for seed in ("1", "2", "3"):
        proc = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=True,
        )
        seen.add(proc.stdout.strip())
    assert len(seen) == 1
