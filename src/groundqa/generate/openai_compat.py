"""`openai:MODEL`: answers from any server that speaks the OpenAI chat completions API.

That covers OpenAI itself, Azure OpenAI, vLLM, the llama.cpp server, LM Studio
and Ollama's `/v1`. It sends `POST {base}/chat/completions` with `{"model",
"messages", "temperature", "max_tokens", "stream"}`, the messages being the
grounded prompt of `prompts.py`. A streamed reply is server-sent events,
`data: {...}` lines carrying `choices[0].delta.content`, until `data: [DONE]`;
a whole reply carries `choices[0].message.content`.

The server is `GeneratorOptions.base_url`, else `OPENAI_BASE_URL`, else
`https://api.openai.com/v1`; a local server is e.g. `http://127.0.0.1:8000/v1`
(vLLM), `http://127.0.0.1:8080/v1` (llama.cpp), `http://127.0.0.1:1234/v1`
(LM Studio) or `http://127.0.0.1:11434/v1` (Ollama). The key is read from
`OPENAI_API_KEY` and sent as `Authorization: Bearer ...`; a server that needs
none (most local ones) works without it.

Azure OpenAI: set `AZURE_OPENAI_API_KEY` and it is sent as the `api-key`
header instead (and `OPENAI_API_KEY` is not sent). Point the base URL at the
resource's v1 endpoint, `https://RESOURCE.openai.azure.com/openai/v1`, with the
deployment name as MODEL; a base URL with a query string (a deployment URL with
`?api-version=...`) keeps it after `/chat/completions`.

Keys come from the environment at each request and are never stored, logged or
shown in an error. It refuses to take a reply it cannot read as a whole
answer: an error object, a `data:` line that is not JSON, or a stream that
stops before `[DONE]` without a finish reason is a `GenerationError`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from groundqa.generate import Evidence, Generation, GeneratorOptions
from groundqa.generate.llm import finish, refuse_without_sources, relay
from groundqa.generate.prompts import PROMPT_VERSION, build_messages, plain_messages
from groundqa.providers import (
    OPENAI_DEFAULT_URL,
    HttpCall,
    openai_base_url,
    openai_call,
    openai_reply_text,
    post_json,
    post_lines,
    require_httpx,
    require_model,
    server_message,
    sse_data,
    stream_object,
)


@dataclass
class OpenAIGenerator:
    model: str
    base_url: str = OPENAI_DEFAULT_URL
    timeout_s: float = 60.0
    name: str = field(init=False)

    streams = True

    def __post_init__(self) -> None:
        self.name = f"openai:{self.model}"
        require_httpx("openai")

    @classmethod
    def from_spec(cls, model: str, options: GeneratorOptions) -> OpenAIGenerator:
        return cls(
            model=require_model("openai", model, "gpt-4o-mini"),
            base_url=openai_base_url(options.base_url),
            timeout_s=options.timeout_s,
        )

    def http_call(self) -> HttpCall:
        return openai_call(self.base_url, "/chat/completions", self.timeout_s)

    def request(self, evidence: Evidence, *, stream: bool) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": build_messages(evidence),
            "temperature": evidence.settings.temperature,
            "max_tokens": evidence.settings.max_tokens,
            "stream": stream,
        }

    def complete(self, system: str, user: str, max_tokens: int) -> str:
        """The model's reply to one plain prompt (used to rewrite follow-up questions)."""
        call = self.http_call()
        body = {
            "model": self.model,
            "messages": plain_messages(system, user),
            "temperature": 0.0,
            "max_tokens": max_tokens,
            "stream": False,
        }
        return openai_reply_text(call, post_json(call, body))

    def generate(self, evidence: Evidence) -> Generation:
        early = refuse_without_sources(evidence, PROMPT_VERSION)
        if early is not None:
            return early
        call = self.http_call()
        reply = post_json(call, self.request(evidence, stream=False))
        return finish(openai_reply_text(call, reply), evidence, PROMPT_VERSION, backend=self.name)

    def stream(self, evidence: Evidence) -> Iterator[str | Generation]:
        return relay(evidence, lambda: self._pieces(evidence), PROMPT_VERSION, backend=self.name)

    def _pieces(self, evidence: Evidence) -> Iterator[str]:
        """The reply's text as an OpenAI-compatible server streams it (SSE until `[DONE]`)."""
        call = self.http_call()
        finished = False
        for number, payload in sse_data(post_lines(call, self.request(evidence, stream=True))):
            if payload == "[DONE]":
                return
            event = stream_object(call, number, payload)
            if "error" in event:
                raise call.error(f"openai reported an error: {server_message(payload)}")
            choices = event.get("choices")
            if not isinstance(choices, list):
                raise call.malformed(f"stream line {number} has no choices")
            if not choices:  # a usage-only chunk
                continue
            choice = choices[0] if isinstance(choices[0], dict) else {}
            delta = choice.get("delta") or {}
            content = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(content, str) and content:
                yield content
            if choice.get("finish_reason"):
                finished = True
        if not finished:
            raise call.malformed("the stream ended before data: [DONE]")


__all__ = ["OpenAIGenerator"]
