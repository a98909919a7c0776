"""How groundqa talks to a model server: the HTTP plumbing and each provider's connection rules.

Three stages call models over the network: the `ollama:`/`openai:`/`anthropic:`
generators, the `llm:` reranker and the `ollama:`/`openai:` embedders. What they
share lives here, below all of them, so none imports another stage to reach it:

- the transport: `HttpCall`, `post_json`, `post_lines`, `json_lines`, `sse_data`.
  Every backend fails the same way, with one line a user can act on: a timeout,
  an unreachable server, a non-2xx answer (naming the status and the provider's
  own error message), a malformed body or a broken stream line all become the
  caller's error type (`GenerationError` unless it says otherwise).
  `timeout_s` bounds each wait on the server (connecting, and each read of a
  streamed reply), not the whole answer.
- each provider's connection knowledge: where its server is (`ollama_base_url`,
  `openai_base_url`, `anthropic_base_url`), which environment variable holds its
  key and how the key is sent (`ollama_call`, `openai_call`), and where the text
  of a whole chat reply sits (`ollama_reply_text`, `openai_reply_text`). One
  setting (`OLLAMA_HOST`, `OPENAI_BASE_URL`, `OPENAI_API_KEY`, ...) therefore
  serves a generator, a reranker and an embedder alike.
- how a passage is shown to a chat model (`fenced_source`): as data inside a
  fence it cannot break out of.

API keys come from the environment only, read at each request and never
stored; they are sent as headers and scrubbed from every message, so none ever
appears in an error or a log. This module makes no answer, rating or vector:
what to ask and what a reply means is the calling stage's business. `httpx` is
imported only when a request is made.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from groundqa.errors import GenerationError, GroundqaError, UsageError
from groundqa.models import Hit
from groundqa.text import shorten


@dataclass(frozen=True)
class GeneratorOptions:
    """Connection settings a backend may use; None means the provider's default.

    Generators and rerankers take these; the name is kept from when only generators did.
    """

    base_url: str | None = None
    timeout_s: float = 60.0


# --- configuration -------------------------------------------------------------------------


def require_model(backend: str, model: str, example: str) -> str:
    model = model.strip()
    if not model:
        raise UsageError(f"{backend}: name a model, e.g. --generator {backend}:{example}")
    return model


def require_httpx(backend: str) -> None:
    try:
        import httpx  # noqa: F401
    except ImportError as exc:  # pragma: no cover - httpx comes with the dev and anthropic extras
        raise UsageError(f"{backend}: needs pip install httpx") from exc


def check_base_url(backend: str, url: str) -> str:
    """`url` without a trailing slash; it must be an http(s) URL."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(
            f"{backend}: base URL {url!r} must be an http:// or https:// URL, "
            "e.g. http://127.0.0.1:8000/v1"
        )
    return urlunsplit(parts._replace(path=parts.path.rstrip("/")))


def endpoint(base_url: str, path: str) -> str:
    """`path` appended to the base URL's path; a query string on the base (Azure's
    `api-version`) stays at the end."""
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + path))


def shown_url(url: str) -> str:
    """The URL as errors show it: without any `user:password@`."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def env_secret(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


# --- HTTP ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class HttpCall:
    """One request to a backend: where, with which headers, and what to keep out of errors."""

    backend: str
    url: str
    timeout_s: float
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    secrets: tuple[str, ...] = field(default=(), repr=False)
    auth_hint: str = ""
    # Generators and the LLM reranker fail with GenerationError; embedders pass their own.
    error_type: type[GroundqaError] = GenerationError

    def scrub(self, message: str) -> str:
        for secret in self.secrets:
            if secret:
                message = message.replace(secret, "***")
        return message

    def error(self, message: str) -> GroundqaError:
        return self.error_type(self.scrub(" ".join(message.split())))

    def malformed(self, detail: str) -> GroundqaError:
        return self.error(f"{self.backend} sent a malformed reply: {detail}")

    def timed_out(self) -> GroundqaError:
        return self.error(
            f"{self.backend} timed out after {self.timeout_s:g} s at {shown_url(self.url)}"
        )

    def unreachable(self) -> GroundqaError:
        return self.error(f"cannot reach {self.backend} at {shown_url(self.url)}; is it running?")

    def status_error(self, status: int, body: str, reason: str = "") -> GroundqaError:
        message = server_message(body) or reason or "no error message"
        hint = f"; {self.auth_hint}" if status in (401, 403) and self.auth_hint else ""
        return self.error(
            f"{self.backend} at {shown_url(self.url)} answered HTTP {status}: "
            f"{shorten(message, 300)}{hint}"
        )


def server_message(body: str) -> str:
    """The provider's own error message from an error body, whichever shape it takes.

    OpenAI and compatible servers: `{"error": {"message": ...}}`; Anthropic:
    `{"type": "error", "error": {"type": ..., "message": ...}}`; Ollama:
    `{"error": "..."}`; FastAPI-based servers: `{"detail": ...}`. Anything else
    is shown as text, shortened.
    """
    try:
        data = json.loads(body)
    except ValueError:
        return shorten(body, 200)
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict):
            msg = err.get("message")
            if isinstance(msg, str) and msg:
                return msg
        if isinstance(err, str) and err:
            return err
        for key in ("message", "detail"):
            value = data.get(key)
            if isinstance(value, str) and value:
                return value
    return shorten(body, 200)


def parse_json(call: HttpCall, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise call.malformed(f"expected JSON, got {shorten(text, 80)!r}") from None


def post_json(call: HttpCall, body: Mapping[str, Any]) -> Any:
    """POST `body` as JSON and return the parsed JSON reply."""
    import httpx

    try:
        with httpx.Client(timeout=call.timeout_s) as client:
            resp = client.post(call.url, json=body, headers=dict(call.headers))
    except httpx.TimeoutException:
        raise call.timed_out() from None
    except httpx.ConnectError:
        raise call.unreachable() from None
    except httpx.HTTPError as exc:
        raise call.error(f"{call.backend} at {shown_url(call.url)} failed: {exc}") from None
    if not resp.is_success:
        raise call.status_error(resp.status_code, resp.text, resp.reason_phrase)
    return parse_json(call, resp.text)


def post_lines(call: HttpCall, body: Mapping[str, Any]) -> Iterator[str]:
    """POST `body` as JSON and yield the reply's lines as they arrive."""
    import httpx

    try:
        with (
            httpx.Client(timeout=call.timeout_s) as client,
            client.stream("POST", call.url, json=body, headers=dict(call.headers)) as resp,
        ):
            if not resp.is_success:
                resp.read()
                raise call.status_error(resp.status_code, resp.text, resp.reason_phrase)
            yield from resp.iter_lines()
    except httpx.TimeoutException:
        raise call.timed_out() from None
    except httpx.ConnectError:
        raise call.unreachable() from None
    except httpx.HTTPError as exc:
        raise call.error(
            f"{call.backend} stream from {shown_url(call.url)} broke off: {exc}"
        ) from None


