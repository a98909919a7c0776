"""Retrieval: plans, facets (filters and the scope hierarchy), and the `Retrieval` a
retriever hands on, round-tripped from a real index of the example corpus."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from groundqa.engine import Engine
from groundqa.errors import UsageError
from groundqa.ingestion import ingest
from groundqa.models import Chunk
from groundqa.retrieve import (
    DEFAULT_DENSE_PLAN,
    DEFAULT_LEXICAL_PLAN,
    PLAN_FORMS,
    FacetIndex,
    Retrieval,
    check_retriever,
    flat_metadata,
    parse_plan,
)
from tests.conftest import REGPACK

# ------------------------------------------------------------------ plans


def test_plans_parse_and_reject_wrong_options() -> None:
    plan = parse_plan("hybrid+weighted=0.5/0.5+cap=2+acr+places=boost")
    assert plan.method == "hybrid" and plan.fusion.weights == (0.5, 0.5)
    assert plan.cap == 2 and plan.acronyms and plan.places == "boost"
    assert parse_plan("hybrid+rrf=20").fusion.k == 20
    for bad, message in [
        ("vector", "unknown retriever 'vector'"),
        ("hybrid+weighted=1", "two weights"),
        ("hybrid+mmr=2", "between 0 and 1"),
        ("hybrid+places=everywhere", "unknown option"),
        ("bm25+fast", "unknown option 'fast'"),
    ]:
        with pytest.raises(UsageError, match=message):
            parse_plan(bad)


def test_a_plan_spells_every_step_and_defaults_the_rest() -> None:
    plain = parse_plan(" bm25 ")
    assert (plain.method, plain.spec) == ("bm25", "bm25")
    assert (plain.acronyms, plain.definitions, plain.places, plain.cap, plain.mmr) == (
        False,
        False,
        "off",
        None,
        None,
    )
    assert (plain.fusion.method, plain.fusion.k) == ("rrf", 60) and not plain.needs_vectors
    assert parse_plan("bm25+mmr=0.5").needs_vectors  # MMR compares vectors
    assert parse_plan("dense").needs_vectors and parse_plan("hybrid").needs_vectors
    lexical = parse_plan(DEFAULT_LEXICAL_PLAN)
    assert lexical.method == "bm25" and lexical.definitions
    dense = parse_plan(DEFAULT_DENSE_PLAN)
    assert dense.method == "hybrid" and dense.definitions and dense.fusion.weights == (0.5, 0.5)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "unknown retriever ''"),
        ("bm25+cap=0", "cap must be at least 1"),
        ("bm25+cap=two", "retriever 'bm25+cap=two': "),
        ("bm25+acr=1", "unknown option 'acr=1'"),
        ("bm25+defs=yes", "unknown option 'defs=yes'"),
        ("hybrid+mmr=-0.1", "mmr takes a weight between 0 and 1"),
    ],
)
def test_a_wrong_plan_is_one_line_that_lists_the_forms(spec: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_plan(spec)
    assert message in caught.value.message
    assert PLAN_FORMS in caught.value.message and "\n" not in caught.value.message


def test_a_plan_that_needs_vectors_is_refused_by_an_index_without_them() -> None:
    assert check_retriever("bm25+cap=2", ("bm25",)).cap == 2
    assert check_retriever("hybrid", ("bm25", "dense", "hybrid")).method == "hybrid"
    for spec in ("dense", "hybrid+weighted", "bm25+mmr=0.3"):
        with pytest.raises(UsageError, match="needs vectors and this index has none"):
            check_retriever(spec, ("bm25",))


# ------------------------------------------------------------------ facets


def _chunk(n: int, metadata: dict[str, Any]) -> Chunk:
    return Chunk(
        f"c{n}", f"d{n}.md", f"d{n}.md#s", f"Doc {n}", (), "text", f"d{n}.md", metadata=metadata
    )


CHUNKS = [
    _chunk(0, {"frameworks": ["NGER", "GHG Protocol"], "reporting": {"scheme": "NGER"}}),
    _chunk(1, {"state": "Avonia", "frameworks": ["NGER"]}),
    _chunk(2, {"state": "Avonia", "area": "Corley Shire"}),
    _chunk(3, {"state": "Belmarsh", "frameworks": ["GHG Protocol"]}),
    _chunk(4, {"state": "Belmarsh", "area": "Fennick City"}),
]
FACETS = FacetIndex(CHUNKS)


def _rows(mask: np.ndarray | None) -> list[int]:
    assert mask is not None
    return np.flatnonzero(mask).tolist()


def test_flat_metadata_dots_nested_keys_and_drops_what_cannot_be_a_value() -> None:
    got = flat_metadata({"a": 1, "b": {"c": "x", "d": {"e": ["y", None, {"z": 1}]}}, "f": None})
    assert got == [("a", 1), ("b.c", "x"), ("b.d.e", ["y"])]
    # four levels of keys are facets; a fifth is stored but not indexed
    deep = {"l1": {"l2": {"l3": {"l4": "kept", "l5": {"x": "too deep"}}}, "k": "kept"}}
    assert flat_metadata(deep) == [("l1.l2.l3.l4", "kept"), ("l1.k", "kept")]


def test_facets_list_keys_and_values_as_the_corpus_spells_them() -> None:
    assert FACETS.keys() == ["area", "frameworks", "reporting.scheme", "state"]
    assert FACETS.values("STATE") == ["Avonia", "Belmarsh"]
    assert FACETS.values("frameworks") == ["GHG Protocol", "NGER"]
    assert FACETS.values("nothing") == []


def test_filters_match_any_of_or_all_of_and_ignore_case() -> None:
    assert FACETS.mask({}) is None
    assert _rows(FACETS.mask({"state": "avonia"})) == [1, 2]
    assert _rows(FACETS.mask({"frameworks": ["NGER", "GHG Protocol"]})) == [0, 1, 3]
    assert _rows(FACETS.mask({"frameworks": {"any": ["NGER"]}})) == [0, 1]
    assert _rows(FACETS.mask({"frameworks": {"all": ["NGER", "GHG Protocol"]}})) == [0]
    assert _rows(FACETS.mask({"reporting.scheme": "nger"})) == [0]
    # every key must match
    assert _rows(FACETS.mask({"state": ["Avonia", "Belmarsh"], "frameworks": "NGER"})) == [1]


def test_a_filter_typo_is_an_error_that_lists_what_exists() -> None:
    with pytest.raises(UsageError, match="unknown filter key 'stat'; this index has: area, "):
        FACETS.mask({"stat": "Avonia"})
    with pytest.raises(UsageError, match="no chunk has state='avonai'; did you mean Avonia"):
        FACETS.mask({"state": "Avonai"})
    with pytest.raises(UsageError, match=r'\{"all": \[\.\.\.\]\}'):
        FACETS.mask({"frameworks": {"all": ["NGER"], "any": ["GHG Protocol"]}})


def test_a_scope_keeps_national_rules_and_those_of_its_places_only() -> None:
    assert FACETS.scope_mask({}) is None
    # an area: that area's rules, its state's and the national ones
    corley = {"area": ["Corley Shire"], "state": ["Avonia"]}
    assert _rows(FACETS.scope_mask(corley)) == [0, 1, 2]
    # a state alone: its state-wide rules, no local ones
    assert _rows(FACETS.scope_mask({"state": ["Belmarsh"]})) == [0, 3]
    # another key: a chunk passes when it matches or does not carry the key
    assert _rows(FACETS.scope_mask({"frameworks": ["NGER"]})) == [0, 1, 2, 4]


def test_a_given_scope_is_checked_and_gains_the_states_of_its_areas() -> None:
    assert FACETS.resolve_scope({"area": "fennick"}) == {
        "area": ["Fennick City"],
        "state": ["Belmarsh"],
    }
    assert FACETS.resolve_scope({"state": "avonia"}) == {"state": ["Avonia"]}
    with pytest.raises(UsageError, match="unknown scope key 'county'"):
        FACETS.resolve_scope({"county": "x"})
    with pytest.raises(UsageError, match="no document has area='Corly Shire'; did you mean Corley"):
        FACETS.resolve_scope({"area": "Corly Shire"})


def test_places_named_in_the_question_are_detected() -> None:
    assert FACETS.detect_scope("Can I burn off in Fennick this month?") == {
        "area": ["Fennick City"],
        "state": ["Belmarsh"],
    }
    assert FACETS.detect_scope("What does Avonia require?") == {"state": ["Avonia"]}
    assert FACETS.detect_scope("What does the Shire require?") == {}


# ------------------------------------------------------------------ Retrieval


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    index = tmp_path_factory.mktemp("retrieve") / "idx"
    ingest([REGPACK], index, dense=None)
    return Engine.open(index)


def _round_trip(retrieval: Retrieval) -> Retrieval:
    return Retrieval.from_dict(json.loads(json.dumps(retrieval.to_dict())))


def test_a_retrieval_round_trips_through_its_dict(engine: Engine) -> None:
    retrieval = engine.retrieval("When is a NEER report due?", 5)
    assert len(retrieval.hits) == 5 and retrieval.lexical and retrieval.dense is None
    assert retrieval.weights and retrieval.bm25_ceiling > 0 and retrieval.allowed is None
    again = _round_trip(retrieval)
    assert again == retrieval
    assert again.hits == retrieval.hits and again.query == retrieval.query
    assert again.lexical == retrieval.lexical and again.unknown == retrieval.unknown
    assert again.weights == retrieval.weights and again.plan == retrieval.plan
    assert again.top(2) == retrieval.top(2) and len(again.top(2).hits) == 2


def test_a_filtered_retrieval_keeps_its_allowed_rows_and_scope(engine: Engine) -> None:
    retrieval = engine.retrieval(
        "Can I remove a tree in Fennick?", 3, filters={"jurisdiction": "local"}, auto_scope=True
    )
    assert retrieval.allowed is not None and retrieval.scope
    again = _round_trip(retrieval)
    assert again == retrieval
    assert again.allowed is not None and np.array_equal(again.allowed, retrieval.allowed)
    assert {k: list(v) for k, v in again.scope.items()} == {
        k: list(v) for k, v in retrieval.scope.items()
    }
    # and a Retrieval is not equal to one that differs in any part
    assert again != retrieval.top(1)


def test_a_retrieval_is_read_from_a_hand_written_dict() -> None:
    # `allowed` is stored as the allowed rows plus the size of the index they mark
    data = {
        "query": {"question": "q"},
        "plan": "bm25",
        "text": "q",
        "hits": [],
        "lexical": [[2, 1.5]],
        "dense": None,
        "weights": {"q": 1.0},
        "bm25_ceiling": 2.0,
        "allowed": [0, 2],
        "size": 4,
    }
    retrieval = Retrieval.from_dict(data)
    assert retrieval.allowed is not None and retrieval.allowed.tolist() == [
        True,
        False,
        True,
        False,
    ]
    assert retrieval.lexical == ((2, 1.5),) and retrieval.unknown == frozenset()
