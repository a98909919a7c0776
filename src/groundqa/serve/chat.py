"""The OpenAI chat API over the index, so any OpenAI client or chat front-end can use it.

    GET  /v1/models             one model, `groundqa`: the index
    POST /v1/chat/completions   the last user message answered like /query, with citations

A chat request becomes the `QueryRequest` /query would get and goes through the same
answers, result cache, limits and errors: the last message must be the user's
question, earlier user and assistant messages are the conversation a follow-up is
read against, and system and developer messages are ignored (the corpus, not a
prompt, decides what is said). The reply's content is `Answer.with_sources()`: the
answer with its `[n]` markers and a Sources list, or the refusal sentence alone;
`citations` and a `groundqa` object carry the rest. A streamed reply sends the same
content in OpenAI's chunks. Other OpenAI fields are accepted and ignored, except `n`
above 1, which asks for more than the one answer there is. `usage` counts words,
not tokens: no tokenizer is involved in an extractive answer.

An answer that could not be generated (a model server down or broken) is an error,
502 with the code `generation`, as on /query: a chat client shows the content and
nothing else, so an empty answer would read as one. A stream holds its headers until
the generator's first text, so such a failure before any text is the same JSON error;
one later in the stream is OpenAI's `data: {"error": ...}` line, and the stream ends
without `[DONE]`.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from typing import Any, Literal

from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from groundqa.engine import Engine
from groundqa.models import REFUSAL, Answer
from groundqa.query import MAX_K, MAX_QUESTION_CHARS, MAX_TEMPERATURE, MAX_TOKENS
from groundqa.serve.answers import answer, answer_stream, generation_failed
from groundqa.serve.cache import Cache
from groundqa.serve.errors import ApiError, error_body, error_responses, validation_message
from groundqa.serve.events import EventStreamResponse
from groundqa.serve.requests import (
    Facets,
    FilterFacets,
    Name,
    QueryRequest,
    TurnModel,
    with_generator,
)
from groundqa.serve.settings import ServeSettings

MODEL = "groundqa"
# The roles OpenAI defines; only user and assistant messages are read.
Role = Literal["system", "developer", "user", "assistant", "tool", "function"]
# What a chat route may answer besides 200 (502: the answer could not be generated).
CHAT_ERRORS = (400, 401, 404, 408, 413, 421, 422, 429, 500, 502, 503, 504)


# ---------------------------------------------------------------- the request


class ContentPart(BaseModel):
    """One part of a message's content; only `text` parts are read."""

    model_config = ConfigDict(extra="ignore")

    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Role
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        """The content as one string: a list of parts gives its text parts, joined."""
        if self.content is None or isinstance(self.content, str):
            return self.content or ""
        return "\n".join(p.text for p in self.content if p.type == "text" and p.text)


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore")

    include_usage: bool | None = None


