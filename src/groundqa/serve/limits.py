"""What a server takes on, decided on the raw request before any route reads it.

Pure ASGI middlewares, in the order a request meets them, cheapest first:

    HostGuard       421 for a Host name this server does not answer to (DNS rebinding)
    RateLimit       429 for a client over its rate
    RequestGuard    401/403 without the token; 413 for a body over the size limit; 408
                    for a body not in within its time; then the body is read whole
    ServiceLimits   503 when every slot and the whole queue are taken; 504 for a request
                    not finished in time (see `ServiceLimits` for why its work runs on)

A slot is taken only once the body is in, so a client that sends its body slowly holds a
connection, not a slot: fifty of them cannot shut out anyone else. How long a
connection may take over its request's head, and how many one address may hold, are
decided below ASGI, in the HTTP protocol (`exposure.http_protocol`). The page, the spec
and /health are never rate limited, queued or guarded, so a busy server still says how
it is; they are Host-checked like everything else.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable

from fastapi.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from groundqa.exposure import host_allowed, misdirected
from groundqa.serve.errors import RETRY_AFTER_S, error_body, error_response
from groundqa.serve.events import sse
from groundqa.serve.page import WEB_FILES

# Paths that hold no corpus data (or only the index summary) and so never need the token.
PUBLIC_PATHS = frozenset({*WEB_FILES, "/health", "/openapi.json", "/docs", "/docs/oauth2-redirect"})
# Off unless the server has a token: one request runs a whole probe set (real CPU time).
TOKEN_ONLY_PATHS = frozenset({"/eval"})
# Routes whose body carries a conversation, and so has the larger limit.
CONVERSATION_PATHS = frozenset({"/query", "/query/stream", "/v1/chat/completions"})
# Threads beyond --max-inflight, so /health and the page always find one however busy it is.
THREAD_HEADROOM = 8


# ---------------------------------------------------------------- the Host check


class HostGuard:
    """421 for a request whose Host this server does not answer to (`exposure.host_allowed`):
    a page on a name the attacker owns, pointed at this server by DNS rebinding, must not
    read it through the visitor's browser, whether or not the server has a token."""

    def __init__(self, app: ASGIApp, *, allowed: tuple[str, ...] = ()) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = dict(scope["headers"]).get(b"host")
        host = raw.decode("latin-1") if raw is not None else None
        local = scope.get("server")
        if host_allowed(host, local[0] if local else None, self.allowed):
            await self.app(scope, receive, send)
            return
        refused = error_response(
            421, misdirected(host or "", self.allowed), headers={"Connection": "close"}
        )
        await refused(scope, receive, send)


def too_many_connections(per_client: int) -> Response:
    """The answer to a connection past `--client-connections` from its address (see
    `exposure.http_protocol`); it is closed afterwards."""
    return error_response(
        429,
        f"too many connections from this address: this server keeps {per_client} at once "
        f"from each client; close some and retry after {RETRY_AFTER_S} s",
        code="too_many_connections",
        headers={"Retry-After": str(RETRY_AFTER_S), "Connection": "close"},
    )


# ---------------------------------------------------------------- the request guard


class RequestGuard:
    """Who may ask, and how much: checked on the raw request, before any route reads it.

    A pure ASGI middleware rather than a route dependency, because FastAPI parses
    the body before it runs dependencies: an unauthenticated or oversized request
    must be turned away before its body is read or parsed at all. The whole body must
    be in within `body_timeout_s` of the head: a client that sends it a byte at a time
    gets 408 and its connection is closed.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        max_body_bytes: int,
        max_conversation_bytes: int | None = None,
        body_timeout_s: float = 30.0,
    ) -> None:
        self.app = app
        self._token = token.encode("utf-8") if token is not None else None
        self.max_body_bytes = max_body_bytes
        self.max_conversation_bytes = max_conversation_bytes or max_body_bytes
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        refused = self._refuse(scope["path"], headers.get(b"authorization"))
        limit = (
            self.max_conversation_bytes
            if scope["path"] in CONVERSATION_PATHS
            else self.max_body_bytes
        )
        if refused is None:
            refused = self._too_large_declared(headers.get(b"content-length"), limit)
        if refused is not None:
            await refused(scope, receive, send)
            return
        try:
            async with asyncio.timeout(self.body_timeout_s):
                body = await self._read(receive, limit)
        except TimeoutError:
            await self._too_slow()(scope, receive, send)
            return
        if body is None:
            return  # the client left before sending its body; there is no one to answer
        if isinstance(body, Response):
            await body(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)

    async def _read(self, receive: Receive, limit: int) -> bytes | Response | None:
        """The whole body; a 413 once it grows past `limit`; None if the client left."""
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            part = message.get("body", b"")
            size += len(part)
            if size > limit:
                return self._too_large(limit)
            parts.append(part)
            if not message.get("more_body", False):
                return b"".join(parts)

    def _too_slow(self) -> Response:
        # Closed after the answer: the rest of the body may still be on its way.
        return error_response(
            408,
            f"the request body did not arrive within {self.body_timeout_s:g} s; "
            "send the whole body at once, and check the connection",
            headers={"Connection": "close"},
        )

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

    def _too_large_declared(self, content_length: bytes | None, limit: int) -> Response | None:
        try:
            declared = int(content_length) if content_length is not None else 0
        except ValueError:
            return error_response(400, "the Content-Length header is not a number")
        return self._too_large(limit, declared) if declared > limit else None

    @staticmethod
    def _too_large(limit: int, declared: int | None = None) -> Response:
        size = f"is {declared} bytes" if declared is not None else "grew past the limit"
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


class RateLimit:
    """429 for a client over its rate: the first check a request meets after its Host, and
    the cheapest, so a flood is turned away before its body is read or a slot is asked for.

    The client is the connection's own address: X-Forwarded-For counts only from a proxy
    the server was told to trust, which rewrites `client` before this runs.
    """

    def __init__(self, app: ASGIApp, *, rate: RateLimiter | None) -> None:
        self.app = app
        self.rate = rate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.rate is None or scope["type"] != "http" or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        wait = self.rate.take(client[0] if client else "")
        if wait <= 0:
            await self.app(scope, receive, send)
            return
        seconds = max(1, math.ceil(wait))
        refused = error_response(
            429,
            f"too many requests: this server takes {self.rate.per_minute} a minute "
            f"from each client; retry after {seconds} s",
            code="rate_limited",
            headers={"Retry-After": str(seconds)},
        )
        await refused(scope, receive, send)


class ServiceLimits:
    """How much one server process works on: how many requests at once and waiting, and
    how long each may take once its body is in.

    A pure ASGI middleware inside the request guard, so only a request whose body is
    whole asks for a slot, and one turned away here costs no parsing and no thread.
    Routes run in worker threads and Python cannot stop a thread, so a request past its
    time gets its 504 (or a started stream its `error` event and its end) while its work
    runs on with nothing more sent, holding its slot until it ends: the slots bound the
    threads really busy, and the generator's own timeout bounds how long that lasts.
    """

    def __init__(self, app: ASGIApp, *, slots: Slots, timeout_s: float) -> None:
        self.app = app
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
        if self.slots.full():
            refused = error_response(
                503,
                f"the server is busy ({self.slots.busy} requests in progress, "
                f"{self.slots.waiting} waiting); retry after {RETRY_AFTER_S} s",
                code="overloaded",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
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
