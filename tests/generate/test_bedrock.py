"""`bedrock:` against a local server that speaks Bedrock's Converse wire protocol.

We cannot reach Amazon Bedrock from here, so these tests run the real boto3
client (signing, serialising, parsing the binary event stream) against a
`FakeServer` on 127.0.0.1 that answers as `bedrock-runtime` does:
`POST /model/{modelId}/converse` with one JSON reply, and
`POST /model/{modelId}/converse-stream` with an `application/vnd.amazon.eventstream`
body of binary messages (prelude, headers, JSON payload, CRC32s). Errors come
the way the service sends them: a status, an `x-amzn-ErrorType` header and a
`{"message": ...}` body, or an exception message inside the stream.

Every test runs with fake credentials and region in the environment and the
machine's AWS config files pointed at paths that do not exist, so nothing from
the machine, and nothing beyond 127.0.0.1, is read or asked.
"""

from __future__ import annotations

import json
import re
import struct
import sys
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from groundqa.engine import Engine
from groundqa.errors import GenerationError, UsageError
from groundqa.generate import Evidence, Generation, GenerationSettings, get_generator
from groundqa.generate import GeneratorOptions as Options
from groundqa.generate.prompts import PROMPT_VERSION, SYSTEM_PROMPT
from groundqa.models import REFUSAL, Answer, Chunk, Hit
from groundqa.query import Turn
from groundqa.text import Analyzer, PassageTerms
from tests.conftest import copy_index
from tests.fakes import FakeServer, Out, Reply, Seen, closed_port_url, quote_source_1

KEY_ID = "AKIDGROUNDQATEST"
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz-DO-NOT-LEAK"
API_KEY = "ABSKQmVkcm9ja0FQSUtleS1ETy1OT1QtTEVBSw=="
REGION = "eu-west-2"
MODEL = "anthropic.claude-test-v1:0"
SPEC = f"bedrock:{MODEL}"
QUOTED = MODEL.replace(":", "%3A")  # how botocore puts the id in the path

GROUNDED = (
    "Put the bins out no earlier than 5pm on the day before collection [1]. "
    "You may book two hard rubbish collections each financial year [2]."
)
GROUNDED_PIECES = (
    "Put the bins out no earlier than 5pm ",
    "on the day before collection [1]. ",
    "You may book two hard rubbish collections each financial year [2].",
)
PASSAGES = (
    (
        "Fennick Waste Policy",
        ("2 Collection days",),
        "General waste is collected weekly. Bins must be placed at the kerb no earlier than "
        "5pm on the day before collection. Bins must be brought back onto the property by "
        "8pm on the collection day.",
    ),
    (
        "Fennick Waste Policy",
        ("3 Hard rubbish",),
        "Each household may book two hard rubbish collections in each financial year at no "
        "extra charge. Each collection may include up to 2 cubic metres of household items.",
    ),
)


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Fake keys and region; the machine's AWS files, profile and metadata endpoint out of reach."""
    for name in (
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_DEFAULT_REGION",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
        "AWS_CA_BUNDLE",
        "AWS_MAX_ATTEMPTS",
        "AWS_RETRY_MODE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws" / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws" / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


# --- the wire protocol ---------------------------------------------------------------------


def _header(name: str, value: str) -> bytes:
    """One event-stream header: name length, name, type 7 (string), value length, value."""
    raw_name, raw_value = name.encode(), value.encode()
    return (
        bytes([len(raw_name)]) + raw_name + b"\x07" + struct.pack(">H", len(raw_value)) + raw_value
    )


def event_message(kind: str, payload: dict[str, Any], message_type: str = "event") -> bytes:
    """One binary event-stream message, as `botocore.eventstream.EventStreamBuffer` reads it.

    Prelude (total length, headers length, CRC32 of those eight bytes), the headers,
    the JSON payload, then the CRC32 of everything before it.
    """
    type_header = ":event-type" if message_type == "event" else ":exception-type"
    headers = (
        _header(type_header, kind)
        + _header(":content-type", "application/json")
        + _header(":message-type", message_type)
    )
    body = json.dumps(payload).encode()
    prelude = struct.pack(">II", 12 + len(headers) + len(body) + 4, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


def stream_events(pieces: Sequence[str]) -> list[bytes]:
    """The messages of a ConverseStream reply that says `pieces` in order."""
    return [
        event_message("messageStart", {"role": "assistant"}),
        *(
            event_message("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": p}})
            for p in pieces
        ),
        event_message("contentBlockStop", {"contentBlockIndex": 0}),
        event_message("messageStop", {"stopReason": "end_turn"}),
        event_message(
            "metadata",
            {
                "usage": {"inputTokens": 100, "outputTokens": 20, "totalTokens": 120},
                "metrics": {"latencyMs": 1},
            },
        ),
    ]