class ChatRequest(BaseModel):
    """An OpenAI chat completion request. OpenAI fields not named here are accepted and
    ignored; the ones after `n` are groundqa's, with the meaning they have in /query."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(description=f"Must be {MODEL!r}.")
    messages: list[ChatMessage] = Field(
        description="The conversation; the last message is the user's question. System and "
        "developer messages are ignored."
    )
    stream: bool | None = Field(None, description="Send the answer as OpenAI's SSE chunks.")
    stream_options: StreamOptions | None = None
    temperature: float | None = Field(None, ge=0, le=MAX_TEMPERATURE)
    max_tokens: int | None = Field(
        None, ge=1, description=f"Longest answer in tokens; above {MAX_TOKENS} is {MAX_TOKENS}."
    )
    max_completion_tokens: int | None = Field(None, ge=1, description="Same as max_tokens.")
    n: int | None = Field(None, ge=1, description="Only 1: there is one answer.")
    k: int | None = Field(None, ge=1, le=MAX_K, description="As in /query.")
    retriever: Name | None = Field(None, description="As in /query.")
    generator: Name | None = Field(
        None,
        description="As in /query: one of the server's generators (default its `--generator`).",
    )
    filters: FilterFacets | None = Field(None, description="As in /query.")
    scope: Facets | None = Field(None, description="As in /query.")
    as_of: dt.date | None = Field(None, description="As in /query.")


def _bad(message: str, param: str | None = "messages", code: str | None = None) -> ApiError:
    return ApiError(400, message, code=code, param=param)


def _question(messages: list[ChatMessage]) -> str:
    """The last message's text, if it is a user's question this server can take."""
    if not messages:
        raise _bad("messages is empty; send the question as a message with role 'user'")
    if not any(m.role == "user" for m in messages):
        raise _bad(
            "there is no user message; send the question as a message with role 'user' "
            "(system and developer messages are ignored)"
        )
    last = messages[-1]
    if last.role != "user":
        raise _bad(f"the last message is from {last.role!r}; end with the user's question")
    question = last.text().strip()
    if not question:
        raise _bad("the last user message has no text; send the question as text")
    if len(question) > MAX_QUESTION_CHARS:
        raise _bad(f"the question is {len(question)} characters; the limit is {MAX_QUESTION_CHARS}")
    return question


def query_request(body: ChatRequest) -> QueryRequest:
    """The /query request a chat request asks. Raises ApiError for what a chat cannot ask."""
    if body.model != MODEL:
        raise ApiError(
            404,
            f"the model {body.model!r} does not exist on this server; use {MODEL!r}",
            code="model_not_found",
            param="model",
            type="invalid_request_error",  # as OpenAI says it
        )
    if body.n is not None and body.n > 1:
        raise _bad(
            f"n={body.n} asks for {body.n} answers; this server gives one, so send n=1 or omit it",
            param="n",
            code="unsupported_value",
        )
    question = _question(body.messages)
    read = [m for m in body.messages[:-1] if m.role in ("user", "assistant")]
    # Built without checks: the turns are cut and checked when they become the Query's.
    history = [TurnModel.model_construct(role=m.role, content=m.text()) for m in read]
    tokens = body.max_completion_tokens or body.max_tokens
    fields: dict[str, Any] = {
        "question": question,
        "k": body.k,
        "retriever": body.retriever,
        "generator": body.generator,
        "temperature": body.temperature,
        "max_tokens": min(tokens, MAX_TOKENS) if tokens else None,
        "filters": body.filters,
        "scope": body.scope,
        "as_of": body.as_of,
        "history": history,
    }
    try:
        return QueryRequest(**{k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:  # e.g. more turns than /query takes (past the body limit)
        raise _bad(validation_message(exc.errors(), None), param=None) from None


# ---------------------------------------------------------------- the reply


def content(result: dict[str, Any]) -> str:
    """What the assistant says: the answer with its markers and Sources, or the refusal."""
    return Answer.from_dict(result).with_sources()


def _words(*texts: str) -> int:
    return sum(len(t.split()) for t in texts)


@dataclass(frozen=True)
class Completion:
    """One reply's id and time, and what it was asked (for `usage`)."""

    id: str
    created: int
    prompt_words: int

    @classmethod
    def start(cls, request: QueryRequest) -> Completion:
        asked = _words(request.question, *(t.content for t in request.history))
        return cls(f"chatcmpl-{uuid.uuid4().hex}", int(time.time()), asked)

    def usage(self, text: str) -> dict[str, int]:
        said = _words(text)
        return {
            "prompt_tokens": self.prompt_words,
            "completion_tokens": said,
            "total_tokens": self.prompt_words + said,
        }

    def head(self, kind: str) -> dict[str, Any]:
        return {"id": self.id, "object": kind, "created": self.created, "model": MODEL}

    def whole(self, result: dict[str, Any]) -> dict[str, Any]:
        """The `chat.completion` for a finished answer."""
        text = content(result)
        message = {"role": "assistant", "content": text}
        return {
            **self.head("chat.completion"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": self.usage(text),
            **extras(result),
        }

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return data({**self.head("chat.completion.chunk"), "choices": [choice], **extra})


def extras(result: dict[str, Any]) -> dict[str, Any]:
    """What a chat reply carries besides the content: the citations, and how it was decided."""
    keys = (
        "outcome",
        "refused",
        "refused_by",
        "confidence",
        "standalone_question",
        "notes",
        "cache",
    )
    return {"citations": result["citations"], "groundqa": {k: result.get(k) for k in keys}}


def data(obj: Any) -> str:
    # json.dumps escapes newlines, so each chunk is exactly one `data:` line.
    return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n"


# ---------------------------------------------------------------- streaming


_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'"})


def _may_be_refusal(text: str) -> bool:
    """Whether a reply so far could still be, or already is, the refusal sentence (read as
    `generate.llm.is_refusal` reads it: apostrophes and whitespace folded)."""
    folded = " ".join(text.translate(_APOSTROPHES).split())
    return REFUSAL.startswith(folded) or folded.startswith(REFUSAL)


class Deltas:
    """What of a generator's text may be sent now, so the deltas sent, joined, are the
    final content exactly (a chat client can only append).

    The engine's answer is the model's reply with its outer whitespace stripped, or the
    refusal sentence alone when the reply opens with it. So leading whitespace is never
    sent, trailing whitespace waits for more text, and text that may still turn out to
    be the refusal waits for the end.
    """

    def __init__(self) -> None:
        self._text = ""
        self.sent = ""

    def add(self, piece: str) -> str:
        self._text += piece
        ready = self._text.strip()
        if _may_be_refusal(ready) or not ready.startswith(self.sent):
            return ""
        delta, self.sent = ready[len(self.sent) :], ready
        return delta

    def rest(self, final: str) -> str:
        """The delta that completes the final content."""
        if final.startswith(self.sent):
            return final[len(self.sent) :]
        # Not the engine's contract; if it happens, the reader still gets the whole answer.
        return "\n\n" + final


def chunks(
    items: Iterable[str | dict[str, Any]], reply: Completion, include_usage: bool
) -> Iterator[str]:
    """OpenAI's chunks for one answer: the role, the text as it comes, the rest of the
    content (its Sources), a last chunk with `finish_reason` and the citations, `[DONE]`."""
    yield reply.chunk({"role": "assistant"})
    deltas = Deltas()
    result: dict[str, Any] = {}
    for item in items:
        if isinstance(item, dict):
            result = item
        elif text := deltas.add(item):
            yield reply.chunk({"content": text})
    failed = generation_failed(result)
    if failed is not None:
        yield data(error_body(502, str(failed.detail), failed.code, type=failed.type))
        return
    text = content(result)
    if rest := deltas.rest(text):
        yield reply.chunk({"content": rest})
    yield reply.chunk({}, "stop", **extras(result))
    if include_usage:
        yield data(
            {**reply.head("chat.completion.chunk"), "choices": [], "usage": reply.usage(text)}
        )
    yield "data: [DONE]\n\n"


# ---------------------------------------------------------------- the routes


def _created(engine: Engine) -> int:
    """When the loaded index was built, as OpenAI's `created` (seconds since the epoch)."""
    try:
        return int(dt.datetime.fromisoformat(engine.manifest.created_at).timestamp())
    except ValueError:
        return 0


def add_chat_routes(
    app: FastAPI, engine: Callable[[], Engine], cache: Cache, settings: ServeSettings
) -> None:
    """Add /v1/models and /v1/chat/completions; `engine` gives the current Engine."""

    @app.get("/v1/models", responses=error_responses(401, 408, 421, 429, 500, 503, 504))
    def models() -> dict[str, Any]:
        """OpenAI's model list: one model, `groundqa`, created when the index was built."""
        card = {"id": MODEL, "object": "model", "created": _created(engine()), "owned_by": MODEL}
        return {"object": "list", "data": [card]}

    @app.post(
        "/v1/chat/completions",
        response_model=None,
        responses={
            200: {
                "description": "A `chat.completion`, or with `stream` its chunks as Server-Sent "
                "Events ending with `data: [DONE]`.",
                "content": {
                    "application/json": {"schema": {"type": "object"}},
                    "text/event-stream": {"schema": {"type": "string"}},
                },
            },
            **error_responses(*CHAT_ERRORS),
        },
    )
    def chat_completions(body: ChatRequest) -> Response:
        """The last user message answered from the index, as an OpenAI chat completion."""
        request = with_generator(query_request(body), settings.generators)
        reply = Completion.start(request)
        options = settings.generator_options
        if not body.stream:
            # A failed generation raises its 502 here.
            result = answer(engine(), cache, settings.cache_ttl, request, options)
            return JSONResponse(reply.whole(result))
        _, items = answer_stream(engine(), cache, settings.cache_ttl, request, options)
        first = next(items)  # the first text, or the whole answer: failures come before 200
        if isinstance(first, dict) and (failed := generation_failed(first)) is not None:
            raise failed
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        return EventStreamResponse(
            chunks(chain([first], items), reply, include_usage),
            headers={"Cache-Control": "no-cache"},
        )
