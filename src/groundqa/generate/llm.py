"""What every language-model backend shares: reading a reply, and talking HTTP.

`finish` turns a model's reply into a `Generation`. The exact refusal sentence
(alone, or opening the reply) becomes a refusal with no citations. Otherwise
every `[n]` marker that resolves to `evidence.hits[n - 1]` (the numbering of
the prompt) becomes a citation whose snippet is the sentence of that passage,
verbatim with its whitespace folded, that shares the most words with the claim
the marker closes. It refuses to invent a citation: a marker that names no
passage (`[7]` when three were sent) is left in the text as the model wrote it
and cited nowhere, for the audit to report; the reply's wording is never
changed.

The HTTP helpers wrap `httpx` so every backend fails the same way, with one
line a user can act on: a timeout, an unreachable server, a non-2xx answer
(naming the status and the provider's own error message), a malformed body or
a broken stream line all become `GenerationError`. API keys come from the
environment only; they are sent as headers and scrubbed from every message, so
none ever appears in an error or a log. `timeout_s` bounds each wait on the
server (connecting, and each read of a streamed reply), not the whole answer.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from groundqa.errors import GenerationError, GroundqaError, UsageError
from groundqa.generate import Evidence, Generation, cite
from groundqa.models import REFUSAL, Citation
from groundqa.text import shorten, split_sentences

# `[3]` or a group such as `[1, 3]`; the prompt asks for one bracket per source.
_MARKER = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")
_HEADING_LINE = re.compile(r"^\s*#{1,6}\s")
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'"})


def _fold(text: str) -> str:
    return " ".join(text.translate(_APOSTROPHES).split())


def is_refusal(text: str) -> bool:
    """True when the reply is the refusal sentence, or opens with it."""
    return _fold(text).startswith(REFUSAL)


@dataclass(frozen=True)
class _Claim:
    n: int
    terms: frozenset[str]


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    cursor = 0
    for sentence in split_sentences(text):
        start = text.find(sentence, cursor)
        if start < 0:  # split_sentences only strips, so this does not happen; stay safe
            return [(0, len(text))]
        spans.append((start, start + len(sentence)))
        cursor = start + len(sentence)
    return spans


def _claims(text: str, evidence: Evidence) -> list[_Claim]:
    """Each marker with the words of the claim it closes.

    The claim is the stretch of its sentence since the previous marker; when that
    is too short to say anything (`[1][2]`), the whole sentence. A marker that
    opens a sentence ("... by 8pm. [1] Bins ...") closes the sentence before it.
    """
    analyzer = evidence.text.analyzer
    spans = _sentence_spans(text)
    claims: list[_Claim] = []
    previous = ""
    for start, end in spans:
        sentence = text[start:end]
        sentence_terms = frozenset(analyzer.terms(_MARKER.sub(" ", sentence)))
        cursor = 0
        for m in _MARKER.finditer(sentence):
            numbers = [int(x) for x in m.group(1).split(",")]
            before = sentence[cursor : m.start()]
            cursor = m.end()
            if not _MARKER.sub("", sentence[: m.start()]).strip():
                terms = frozenset(analyzer.terms(previous))
            else:
                segment = frozenset(analyzer.terms(_MARKER.sub(" ", before)))
                terms = segment if len(segment) >= 2 else sentence_terms
            claims.extend(_Claim(n, terms) for n in numbers)
        stripped = _MARKER.sub(" ", sentence).strip()
        if stripped:
            previous = stripped
    return claims


def _best_sentence(
    claim: frozenset[str], sentences: Iterable[tuple[str, frozenset[str]]]
) -> tuple[str, int]:
    """The passage sentence sharing the most words with the claim (the first on a tie)."""
    best = ""
    best_overlap = -1
    for sentence, terms in sentences:
        if _HEADING_LINE.match(sentence):
            continue
        overlap = len(claim & terms)
        if overlap > best_overlap:
            best, best_overlap = sentence, overlap
    return best, best_overlap


def finish(
    text: str, evidence: Evidence, prompt_version: str, *, backend: str = "the model"
) -> Generation:
    """The Generation for a model's whole reply: a refusal, or the text with its citations."""
    reply = text.strip()
    if not reply:
        raise GenerationError(f"{backend} returned an empty answer")
    if is_refusal(reply):
        return Generation(
            REFUSAL, (), True, "the model said the sources do not answer", prompt_version
        )
    hits = evidence.hits
    supported: dict[int, list[str]] = {}  # sentences sharing words with a claim
    fallback: dict[int, str] = {}  # the passage's first sentence, when none does
    unresolved: list[int] = []
    for claim in _claims(reply, evidence):
        if not 1 <= claim.n <= len(hits):
            if claim.n not in unresolved:
                unresolved.append(claim.n)
            continue
        chunk = hits[claim.n - 1].chunk
        sentences = evidence.text.sentences(chunk.chunk_id, chunk.text)
        snippet, overlap = _best_sentence(claim.terms, sentences)
        picked = supported.setdefault(claim.n, [])
        if overlap > 0 and snippet not in picked:
            picked.append(snippet)
        fallback.setdefault(claim.n, snippet)
    citations: list[Citation] = []
    for n in sorted(supported):
        chunk = hits[n - 1].chunk
        order = [s for s, _ in evidence.text.sentences(chunk.chunk_id, chunk.text)]
        picked = sorted(supported[n], key=order.index) or [fallback[n]]
        citations.append(cite(n, hits[n - 1], " ".join(p for p in picked if p)))
    reason = ""
    if unresolved:
        names = ", ".join(f"[{n}]" for n in unresolved)
        reason = f"{names} names no passage it was given; not cited"
    elif not citations:
        reason = "the reply carries no [n] marker"
    return Generation(reply, tuple(citations), False, reason, prompt_version)