Pieces = Sequence[str] | Callable[[Seen], Sequence[str]]


def bedrock_reply(pieces: Pieces, stall_after: int | None = None) -> Reply:
    """A Bedrock runtime: the whole reply for `/converse`, the event stream for `/converse-stream`."""

    def reply(seen: Seen, out: Out) -> None:
        parts = pieces(seen) if callable(pieces) else pieces
        if seen.path.endswith("/converse-stream"):
            out.stream(
                stream_events(parts), "application/vnd.amazon.eventstream", stall_after=stall_after
            )
            return
        out.json(
            {
                "output": {"message": {"role": "assistant", "content": [{"text": "".join(parts)}]}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": 100, "outputTokens": 20, "totalTokens": 120},
                "metrics": {"latencyMs": 1},
            }
        )

    return reply


def error_reply(status: int, code: str, message: str) -> Reply:
    def reply(seen: Seen, out: Out) -> None:
        out.raw(
            json.dumps({"message": message}).encode(),
            status,
            headers={
                "x-amzn-ErrorType": f"{code}:http://internal.amazon.com/coral/com.amazon.bedrock/"
            },
        )

    return reply


def sleepy_reply(seen: Seen, out: Out) -> None:
    out.wait(3.0)
    out.json({})


# --- evidence ------------------------------------------------------------------------------


def _evidence() -> Evidence:
    hits = []
    for n, (title, path, text) in enumerate(PASSAGES, 1):
        chunk = Chunk(f"c{n}", f"d{n}", f"d{n}#s", title, path, text, f"/corpus/d{n}.md", None)
        hits.append(Hit(chunk, 1.0 / n, n))
    return Evidence(
        "When do bins go out, and how many hard rubbish collections can I book?",
        {},
        tuple(hits),
        PassageTerms(Analyzer()),
        settings=GenerationSettings(k=2, temperature=0.1, max_tokens=321),
    )


def _check_grounded(result: Generation) -> None:
    assert not result.refused
    assert result.text == GROUNDED
    assert result.prompt_version == PROMPT_VERSION
    assert [(c.n, c.chunk_id) for c in result.citations] == [(1, "c1"), (2, "c2")]
    assert result.citations[0].snippet == (
        "Bins must be placed at the kerb no earlier than 5pm on the day before collection."
    )


def _options(url: str, timeout_s: float = 10.0) -> Options:
    return Options(base_url=url, timeout_s=timeout_s)


def _run_stream(gen: Any, evidence: Evidence) -> tuple[list[str], Generation]:
    items = list(gen.stream(evidence))
    final = items[-1]
    assert isinstance(final, Generation)
    return [p for p in items[:-1] if isinstance(p, str)], final


def _one_line(exc: pytest.ExceptionInfo[GenerationError] | pytest.ExceptionInfo[UsageError]) -> str:
    message = exc.value.message
    assert "\n" not in message
    for secret in (SECRET, API_KEY):
        assert secret not in message and secret not in str(exc.value)
    return message


# --- answers -------------------------------------------------------------------------------


def test_a_whole_reply_is_cited_and_the_request_is_converse(
    serve: Callable[[Reply], FakeServer],
) -> None:
    server = serve(bedrock_reply(GROUNDED_PIECES))
    gen = get_generator(SPEC, _options(server.url))
    assert gen.name == SPEC and gen.streams
    _check_grounded(gen.generate(_evidence()))
    (seen,) = server.seen
    assert seen.path == f"/model/{QUOTED}/converse"
    assert set(seen.body) == {"system", "messages", "inferenceConfig"}
    assert seen.body["system"] == [{"text": SYSTEM_PROMPT}]
    assert seen.body["inferenceConfig"] == {"maxTokens": 321, "temperature": 0.1}
    (user,) = seen.body["messages"]
    assert user["role"] == "user"
    (block,) = user["content"]
    assert "<<<SOURCE 1\n" in block["text"] and "\nSOURCE 2>>>" in block["text"]
    assert "[Source 1: Fennick Waste Policy > 2 Collection days]" in block["text"]
    # Signed with SigV4 for the configured region and Bedrock's signing name; no secret sent.
    auth = seen.headers["authorization"]
    assert auth.startswith(f"AWS4-HMAC-SHA256 Credential={KEY_ID}/")
    assert f"/{REGION}/bedrock/aws4_request" in auth
    assert all(SECRET not in v for v in seen.headers.values())
    assert SECRET not in repr(gen)


def test_a_streamed_reply_yields_the_pieces_in_order_then_the_generation(
    serve: Callable[[Reply], FakeServer],
) -> None:
    server = serve(bedrock_reply(GROUNDED_PIECES))
    gen = get_generator(SPEC, _options(server.url))
    pieces, final = _run_stream(gen, _evidence())
    assert pieces == list(GROUNDED_PIECES)
    assert "".join(pieces) == final.text
    _check_grounded(final)
    (seen,) = server.seen
    assert seen.path == f"/model/{QUOTED}/converse-stream"
    assert seen.body["system"] == [{"text": SYSTEM_PROMPT}]
    assert seen.body["inferenceConfig"] == {"maxTokens": 321, "temperature": 0.1}


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "stream"])
def test_the_exact_refusal_is_a_refusal(
    streamed: bool, serve: Callable[[Reply], FakeServer]
) -> None:
    server = serve(bedrock_reply(["I don't have enough ", "information about that."]))
    gen = get_generator(SPEC, _options(server.url))
    result = _run_stream(gen, _evidence())[1] if streamed else gen.generate(_evidence())
    assert result.refused and result.text == REFUSAL and result.citations == ()


