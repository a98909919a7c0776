"""The ask pipeline over the bundled example corpus: cite, refuse, filter, reject bad input."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from groundqa.engine import Engine
from groundqa.errors import UsageError
from groundqa.gate import DEFAULT_GATE, gate_features
from groundqa.index.base import Store
from groundqa.ingestion import ingest
from groundqa.models import REFUSAL, Answer
from groundqa.query import Query
from tests.conftest import copy_index


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, regpack_build: Path) -> Engine:
    index = tmp_path_factory.mktemp("regpack") / "idx"
    copy_index(regpack_build, index)
    return Engine.open(index)


def _markers(text: str) -> set[int]:
    return {int(n) for n in re.findall(r"\[(\d+)\]", text)}


def test_answer_is_extracted_and_every_marker_resolves(engine: Engine) -> None:
    answer = engine.ask("When is a NEER report due?")
    assert not answer.refused
    assert _markers(answer.answer) == {c.n for c in answer.citations}
    retrieved = {h.chunk.chunk_id: " ".join(h.chunk.text.split()) for h in answer.passages}
    for c in answer.citations:
        assert c.chunk_id in retrieved
        assert c.snippet and c.snippet in retrieved[c.chunk_id]
        assert c.uri.startswith("file://") and c.title
    # extractive: every sentence of the answer is copied from a cited passage
    cited_text = " ".join(
        " ".join(h.chunk.text.split())
        for h in answer.passages
        if h.chunk.chunk_id in {c.chunk_id for c in answer.citations}
    )
    for sentence in re.split(r"\s*\[\d+\]\s*", answer.answer):
        if sentence:
            assert sentence in cited_text


def test_answer_from_a_csv_row_cites_the_row(engine: Engine) -> None:
    answer = engine.ask("What is the infringement amount for lodging a NEER report late?")
    assert not answer.refused
    assert "SCH1-01" in {c.section_id for c in answer.citations}
    assert "19,800" in answer.answer


def test_out_of_scope_is_refused_with_no_citation(engine: Engine) -> None:
    answer = engine.ask("Who won the football world cup in 1994?")
    assert answer.refused and answer.answer == REFUSAL
    assert answer.citations == () and answer.refused_by == "gate"
    assert answer.confidence < answer.gate.threshold and not answer.gate.calibrated
    assert answer.gate.features["coverage"] == 0.0


def test_question_with_no_topic_words_is_refused(engine: Engine) -> None:
    answer = engine.ask("What is it?")
    assert answer.refused and answer.gate.reason == "the question has no topic words"


def test_filters_restrict_every_hit(engine: Engine) -> None:
    hits = engine.retrieve("vegetation clearing permit", k=10, filters={"state": "Westhaven"})
    assert hits and all(h.chunk.metadata.get("state") == "Westhaven" for h in hits)
    both = engine.retrieve("tree", k=20, filters={"area": ["Fennick City", "Ashcombe Shire"]})
    assert {h.chunk.metadata["area"] for h in both} <= {"Fennick City", "Ashcombe Shire"}
    assert len({h.chunk.metadata["area"] for h in both}) == 2


def test_filter_is_applied_before_top_k(engine: Engine) -> None:
    # The only federal heritage chunks must come back even though others outrank them.
    unfiltered = engine.retrieve("heritage", k=3)
    filtered = engine.retrieve("heritage", k=3, filters={"jurisdiction": "federal"})
    assert filtered and all(h.chunk.metadata["jurisdiction"] == "federal" for h in filtered)
    assert [h.chunk.chunk_id for h in filtered] != [h.chunk.chunk_id for h in unfiltered]


def test_filter_typos_are_errors_not_empty_results(engine: Engine) -> None:
    with pytest.raises(UsageError, match="unknown filter key 'stat'"):
        engine.ask("trees", filters={"stat": "Northmere"})
    with pytest.raises(UsageError, match="did you mean Northmere"):
        engine.ask("trees", filters={"state": "Northmeer"})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"question": "   "}, "empty"),
        ({"question": "x" * 2001}, "limit is 2000"),
        ({"question": "trees", "k": 0}, "k must be between"),
        ({"question": "trees", "k": 10_000}, "k must be between"),
        ({"question": "trees", "retriever": "splade"}, "unknown retriever 'splade'"),
        ({"question": "trees", "retriever": "hybrid+cap=0"}, "cap must be at least 1"),
        (
            {"question": "trees", "generator": "gpt:x"},
            "unknown generator 'gpt:x'; available: anthropic, bedrock, extractive,",
        ),
    ],
)
def test_bad_requests(engine: Engine, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        engine.ask(**kwargs)  # type: ignore[arg-type]


def test_answer_json_round_trip(engine: Engine) -> None:
    answer = engine.ask("How tall must a tree be to be protected in Fennick City?")
    again = Answer.from_dict(json.loads(json.dumps(answer.to_dict())))
    assert again == answer


def test_open_reads_what_ingest_wrote(engine: Engine, tmp_path: Path) -> None:
    assert engine.manifest.counts["chunks"] == len(engine.chunks)
    # A fresh build carries no calibration, and the engine uses the built-in default gate.
    assert engine.manifest.gate == {}
    assert engine.gate is DEFAULT_GATE and not engine.gate.calibrated
    assert {c.section_id for c in engine.chunks} >= {"SCH1-01"}


def test_detected_places_scope_the_search_but_keep_national_rules(engine: Engine) -> None:
    scope = engine.facets.detect_scope("How tall must a tree be to be protected in Fennick?")
    assert scope == {"area": ["Fennick City"], "state": ["Northmere"]}
    assert engine.facets.detect_scope("What is the NEER threshold?") == {}
    hits = engine.retrieve("tree permit emissions", k=30, scope=scope)
    places = {(h.chunk.metadata.get("state"), h.chunk.metadata.get("area")) for h in hits}
    assert (None, None) in places  # federal rules still apply
    assert all(s in (None, "Northmere") for s, _ in places)
    assert all(a in (None, "Fennick City") for _, a in places)
    answer = engine.ask("Which trees are protected in Fennick?", auto_scope=True)
    assert answer.scope == scope
    assert all(c.section_id.startswith("local_fennick") for c in answer.citations)


def test_a_reopened_engine_keeps_the_query_model_of_the_same_embedder(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "ferry.md").write_text("# Ferries\n\n## Timetable\n\nThe ferry leaves at dawn.\n")
    index = tmp_path / "idx"
    ingest([corpus], index)
    first = Engine.open(index)
    model = first.retriever.query_embedder()
    (corpus / "bus.md").write_text("# Buses\n\n## Timetable\n\nThe bus leaves at noon.\n")
    ingest([corpus], index)
    second = first.reopen()
    assert second.manifest.build_id != first.manifest.build_id
    assert second.retriever.query_embedder() is model  # not loaded again
    assert second.ask("When does the bus leave?").citations
    # A build without vectors has no query model to keep.
    ingest([corpus], index, dense=None, force=True)
    third = second.reopen()
    assert not third.store.has_vectors and third.retriever.loaded_embedder is None
    for engine in (first, second, third):
        engine.store.close()


class CountingStore:
    """A real store, with each search and lookup it serves counted by method."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._store, name)
        if name in ("lexical_search", "vector_search", "document_frequencies"):

            def counted(*args: Any, **kwargs: Any) -> Any:
                self.calls[name] += 1
                return value(*args, **kwargs)

            return counted
        return value


