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

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from groundqa.generate import Evidence, Generation, GeneratorOptions
from groundqa.generate.llm import finish, refuse_without_sources, relay
from groundqa.generate.prompts import PROMPT_VERSION, build_messages, plain_messages
from groundqa.providers import (
    OLLAMA_DEFAULT_URL,
    HttpCall,
    json_lines,
    ollama_base_url,
    ollama_call,
    ollama_reply_text,
    post_json,
    post_lines,
    require_httpx,
    require_model,
)


@dataclass
class OllamaGenerator:
    model: str
    base_url: str = OLLAMA_DEFAULT_URL
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
            base_url=ollama_base_url(options.base_url),
            timeout_s=options.timeout_s,
        )

    def http_call(self) -> HttpCall:
        return ollama_call(self.base_url, "/api/chat", self.timeout_s)

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

    def complete(self, system: str, user: str, max_tokens: int) -> str:
        """The model's reply to one plain prompt (used to rewrite follow-up questions)."""
        call = self.http_call()
        body = {
            "model": self.model,
            "messages": plain_messages(system, user),
            "stream": False,
            "options": {"temperature": 0.0, "num_predict": max_tokens},
        }
        return ollama_reply_text(call, post_json(call, body))

    def generate(self, evidence: Evidence) -> Generation:
        early = refuse_without_sources(evidence, PROMPT_VERSION)
        if early is not None:
            return early
        call = self.http_call()
        reply = post_json(call, self.request(evidence, stream=False))
        return finish(ollama_reply_text(call, reply), evidence, PROMPT_VERSION, backend=self.name)

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


__all__ = ["OllamaGenerator"]