def test_no_passages_asks_no_model(serve: Callable[[Reply], FakeServer]) -> None:
    server = serve(bedrock_reply(GROUNDED_PIECES))
    gen = get_generator(SPEC, _options(server.url))
    empty = Evidence("q", {}, (), PassageTerms(Analyzer()))
    assert gen.generate(empty).refused
    assert _run_stream(gen, empty)[1].refused
    assert server.seen == []


def test_complete_is_one_plain_converse_call(serve: Callable[[Reply], FakeServer]) -> None:
    server = serve(bedrock_reply(["What does a NEER report cost ", "in Westhaven?"]))
    gen = get_generator(SPEC, _options(server.url))
    reply = gen.complete("Rewrite the question.", "and in Westhaven?", 96)  # type: ignore[attr-defined]
    assert reply == "What does a NEER report cost in Westhaven?"
    (seen,) = server.seen
    assert seen.path == f"/model/{QUOTED}/converse"
    assert seen.body == {
        "system": [{"text": "Rewrite the question."}],
        "messages": [{"role": "user", "content": [{"text": "and in Westhaven?"}]}],
        "inferenceConfig": {"maxTokens": 96, "temperature": 0.0},
    }


def test_complete_fails_like_generate(serve: Callable[[Reply], FakeServer]) -> None:
    server = serve(
        error_reply(400, "ValidationException", "The provided model identifier is invalid.")
    )
    gen = get_generator(SPEC, _options(server.url))
    with pytest.raises(GenerationError) as exc:
        gen.complete("system", "user", 96)  # type: ignore[attr-defined]
    assert "HTTP 400: ValidationException" in _one_line(exc)


