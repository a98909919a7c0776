"""The request: `Query` validation, its dict round trip, and the cache key derived from it."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from groundqa.errors import UsageError
from groundqa.providers import GeneratorOptions
from groundqa.query import MAX_HISTORY_TURNS, MAX_K, MAX_QUESTION_CHARS, Query, Turn

BASE = Query("Which trees are protected?", filters={"state": ["Avonia", "Belmarsh"]})

# For every field of Query, a valid value other than BASE's. The test below walks
# `dataclasses.fields(Query)`, so a field added to Query without an entry here fails it.
OTHER_VALUE: dict[str, Any] = {
    "question": "Which shrubs are protected?",
    "k": 7,
    "filters": {"state": ["Avonia"]},
    "scope": {"area": ["Corley Shire"]},
    "auto_scope": True,
    "retriever": "bm25+cap=2",
    "reranker": "cross-encoder",
    "generator": "ollama:llama3",
    "options": GeneratorOptions(base_url="http://127.0.0.1:9"),
    "temperature": 0.7,
    "max_tokens": 256,
    "as_of": dt.date(2020, 1, 1),
    "history": (Turn("user", "Which trees are protected in Avonia?"),),
    "earlier_turns": 3,
}

EVERYTHING = Query(
    "When is a NEER report due?",
    k=3,
    filters={"frameworks": {"all": ["NGER", "GHG Protocol"]}, "state": "Avonia"},
    scope={"area": ["Corley Shire"]},
    auto_scope=True,
    retriever="hybrid+weighted=0.5/0.5",
    reranker="llm:ollama:m",
    generator="openai:gpt-4o",
    options=GeneratorOptions(base_url="http://127.0.0.1:9/v1", timeout_s=5.0),
    temperature=0.2,
    max_tokens=300,
    as_of=dt.date(2024, 2, 29),
    history=(Turn("user", "What must a NEER report cover?"), Turn("assistant", "Emissions [1].")),
)


def test_a_query_round_trips_through_its_dict_and_json() -> None:
    for query in (BASE, EVERYTHING, Query("q")):
        assert Query.from_dict(query.to_dict()) == query
        assert Query.from_dict(json.loads(json.dumps(query.to_dict()))) == query
    as_dict = EVERYTHING.to_dict()
    assert as_dict["as_of"] == "2024-02-29"
    assert as_dict["options"] == {"base_url": "http://127.0.0.1:9/v1", "timeout_s": 5.0}
    assert set(as_dict) == {f.name for f in dataclasses.fields(Query)}


def test_every_field_takes_part_in_the_cache_key() -> None:
    names = [f.name for f in dataclasses.fields(Query)]
    missing = sorted(set(names) - set(OTHER_VALUE))
    assert not missing, f"give {missing} another valid value in OTHER_VALUE"
    key = BASE.cache_key("build-1")
    for name in names:
        assert getattr(BASE, name) != OTHER_VALUE[name], name
        changed = dataclasses.replace(BASE, **{name: OTHER_VALUE[name]})
        assert changed.cache_key("build-1") != key, f"{name} is left out of the cache key"


def test_the_index_build_takes_part_in_the_cache_key() -> None:
    assert BASE.cache_key("build-1") == BASE.cache_key("build-1")
    assert BASE.cache_key("build-1") != BASE.cache_key("build-2")


def test_spellings_of_one_request_share_a_cache_key() -> None:
    base = Query(
        "Which trees?", filters={"state": ["b", "a"], "area": "x"}, scope={"state": ["s", "t"]}
    )
    same = Query(
        "  which   TREES?\t",
        filters={"area": ["x"], "state": ["a", "b"]},
        scope={"state": ["t", "s"]},
    )
    assert same.cache_key("build-1") == base.cache_key("build-1")
    # `as_of` resolves to the day it names: no date is today's date.
    today = dataclasses.replace(base, as_of=dt.date.today())
    assert today.cache_key("build-1") == base.cache_key("build-1")
    # whitespace around a plan or reranker is not part of it
    spaced = Query("Which trees?", retriever=" bm25 ", reranker=" ")
    assert spaced.retriever == "bm25" and spaced.reranker is None
    assert spaced.cache_key("b") == Query("Which trees?", retriever="bm25").cache_key("b")


def test_a_query_keeps_its_own_copy_of_the_facets() -> None:
    filters: dict[str, Any] = {"state": ["Avonia"]}
    query = Query("Which trees?", filters=filters)
    key = query.cache_key("b")
    filters["state"].append("Belmarsh")
    filters["area"] = "x"
    assert query.filters == {"state": ["Avonia"]}
    assert query.cache_key("b") == key


def _usage_message(build: Any) -> str:
    with pytest.raises(UsageError) as caught:
        build()
    message = caught.value.message
    assert message and "\n" not in message, message
    assert caught.value.exit_code == 2
    return message


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"question": "   "}, "the question is empty"),
        ({"question": "x" * (MAX_QUESTION_CHARS + 1)}, f"the limit is {MAX_QUESTION_CHARS}"),
        ({"k": 0}, f"k must be between 1 and {MAX_K}, got 0"),
        ({"k": MAX_K + 1}, f"k must be between 1 and {MAX_K}, got {MAX_K + 1}"),
        ({"temperature": -0.1}, "temperature must be between 0 and 2, got -0.1"),
        ({"temperature": 2.5}, "temperature must be between 0 and 2, got 2.5"),
        ({"max_tokens": 0}, "max_tokens must be between 1 and 8192, got 0"),
        ({"max_tokens": 8193}, "max_tokens must be between 1 and 8192, got 8193"),
        ({"generator": " "}, "the generator is empty"),
    ],
)
def test_a_bad_argument_is_a_one_line_usage_error(args: dict[str, Any], message: str) -> None:
    fields = {"question": "Which trees?", **args}
    assert message in _usage_message(lambda: Query(**fields))
    # from a dict (the API's request body) the same check applies
    assert message in _usage_message(lambda: Query.from_dict(fields))


def test_the_limits_themselves_are_allowed() -> None:
    edge = Query("x" * MAX_QUESTION_CHARS, k=MAX_K, temperature=2.0, max_tokens=8192)
    assert (edge.k, edge.temperature, edge.max_tokens) == (MAX_K, 2.0, 8192)
    low = Query("?", k=1, temperature=0.0, max_tokens=1)
    assert (low.k, low.temperature, low.max_tokens) == (1, 0.0, 1)


def test_an_unknown_field_in_a_dict_is_a_usage_error_naming_it() -> None:
    message = _usage_message(lambda: Query.from_dict({"question": "q", "top_k": 3, "kk": 1}))
    assert message.startswith("unknown query field(s) kk, top_k; known: ")
    assert "'question'" in message


def test_a_copy_with_overrides_is_checked_again() -> None:
    assert Query.of(BASE) is BASE
    assert Query.of("Which trees?", k=4) == Query("Which trees?", k=4)
    assert Query.of(BASE, k=4).k == 4 and BASE.k is None
    assert "k must be between" in _usage_message(lambda: Query.of(BASE, k=0))
    assert "k must be between" in _usage_message(lambda: dataclasses.replace(BASE, k=0))


def test_a_long_history_keeps_its_last_turns_and_counts_the_rest() -> None:
    turns = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"} for i in range(1000)
    ]
    query = Query("and in winter?", history=turns)
    assert len(query.history) == MAX_HISTORY_TURNS
    assert query.history[-1] == Turn("assistant", "turn 999")
    assert query.earlier_turns == 1000 - MAX_HISTORY_TURNS
    # A copy keeps the count: its history is already within the limit.
    assert dataclasses.replace(query, k=3).earlier_turns == 1000 - MAX_HISTORY_TURNS


def test_a_history_turn_is_checked() -> None:
    with pytest.raises(UsageError, match="user or assistant"):
        Query("and then?", history=[{"role": "system", "content": "be brief"}])
    with pytest.raises(UsageError, match="role"):
        Query("and then?", history=[{"text": "no role"}])
    # Empty turns are dropped; spacing is folded.
    query = Query("and then?", history=[{"role": "user", "content": "  "}, Turn("user", "a\n b")])
    assert query.history == (Turn("user", "a b"),)


def test_bytes_that_are_not_text_are_repaired_not_an_error() -> None:
    # What Python makes of `ask $'fire \xff danger'`: the byte as half a surrogate pair.
    typed = os.fsdecode(b"fire \xff danger")
    assert Query(typed).question == "fire \ufffd danger"
    # A JSON escape can send half a pair too; a history turn is repaired the same way.
    query = Query("fire \ud800 danger", history=[Turn("user", "about \udcff fires")])
    assert query.question == "fire \ufffd danger"
    assert query.history[0].content == "about \ufffd fires"
    # A UTF-8 character split into escaped bytes comes back whole.
    assert Query(os.fsdecode("café hours".encode())).question == "café hours"
    query.question.encode("utf-8")  # what the tokenizer and the cache key need


def test_a_question_with_a_broken_byte_is_answered_at_the_command_line(
    tmp_path_factory: pytest.TempPathFactory, regpack_build: Path
) -> None:
    from tests.conftest import copy_index

    index = copy_index(regpack_build, tmp_path_factory.mktemp("q") / "idx")
    exe = [sys.executable, "-m", "groundqa.cli"]
    env = {**os.environ, "COLUMNS": "200"}
    ask = subprocess.run(
        [*exe, "ask", os.fsdecode(b"fire \xff danger"), "--index", str(index), "--json"],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert ask.returncode == 0, ask.stderr.decode()
    assert json.loads(ask.stdout)["question"] == "fire \ufffd danger"
    # In chat the same line must not end the session: the next question is answered too.
    chat = subprocess.run(
        [*exe, "chat", "--index", str(index)],
        input=b"fire \xff danger\nHow often are general waste bins collected?\n",
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert chat.returncode == 0, chat.stderr.decode()
    assert b"Traceback" not in chat.stderr
    assert b"fortnight" in chat.stdout or b"week" in chat.stdout, chat.stdout.decode()
