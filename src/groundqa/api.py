"""The HTTP API: one opened Engine behind FastAPI, for `groundqa serve`.

    GET  /health              what is loaded and whether the cache works (never needs the token)
    POST /query               Engine.ask, as JSON, through the result cache
    POST /query/stream        the same answer as Server-Sent Events
    GET  /sources/{doc_id}    a document's sections and chunks, from the loaded index
    GET  /chunks/{chunk_id}   one chunk
    POST /eval                a probe set through the evaluation harness (token required)
    GET  /, /app.js, /style.css   the web page

Routes are thin shells: each validates its request with a pydantic model, calls
the Engine or the evaluation harness in a worker thread, and returns what it
gives. The cache key is the normalised request plus the index fingerprint, so
a rebuilt index never serves an answer computed on the old one.

It refuses, before any route runs: a request without the bearer token when one
is set (compared in constant time, never logged), and a body over the size limit
(by Content-Length before reading a byte, or as soon as a chunked body grows
past it). Pydantic refuses unknown fields, wrong types and out-of-range values.
No request reads a file: documents and chunks come from the loaded index.
Every failure has one shape, `{"error": {"status", "code", "message"}}`; a
traceback goes to the server log, never to the client.

Outside that guard, `ServiceLimits` decides how much one server process takes on:
a request over its client's rate gets 429, one that finds every slot and the
whole queue taken gets 503 at once, and one not finished in time gets 504 (see
`ServiceLimits` for why its work still runs to the end). The page, the spec and
/health are never rate limited or queued, so a busy server still says how it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import hmac
import http
import importlib.resources
import ipaddress
import json
import math
import os
import re
import threading
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import anyio.to_thread
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from groundqa._version import __version__
from groundqa.cache import Cache, make_cache
from groundqa.engine import Engine
from groundqa.errors import GroundqaError, ProbeError, StoreUnavailableError, UsageError
from groundqa.evaluate import Probe, evaluate_probes
from groundqa.generate import GeneratorOptions
from groundqa.generate import available as available_generators
from groundqa.models import CLOSEST_MATCHES, Answer, Chunk, Hit, uri_for
from groundqa.retrieve import MAX_K, MAX_QUESTION_CHARS

FACET_KEYS = ("jurisdiction", "state", "area", "category")
MAX_FILTER_KEYS = 20
WEB_FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/style.css": ("style.css", "text/css; charset=utf-8"),
}
# Paths that hold no corpus data (or only the index summary) and so never need the token.
PUBLIC_PATHS = frozenset({*WEB_FILES, "/health", "/openapi.json", "/docs", "/docs/oauth2-redirect"})
# Off unless the server has a token: one request runs a whole probe set (real CPU time).
TOKEN_ONLY_PATHS = frozenset({"/eval"})

ERROR_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    422: "invalid_request",
    429: "rate_limited",
    500: "internal",
    504: "timeout",
}
# What any rate-limited, queued and timed route may answer besides its own errors.
LIMITED = (429, 503, 504)

# Requests per minute per client when serving on a host other machines can reach.
DEFAULT_RATE_LIMIT = 120
# The most requests a client may send at once before its rate applies (a page load, a
# retry); `serve --help` says so.
RATE_BURST = 10
# Threads beyond --max-inflight, so /health and the page always find one however busy it is.
THREAD_HEADROOM = 8


@dataclass(frozen=True)
class ServeSettings:
    """How `groundqa serve` runs: who may ask, how much, and where answers are cached."""

    token: str | None = None
    cache: str = "memory"  # "memory", "off", or a redis:// URL
    cache_ttl: int = 3600
    cors_origins: tuple[str, ...] = ()
    max_body_bytes: int = 65_536
    max_probes: int = 500
    generator_options: GeneratorOptions = field(default_factory=GeneratorOptions)
    # How often (seconds) a request may check whether the index has a new current build.
    reload_s: float = 2.0
    # Requests per minute per client address, up to RATE_BURST at once; 0 is no limit.
    rate_limit: int = 0
    # Requests worked on at once, and how many more may wait for one of them to finish.
    max_inflight: int = 8
    queue: int = 32
    # Seconds a request may take, its wait in the queue included.
    request_timeout_s: float = 60.0
    # Seconds a stopping server gives requests in progress before it cuts them off.
    shutdown_timeout_s: int = 30

    def __post_init__(self) -> None:
        if self.token is not None and not self.token.strip():
            raise UsageError("--token must not be empty; omit it to serve without a token")
        if self.cache_ttl < 1:
            raise UsageError(f"--cache-ttl must be at least 1 second, got {self.cache_ttl}")
        if self.max_body_bytes < 1024:
            raise UsageError(
                f"the body limit must be at least 1024 bytes, got {self.max_body_bytes}"
            )
        if self.max_probes < 1:
            raise UsageError(f"the probe limit must be at least 1, got {self.max_probes}")
        if self.rate_limit < 0:
            raise UsageError(
                f"--rate-limit must be requests per minute, or 0 for none, got {self.rate_limit}"
            )
        if not 1 <= self.max_inflight <= 1024:
            raise UsageError(f"--max-inflight must be from 1 to 1024, got {self.max_inflight}")
        if self.queue < 0:
            raise UsageError(f"--queue must be 0 or more, got {self.queue}")
        if not self.request_timeout_s > 0:
            raise UsageError(
                f"--request-timeout must be more than 0 seconds, got {self.request_timeout_s:g}"
            )
        if self.generator_options.timeout_s > self.request_timeout_s:
            raise UsageError(
                f"--timeout ({self.generator_options.timeout_s:g} s) must not be longer than "
                f"--request-timeout ({self.request_timeout_s:g} s): the request would end first"
            )
        if self.shutdown_timeout_s < 0:
            raise UsageError(
                f"--shutdown-timeout must be 0 seconds or more, got {self.shutdown_timeout_s}"
            )


def default_rate_limit(host: str) -> int:
    """The rate limit when none is given: none on a loopback host, whose only clients
    are this machine's, else DEFAULT_RATE_LIMIT requests per minute per client."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return 0
    try:
        return 0 if ipaddress.ip_address(name).is_loopback else DEFAULT_RATE_LIMIT
    except ValueError:
        return DEFAULT_RATE_LIMIT