# --- end to end through the Engine ---------------------------------------------------------


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, regpack_build: Path) -> Engine:
    index = tmp_path_factory.mktemp("regpack") / "idx"
    copy_index(regpack_build, index)
    return Engine.open(index)


QUESTION = "When is a NEER report due?"


def _quote_source_1(seen: Seen) -> list[str]:
    """What a well-behaved model does: state a fact from source 1 and cite it."""
    return quote_source_1(seen.body["messages"][-1]["content"][0]["text"])


def test_engine_answers_through_bedrock_with_a_citation(
    engine: Engine, serve: Callable[[Reply], FakeServer]
) -> None:
    server = serve(bedrock_reply(_quote_source_1))
    answer = engine.ask(QUESTION, generator=SPEC, options=_options(server.url))
    assert answer.error is None and not answer.refused
    assert answer.generator == SPEC
    assert answer.prompt_version == PROMPT_VERSION
    (citation,) = answer.citations
    assert citation.n == 1 and citation.chunk_id == answer.passages[0].chunk.chunk_id
    assert answer.answer == f"{citation.snippet} [1]"
    assert citation.snippet in " ".join(answer.passages[0].chunk.text.split())
    assert Answer.from_dict(answer.to_dict()) == answer
    assert all(s.path.startswith(f"/model/{QUOTED}/converse") for s in server.seen)


def test_engine_streams_the_pieces_in_order(
    engine: Engine, serve: Callable[[Reply], FakeServer]
) -> None:
    server = serve(bedrock_reply(_quote_source_1))
    hits, *pieces, answer = list(
        engine.ask_stream(QUESTION, generator=SPEC, options=_options(server.url))
    )
    assert isinstance(hits, list) and isinstance(answer, Answer)
    assert pieces == _quote_source_1(server.seen[0])
    assert "".join(str(p) for p in pieces) == answer.answer
    assert answer.citations and answer.error is None


def test_engine_keeps_the_passages_when_bedrock_refuses(
    engine: Engine, serve: Callable[[Reply], FakeServer]
) -> None:
    server = serve(error_reply(429, "ThrottlingException", "Too many requests, please wait."))
    answer = engine.ask(QUESTION, generator=SPEC, options=_options(server.url))
    assert answer.error is not None and "HTTP 429: ThrottlingException" in answer.error
    assert answer.passages and answer.citations == () and answer.answer == ""
    assert len(server.seen) == 1  # asked once, not retried


def test_engine_rewrites_a_follow_up_with_complete(
    engine: Engine, serve: Callable[[Reply], FakeServer]
) -> None:
    server = serve(bedrock_reply(["When is a NEER report due in Westhaven?"]))
    history = (Turn("user", QUESTION), Turn("assistant", "Within 30 days [1]."))
    _, followup = engine.resolve(
        "and in Westhaven?", history=history, generator=SPEC, options=_options(server.url)
    )
    assert followup.standalone == "When is a NEER report due in Westhaven?"
    assert followup.method == f"model:{SPEC}"
    (seen,) = server.seen
    assert seen.path == f"/model/{QUOTED}/converse"
    assert "and in Westhaven?" in seen.body["messages"][0]["content"][0]["text"]


# --- failures ------------------------------------------------------------------------------

STATUS_ERRORS = [
    pytest.param(
        400,
        "ValidationException",
        "The provided model identifier is invalid.",
        f"check the model id '{MODEL}'",
        id="400-wrong-model",
    ),
    pytest.param(
        404,
        "ResourceNotFoundException",
        "Model not found.",
        f"check the model id '{MODEL}'",
        id="404-no-such-model",
    ),
    pytest.param(
        403,
        "AccessDeniedException",
        "You don't have access to the model with the specified model ID.",
        "check the AWS credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE)",
        id="403-access-denied",
    ),
    pytest.param(
        429,
        "ThrottlingException",
        "Too many requests, please wait before trying again.",
        "ask again later",
        id="429-throttled",
    ),
    pytest.param(
        500, "InternalServerException", "Internal server error.", "", id="500-server-error"
    ),
]