@pytest.mark.parametrize("plan", ["hybrid+weighted=0.5/0.5+defs", "bm25", "dense"])
def test_an_ask_searches_each_method_once(engine: Engine, plan: str) -> None:
    counting = CountingStore(engine.store)
    counted = Engine(counting, engine.analyzer)  # type: ignore[arg-type]
    answer = counted.ask("What is the turbine setback from a dwelling?", retriever=plan)
    assert not answer.refused
    # The gate reads each method's own best from the Retrieval: no second search.
    assert counting.calls == {"lexical_search": 1, "vector_search": 1, "document_frequencies": 1}
    # ... and decides exactly as it would from a retrieval made on its own.
    retrieval = engine.retrieval(
        Query("What is the turbine setback from a dwelling?", retriever=plan)
    )
    assert answer.gate.features == gate_features(
        retrieval.top(len(answer.passages)), engine.read(retrieval.top(len(answer.passages)))
    )


def test_a_deeper_retrieval_is_answered_from_without_searching_again(engine: Engine) -> None:
    counting = CountingStore(engine.store)
    counted = Engine(counting, engine.analyzer)  # type: ignore[arg-type]
    query = Query("When is a NEER report due?")
    retrieval = counted.retrieval(query, depth=50)
    assert len(retrieval.hits) == 50
    before = dict(counting.calls)
    answer = counted.ask(query, retrieval=retrieval)
    assert counting.calls == before
    assert answer == replace(engine.ask(query), timings_ms=answer.timings_ms)


def test_the_gate_reads_the_expanded_question_when_the_plan_expands_acronyms(
    engine: Engine,
) -> None:
    """With `+acr` retrieval searches the expanded question; the gate's BM25 signals are
    that search's own, not a second search of the raw question."""
    question = "What must a NEER report contain?"
    plain = engine.retrieval(Query(question, retriever="bm25"))
    expanded = engine.retrieval(Query(question, retriever="bm25+acr"))
    assert expanded.text != question and "NEER" in expanded.text
    assert expanded.lexical == tuple(
        engine.store.lexical_search(engine.analyzer.terms(expanded.text), len(expanded.lexical))
    )
    assert expanded.lexical != plain.lexical


@pytest.mark.parametrize(
    ("plan", "calls"),
    [
        ("bm25", {"lexical_search": 1}),
        ("dense", {"vector_search": 1}),
        ("hybrid", {"lexical_search": 1, "vector_search": 1}),
    ],
)
def test_a_ranking_alone_runs_only_the_plans_methods(
    engine: Engine, plan: str, calls: dict[str, int]
) -> None:
    """`search` (ranking evaluation) skips the gate's signals: no embedding for a BM25
    plan, no BM25 for a dense one, no document-frequency lookup; the ranking is the one
    an ask sees."""
    counting = CountingStore(engine.store)
    counted = Engine(counting, engine.analyzer)  # type: ignore[arg-type]
    question = "What is the turbine setback from a dwelling?"
    hits = counted.search(question, depth=10, retriever=plan)
    assert counting.calls == calls
    assert hits == list(engine.retrieval(Query(question, retriever=plan), 10).hits)
    # A ranking without signals is never gated: ask searches again for what the gate needs.
    unsignalled = counted.retriever.retrieve(Query(question, retriever=plan), 10, signals=False)
    assert not unsignalled.signals
    answer = counted.ask(question, retriever=plan, retrieval=unsignalled)
    assert answer == replace(engine.ask(question, retriever=plan), timings_ms=answer.timings_ms)
