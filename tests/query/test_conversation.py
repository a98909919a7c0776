"""Follow-up questions made standalone: the rule without a model, a model's rewrite over a
real OpenAI-compatible client against a server on 127.0.0.1, and the engine's answer."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from groundqa.engine import Engine
from groundqa.errors import GenerationError
from groundqa.models import REFUSAL
from groundqa.providers import GeneratorOptions
from groundqa.query import MAX_HISTORY_TURNS, Query, Turn
from groundqa.query.conversation import (
    REWRITE_SYSTEM,
    Vocabulary,
    carry,
    dropped_words,
    leans_on_history,
    model_reply,
    standalone,
)
from groundqa.text import Analyzer
from tests.conftest import copy_index
from tests.fakes import FakeServer, Out, Reply, Seen

SETBACK = "What is the minimum setback for a wind turbine from a dwelling in Northmere?"
SETBACK_SECTION = (
    "state_northmere_renewable_energy_planning_code.md#4 Wind farm thresholds and setbacks"
)
TREES = "What trunk circumference makes a tree protected in Fennick City?"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, regpack_build: Path) -> Engine:
    index = tmp_path_factory.mktemp("regpack") / "idx"
    copy_index(regpack_build, index)
    return Engine.open(index)


def _vocabulary() -> Vocabulary:
    """The analyzer's topic terms, and two places, without an index."""
    analyzer = Analyzer()
    places = {"northmere", "westhaven"}

    def named(text: str) -> set[str]:
        return {w for w in text.casefold().replace("?", " ").split() if w in places}

    return Vocabulary(analyzer.query_terms, named)


def _history(*questions: str) -> tuple[Turn, ...]:
    turns: list[Turn] = []
    for q in questions:
        turns += [Turn("user", q), Turn("assistant", "An answer [1].")]
    return tuple(turns)


# --- the rule --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "and in Westhaven?",
        "What does it cost?",
        "And from a public road?",
        "what about the fine?",
        "Who enforces it?",
        "When does that start?",
        "How much is the permit?",
        "how long would the council there take?",
    ],
)
def test_a_question_without_a_topic_of_its_own_leans_on_the_history(question: str) -> None:
    assert leans_on_history(question, _vocabulary())


@pytest.mark.parametrize(
    "question",
    [
        TREES,
        "And what trunk circumference makes a tree protected?",
        "How many penalty units is the fine for late emissions reporting?",
        "Which waste streams must be kept apart in a controlled waste consignment?",
        "Is there a licence fee for a garden bore in Westhaven?",
    ],
)
def test_a_question_with_its_own_topic_stands_alone(question: str) -> None:
    assert not leans_on_history(question, _vocabulary())


def test_carry_brings_the_topic_and_swaps_the_place() -> None:
    v = _vocabulary()
    assert carry("and in Westhaven?", SETBACK, v) == (
        "and in Westhaven (minimum setback wind turbine dwelling)?"
    )
    # No place of its own: the previous one comes along.
    assert carry("What does it cost?", SETBACK, v) == (
        "What does it cost (minimum setback wind turbine dwelling Northmere)?"
    )
    # Words the question already has are not repeated.
    assert carry("and for a turbine near a road?", SETBACK, v) == (
        "and for a turbine near a road (minimum setback wind dwelling Northmere)?"
    )


def test_the_rule_reads_each_earlier_question_in_its_standalone_form() -> None:
    history = _history(SETBACK, "and in Westhaven?")
    followup = standalone("what about from a road?", history, _vocabulary())
    assert followup.method == "carry" and followup.turns_used == 4
    assert (
        followup.standalone
        == "what about from a road (minimum setback wind turbine dwelling Westhaven)?"
    )


def test_a_topic_switch_drops_the_history() -> None:
    followup = standalone(TREES, _history(SETBACK), _vocabulary())
    assert followup.method == "none" and not followup.rewritten
    assert followup.standalone == TREES and followup.notes() == ()


def test_no_history_is_no_rewrite() -> None:
    followup = standalone("and in Westhaven?", (), _vocabulary())
    assert followup.standalone == "and in Westhaven?" and followup.turns_used == 0


# --- a model's rewrite ------------------------------------------------------------------


def test_a_model_reply_is_read_as_one_line_of_question() -> None:
    assert model_reply('Standalone question: "What is the setback in Westhaven?"\n') == (
        "What is the setback in Westhaven?"
    )
    assert model_reply("\n\n  What is it?  \nSome chatter") == "What is it?"
    assert model_reply("   ") is None
    assert model_reply("x" * 3000) is None


def test_a_model_rewrites_and_a_failing_model_falls_back_to_the_rule() -> None:
    seen: list[tuple[str, str, int]] = []

    def good(system: str, user: str, max_tokens: int) -> str:
        seen.append((system, user, max_tokens))
        return "What is the minimum setback for a wind turbine from a dwelling in Westhaven?"

    history = _history(SETBACK)
    followup = standalone("and in Westhaven?", history, _vocabulary(), complete=good, model="m")
    assert followup.method == "model:m"
    assert followup.standalone.endswith("in Westhaven?")
    system, user, _ = seen[0]
    assert system == REWRITE_SYSTEM
    assert f"user: {SETBACK}" in user and user.rstrip().endswith("standing alone:")
    assert "by m as" in followup.notes()[0]

    def broken(system: str, user: str, max_tokens: int) -> str:
        raise GenerationError("m timed out after 1 s")

    fallback = standalone("and in Westhaven?", history, _vocabulary(), complete=broken, model="m")
    assert fallback.method == "carry"
    assert fallback.standalone == "and in Westhaven (minimum setback wind turbine dwelling)?"
    assert fallback.note == "The follow-up was read by the rule, not by m: m timed out after 1 s."


