"""The HTTP API: one opened Engine behind FastAPI, for `groundqa serve`.

    GET  /health              what is loaded and whether the cache works (never needs the token)
    POST /query               Engine.ask, as JSON, through the result cache
    POST /query/stream        the same answer as Server-Sent Events
    GET  /sources/{doc_id}    a document's sections and chunks, from the loaded index
    GET  /chunks/{chunk_id}   one chunk
    POST /eval                a probe set through the evaluation harness (token required)
    GET  /v1/models           the OpenAI model list: one model, `groundqa` (see `chat`)
    POST /v1/chat/completions the OpenAI chat API: the last user message answered like /query
    GET  /, /app.js, /style.css   the web page

Routes are thin shells: each validates its request with a pydantic model
(`requests`), calls the Engine or the evaluation harness in a worker thread
(`answers`), and returns what it gives. Before any route runs, `limits` turns
away a request without the token, over the body size, over its client's rate,
or finding the server full; `errors` gives every failure one shape. This module
only wires them together; it holds no retrieval, answering or caching logic.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio.to_thread
from fastapi import FastAPI, HTTPException
from starlette.middleware.cors import CORSMiddleware

from groundqa._version import __version__
from groundqa.engine import Engine
from groundqa.errors import GroundqaError
from groundqa.evaluate import evaluate_probes
from groundqa.generate import available as available_generators
from groundqa.retrieve import describe_fit, fitted_plan
from groundqa.serve.answers import answer, chunk_view, document_view, parse_probes, stream_events
from groundqa.serve.cache import make_cache
from groundqa.serve.chat import add_chat_routes
from groundqa.serve.errors import add_error_handlers, error_responses
from groundqa.serve.events import EventStreamResponse
from groundqa.serve.limits import (
    PUBLIC_PATHS,
    THREAD_HEADROOM,
    HostGuard,
    RateLimit,
    RateLimiter,
    RequestGuard,
    ServiceLimits,
    Slots,
)
from groundqa.serve.page import load_web, static_route
from groundqa.serve.requests import EvalRequest, QueryRequest, with_generator
from groundqa.serve.settings import RATE_BURST, ServeSettings

FACET_KEYS = ("jurisdiction", "state", "area", "category")
MB = 1 << 20
# What any rate-limited, queued and timed route may answer besides its own errors (408: a
# body too slow; 421: a Host name this server does not answer to).
LIMITED = (408, 421, 429, 503, 504)


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
    cache = make_cache(settings.cache, max_bytes=settings.cache_mb * MB)
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
        # FastAPI's /docs loads Swagger UI from a CDN, unpinned, into this origin: where the
        # origin holds a token (the page keeps it in sessionStorage), no outside script may
        # run there, so a server with a token has no /docs. /openapi.json is always served.
        docs_url="/docs" if settings.token is None else None,
    )

    add_error_handlers(app)

    @app.get("/health", responses=error_responses(421, 500, 504))
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
            "lexical": engine.store.lexical_engine,
            "vectors": engine.store.vector_engine,
            "retrievers": list(engine.retrievers),
            "default_retriever": engine.default_retriever,
            "retrieval": {
                "plan": engine.default_retriever,
                "fitted": fitted_plan(m.retrieval) is not None,
                "summary": describe_fit(m.retrieval, engine.retriever.builtin_plan),
            },
            "generators": available_generators(),
            "default_generator": settings.generator,
            "embedder": (
                {k: m.dense[k] for k in ("embedder", "model_id", "dim")} if m.dense else None
            ),
            "gate": {
                "kind": engine.gate.kind,
                "calibrated": engine.gate.calibrated,
                "threshold": engine.gate.threshold,
                "floor": engine.gate.floor,
                "self_fit": bool(engine.gate.info.get("self_fit")),
                "band_floor": engine.gate.band.floor if engine.gate.band else None,
                "summary": engine.gate.describe(),
            },
            "cache": cache.status(),
            "auth": {"required": settings.token is not None},
            "limits": {
                "rate_limit_per_minute": settings.rate_limit or None,
                "max_inflight": settings.max_inflight,
                "queue": settings.queue,
                "request_timeout_s": settings.request_timeout_s,
                "header_timeout_s": settings.header_timeout_s,
                "body_timeout_s": settings.body_timeout_s,
                "client_connections": settings.client_connections or None,
                "shutdown_timeout_s": settings.shutdown_timeout_s,
                "in_flight": slots.busy,
                "waiting": slots.waiting,
            },
            "facets": {key: engine.facets.values(key) for key in FACET_KEYS if key in facets},
        }

    @app.post("/query", responses=error_responses(400, 401, 413, 422, 500, *LIMITED))
    def query(body: QueryRequest) -> dict[str, Any]:
        """Answer a question with citations, or refuse. `cache` says whether it was cached."""
        request = with_generator(body, settings.generators)
        return answer(live.get(), cache, settings.cache_ttl, request, settings.generator_options)

    @app.post(
        "/query/stream",
        response_class=EventStreamResponse,
        responses={
            200: {
                "description": "Events: `passages`, then `answer` (one per cited piece), then `done`.",
                "content": {"text/event-stream": {"schema": {"type": "string"}}},
            },
            **error_responses(400, 401, 413, 422, 500, *LIMITED),
        },
    )
    def query_stream(body: QueryRequest) -> EventStreamResponse:
        """The same answer as Server-Sent Events. Bad requests fail before the stream starts."""
        request = with_generator(body, settings.generators)
        events = stream_events(
            live.get(), cache, settings.cache_ttl, request, settings.generator_options
        )
        return EventStreamResponse(events, headers={"Cache-Control": "no-cache"})

    @app.get("/sources/{doc_id:path}", responses=error_responses(401, 404, 500, *LIMITED))
    def source(doc_id: str) -> dict[str, Any]:
        """A document's sections and chunks, from the loaded index.

        The id may contain `/`; a `#` in it is sent percent-encoded, as `%23`.
        """
        chunks = live.get().catalog.document(doc_id)
        if not chunks:
            raise HTTPException(404, f"no document {doc_id!r} in this index")
        return document_view(chunks)

    @app.get("/chunks/{chunk_id}", responses=error_responses(401, 404, 500, *LIMITED))
    def chunk(chunk_id: str) -> dict[str, Any]:
        """One chunk with its section breadcrumb, link, text and metadata."""
        found = live.get().catalog.chunk(chunk_id)
        if found is None:
            raise HTTPException(404, f"no chunk {chunk_id!r} in this index")
        return chunk_view(found)

    @app.post("/eval", responses=error_responses(400, 401, 403, 413, 422, 500, *LIMITED))
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

    add_chat_routes(app, live.get, cache, settings)

    for route, (content, media_type) in web.items():
        app.add_api_route(
            route, static_route(content, media_type), methods=["GET"], include_in_schema=False
        )

    # Each middleware added is outside the ones before it, so a request meets them from the
    # last up: Host, rate, token and body, and only then a slot (see `limits`).
    app.add_middleware(ServiceLimits, slots=slots, timeout_s=settings.request_timeout_s)
    app.add_middleware(
        RequestGuard,
        token=settings.token,
        max_body_bytes=settings.max_body_bytes,
        max_conversation_bytes=settings.max_conversation_bytes,
        body_timeout_s=settings.body_timeout_s,
    )
    app.add_middleware(RateLimit, rate=rate)
    app.add_middleware(HostGuard, allowed=settings.allowed_hosts)
    if settings.cors_origins:
        # Added last so it is outermost: preflights and error responses get CORS headers too.
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            # Any request header: the OpenAI SDKs add their own (x-stainless-*), and a chat
            # front-end in the browser must get past the preflight. Credentials (cookies)
            # are never allowed; the token travels in Authorization.
            allow_headers=["*"],
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