# ---------------------------------------------------------------- request bodies

Question = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_QUESTION_CHARS),
]
Name = Annotated[str, StringConstraints(min_length=1, max_length=200)]
FacetValue = Annotated[str, StringConstraints(max_length=500)]
FacetValues = FacetValue | Annotated[list[FacetValue], Field(max_length=100)]
Facets = Annotated[
    dict[Annotated[str, StringConstraints(max_length=200)], FacetValues],
    Field(max_length=MAX_FILTER_KEYS),
]
# A filter value may also ask for every one of several values: {"all": [...]}.
FilterValues = (
    FacetValues | Annotated[dict[Literal["any", "all"], FacetValues], Field(max_length=1)]
)
FilterFacets = Annotated[
    dict[Annotated[str, StringConstraints(max_length=200)], FilterValues],
    Field(max_length=MAX_FILTER_KEYS),
]


class QueryRequest(BaseModel):
    """A question and how to answer it. Unknown fields are an error, not ignored."""

    model_config = ConfigDict(extra="forbid")

    question: Question = Field(description="The question, 1 to 2000 characters.")
    k: int | None = Field(
        None,
        ge=1,
        le=MAX_K,
        description="Passages to retrieve; by default the preset for the question's intent.",
    )
    retriever: Name | None = Field(
        None,
        description="bm25, dense or hybrid, with options (e.g. hybrid+cap=2); by default "
        "the index's plan (hybrid+weighted=0.5/0.5+defs where it has vectors, else bm25+defs).",
    )
    generator: Name = "extractive"
    temperature: float | None = Field(None, ge=0, le=2, description="Sampling temperature.")
    max_tokens: int | None = Field(None, ge=1, le=8192, description="Longest answer in tokens.")
    filters: FilterFacets = Field(
        default_factory=dict,
        description="Metadata that every passage must match; a list means any of its values, "
        '{"all": [...]} every one of them. Nested metadata is addressed as `key.subkey`.',
    )
    scope: Facets = Field(
        default_factory=dict,
        description='Where the asker is (e.g. {"area": "Fennick City"}): national documents '
        "apply, state documents only for the scope's state(s), local ones only for its area(s).",
    )
    as_of: dt.date | None = Field(
        None,
        description="The day whose versions are in force (default today); answers citing "
        "another version say so in `notes`.",
    )
    auto_location: bool = Field(
        False, description="Also scope to the places the question names (e.g. a council area)."
    )
    explain: bool = Field(
        False,
        description="For a refusal, also list the closest sections under `closest_matches` "
        "(never cited: they did not answer the question).",
    )


class EvalRequest(BaseModel):
    """A probe set in the probe file format, one object per probe."""

    model_config = ConfigDict(extra="forbid")

    probes: list[dict[str, Any]] = Field(min_length=1)
    k: list[Annotated[int, Field(ge=1, le=MAX_K)]] = Field(
        default_factory=lambda: [1, 3, 5, 10], min_length=1, max_length=20
    )
    retriever: Name | None = None


class ErrorDetail(BaseModel):
    status: int
    code: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {s: {"model": ErrorBody, "description": http.HTTPStatus(s).phrase} for s in statuses}


