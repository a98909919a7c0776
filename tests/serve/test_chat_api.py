"""The OpenAI chat API of `groundqa serve`, as the official `openai` client sees it.

Each server is the real `groundqa serve` started as a subprocess on 127.0.0.1: one
open (memory cache, its network generator pointed at a local model server that
speaks OpenAI's wire protocol), one with a token and a small rate limit. Bodies no
client would send go out with httpx, to check they get OpenAI's error object.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "fastapi", reason="the API tests need the serve extra: pip install -e '.[serve]'"
)
pytest.importorskip("openai", reason="the chat API tests need the openai client")

import httpx
import openai
from openapi_spec_validator import validate

from groundqa.ingestion import ingest
from groundqa.models import REFUSAL
from groundqa.serve.chat import Deltas
from tests.conftest import REGPACK
from tests.fakes import FakeServer, Out, Seen
from tests.serve.test_api import NEER, OFF_TOPIC, TOKEN, VEGETATION
from tests.serve.test_limits import SERVE, groundqa_serve

TURBINE = "What is the turbine setback from a dwelling?"
PROTECTED = "How big does a tree have to be before it's protected in Fennick City?"
ASHCOMBE = "is that the same in Ashcombe?"
DUE = "A NEER report is due by 31 October each year. [1]"
# What the local model server says, by question: text pieces streamed (or joined), or a failure.
MODEL_SAYS: dict[str, list[str]] = {
    NEER: ["  ", "A NEER report is due by", " 31 October each year.", " [1]", "\n"],
    VEGETATION: ["I don’t have enough", " information about that.", " Ask the council."],
}
FAILS_AT_ONCE = TURBINE
FAILS_MIDWAY = PROTECTED
LLM = {"generator": "openai:m"}


def _model_reply(seen: Seen, out: Out) -> None:
    """OpenAI's chat completions for groundqa's `openai:` generator."""
    prompt = seen.body["messages"][-1]["content"]
    question = re.search(r"Question: (.*)", prompt)
    asked = question.group(1).strip() if question else ""
    if asked == FAILS_AT_ONCE:
        out.json({"error": {"message": "the model is overloaded"}}, status=500)
        return
    pieces = MODEL_SAYS.get(asked, [DUE])
    if not seen.body.get("stream"):
        message = {"role": "assistant", "content": "".join(pieces)}
        out.json({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
        return
    events = [
        {"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in pieces
    ]
    lines = [f"data: {json.dumps(e)}\n\n" for e in events]
    if asked == FAILS_MIDWAY:
        lines.append("data: {not json\n\n")
    out.stream([*lines, "data: [DONE]\n\n"], "text/event-stream")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("chat") / "idx"
    ingest([REGPACK], path, dense=None)
    return path


@pytest.fixture(scope="module")
def model() -> Iterator[FakeServer]:
    server = FakeServer(_model_reply)
    yield server
    server.close()


@pytest.fixture(scope="module")
def base(index: Path, model: FakeServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`groundqa serve` with no token and the memory cache; its `openai:` generator asks `model`."""
    logs = tmp_path_factory.mktemp("chat-logs")
    args = (
        "--cache",
        "memory",
        "--allow-generator",
        "openai:m",
        "--generator-url",
        f"{model.url}/v1",
    )
    with groundqa_serve(index, logs, *args) as (url, _):
        yield url