@pytest.mark.parametrize(("status", "code", "detail", "hint"), STATUS_ERRORS)
@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "stream"])
def test_an_error_status_is_one_line_naming_status_code_model_and_what_to_do(
    status: int,
    code: str,
    detail: str,
    hint: str,
    streamed: bool,
    serve: Callable[[Reply], FakeServer],
) -> None:
    server = serve(error_reply(status, code, detail))
    gen = get_generator(SPEC, _options(server.url))
    with pytest.raises(GenerationError) as exc:
        list(gen.stream(_evidence())) if streamed else gen.generate(_evidence())
    message = _one_line(exc)
    operation = "converse-stream" if streamed else "converse"
    assert message.startswith(
        f"bedrock at {server.url}/model/{MODEL}/{operation} answered HTTP {status}: {code}: {detail}"
    )
    assert hint in message
    assert len(server.seen) == 1  # a failure is reported, never retried


def test_a_secret_echoed_by_the_server_is_scrubbed(serve: Callable[[Reply], FakeServer]) -> None:
    echo = f"The request signature we calculated does not match; secret {SECRET} rejected"
    server = serve(error_reply(403, "InvalidSignatureException", echo))
    with pytest.raises(GenerationError) as exc:
        get_generator(SPEC, _options(server.url)).generate(_evidence())
    message = _one_line(exc)
    assert "secret *** rejected" in message and "check the AWS credentials" in message


def test_an_exception_event_inside_the_stream(serve: Callable[[Reply], FakeServer]) -> None:
    events = [
        event_message("messageStart", {"role": "assistant"}),
        event_message("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Bins "}}),
        event_message(
            "throttlingException", {"message": "Too many tokens, slow down."}, "exception"
        ),
    ]
    server = serve(lambda seen, out: out.stream(events, "application/vnd.amazon.eventstream"))
    with pytest.raises(GenerationError) as exc:
        list(get_generator(SPEC, _options(server.url)).stream(_evidence()))
    assert _one_line(exc) == (
        f"bedrock stream from {server.url}/model/{MODEL}/converse-stream reported "
        "ThrottlingException: Too many tokens, slow down.; "
        "Bedrock is limiting this account's requests: ask again later"
    )


@pytest.mark.parametrize(
    "cut",
    [
        pytest.param(lambda msgs: msgs[:3], id="before-messageStop"),
        pytest.param(lambda msgs: [*msgs[:2], msgs[2][:20]], id="inside-a-message"),
    ],
)
def test_a_stream_that_ends_before_messagestop_broke_off(
    cut: Callable[[list[bytes]], list[bytes]], serve: Callable[[Reply], FakeServer]
) -> None:
    events = cut(stream_events(GROUNDED_PIECES))
    server = serve(lambda seen, out: out.stream(events, "application/vnd.amazon.eventstream"))
    with pytest.raises(GenerationError) as exc:
        list(get_generator(SPEC, _options(server.url)).stream(_evidence()))
    assert _one_line(exc) == (
        f"bedrock stream from {server.url}/model/{MODEL}/converse-stream "
        "broke off before messageStop"
    )


def test_a_connection_dropped_inside_a_promised_length_broke_off(
    serve: Callable[[Reply], FakeServer],
) -> None:
    # botocore does not enforce Content-Length, so only the missing messageStop tells.
    events = stream_events(GROUNDED_PIECES)
    promised = {"Content-Length": str(sum(len(m) for m in events))}
    server = serve(
        lambda seen, out: out.stream(
            events[:2], "application/vnd.amazon.eventstream", headers=promised
        )
    )
    with pytest.raises(GenerationError) as exc:
        list(get_generator(SPEC, _options(server.url)).stream(_evidence()))
    assert _one_line(exc) == (
        f"bedrock stream from {server.url}/model/{MODEL}/converse-stream "
        "broke off before messageStop"
    )


