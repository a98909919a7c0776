"""Serving: the HTTP API, its limits, the result cache, the worker processes and the page.

    settings   ServeSettings: token, cache, rate, slots, queue, timeouts (checked once)
    api        create_app: the FastAPI app over one opened Engine, and its routes
    requests   the pydantic request bodies
    answers    answers through the result cache, documents, chunks and probes
    events     the Server-Sent Events of /query/stream
    chat       the OpenAI chat API (/v1/models, /v1/chat/completions) over the same answers
    limits     the request guard (token, body size) and the service limits (rate, slots, time)
    errors     the one JSON error shape, and which status each failure gets
    cache      the result cache: in-process, Redis, or off
    page       the web page under web/
    workers    the listening socket, uvicorn and the pre-fork worker supervisor

The last stage: it calls the library and holds no pipeline logic of its own, and
nothing upstream imports it. FastAPI and uvicorn are the `serve` extra, so names
are imported on first use: `groundqa.serve.cache` works without them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groundqa.serve.api import FACET_KEYS, create_app
    from groundqa.serve.cache import make_cache, redact
    from groundqa.serve.limits import RateLimiter
    from groundqa.serve.requests import EvalRequest, QueryRequest
    from groundqa.serve.settings import (
        DEFAULT_RATE_LIMIT,
        RATE_BURST,
        ServeSettings,
        default_rate_limit,
    )
    from groundqa.serve.workers import listen, run_server

__all__ = [
    "DEFAULT_RATE_LIMIT",
    "FACET_KEYS",
    "RATE_BURST",
    "EvalRequest",
    "QueryRequest",
    "RateLimiter",
    "ServeSettings",
    "create_app",
    "default_rate_limit",
    "listen",
    "make_cache",
    "redact",
    "run_server",
]

_LAZY = {
    "DEFAULT_RATE_LIMIT": "settings",
    "FACET_KEYS": "api",
    "RATE_BURST": "settings",
    "EvalRequest": "requests",
    "QueryRequest": "requests",
    "RateLimiter": "limits",
    "ServeSettings": "settings",
    "create_app": "api",
    "default_rate_limit": "settings",
    "listen": "workers",
    "make_cache": "cache",
    "redact": "cache",
    "run_server": "workers",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'groundqa.serve' has no attribute {name!r}")
    return getattr(importlib.import_module(f"groundqa.serve.{module}"), name)