@pytest.fixture(scope="module")
def secured(index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`groundqa serve` with a token and 3 requests a minute per client."""
    logs = tmp_path_factory.mktemp("chat-secured-logs")
    with groundqa_serve(index, logs, "--token", TOKEN, "--rate-limit", "3") as (url, _):
        yield url


@pytest.fixture(scope="module")
def client(base: str) -> Iterator[Any]:
    with openai.OpenAI(base_url=f"{base}/v1", api_key="any", max_retries=0, timeout=60) as c:
        yield c


def ask(client: Any, question: str, **kwargs: Any) -> Any:
    messages = [{"role": "user", "content": question}]
    return client.chat.completions.create(model="groundqa", messages=messages, **kwargs)


def streamed(client: Any, question: str, **kwargs: Any) -> tuple[str, list[Any]]:
    """The content deltas joined, and every chunk."""
    chunks = list(ask(client, question, stream=True, **kwargs))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return text, chunks


def markers(text: str) -> set[int]:
    return {int(n) for n in re.findall(r"\[(\d+)\]", text)}


# ---------------------------------------------------------------- models and answers


def test_the_model_list_names_the_index_as_one_model(client: Any) -> None:
    models = client.models.list()
    assert [m.id for m in models.data] == ["groundqa"]
    card = models.data[0]
    assert card.object == "model" and card.owned_by == "groundqa"
    assert isinstance(card.created, int) and card.created > 1_600_000_000


def test_a_completion_is_the_answer_with_its_sources_and_citations(client: Any, base: str) -> None:
    completion = ask(client, NEER)
    assert completion.object == "chat.completion" and completion.model == "groundqa"
    assert completion.id.startswith("chatcmpl-")
    choice = completion.choices[0]
    assert choice.finish_reason == "stop" and choice.message.role == "assistant"
    content = choice.message.content
    answer, sources = content.split("\n\nSources:\n")
    extra = completion.model_extra
    citations = extra["citations"]
    assert citations and markers(answer) == {c["n"] for c in citations} and 1 in markers(answer)
    assert sources.splitlines()[0].startswith("[1] ") and len(sources.splitlines()) == len(
        citations
    )
    # The same answer /query gives, with the same citations.
    query = httpx.post(f"{base}/query", json={"question": NEER}, timeout=60).json()
    assert answer == query["answer"] and citations == query["citations"]
    assert extra["groundqa"] == {
        "outcome": "confident",
        "refused": False,
        "refused_by": None,
        "confidence": query["confidence"],
        "standalone_question": None,
        "notes": [],
        "cache": "miss",
    }
    assert query["cache"] == "hit"  # the chat asked first: /query was served from its answer
    usage = completion.usage
    assert usage.prompt_tokens == len(NEER.split())
    assert usage.completion_tokens == len(content.split())
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_a_streamed_completion_sends_the_same_content_in_chunks(client: Any) -> None:
    question = "What must a NEER report cover?"
    text, chunks = streamed(client, question, stream_options={"include_usage": True})
    first, final, usage = chunks[0], chunks[-2], chunks[-1]
    assert first.choices[0].delta.role == "assistant" and not first.choices[0].delta.content
    assert len({c.id for c in chunks}) == 1 and all(
        c.object == "chat.completion.chunk" for c in chunks
    )
    assert all(c.choices[0].finish_reason is None for c in chunks[:-2])
    assert final.choices[0].finish_reason == "stop" and final.choices[0].delta.content is None
    assert final.model_extra["groundqa"]["cache"] == "miss"
    assert usage.choices == [] and usage.usage.completion_tokens == len(text.split())
    # The Sources list is the last content delta, after the answer's pieces.
    contents = [c.choices[0].delta.content for c in chunks[1:-2]]
    assert len(contents) >= 2 and contents[-1].startswith("\n\nSources:\n")
    whole = ask(client, question)
    assert text == whole.choices[0].message.content
    assert final.model_extra["citations"] == whole.model_extra["citations"] != []
    assert whole.model_extra["groundqa"]["cache"] == "hit"
    again, chunks = streamed(client, question)  # from the cache, cut into the same pieces
    assert again == text and chunks[-1].model_extra["groundqa"]["cache"] == "hit"


def test_a_refusal_is_the_refusal_sentence_with_no_citations(client: Any) -> None:
    completion = ask(client, OFF_TOPIC)
    assert completion.choices[0].message.content == REFUSAL
    assert completion.model_extra["citations"] == []
    facts = completion.model_extra["groundqa"]
    assert facts["refused"] is True and facts["refused_by"] == "gate"
    assert 0 <= facts["confidence"] < 0.5
    text, chunks = streamed(client, OFF_TOPIC)
    assert text == REFUSAL and chunks[-1].model_extra["citations"] == []


def test_a_follow_up_is_read_against_the_earlier_messages(client: Any) -> None:
    alone = ask(client, ASHCOMBE)
    assert alone.model_extra["groundqa"]["standalone_question"] is None
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": PROTECTED},
        {"role": "assistant", "content": ask(client, PROTECTED).choices[0].message.content},
        {"role": "user", "content": [{"type": "text", "text": ASHCOMBE}]},
    ]
    follow_up = client.chat.completions.create(model="groundqa", messages=messages)
    standalone = follow_up.model_extra["groundqa"]["standalone_question"]
    assert standalone and standalone != ASHCOMBE and "Ashcombe" in standalone
    assert "tree" in standalone.lower()  # the topic carried from the earlier question
    assert follow_up.model_extra["citations"]
    # A system message changes nothing: the conversation without it is read the same.
    again = client.chat.completions.create(model="groundqa", messages=messages[1:])
    assert again.choices[0].message.content == follow_up.choices[0].message.content


def test_other_openai_fields_are_accepted_and_ignored(client: Any) -> None:
    plain = ask(client, NEER).choices[0].message.content
    tuned = ask(
        client,
        NEER,
        n=1,
        top_p=0.5,
        presence_penalty=1.0,
        frequency_penalty=0.5,
        seed=7,
        user="someone",
        stop=["\n"],
        logit_bias={"50256": -100},
        max_tokens=100_000,  # above the engine's limit: read as the limit
        extra_body={"unknown_future_field": {"x": 1}, "stream_options": None},
    )
    assert tuned.choices[0].message.content == plain


def test_groundqa_fields_ride_in_extra_body(client: Any) -> None:
    scoped = ask(client, NEER, extra_body={"k": 1, "filters": {"jurisdiction": "federal"}})
    citations = scoped.model_extra["citations"]
    assert [c["n"] for c in citations] == [1]
    assert scoped.model_extra["groundqa"]["cache"] == "miss"  # k and filters are in the key


# ---------------------------------------------------------------- a model that streams


def test_a_model_s_text_streams_as_it_comes_and_joins_to_the_answer(client: Any) -> None:
    text, chunks = streamed(client, NEER, extra_body=LLM)
    pieces = [c.choices[0].delta.content for c in chunks[1:-1]]
    # The model's own pieces, less the whitespace the answer does not keep, then the Sources.
    assert pieces[:3] == ["A NEER report is due by", " 31 October each year.", " [1]"]
    assert pieces[3].startswith("\n\nSources:\n[1] ") and len(pieces) == 4
    whole = ask(client, NEER, extra_body=LLM)
    assert whole.model_extra["groundqa"]["cache"] == "hit"
    assert text == whole.choices[0].message.content
    assert text.startswith(DUE + "\n\nSources:\n")


def test_a_model_s_refusal_streams_as_the_refusal_sentence_alone(client: Any) -> None:
    text, chunks = streamed(client, VEGETATION, extra_body=LLM)
    assert text == REFUSAL  # not the model's curly apostrophe, nor what it said after
    assert [c.choices[0].delta.content for c in chunks[1:-1]] == [REFUSAL]
    facts = chunks[-1].model_extra["groundqa"]
    assert facts["refused"] is True and facts["refused_by"] == "generator"
    assert chunks[-1].model_extra["citations"] == []


def test_a_model_that_fails_is_a_502_that_is_never_cached(client: Any, model: FakeServer) -> None:
    asked = len(model.seen)
    for stream in (False, True, False):
        with pytest.raises(openai.InternalServerError) as failed:
            ask(client, FAILS_AT_ONCE, stream=stream, extra_body=LLM)
        assert failed.value.status_code == 502
        assert failed.value.code == "generation" and failed.value.type == "server_error"
        assert "overloaded" in failed.value.body["message"]
    assert len(model.seen) == asked + 3  # each request asked the model again


def test_a_model_that_breaks_mid_stream_ends_the_stream_with_an_error(client: Any) -> None:
    stream = ask(client, FAILS_MIDWAY, stream=True, extra_body=LLM)
    received: list[str] = []
    with pytest.raises(openai.APIError) as broken:
        for chunk in stream:
            received.append(chunk.choices[0].delta.content or "")
    assert "".join(received) == DUE  # the text sent before the model's stream broke
    assert broken.value.code == "generation" and "malformed" in broken.value.message


# ---------------------------------------------------------------- the token and the rate


def test_a_wrong_key_is_refused_and_a_client_past_its_rate_is_slowed(secured: str) -> None:
    url = f"{secured}/v1"
    with (
        openai.OpenAI(base_url=url, api_key="wrong", max_retries=0) as wrong,
        pytest.raises(openai.AuthenticationError) as refused,
    ):
        wrong.models.list()
    assert refused.value.body == {
        "status": 401,
        "code": "unauthorized",
        "message": "the bearer token is not valid for this server",
        "type": "authentication_error",
        "param": None,
    }
    with openai.OpenAI(base_url=url, api_key=TOKEN, max_retries=0, timeout=60) as right:
        assert ask(right, NEER).model_extra["citations"]
        with pytest.raises(openai.RateLimitError) as slowed:
            for _ in range(5):  # 3 a minute: the burst is spent within these
                right.models.list()
    assert slowed.value.code == "rate_limited" and slowed.value.type == "rate_limit_error"
    assert "a minute" in slowed.value.body["message"]
    assert int(slowed.value.response.headers["retry-after"]) >= 1


# ---------------------------------------------------------------- bodies no client sends

USER = [{"role": "user", "content": NEER}]
# name: (body, status, code, param, a phrase the message must contain)
# fmt: off
BAD_BODIES: dict[str, tuple[Any, int, str, str | None, str]] = {
    "no messages": ({"model": "groundqa", "messages": []}, 400, "bad_request", "messages", "messages is empty"),
    "only a system message": ({"model": "groundqa", "messages": [{"role": "system", "content": "hi"}]}, 400, "bad_request", "messages", "no user message"),
    "ends with the assistant": ({"model": "groundqa", "messages": [*USER, {"role": "assistant", "content": "x"}]}, 400, "bad_request", "messages", "the last message is from 'assistant'"),
    "a blank question": ({"model": "groundqa", "messages": [{"role": "user", "content": "  "}]}, 400, "bad_request", "messages", "has no text"),
    "only an image": ({"model": "groundqa", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}, 400, "bad_request", "messages", "has no text"),
    "a question too long": ({"model": "groundqa", "messages": [{"role": "user", "content": "x" * 2001}]}, 400, "bad_request", "messages", "2001 characters; the limit is 2000"),
    "another model": ({"model": "gpt-4o", "messages": USER}, 404, "model_not_found", "model", "'gpt-4o' does not exist"),
    "two answers": ({"model": "groundqa", "messages": USER, "n": 2}, 400, "unsupported_value", "n", "this server gives one"),
    "no model": ({"messages": USER}, 422, "invalid_request", "model", "model: Field required"),
    "messages not a list": ({"model": "groundqa", "messages": "hello"}, 422, "invalid_request", "messages", "messages: "),
    "an unknown role": ({"model": "groundqa", "messages": [{"role": "robot", "content": "x"}]}, 422, "invalid_request", "messages.0.role", "messages.0.role: "),
    "content a number": ({"model": "groundqa", "messages": [{"role": "user", "content": 5}]}, 422, "invalid_request", "messages.0.content", "messages.0.content: "),
    "temperature too high": ({"model": "groundqa", "messages": USER, "temperature": 3}, 422, "invalid_request", "temperature", "temperature: "),
    "k of the wrong type": ({"model": "groundqa", "messages": USER, "k": "five"}, 422, "invalid_request", "k", "k: "),
    "a body that is a list": ([1, 2], 422, "invalid_request", None, "valid dictionary"),
    "an unknown filter key": ({"model": "groundqa", "messages": USER, "filters": {"colour": "red"}}, 400, "usage", None, "unknown filter key 'colour'"),
    "a generator the server does not serve": ({"model": "groundqa", "messages": USER, "generator": "gpt-9"}, 400, "generator_not_served", "generator", "only with the generators it was started with (extractive, openai:m)"),
}
# fmt: on


@pytest.mark.parametrize(
    ("body", "status", "code", "param", "phrase"), list(BAD_BODIES.values()), ids=list(BAD_BODIES)
)
def test_a_bad_body_gets_openai_s_error_object(
    base: str, body: Any, status: int, code: str, param: str | None, phrase: str
) -> None:
    for stream in (False, True):
        sent = {**body, "stream": True} if stream and isinstance(body, dict) else body
        response = httpx.post(f"{base}/v1/chat/completions", json=sent, timeout=60)
        assert response.status_code == status, response.text
        assert response.headers["content-type"] == "application/json"
        error = response.json()["error"]
        assert set(response.json()) == {"error"}
        assert set(error) == {"status", "code", "message", "type", "param"}
        assert error["status"] == status and error["code"] == code and error["param"] == param
        assert error["type"] == "invalid_request_error"  # OpenAI's, for model_not_found too
        assert phrase in error["message"] and "\n" not in error["message"]
        assert "Traceback" not in response.text


def test_invalid_json_gets_openai_s_error_object(base: str) -> None:
    response = httpx.post(
        f"{base}/v1/chat/completions",
        content=b'{"model": ',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] is None
    assert "not valid JSON" in error["message"]


def test_the_chat_routes_are_in_the_openapi_spec(base: str, secured: str) -> None:
    spec = httpx.get(f"{base}/openapi.json").json()
    validate(spec)
    chat = spec["paths"]["/v1/chat/completions"]["post"]
    assert {"application/json", "text/event-stream"} <= set(chat["responses"]["200"]["content"])
    assert {"400", "404", "422", "429", "502"} <= set(chat["responses"])
    assert "get" in spec["paths"]["/v1/models"]
    error = spec["components"]["schemas"]["ErrorDetail"]["properties"]
    assert {"status", "code", "message", "type", "param"} <= set(error)
    secured_spec = httpx.get(f"{secured}/openapi.json").json()
    assert secured_spec["paths"]["/v1/chat/completions"]["post"]["security"] == [{"bearer": []}]


# ---------------------------------------------------------------- deltas


def test_deltas_send_only_what_the_final_answer_keeps() -> None:
    deltas = Deltas()
    sent = [deltas.add(p) for p in ["  ", "\n", "In Fennick", " a permit", " costs 95. [1]", "  "]]
    assert sent == ["", "", "In Fennick", " a permit", " costs 95. [1]", ""]
    assert (
        deltas.rest("In Fennick a permit costs 95. [1]\n\nSources:\n[1] x") == "\n\nSources:\n[1] x"
    )


def test_deltas_hold_back_what_may_be_the_refusal() -> None:
    deltas = Deltas()
    assert [deltas.add(p) for p in ["I", " don’t", " have enough information about that."]] == [
        "",
        "",
        "",
    ]
    assert deltas.add(" But maybe ask the council.") == ""  # a refusal stays one
    assert deltas.rest(REFUSAL) == REFUSAL
    opening = Deltas()
    assert opening.add("I") == "" and opening.add("nstalled bins must") == "Installed bins must"


# ---------------------------------------------------------------- long chats, the default generator


def test_a_thousand_turn_chat_is_read_by_its_last_turns_and_says_so(client: Any) -> None:
    """A front-end sends the whole conversation each time: past the 64 KiB body limit of
    other routes, within the conversation limit, and only the last turns are read."""
    filler = "Tell me something about the regulations of Tarrowa in general, please. " * 4
    earlier = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"{i}: {filler}"}
        for i in range(999)
    ]
    messages = [*earlier, {"role": "user", "content": NEER}]
    assert len(json.dumps(messages)) > 65_536
    reply = client.chat.completions.create(model="groundqa", messages=messages)
    notes = reply.model_extra["groundqa"]["notes"]
    assert any("Only the last 6 turns" in n and "993 earlier turns" in n for n in notes)
    # The question stands alone, so it is answered as it would be without the history.
    assert reply.model_extra["groundqa"]["standalone_question"] is None
    alone = ask(client, NEER).choices[0].message.content
    assert reply.choices[0].message.content.startswith(alone.split("\n\nNote:")[0])


def test_the_server_s_generator_answers_a_request_that_names_none(
    index: Path, model: FakeServer, tmp_path: Path
) -> None:
    args = ("--generator", "openai:m", "--allow-generator", "extractive")
    with groundqa_serve(index, tmp_path, *args, "--generator-url", f"{model.url}/v1") as (url, _):
        health = httpx.get(f"{url}/health", timeout=10).json()
        assert health["default_generator"] == "openai:m"
        with openai.OpenAI(base_url=f"{url}/v1", api_key="any", max_retries=0) as c:
            reply = ask(c, NEER)
        assert reply.choices[0].message.content.startswith(DUE)
        # /query without a generator gets the server's too; one that names one it serves
        # keeps it, and one that names another is refused.
        named = httpx.post(f"{url}/query", json={"question": NEER}, timeout=30).json()
        assert named["generator"] == "openai:m"
        own = {"question": NEER, "generator": "extractive"}
        assert httpx.post(f"{url}/query", json=own, timeout=30).json()["generator"] == "extractive"
        other = {"question": NEER, "generator": "ollama:m"}
        assert httpx.post(f"{url}/query", json=other, timeout=30).status_code == 400


def test_a_wrong_server_generator_fails_before_serving(index: Path) -> None:
    proc = subprocess.run(
        [*SERVE, "--index", str(index), "--port", "0", "--generator", "gpt:x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "unknown generator 'gpt:x'" in proc.stderr and "Traceback" not in proc.stderr