def refuse_without_sources(evidence: Evidence, prompt_version: str) -> Generation | None:
    """A refusal when there is nothing to answer from, so no model is asked for nothing."""
    if evidence.hits:
        return None
    return Generation(REFUSAL, (), True, "no passages to answer from", prompt_version)


def relay(
    evidence: Evidence,
    pieces: Callable[[], Iterable[str]],
    prompt_version: str,
    *,
    backend: str,
) -> Iterator[str | Generation]:
    """A backend's `stream`: each text piece as it arrives, then the Generation of them all.

    `pieces` is only called when there are passages to answer from; with none,
    the one item is a refusal and no model is asked.
    """
    early = refuse_without_sources(evidence, prompt_version)
    if early is not None:
        yield early
        return
    parts: list[str] = []
    for piece in pieces():
        if piece:
            parts.append(piece)
            yield piece
    yield finish("".join(parts), evidence, prompt_version, backend=backend)


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
    # Generators fail with GenerationError; embedders and rerankers pass their own.
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


def json_lines(call: HttpCall, lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """Each non-blank line as a JSON object (NDJSON)."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            raise call.malformed(
                f"stream line {number} is not JSON: {shorten(line, 80)!r}"
            ) from None
        if not isinstance(obj, dict):
            raise call.malformed(f"stream line {number} is not a JSON object")
        yield obj


def sse_data(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """The payload of each `data:` line of a server-sent event stream, with its line number.

    Comments (`: keep-alive`), `event:`/`id:`/`retry:` fields and blank lines are skipped.
    """
    for number, line in enumerate(lines, 1):
        if line.startswith("data:"):
            yield number, line[5:].strip()


__all__ = [
    "HttpCall",
    "check_base_url",
    "endpoint",
    "env_secret",
    "finish",
    "is_refusal",
    "json_lines",
    "parse_json",
    "post_json",
    "post_lines",
    "refuse_without_sources",
    "require_httpx",
    "require_model",
    "server_message",
    "shown_url",
    "sse_data",
]