def stream_object(call: HttpCall, number: int, text: str) -> dict[str, Any]:
    """Line `number` of a stream read as one JSON object, or a malformed-reply error."""
    try:
        obj = json.loads(text)
    except ValueError:
        raise call.malformed(f"stream line {number} is not JSON: {shorten(text, 80)!r}") from None
    if not isinstance(obj, dict):
        raise call.malformed(f"stream line {number} is not a JSON object")
    return obj


def json_lines(call: HttpCall, lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """Each non-blank line as a JSON object (NDJSON)."""
    for number, line in enumerate(lines, 1):
        if line.strip():
            yield stream_object(call, number, line)


def sse_data(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """The payload of each `data:` line of a server-sent event stream, with its line number.

    Comments (`: keep-alive`), `event:`/`id:`/`retry:` fields and blank lines are skipped.
    """
    for number, line in enumerate(lines, 1):
        if line.startswith("data:"):
            yield number, line[5:].strip()


# --- Ollama --------------------------------------------------------------------------------
# The server is the configured base URL, else `OLLAMA_HOST` (read as Ollama itself reads it),
# else the local default. Ollama needs no key.

OLLAMA_DEFAULT_URL = "http://127.0.0.1:11434"
OLLAMA_DEFAULT_PORT = 11434


def ollama_host(value: str) -> str:
    """`OLLAMA_HOST` as a URL: `gpu-box` -> `http://gpu-box:11434`, `0.0.0.0:8080` -> `http://0.0.0.0:8080`."""
    value = value.strip()
    if "://" in value:
        return value
    host = urlsplit(f"http://{value}")
    if host.port is None:
        return f"http://{value.rstrip('/')}:{OLLAMA_DEFAULT_PORT}"
    return f"http://{value}"


def ollama_base_url(base_url: str | None) -> str:
    if base_url:
        return check_base_url("ollama", base_url)
    env = os.environ.get("OLLAMA_HOST", "").strip()
    if env:
        return check_base_url("ollama", ollama_host(env))
    return OLLAMA_DEFAULT_URL


def ollama_call(
    base_url: str,
    path: str,
    timeout_s: float,
    *,
    backend: str = "ollama",
    error_type: type[GroundqaError] = GenerationError,
) -> HttpCall:
    """A request to `path` (`/api/chat`, `/api/embed`) of an Ollama server."""
    return HttpCall(backend, endpoint(base_url, path), timeout_s, error_type=error_type)


def ollama_reply_text(call: HttpCall, reply: Any) -> str:
    """The text of a whole (not streamed) `/api/chat` reply, or the error it carries."""
    if isinstance(reply, dict) and isinstance(reply.get("error"), str):
        raise call.error(f"ollama reported an error: {reply['error']}")
    message = reply.get("message") if isinstance(reply, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise call.malformed("the reply has no message.content")
    return content


# --- OpenAI and compatible servers ---------------------------------------------------------
# The server is the configured base URL, else `OPENAI_BASE_URL`, else OpenAI's. The key is
# `AZURE_OPENAI_API_KEY` sent as `api-key` when set (and then `OPENAI_API_KEY` is not sent),
# else `OPENAI_API_KEY` sent as a bearer token; most local servers need neither.

OPENAI_DEFAULT_URL = "https://api.openai.com/v1"


def openai_base_url(base_url: str | None) -> str:
    url = base_url or os.environ.get("OPENAI_BASE_URL", "").strip() or OPENAI_DEFAULT_URL
    return check_base_url("openai", url)


def openai_call(
    base_url: str,
    path: str,
    timeout_s: float,
    *,
    backend: str = "openai",
    error_type: type[GroundqaError] = GenerationError,
) -> HttpCall:
    """A request to `path` (`/chat/completions`, `/embeddings`) with the key from the
    environment as of now, the keys to scrub, and the hint a 401 shows."""
    azure = env_secret("AZURE_OPENAI_API_KEY")
    openai = env_secret("OPENAI_API_KEY")
    secrets = tuple(s for s in (azure, openai) if s)
    if azure:
        headers, hint = {"api-key": azure}, "check AZURE_OPENAI_API_KEY"
    elif openai:
        headers, hint = {"Authorization": f"Bearer {openai}"}, "check OPENAI_API_KEY"
    else:
        headers, hint = {}, "set OPENAI_API_KEY (or AZURE_OPENAI_API_KEY for Azure)"
    url = endpoint(base_url, path)
    return HttpCall(backend, url, timeout_s, headers, secrets, hint, error_type)


def openai_reply_text(call: HttpCall, reply: Any) -> str:
    """The text of a whole (not streamed) chat completion, or the error it carries."""
    if isinstance(reply, dict) and "error" in reply:
        raise call.error(f"openai reported an error: {server_message(json.dumps(reply))}")
    try:
        content = reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise call.malformed(
            f"no choices[0].message.content in {shorten(json.dumps(reply), 80)}"
        ) from None
    if content is not None and not isinstance(content, str):
        raise call.malformed("choices[0].message.content is not text")
    return content or ""


# --- Anthropic -----------------------------------------------------------------------------
# The SDK makes the requests; groundqa only tells it where and with which key, and names the
# URL it used in errors. The server is the configured base URL, else `ANTHROPIC_BASE_URL`,
# else the SDK's default; the key is `ANTHROPIC_API_KEY`.

ANTHROPIC_DEFAULT_URL = "https://api.anthropic.com"
ANTHROPIC_KEY = "ANTHROPIC_API_KEY"


def anthropic_base_url(base_url: str | None) -> str | None:
    """The base URL to hand the SDK; None lets it use its default."""
    url = base_url or env_secret("ANTHROPIC_BASE_URL")
    return check_base_url("anthropic", url) if url else None


def anthropic_call(base_url: str | None, timeout_s: float) -> HttpCall:
    """What errors name and scrub: the Messages URL the SDK posts to, and the key."""
    key = env_secret(ANTHROPIC_KEY) or ""
    url = (base_url or ANTHROPIC_DEFAULT_URL).rstrip("/") + "/v1/messages"
    return HttpCall("anthropic", url, timeout_s, secrets=(key,), auth_hint=f"check {ANTHROPIC_KEY}")


# --- passages as a chat model sees them ----------------------------------------------------
# Every prompt that shows a model a passage (the answer prompt, the reranker's rating prompt)
# fences it the same way, so text in a document cannot pose as the end of its source or the
# start of another: runs of `<<<` / `>>>` inside the passage are broken up before it is sent.

_FENCE_RUN = re.compile(r"<{3,}|>{3,}")


def _flat(text: str) -> str:
    return " ".join(text.split())


def source_header(n: int, hit: Hit) -> str:
    """`[Source n: title > section path, p. N]`, without `, p. N` when the page is unknown."""
    chunk = hit.chunk
    where = _flat(chunk.breadcrumb) or chunk.doc_id
    page = f", p. {chunk.page}" if chunk.page is not None else ""
    return f"[Source {n}: {where}{page}]"


def _defuse(text: str) -> str:
    """Break up runs of `<<<` / `>>>` so passage text cannot open or close a fence."""
    return _FENCE_RUN.sub(lambda m: " ".join(m.group(0)), text)


def fenced_source(n: int, hit: Hit) -> str:
    """The header line, then the passage text between `<<<SOURCE n` and `SOURCE n>>>`."""
    body = _defuse(hit.chunk.text.strip())
    return f"{source_header(n, hit)}\n<<<SOURCE {n}\n{body}\nSOURCE {n}>>>"


__all__ = [
    "ANTHROPIC_DEFAULT_URL",
    "ANTHROPIC_KEY",
    "OLLAMA_DEFAULT_URL",
    "OPENAI_DEFAULT_URL",
    "GeneratorOptions",
    "HttpCall",
    "anthropic_base_url",
    "anthropic_call",
    "check_base_url",
    "endpoint",
    "env_secret",
    "fenced_source",
    "json_lines",
    "ollama_base_url",
    "ollama_call",
    "ollama_host",
    "ollama_reply_text",
    "openai_base_url",
    "openai_call",
    "openai_reply_text",
    "parse_json",
    "post_json",
    "post_lines",
    "require_httpx",
    "require_model",
    "server_message",
    "shown_url",
    "source_header",
    "sse_data",
    "stream_object",
]
