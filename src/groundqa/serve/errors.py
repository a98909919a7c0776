"""The one error shape of the HTTP API, and which status each failure gets.

Every 4xx and 5xx response is `{"error": {"status", "code", "message", "type",
"param"}}`, with a message of one line that says what to do. `type` and `param` are
OpenAI's (the kind of error, and the request field at fault or null), so an OpenAI
client reads any error of this API, not only those of the chat routes. A
`GroundqaError` keeps its `kind` as the code: a request the library refuses is the
client's to fix (400), while a backend the server depends on that cannot serve (the
store's database, the query embedder) is 503 with Retry-After, since the same
request may succeed later.
A pydantic refusal names each bad field as the client sent it. Nothing here
lets a traceback or an internal detail reach the client: an unexpected exception
is a bare 500, and the server log has the rest.
"""

from __future__ import annotations

import http
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from groundqa.errors import EmbeddingError, GroundqaError, StoreUnavailableError

ERROR_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    408: "body_timeout",
    413: "too_large",
    421: "misdirected",
    422: "invalid_request",
    429: "rate_limited",
    500: "internal",
    502: "generation",
    504: "timeout",
}

# OpenAI's error `type` for a status; any other 5xx is a `server_error`.
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "invalid_request_error",
    413: "invalid_request_error",
    421: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}

# Seconds a client is asked to wait when a backend the server needs cannot serve (the
# store's database, the query embedder), or when every slot and the whole queue are taken.
RETRY_AFTER_S = 5

# Not the request's fault: a backend the server depends on could not do its part, and
# the same request may succeed once it is back (an embedder that cannot be reached, or
# whose vectors no longer fit the index, is the operator's to fix, never the client's).
UNAVAILABLE: tuple[type[GroundqaError], ...] = (StoreUnavailableError, EmbeddingError)


class ErrorDetail(BaseModel):
    status: int
    code: str
    message: str
    type: str
    param: str | None


class ApiError(StarletteHTTPException):
    """An HTTP error a route raises with its own `code`, `param` or `type` (else the status's)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        type: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(status, message, headers=dict(headers) if headers else None)
        self.code = code
        self.param = param
        self.type = type


class ErrorBody(BaseModel):
    error: ErrorDetail


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI `responses` entry for a route that may answer these error statuses."""
    return {s: {"model": ErrorBody, "description": http.HTTPStatus(s).phrase} for s in statuses}


def error_response(
    status: int,
    message: str,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    param: str | None = None,
    type: str | None = None,
) -> JSONResponse:
    """The one error shape every 4xx and 5xx response has."""
    body = error_body(status, message, code, param=param, type=type)
    return JSONResponse(body, status_code=status, headers=dict(headers or {}))


def error_body(
    status: int,
    message: str,
    code: str | None = None,
    *,
    param: str | None = None,
    type: str | None = None,
) -> dict[str, Any]:
    fallback = "server_error" if status >= 500 else "invalid_request_error"
    return {
        "error": {
            "status": status,
            "code": code or ERROR_CODES.get(status, "http_error"),
            "message": message,
            "type": type or ERROR_TYPES.get(status, fallback),
            "param": param,
        }
    }


def groundqa_error_response(exc: GroundqaError) -> JSONResponse:
    """A library error as the client sees it: 503 with Retry-After for a backend that is
    down, else 400 (the request asked for something this index cannot do)."""
    if isinstance(exc, UNAVAILABLE):
        return error_response(
            503, exc.message, code=exc.kind, headers={"Retry-After": str(RETRY_AFTER_S)}
        )
    return error_response(400, exc.message, code=exc.kind)


def add_error_handlers(app: FastAPI) -> None:
    """Give every failure the one shape: library errors, refused bodies, HTTP errors, bugs."""

    @app.exception_handler(GroundqaError)
    async def groundqa_error(request: Request, exc: GroundqaError) -> Response:
        return groundqa_error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        errors = exc.errors()
        return error_response(
            422, validation_message(errors, exc.body), param=first_field(errors, exc.body)
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        message = str(exc.detail)
        if message == http.HTTPStatus(exc.status_code).phrase:
            # Starlette's own 404/405 say only "Not Found"; say what was asked for.
            where = f"{request.method} {request.url.path}"
            if exc.status_code == 404:
                message = f"no such endpoint: {where}; see /openapi.json for the API"
            elif exc.status_code == 405:
                allowed = (exc.headers or {}).get("Allow", "")
                message = f"method not allowed: {where}" + (
                    f"; allowed: {allowed}" if allowed else ""
                )
        code = param = kind = None
        if isinstance(exc, ApiError):
            code, param, kind = exc.code, exc.param, exc.type
        return error_response(exc.status_code, message, code, exc.headers, param=param, type=kind)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> Response:
        # Starlette re-raises the exception after this response is sent, so the
        # server logs the traceback once; the client learns nothing about it.
        return error_response(500, "internal error; the server log has the details")


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


def first_field(errors: Sequence[Any], body: Any) -> str | None:
    """The first bad field as the client sent it (OpenAI's `param`), or None for the body."""
    for error in errors:
        field = _field(error.get("loc", ()), body)
        if field and error.get("type") != "json_invalid":
            return field
    return None


def validation_message(errors: Sequence[Any], body: Any) -> str:
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