def test_a_connection_dropped_inside_a_chunk_broke_off(
    serve: Callable[[Reply], FakeServer],
) -> None:
    """How Bedrock sends a stream (chunked); the connection closes halfway through a chunk."""
    first, second, *_ = stream_events(GROUNDED_PIECES)
    chunks = [b"%x\r\n%s\r\n" % (len(first), first), b"%x\r\n%s" % (len(second), second[:10])]
    chunked = {"Transfer-Encoding": "chunked"}
    server = serve(
        lambda seen, out: out.stream(chunks, "application/vnd.amazon.eventstream", headers=chunked)
    )
    with pytest.raises(GenerationError) as exc:
        list(get_generator(SPEC, _options(server.url)).stream(_evidence()))
    assert _one_line(exc) == (
        f"bedrock request to {server.url}/model/{MODEL}/converse-stream broke off: "
        "Connection broken: IncompleteRead(10 bytes read, 177 more expected)"
    )


def test_a_corrupt_event_message_is_malformed(serve: Callable[[Reply], FakeServer]) -> None:
    good = event_message("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x"}})
    broken = good[:-1] + bytes([good[-1] ^ 0xFF])  # the message CRC no longer matches
    server = serve(lambda seen, out: out.stream([broken], "application/vnd.amazon.eventstream"))
    with pytest.raises(GenerationError) as exc:
        list(get_generator(SPEC, _options(server.url)).stream(_evidence()))
    assert _one_line(exc).startswith(
        "bedrock sent a malformed reply: a broken event-stream message"
    )


def test_a_body_that_is_not_a_converse_reply_is_malformed(
    serve: Callable[[Reply], FakeServer],
) -> None:
    server = serve(lambda seen, out: out.raw(b"<html>502 upstream hiccup{", 200))
    with pytest.raises(GenerationError) as exc:
        get_generator(SPEC, _options(server.url)).generate(_evidence())
    assert (
        _one_line(exc) == "bedrock sent a malformed reply: the reply has no output.message.content"
    )


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "stream"])
def test_a_server_slower_than_the_timeout(
    streamed: bool, serve: Callable[[Reply], FakeServer]
) -> None:
    server = serve(sleepy_reply)
    gen = get_generator(SPEC, _options(server.url, timeout_s=0.5))
    with pytest.raises(GenerationError) as exc:
        list(gen.stream(_evidence())) if streamed else gen.generate(_evidence())
    operation = "converse-stream" if streamed else "converse"
    assert _one_line(exc) == (
        f"bedrock timed out after 0.5 s at {server.url}/model/{MODEL}/{operation}"
    )
    assert len(server.seen) == 1


def test_a_stream_that_stalls_midway_times_out(serve: Callable[[Reply], FakeServer]) -> None:
    server = serve(bedrock_reply(GROUNDED_PIECES, stall_after=2))
    gen = get_generator(SPEC, _options(server.url, timeout_s=0.5))
    with pytest.raises(GenerationError, match=re.escape("bedrock timed out after 0.5 s")):
        list(gen.stream(_evidence()))


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "stream"])
def test_a_closed_port_is_unreachable(streamed: bool) -> None:
    url = closed_port_url()
    gen = get_generator(SPEC, _options(url, timeout_s=2))
    with pytest.raises(GenerationError) as exc:
        list(gen.stream(_evidence())) if streamed else gen.generate(_evidence())
    operation = "converse-stream" if streamed else "converse"
    assert (
        _one_line(exc) == f"cannot reach bedrock at {url}/model/{MODEL}/{operation}; is it running?"
    )


# --- where it connects, and as whom --------------------------------------------------------