def test_a_rewrite_that_drops_the_question_s_words_falls_back_to_the_rule() -> None:
    v = _vocabulary()
    assert dropped_words("and in Westhaven?", "What is the setback in Westhaven?", v) == []
    assert dropped_words("Who approves it?", "Who approves a wind farm?", v) == []
    # A small model that answers the previous question instead of rewriting this one.
    answered = "The minimum setback from a dwelling in Northmere is 1,500 metres."
    assert dropped_words("and in Westhaven?", answered, v) == ["Westhaven"]
    assert dropped_words("Who approves it?", answered, v) == ["approves"]

    def small_model(system: str, user: str, max_tokens: int) -> str:
        return answered

    followup = standalone(
        "and in Westhaven?", _history(SETBACK), v, complete=small_model, model="tiny"
    )
    assert followup.method == "carry"
    assert followup.standalone == "and in Westhaven (minimum setback wind turbine dwelling)?"
    assert followup.note is not None and "leaves out Westhaven" in followup.note


# --- through the engine ------------------------------------------------------------------


def _sections(engine: Engine, query: Query) -> list[str]:
    resolved, _ = engine.resolve(query)
    return [h.chunk.section_id for h in engine.search(resolved, 3)]


def test_a_follow_up_retrieves_what_its_history_was_about(engine: Engine) -> None:
    alone = Query("And from a public road?")
    followup = Query("And from a public road?", history=_history(SETBACK))
    assert SETBACK_SECTION not in _sections(engine, alone)
    assert SETBACK_SECTION in _sections(engine, followup)


def test_the_answer_says_which_standalone_question_it_answered(engine: Engine) -> None:
    answer = engine.ask(Query("and in Westhaven?", history=_history(SETBACK)))
    assert answer.question == "and in Westhaven?"
    assert answer.standalone_question is not None
    assert answer.standalone_question.startswith("and in Westhaven (")
    assert f'read from the previous question as: "{answer.standalone_question}"' in answer.notes[0]
    assert "rewrite" in answer.timings_ms
    as_dict = answer.to_dict()
    assert as_dict["standalone_question"] == answer.standalone_question


def test_a_switch_answers_the_question_as_asked(engine: Engine) -> None:
    answer = engine.ask(Query(TREES, history=_history(SETBACK)))
    assert answer.standalone_question is None and not answer.refused
    assert all("follow-up" not in n for n in answer.notes)


def test_a_thousand_turns_are_cut_to_the_last_few_and_the_answer_says_so(engine: Engine) -> None:
    turns = list(_history(*[f"question {i} about nothing" for i in range(499)])) + list(
        _history(SETBACK)
    )
    answer = engine.ask(Query("And from a public road?", history=turns))
    assert len(turns) == 1000
    assert any(
        f"Only the last {MAX_HISTORY_TURNS} turns" in n
        and f"{1000 - MAX_HISTORY_TURNS} earlier" in n
        for n in answer.notes
    )
    assert answer.standalone_question is not None and "turbine" in answer.standalone_question


def test_an_off_corpus_follow_up_is_still_refused(engine: Engine) -> None:
    answer = engine.ask(Query("Who won the 1994 World Cup?", history=_history(SETBACK)))
    assert answer.refused and answer.answer == REFUSAL


def _rewriting_server(rewrite: str | None) -> Reply:
    """An OpenAI-compatible server: a rewrite request gets `rewrite` (None: a 500), and an
    answer request gets the first source's first sentence, cited."""

    def reply(seen: Seen, out: Out) -> None:
        messages = seen.body["messages"]
        if messages[0]["content"] == REWRITE_SYSTEM:
            if rewrite is None:
                out.json({"error": {"message": "overloaded"}}, status=500)
                return
            text = rewrite
        else:
            text = "A wind turbine must be set back at least 1,500 metres from any dwelling [1]."
        if seen.body.get("stream"):
            chunk = {"choices": [{"delta": {"content": text}, "finish_reason": "stop"}]}
            out.stream([f"data: {json.dumps(chunk)}\n\n", "data: [DONE]\n\n"], "text/event-stream")
            return
        out.json({"choices": [{"message": {"role": "assistant", "content": text}}]})

    return reply


def test_an_llm_backend_rewrites_the_follow_up(
    engine: Engine, serve: Callable[[Reply], FakeServer]
) -> None:
    server = serve(
        _rewriting_server(
            "What is the minimum setback for a wind turbine from a road in Northmere?"
        )
    )
    options = GeneratorOptions(base_url=server.url + "/v1")
    answer = engine.ask(
        Query("And from a road?", history=_history(SETBACK), generator="openai:m", options=options)
    )
    assert answer.error is None
    assert answer.standalone_question == (
        "What is the minimum setback for a wind turbine from a road in Northmere?"
    )
    assert "by openai:m as" in answer.notes[0]
    rewrite_request = server.seen[0].body
    assert rewrite_request["messages"][0]["content"] == REWRITE_SYSTEM
    assert rewrite_request["temperature"] == 0.0 and rewrite_request["stream"] is False
    assert SETBACK in rewrite_request["messages"][1]["content"]


def test_a_failing_rewrite_falls_back_to_the_rule_and_says_so(
    engine: Engine, serve: Callable[[Reply], FakeServer]
) -> None:
    server = serve(_rewriting_server(None))
    options = GeneratorOptions(base_url=server.url + "/v1")
    answer = engine.ask(
        Query("And from a road?", history=_history(SETBACK), generator="openai:m", options=options)
    )
    assert answer.standalone_question is not None
    assert answer.standalone_question.startswith("And from a road (")
    assert any(
        n.startswith("The follow-up was read by the rule, not by openai:m:") for n in answer.notes
    )