# Seconds a client is asked to wait when the store's database cannot be reached,
# or when every slot and the whole queue are taken.
RETRY_AFTER_S = 5


def error_response(
    status: int, message: str, code: str | None = None, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """The one error shape every 4xx and 5xx response has."""
    body = error_body(status, message, code)
    return JSONResponse(body, status_code=status, headers=dict(headers or {}))


def error_body(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    return {
        "error": {
            "status": status,
            "code": code or ERROR_CODES.get(status, "http_error"),
            "message": message,
        }
    }


# ---------------------------------------------------------------- the request guard


class RequestGuard:
    """Who may ask, and how much: checked on the raw request, before any route reads it.

    A pure ASGI middleware rather than a route dependency, because FastAPI parses
    the body before it runs dependencies: an unauthenticated or oversized request
    must be turned away before its body is read or parsed at all.
    """

    def __init__(self, app: ASGIApp, *, token: str | None, max_body_bytes: int) -> None:
        self.app = app
        self._token = token.encode("utf-8") if token is not None else None
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        refused = self._refuse(scope["path"], headers.get(b"authorization"))
        if refused is None:
            refused = self._too_large_declared(headers.get(b"content-length"))
        if refused is not None:
            await refused(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left before sending its body; there is no one to answer
            body += message.get("body", b"")
            if len(body) > self.max_body_bytes:
                await self._too_large()(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(body, receive), send)

    def _refuse(self, path: str, authorization: bytes | None) -> Response | None:
        if path in PUBLIC_PATHS:
            return None
        if self._token is None:
            if path in TOKEN_ONLY_PATHS:
                return error_response(
                    403,
                    f"{path} is disabled on this server; start `groundqa serve` with --token to enable it",
                )
            return None
        challenge = {"WWW-Authenticate": "Bearer"}
        if authorization is None:
            return error_response(
                401,
                "this server needs a token: send the header Authorization: Bearer <token>",
                headers=challenge,
            )
        scheme, _, credentials = authorization.partition(b" ")
        if scheme.lower() != b"bearer" or not hmac.compare_digest(credentials.strip(), self._token):
            return error_response(
                401, "the bearer token is not valid for this server", headers=challenge
            )
        return None

    def _too_large_declared(self, content_length: bytes | None) -> Response | None:
        try:
            declared = int(content_length) if content_length is not None else 0
        except ValueError:
            return error_response(400, "the Content-Length header is not a number")
        return self._too_large(declared) if declared > self.max_body_bytes else None

    def _too_large(self, declared: int | None = None) -> Response:
        size = f"is {declared} bytes" if declared is not None else "grew past the limit"
        limit = self.max_body_bytes
        return error_response(413, f"the request body {size}; the limit is {limit} bytes")


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that gives the buffered body once, then waits on the client (for disconnects)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


# ---------------------------------------------------------------- service limits


class RateLimiter:
    """A token bucket per client: `per_minute` requests a minute, up to `burst` at once.

    The table stays bounded however many clients come: a bucket idle long enough to
    be full again is the same as no bucket, so it is dropped; past `max_clients` the
    longest-idle one goes anyway (that client starts again with a full burst, which
    errs on the side of serving). Used from the event loop only, so it takes no lock.
    """

    def __init__(
        self,
        per_minute: int,
        burst: int,
        *,
        max_clients: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if per_minute < 1 or burst < 1 or max_clients < 1:
            raise ValueError("the rate, the burst and the table size must be at least 1")
        self.per_minute = per_minute
        self.burst = float(burst)
        self.max_clients = max_clients
        self._per_s = per_minute / 60.0
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # tokens, when

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, client: str) -> float:
        """0 when `client` may go ahead now (spending one request), else seconds until it may."""
        now = self._clock()
        tokens, then = self._buckets.pop(client, (self.burst, now))
        tokens = min(self.burst, tokens + (now - then) * self._per_s)
        wait = 0.0
        if tokens >= 1:
            tokens -= 1
        else:
            wait = (1 - tokens) / self._per_s
        self._buckets[client] = (tokens, now)  # last: the table runs from longest idle
        while len(self._buckets) > 1:
            oldest, (left, at) = next(iter(self._buckets.items()))
            full = left + (now - at) * self._per_s >= self.burst
            if not full and len(self._buckets) <= self.max_clients:
                break
            del self._buckets[oldest]
        return wait


class Slots:
    """At most `size` requests worked on at once and `queue` more waiting, first come first
    served. A finishing request hands its slot straight to the next in line."""

    def __init__(self, size: int, queue: int) -> None:
        self.size = size
        self.queue = queue
        self.busy = 0
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def full(self) -> bool:
        """Whether a request arriving now could neither start nor wait."""
        return self.busy >= self.size and len(self._waiting) >= self.queue

    async def acquire(self) -> None:
        if self.busy < self.size and not self._waiting:
            self.busy += 1
            return
        turn = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        try:
            await turn
        except BaseException:
            if turn.done() and not turn.cancelled():
                self.release()  # handed a slot just as it gave up waiting: pass it on
            else:
                with contextlib.suppress(ValueError):
                    self._waiting.remove(turn)
            raise

    def release(self) -> None:
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_result(None)
                return
        self.busy -= 1


class ServiceLimits:
    """How much one server process takes on: each client's rate, how many requests at
    once and waiting, and how long each may take.

    A pure ASGI middleware outside the request guard, so a request turned away here
    costs no body read, no parsing and no thread. Routes run in worker threads and
    Python cannot stop a thread, so a request past its time gets its 504 (or a
    started stream its `error` event and its end) while its work runs on with
    nothing more sent, holding its slot until it ends: the slots bound the threads
    really busy, and the generator's own timeout bounds how long that lasts.
    """

    def __init__(
        self, app: ASGIApp, *, rate: RateLimiter | None, slots: Slots, timeout_s: float
    ) -> None:
        self.app = app
        self.rate = rate
        self.slots = slots
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        if scope["path"] in PUBLIC_PATHS:
            await self._in_time(scope, receive, send, deadline)
            return
        refused = self._refuse(scope)
        if refused is not None:
            await refused(scope, receive, send)
            return
        try:
            async with asyncio.timeout_at(deadline):
                await self.slots.acquire()
        except TimeoutError:
            await self._late()(scope, receive, send)
            return
        try:
            await self._in_time(scope, receive, send, deadline)
        finally:
            self.slots.release()

    def _refuse(self, scope: Scope) -> Response | None:
        if self.rate is not None:
            # The connection's own address: X-Forwarded-For counts only from a proxy
            # the server was told to trust, which rewrites `client` before this runs.
            client = scope.get("client")
            wait = self.rate.take(client[0] if client else "")
            if wait > 0:
                seconds = max(1, math.ceil(wait))
                return error_response(
                    429,
                    f"too many requests: this server takes {self.rate.per_minute} a minute "
                    f"from each client; retry after {seconds} s",
                    code="rate_limited",
                    headers={"Retry-After": str(seconds)},
                )
        if self.slots.full():
            return error_response(
                503,
                f"the server is busy ({self.slots.busy} requests in progress, "
                f"{self.slots.waiting} waiting); retry after {RETRY_AFTER_S} s",
                code="overloaded",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
        return None

    def _late(self) -> Response:
        return error_response(504, self._late_message())

    def _late_message(self) -> str:
        return (
            f"the request took longer than this server's {self.timeout_s:g} s limit; "
            "try again later, or with a faster generator"
        )

    async def _in_time(self, scope: Scope, receive: Receive, send: Send, deadline: float) -> None:
        started = finished = late = stream = False
        sending = asyncio.Lock()

        async def send_in_time(message: Message) -> None:
            nonlocal started, finished, stream
            async with sending:
                if late:
                    return  # the client has its answer already
                if message["type"] == "http.response.start":
                    started = True
                    stream = any(
                        k.lower() == b"content-type" and v.startswith(b"text/event-stream")
                        for k, v in message.get("headers", ())
                    )
                elif message["type"] == "http.response.body" and not message.get("more_body"):
                    finished = True
                await send(message)

        async def receive_in_time() -> Message:
            return {"type": "http.disconnect"} if late else await receive()

        work = asyncio.ensure_future(self.app(scope, receive_in_time, send_in_time))
        try:
            timeout = max(0.0, deadline - asyncio.get_running_loop().time())
            done, _ = await asyncio.wait({work}, timeout=timeout)
            if not done:
                async with sending:
                    late = True
                    if not started:
                        await self._late()(scope, receive, send)
                    elif not finished:
                        # A stream cannot change its status: say why it ends, then end it.
                        tail = sse("error", error_body(504, self._late_message())) if stream else ""
                        await send({"type": "http.response.body", "body": tail.encode()})
            await work
        finally:
            work.cancel()  # only still running if this request was cancelled (a forced stop)


# ---------------------------------------------------------------- answers, cached


def _normal_facets(facets: Mapping[str, Any]) -> dict[str, Any]:
    def normal(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {mode: normal(v) for mode, v in value.items()}
        return sorted([value] if isinstance(value, str) else value)

    return {k: normal(v) for k, v in sorted(facets.items())}


def cache_key(request: QueryRequest, fingerprint: str) -> str:
    """Equal for requests that must get the same answer from the same index build."""
    normal = {
        "question": " ".join(request.question.split()).casefold(),
        "k": request.k,
        "retriever": request.retriever,
        "generator": request.generator,
        "filters": _normal_facets(request.filters),
        "scope": _normal_facets(request.scope),
        "auto_location": request.auto_location,
        "as_of": (request.as_of or dt.date.today()).isoformat(),
        "index": fingerprint,
    }
    text = json.dumps(normal, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _ask_args(request: QueryRequest, options: GeneratorOptions) -> dict[str, Any]:
    return {
        "k": request.k,
        "filters": request.filters,
        "scope": request.scope,
        "auto_scope": request.auto_location,
        "retriever": request.retriever,
        "generator": request.generator,
        "options": options,
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
        "as_of": request.as_of,
    }


def _explained(request: QueryRequest, result: dict[str, Any]) -> dict[str, Any]:
    """The result with `closest_matches` when a refusal was asked to explain itself."""
    if not (request.explain and result.get("refused")):
        return result
    closest = [
        {k: p.get(k) for k in ("title", "section", "section_id", "page", "uri", "score")}
        for p in result.get("passages", [])[:CLOSEST_MATCHES]
    ]
    return {**result, "closest_matches": closest}


def _finish(cache: Cache, key: str, ttl: int, result: dict[str, Any]) -> dict[str, Any]:
    """Cache a finished answer (never a failed generation) and say whether the cache is on."""
    if not result.get("error"):
        cache.set(key, result, ttl)
    return {**result, "cache": "off" if cache.backend == "off" else "miss"}


def _cached(cache: Cache, key: str, request: QueryRequest) -> dict[str, Any] | None:
    cached = cache.get(key)
    if cached is None:
        return None
    # The key folds case and spacing; the answer echoes the question as this asker wrote it.
    return {**cached, "question": request.question, "cache": "hit"}


def answer(
    engine: Engine, cache: Cache, ttl: int, request: QueryRequest, options: GeneratorOptions
) -> dict[str, Any]:
    """The Answer as a dict plus `cache`: hit, miss, or off. Errors raise and are never cached."""
    key = cache_key(request, engine.fingerprint)
    cached = _cached(cache, key, request)
    if cached is not None:
        return _explained(request, cached)
    result = engine.ask(request.question, **_ask_args(request, options)).to_dict()
    return _explained(request, _finish(cache, key, ttl, result))


def stream_events(
    engine: Engine, cache: Cache, ttl: int, request: QueryRequest, options: GeneratorOptions
) -> Iterator[str]:
    """SSE for one question: `passages`, `answer` text pieces as the generator makes them,
    then `done` with the whole answer. A usage error raises before the first event is
    produced, so the caller can still answer with the error shape."""
    key = cache_key(request, engine.fingerprint)
    cached = _cached(cache, key, request)
    if cached is not None:
        done = _explained(request, cached)
        return answer_events(cached["passages"], answer_pieces(cached["answer"]), lambda: done)
    events = engine.ask_stream(request.question, **_ask_args(request, options))
    hits = next(events)  # validation, generator lookup and retrieval happen here
    assert isinstance(hits, list)

    def generate() -> Iterator[str]:
        yield sse("passages", [h.to_dict() for h in hits])
        for event in events:
            if isinstance(event, str):
                yield sse("answer", {"text": event})
            elif isinstance(event, Answer):
                yield sse("done", _explained(request, _finish(cache, key, ttl, event.to_dict())))

    return generate()


# ---------------------------------------------------------------- Server-Sent Events

_MARKER = re.compile(r"\[\d+\]")


def answer_pieces(text: str) -> list[str]:
    """The answer cut after each `[n]` marker: one piece per cited sentence.

    Joined, the pieces give the text back exactly; a refusal (no marker) is one piece.
    """
    pieces: list[str] = []
    start = 0
    for marker in _MARKER.finditer(text):
        pieces.append(text[start : marker.end()])
        start = marker.end()
    rest = text[start:]
    if rest.strip() or not pieces:
        pieces.append(rest)
    else:
        pieces[-1] += rest
    return pieces


def sse(event: str, data: Any) -> str:
    # json.dumps escapes newlines, so each event's data is exactly one `data:` line.
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def answer_events(
    passages: list[dict[str, Any]], pieces: Iterable[str], done: Callable[[], dict[str, Any]]
) -> Iterator[str]:
    """`passages`, then one `answer` event per piece of text, then `done` with the whole answer.

    The extractive generator has its answer whole, so its pieces are `answer_pieces`;
    a generator that streams natively passes its text deltas as `pieces` and builds
    the final answer in `done` once they are spent.
    """
    yield sse("passages", passages)
    for piece in pieces:
        yield sse("answer", {"text": piece})
    yield sse("done", done())


class EventStreamResponse(StreamingResponse):
    media_type = "text/event-stream"


# ---------------------------------------------------------------- documents and chunks


def document_view(chunks: Sequence[Chunk]) -> dict[str, Any]:
    """A document as the index holds it: its sections in reading order, each with its chunks."""
    first = chunks[0]
    sections: dict[str, dict[str, Any]] = {}
    for c in chunks:
        section = sections.get(c.section_id)
        if section is None:
            section = sections[c.section_id] = {
                "section_id": c.section_id,
                "section": c.breadcrumb,
                "page": c.page,
                "uri": c.uri,
                "chunks": [],
            }
        section["chunks"].append(
            {"chunk_id": c.chunk_id, "part": c.part, "parts": c.parts, "text": c.text}
        )
    return {
        "doc_id": first.doc_id,
        "title": first.title,
        "uri": uri_for(first.source, None),
        "metadata": dict(first.metadata),
        "sections": list(sections.values()),
    }


def chunk_view(chunk: Chunk) -> dict[str, Any]:
    """A chunk as a passage is shown, without what only a ranking has (score, rank, retriever)."""
    data = Hit(chunk, 0.0, 0).to_dict()
    for key in ("score", "rank", "retriever"):
        del data[key]
    return data


def parse_probes(raw: Sequence[dict[str, Any]]) -> list[Probe]:
    probes: list[Probe] = []
    for i, item in enumerate(raw):
        try:
            probes.append(Probe.from_dict(item, default_id=f"probe{i}"))
        except ValueError as exc:
            raise ProbeError(f"probes[{i}]: {exc}; fix or remove that probe") from None
    return probes


# ---------------------------------------------------------------- the web page

PLACEHOLDER_PAGE = b"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>groundqa</title></head>
<body><h1>groundqa</h1>
<p>The server is running, but this installation has no web page.
The API is described at <a href="/docs">/docs</a> (<a href="/openapi.json">OpenAPI</a>).</p>
</body></html>
"""
PLACEHOLDERS = {
    "index.html": PLACEHOLDER_PAGE,
    "app.js": b"// groundqa: this installation has no web page script.\n",
    "style.css": b"/* groundqa: this installation has no web page styles. */\n",
}


def load_web() -> dict[str, tuple[bytes, str]]:
    """The page's files by route, read once; a missing one is a placeholder, not a failure."""
    folder = importlib.resources.files("groundqa") / "web"
    files: dict[str, tuple[bytes, str]] = {}
    for route, (name, media_type) in WEB_FILES.items():
        try:
            body = (folder / name).read_bytes()
        except OSError:
            body = PLACEHOLDERS[name]
        files[route] = (body, media_type)
    return files


def _static(body: bytes, media_type: str) -> Callable[[], Response]:
    def serve_file() -> Response:
        # no-cache: a browser revalidates, so an upgraded server's page shows at once.
        headers = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
        return Response(content=body, media_type=media_type, headers=headers)

    return serve_file


# ---------------------------------------------------------------- the app


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]{1,200}")


def _field(loc: Sequence[Any], body: Any) -> str:
    """The dotted path of what the client sent, without pydantic's union-member tags."""
    path: list[str] = []
    node = body
    for part in loc[1:] if tuple(loc[:1]) == ("body",) else loc:
        sent = (isinstance(node, dict) and part in node) or (
            isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        )
        if sent:
            node = node[part]
        elif isinstance(node, dict) or node is None:
            node = None  # a field the client did not send (a missing one)
        else:
            continue  # a tag such as `list[str]`: a type pydantic tried, not a field sent
        # A key as sent may hold anything, a line break included: quote any that is not
        # a plain name, so the message stays one line and says exactly what was sent.
        plain = isinstance(part, int) or _PLAIN_KEY.fullmatch(str(part))
        path.append(str(part) if plain else json.dumps(str(part)))
    return ".".join(path)


def _validation_message(errors: Sequence[Any], body: Any) -> str:
    """One line that names each bad field: `k: Input should be ...; unknown field 'x'`."""
    problems: dict[str, list[str]] = {}
    for error in errors:
        kind = error.get("type", "")
        field = _field(error.get("loc", ()), body)
        if kind == "json_invalid":
            detail = error.get("ctx", {}).get("error", "")
            problem = (
                f"the body is not valid JSON ({detail})" if detail else "the body is not valid JSON"
            )
            field = ""
        elif kind == "extra_forbidden":
            problem, field = f"unknown field {field!r}", ""
        elif kind == "missing" and not field:
            problem = "a JSON object body is required"
        else:
            problem = str(error.get("msg", "invalid"))
        # A union (a string or a list of strings) fails once per member: one entry per field.
        if problem not in problems.setdefault(field, []):
            problems[field].append(problem)
    parts = [
        f"{field}: {' or '.join(found)}" if field else "; ".join(found)
        for field, found in problems.items()
    ]
    if len(parts) > 5:
        parts = [*parts[:5], f"and {len(parts) - 5} more"]
    return "; ".join(parts) or "the request is not valid"


class LiveEngine:
    """The Engine over the index's current build: a request at most every `reload_s` asks
    the store which build is current, and a new one is opened and swapped in while
    requests in flight finish on the old one (see `index.base.Store.current_build_id`)."""

    def __init__(self, engine: Engine, reload_s: float) -> None:
        self.engine = engine
        self.reload_s = reload_s
        self._checked = time.monotonic()
        self._lock = threading.Lock()
        self._retired: list[threading.Timer] = []

    def get(self) -> Engine:
        if self.reload_s <= 0 or time.monotonic() - self._checked < self.reload_s:
            return self.engine
        if not self._lock.acquire(blocking=False):
            return self.engine  # another request is checking or opening
        try:
            self._checked = time.monotonic()
            try:
                current = self.engine.store.current_build_id()
            except GroundqaError:
                return self.engine  # a rebuild in progress or a store that is down: keep serving
            if current and current != self.engine.manifest.build_id:
                old, self.engine = self.engine, self.engine.reopen()
                # Requests still reading the old build finish first; its store closes later.
                # A daemon timer: a stopping server must not wait a minute for it.
                timer = threading.Timer(60, old.store.close)
                timer.daemon = True
                timer.start()
                self._retired = [t for t in self._retired if t.is_alive()] + [timer]
            return self.engine
        finally:
            self._lock.release()

    def close(self) -> None:
        """Close the builds still waiting to be closed; the server is stopping."""
        for timer in self._retired:
            if timer.is_alive():
                timer.cancel()
                timer.function()
        self._retired = []


def create_app(engine: Engine, settings: ServeSettings) -> FastAPI:
    """The API over one opened Engine. Raises UsageError for a bad cache setting."""
    cache = make_cache(settings.cache)
    live = LiveEngine(engine, settings.reload_s)
    web = load_web()
    slots = Slots(settings.max_inflight, settings.queue)
    rate = (
        RateLimiter(settings.rate_limit, min(settings.rate_limit, RATE_BURST))
        if settings.rate_limit
        else None
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        threads = anyio.to_thread.current_default_thread_limiter()
        threads.total_tokens = max(threads.total_tokens, settings.max_inflight + THREAD_HEADROOM)
        yield
        cache.close()
        live.close()

    app = FastAPI(
        lifespan=lifespan,
        title="groundqa",
        version=__version__,
        description=(
            "Answers questions from one document corpus, and only from it, with citations; "
            "refuses when the corpus does not cover the question."
        ),
        redoc_url=None,
    )

    @app.exception_handler(GroundqaError)
    async def groundqa_error(request: Request, exc: GroundqaError) -> Response:
        if isinstance(exc, StoreUnavailableError):  # the database is down: try again later
            return error_response(
                503, exc.message, code=exc.kind, headers={"Retry-After": str(RETRY_AFTER_S)}
            )
        return error_response(400, exc.message, code=exc.kind)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        return error_response(422, _validation_message(exc.errors(), exc.body))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        message = str(exc.detail)
        if message == http.HTTPStatus(exc.status_code).phrase:
            # Starlette's own 404/405 say only "Not Found"; say what was asked for.
            where = f"{request.method} {request.url.path}"
            if exc.status_code == 404:
                message = f"no such endpoint: {where}; see /docs for the API"
            elif exc.status_code == 405:
                allowed = (exc.headers or {}).get("Allow", "")
                message = f"method not allowed: {where}" + (
                    f"; allowed: {allowed}" if allowed else ""
                )
        return error_response(exc.status_code, message, headers=exc.headers)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> Response:
        # Starlette re-raises the exception after this response is sent, so the
        # server logs the traceback once; the client learns nothing about it.
        return error_response(500, "internal error; the server log has the details")

    @app.get("/health", responses=_errors(500, 504))
    def health() -> dict[str, Any]:
        """What is loaded, and whether the cache answers. Never needs the token."""
        engine = live.get()
        m = engine.manifest
        facets = set(engine.facets.keys())
        return {
            "status": "ok",
            "version": __version__,
            "worker": os.getpid(),
            "index": {
                "dir": engine.location,
                "build_id": m.build_id,
                "fingerprint": m.fingerprint,
                "created_at": m.created_at,
                "counts": dict(m.counts),
            },
            "retrievers": list(engine.retrievers),
            "default_retriever": engine.default_retriever,
            "generators": available_generators(),
            "embedder": (
                {k: m.dense[k] for k in ("embedder", "model_id", "dim")} if m.dense else None
            ),
            "gate": {
                "kind": engine.gate.kind,
                "calibrated": engine.gate.calibrated,
                "threshold": engine.gate.threshold,
                "summary": engine.gate.describe(),
            },
            "cache": cache.status(),
            "auth": {"required": settings.token is not None},
            "limits": {
                "rate_limit_per_minute": settings.rate_limit or None,
                "max_inflight": settings.max_inflight,
                "queue": settings.queue,
                "request_timeout_s": settings.request_timeout_s,
                "shutdown_timeout_s": settings.shutdown_timeout_s,
                "in_flight": slots.busy,
                "waiting": slots.waiting,
            },
            "facets": {key: engine.facets.values(key) for key in FACET_KEYS if key in facets},
        }

    @app.post("/query", responses=_errors(400, 401, 413, 422, 500, *LIMITED))
    def query(body: QueryRequest) -> dict[str, Any]:
        """Answer a question with citations, or refuse. `cache` says whether it was cached."""
        return answer(live.get(), cache, settings.cache_ttl, body, settings.generator_options)

    @app.post(
        "/query/stream",
        response_class=EventStreamResponse,
        responses={
            200: {
                "description": "Events: `passages`, then `answer` (one per cited piece), then `done`.",
                "content": {"text/event-stream": {"schema": {"type": "string"}}},
            },
            **_errors(400, 401, 413, 422, 500, *LIMITED),
        },
    )
    def query_stream(body: QueryRequest) -> EventStreamResponse:
        """The same answer as Server-Sent Events. Bad requests fail before the stream starts."""
        events = stream_events(
            live.get(), cache, settings.cache_ttl, body, settings.generator_options
        )
        return EventStreamResponse(events, headers={"Cache-Control": "no-cache"})

    @app.get("/sources/{doc_id:path}", responses=_errors(401, 404, 500, *LIMITED))
    def source(doc_id: str) -> dict[str, Any]:
        """A document's sections and chunks, from the loaded index.

        The id may contain `/`; a `#` in it is sent percent-encoded, as `%23`.
        """
        chunks = live.get().document_chunks(doc_id)
        if not chunks:
            raise HTTPException(404, f"no document {doc_id!r} in this index")
        return document_view(chunks)

    @app.get("/chunks/{chunk_id}", responses=_errors(401, 404, 500, *LIMITED))
    def chunk(chunk_id: str) -> dict[str, Any]:
        """One chunk with its section breadcrumb, link, text and metadata."""
        found = live.get().chunk(chunk_id)
        if found is None:
            raise HTTPException(404, f"no chunk {chunk_id!r} in this index")
        return chunk_view(found)

    @app.post("/eval", responses=_errors(400, 401, 403, 413, 422, 500, *LIMITED))
    def evaluate(body: EvalRequest) -> dict[str, Any]:
        """Run a probe set through the evaluation harness. Needs a server started with --token."""
        if len(body.probes) > settings.max_probes:
            raise HTTPException(
                413,
                f"{len(body.probes)} probes; the limit is {settings.max_probes} per request, "
                "so split the set or use `groundqa eval`",
            )
        report = evaluate_probes(
            live.get(), parse_probes(body.probes), ks=body.k, retriever=body.retriever
        )
        return report.to_dict()

    for route, (content, media_type) in web.items():
        app.add_api_route(
            route, _static(content, media_type), methods=["GET"], include_in_schema=False
        )

    app.add_middleware(RequestGuard, token=settings.token, max_body_bytes=settings.max_body_bytes)
    # Outside the guard: a request over the limits is turned away before its body is read.
    app.add_middleware(ServiceLimits, rate=rate, slots=slots, timeout_s=settings.request_timeout_s)
    if settings.cors_origins:
        # Added last so it is outermost: preflights and error responses get CORS headers too.
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
        )
    if settings.token is not None:
        _document_bearer(app)
    return app


def _document_bearer(app: FastAPI) -> None:
    """Mark every data endpoint in the OpenAPI spec as needing the bearer token."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()  # FastAPI caches it on the app; it is amended in place, once
        components = schema.setdefault("components", {})
        components.setdefault("securitySchemes", {})["bearer"] = {
            "type": "http",
            "scheme": "bearer",
        }
        for path, operations in schema.get("paths", {}).items():
            if path not in PUBLIC_PATHS:
                for operation in operations.values():
                    operation["security"] = [{"bearer": []}]
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