def test_the_endpoint_variable_is_honoured_without_a_generator_url(
    serve: Callable[[Reply], FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = serve(bedrock_reply(GROUNDED_PIECES))
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", server.url)
    _check_grounded(get_generator(SPEC).generate(_evidence()))
    assert server.seen[0].path == f"/model/{QUOTED}/converse"


def test_the_generator_url_wins_over_the_endpoint_variable(
    serve: Callable[[Reply], FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = serve(bedrock_reply(GROUNDED_PIECES))
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", closed_port_url())
    get_generator(SPEC, _options(server.url)).generate(_evidence())
    assert len(server.seen) == 1


def test_a_profile_gives_region_and_keys(
    serve: Callable[[Reply], FakeServer], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config, credentials = tmp_path / "config", tmp_path / "credentials"
    config.write_text("[profile work]\nregion = ap-southeast-2\n", encoding="utf-8")
    credentials.write_text(
        f"[work]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = {SECRET}\n",
        encoding="utf-8",
    )
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_PROFILE", "work")
    server = serve(bedrock_reply(GROUNDED_PIECES))
    gen = get_generator(SPEC, _options(server.url))
    assert gen.region == "ap-southeast-2"  # type: ignore[attr-defined]
    gen.generate(_evidence())
    auth = server.seen[0].headers["authorization"]
    assert "Credential=AKIDPROFILE/" in auth and "/ap-southeast-2/bedrock/" in auth


def test_aws_region_wins_over_aws_default_region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    assert get_generator(SPEC).region == REGION  # type: ignore[attr-defined]
    monkeypatch.delenv("AWS_REGION")
    assert get_generator(SPEC).region == "us-west-2"  # type: ignore[attr-defined]


def test_a_bedrock_api_key_stands_in_for_credentials_and_is_never_shown(
    serve: Callable[[Reply], FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """botocore sends the key as a bearer token, over HTTPS only: against a plain-HTTP
    endpoint the request is refused before it leaves, in one line without the key."""
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", API_KEY)
    server = serve(bedrock_reply(GROUNDED_PIECES))
    gen = get_generator(SPEC, _options(server.url))
    assert API_KEY not in repr(gen)
    with pytest.raises(GenerationError) as exc:
        gen.generate(_evidence())
    assert "Bearer authorization requires an HTTPS endpoint" in _one_line(exc)
    assert server.seen == []


# --- configuration mistakes ----------------------------------------------------------------


def test_without_credentials_it_names_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(UsageError) as exc:
        get_generator(SPEC)
    message = _one_line(exc)
    assert message.startswith("bedrock: no AWS credentials found")
    assert "AWS_ACCESS_KEY_ID" in message and "AWS_PROFILE" in message


def test_half_a_key_pair_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    with pytest.raises(UsageError) as exc:
        get_generator(SPEC)
    assert _one_line(exc).startswith("bedrock: ") and "AWS_ACCESS_KEY_ID" in exc.value.message


def test_without_a_region_it_names_aws_region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_REGION")
    with pytest.raises(UsageError) as exc:
        get_generator(SPEC, Options(base_url="http://127.0.0.1:9"))
    message = _one_line(exc)
    assert message.startswith("bedrock: no AWS region; set AWS_REGION")


def test_a_profile_that_does_not_exist_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_PROFILE", "nope")
    with pytest.raises(UsageError) as exc:
        get_generator(SPEC)
    assert _one_line(exc) == "bedrock: The config profile (nope) could not be found"


def test_without_boto3_it_names_the_install_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)  # makes `import boto3` fail
    with pytest.raises(UsageError) as exc:
        get_generator(SPEC)
    assert exc.value.message == "bedrock: needs pip install 'groundqa[bedrock]'"


def test_an_empty_model_or_a_bad_url_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"bedrock: name a model, e\.g\. --generator bedrock:\S+"):
        get_generator("bedrock:")
    with pytest.raises(UsageError, match="must be an http:// or https:// URL"):
        get_generator(SPEC, Options(base_url="localhost:8000"))
