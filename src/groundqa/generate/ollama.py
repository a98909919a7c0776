"""`ollama:MODEL`: answers from a model served by Ollama, through its native chat API.

It sends `POST {base}/api/chat` with `{"model", "messages", "stream",
"options": {"temperature", "num_predict"}}`, the messages being the grounded
prompt of `prompts.py`. A streamed reply is NDJSON, one object a line, each
carrying `message.content`, until one says `done: true`; a whole reply carries
`message.content` once.

The server is `GeneratorOptions.base_url`, else `OLLAMA_HOST` (as Ollama
itself reads it: `http://` and port 11434 are added when missing), else
`http://127.0.0.1:11434`. Ollama needs no key.

It refuses to take a reply it cannot read as a whole answer: an error object
in the stream, a line that is not JSON, or a stream that stops before
`done: true` is a `GenerationError`, never a truncated answer.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from groundqa.generate import Evidence, Generation, GeneratorOptions
from groundqa.generate.llm import (
    HttpCall,
    check_base_url,
    endpoint,
    finish,
    json_lines,
    post_json,
    post_lines,
    refuse_without_sources,
    relay,
    require_httpx,
    require_model,
)
from groundqa.generate.prompts import PROMPT_VERSION, build_messages

DEFAULT_BASE_URL = "http://127.0.0.1:11434"
DEFAULT_PORT = 11434


def ollama_host(value: str) -> str:
    """`OLLAMA_HOST` as a URL: `gpu-box` -> `http://gpu-box:11434`, `0.0.0.0:8080` -> `http://0.0.0.0:8080`."""
    value = value.strip()
    if "://" in value:
        return value
    host = urlsplit(f"http://{value}")
    if host.port is None:
        return f"http://{value.rstrip('/')}:{DEFAULT_PORT}"
    return f"http://{value}"


def resolve_base_url(options: GeneratorOptions) -> str:
    if options.base_url:
        return check_base_url("ollama", options.base_url)
    env = os.environ.get("OLLAMA_HOST", "").strip()
    if env:
        return check_base_url("ollama", ollama_host(env))
    return DEFAULT_BASE_URL


def reply_text(call: HttpCall, reply: Any) -> str:
    """The text of a whole (not streamed) `/api/chat` reply, or the error it carries."""
    if isinstance(reply, dict) and isinstance(reply.get("error"), str):
        raise call.error(f"ollama reported an error: {reply['error']}")
    message = reply.get("message") if isinstance(reply, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise call.malformed("the reply has no message.content")
    return content


@dataclass
class OllamaGenerator:
    model: str
    base_url: str = DEFAULT_BASE_URL
    timeout_s: float = 60.0
    name: str = field(init=False)

    streams = True

    def __post_init__(self) -> None:
        self.name = f"ollama:{self.model}"
        require_httpx("ollama")

    @classmethod
    def from_spec(cls, model: str, options: GeneratorOptions) -> OllamaGenerator:
        return cls(
            model=require_model("ollama", model, "llama3.1:8b"),
            base_url=resolve_base_url(options),
            timeout_s=options.timeout_s,
        )

    def http_call(self) -> HttpCall:
        return HttpCall("ollama", endpoint(self.base_url, "/api/chat"), self.timeout_s)

    def request(self, evidence: Evidence, *, stream: bool) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": build_messages(evidence),
            "stream": stream,
            "options": {
                "temperature": evidence.settings.temperature,
                "num_predict": evidence.settings.max_tokens,
            },
        }

    def generate(self, evidence: Evidence) -> Generation:
        early = refuse_without_sources(evidence, PROMPT_VERSION)
        if early is not None:
            return early
        call = self.http_call()
        reply = post_json(call, self.request(evidence, stream=False))
        return finish(reply_text(call, reply), evidence, PROMPT_VERSION, backend=self.name)

    def stream(self, evidence: Evidence) -> Iterator[str | Generation]:
        return relay(evidence, lambda: self._pieces(evidence), PROMPT_VERSION, backend=self.name)

    def _pieces(self, evidence: Evidence) -> Iterator[str]:
        """The reply's text as Ollama streams it (NDJSON lines until `done: true`)."""
        call = self.http_call()
        for obj in json_lines(call, post_lines(call, self.request(evidence, stream=True))):
            if isinstance(obj.get("error"), str):
                raise call.error(f"ollama reported an error: {obj['error']}")
            message = obj.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            if message is not None and not isinstance(content, str):
                raise call.malformed("a stream line has no message.content")
            if content:
                yield content
            if obj.get("done") is True:
                return
        raise call.malformed("the stream ended before done: true")
