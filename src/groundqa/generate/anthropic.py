"""`anthropic:MODEL`: answers from Claude through the official `anthropic` SDK (Messages API).

The grounded prompt of `prompts.py` goes in as `system=` (the rules) and one
user message (the fenced sources and the question), with `max_tokens` from the
generation settings. Streaming reads the SDK's text deltas from
`client.messages.stream(...)`; a whole reply joins the text blocks of
`client.messages.create(...)`.

It sends no `temperature`: the SDK since 1.0 no longer takes one, and the API
version that SDK 2.x speaks rejects any sampling parameter with HTTP 400, so
the prompt's rules, not sampling, keep the answer to the sources.

The key is read from `ANTHROPIC_API_KEY`; the server is
`GeneratorOptions.base_url`, else `ANTHROPIC_BASE_URL`, else the SDK's default
(the SDK adds `/v1/messages`). The client is built with
`timeout=options.timeout_s` and `max_retries=0`: a failure is reported at once,
never retried behind the user's back. It needs the extra:
`pip install 'groundqa[anthropic]'`.

It refuses to start without a key, and never shows the key: the SDK's timeout,
connection and status errors, a malformed event and a stream that breaks off
all become a one-line `GenerationError` with the key scrubbed from it.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from groundqa.errors import GenerationError, UsageError
from groundqa.generate import Evidence, Generation, GeneratorOptions
from groundqa.generate.llm import finish, refuse_without_sources, relay
from groundqa.generate.prompts import PROMPT_VERSION, SYSTEM_PROMPT, user_message
from groundqa.providers import (
    ANTHROPIC_KEY,
    HttpCall,
    anthropic_base_url,
    anthropic_call,
    env_secret,
    require_model,
    shown_url,
)
from groundqa.text import shorten

if TYPE_CHECKING:
    import anthropic as sdk

_INSTALL = "anthropic: needs pip install 'groundqa[anthropic]'"


def _sdk() -> None:
    try:
        importlib.import_module("anthropic")
    except ImportError as exc:
        raise UsageError(_INSTALL) from exc


def _transport_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """The HTTP library's (timeouts, all errors), which can escape the SDK while a stream is read.

    Older SDKs sit on `httpx`, newer ones on `httpx2`; take whichever is there.
    """
    timeouts: list[type[BaseException]] = []
    errors: list[type[BaseException]] = []
    for name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(name)
            timeouts.append(module.TimeoutException)
            errors.append(module.HTTPError)
        except (ImportError, AttributeError):
            continue
    return tuple(timeouts), tuple(errors)


@dataclass
class AnthropicGenerator:
    model: str
    base_url: str | None = None
    timeout_s: float = 60.0
    name: str = field(init=False)

    streams = True

    def __post_init__(self) -> None:
        self.name = f"anthropic:{self.model}"
        _sdk()
        if env_secret(ANTHROPIC_KEY) is None:
            raise UsageError(
                "anthropic: set ANTHROPIC_API_KEY in the environment (the key is read from there only)"
            )

    @classmethod
    def from_spec(cls, model: str, options: GeneratorOptions) -> AnthropicGenerator:
        return cls(
            model=require_model("anthropic", model, "claude-sonnet-4-5"),
            base_url=anthropic_base_url(options.base_url),
            timeout_s=options.timeout_s,
        )

    def http_call(self) -> HttpCall:
        return anthropic_call(self.base_url, self.timeout_s)

    def _client(self) -> sdk.Anthropic:
        import anthropic

        key = env_secret(ANTHROPIC_KEY)
        if key is None:
            raise UsageError("anthropic: set ANTHROPIC_API_KEY in the environment")
        return anthropic.Anthropic(
            api_key=key, base_url=self.base_url, timeout=self.timeout_s, max_retries=0
        )

    @contextmanager
    def _errors(self, call: HttpCall) -> Iterator[None]:
        """The SDK's exceptions as one-line GenerationErrors, key scrubbed."""
        import anthropic

        timeouts, transport = _transport_errors()
        try:
            yield
        except GenerationError:
            raise
        except anthropic.APITimeoutError:
            raise call.timed_out() from None
        except anthropic.APIConnectionError:
            raise call.unreachable() from None
        except anthropic.APIStatusError as exc:
            # `body` is the parsed error JSON, also for an `error` event inside a stream.
            body = json.dumps(exc.body) if isinstance(exc.body, dict) else str(exc.body or "")
            raise call.status_error(exc.status_code, body or exc.message) from None
        except anthropic.APIError as exc:
            raise call.malformed(shorten(str(exc), 200)) from None
        except ValueError as exc:  # a body or an event whose data is not JSON
            raise call.malformed(f"expected JSON ({exc})") from None
        except timeouts:
            raise call.timed_out() from None
        except transport as exc:
            raise call.error(
                f"anthropic stream from {shown_url(call.url)} broke off: {exc}"
            ) from None

    def complete(self, system: str, user: str, max_tokens: int) -> str:
        """The model's reply to one plain prompt (used to rewrite follow-up questions)."""
        with self._errors(self.http_call()), self._client() as client:
            message = client.messages.create(
                model=self.model,
                max_tokens=max_tokens,
                system=system,
                messages=[{"role": "user", "content": user}],
            )
        return "".join(block.text for block in message.content if block.type == "text")

    def generate(self, evidence: Evidence) -> Generation:
        early = refuse_without_sources(evidence, PROMPT_VERSION)
        if early is not None:
            return early
        call = self.http_call()
        s = evidence.settings
        with self._errors(call), self._client() as client:
            message = client.messages.create(
                model=self.model,
                max_tokens=s.max_tokens,
                system=SYSTEM_PROMPT,
                messages=[{"role": "user", "content": user_message(evidence)}],
            )
        text = "".join(block.text for block in message.content if block.type == "text")
        return finish(text, evidence, PROMPT_VERSION, backend=self.name)

    def stream(self, evidence: Evidence) -> Iterator[str | Generation]:
        return relay(evidence, lambda: self._pieces(evidence), PROMPT_VERSION, backend=self.name)

    def _pieces(self, evidence: Evidence) -> Iterator[str]:
        """The reply's text deltas from the SDK's Messages stream."""
        with (
            self._errors(self.http_call()),
            self._client() as client,
            client.messages.stream(
                model=self.model,
                max_tokens=evidence.settings.max_tokens,
                system=SYSTEM_PROMPT,
                messages=[{"role": "user", "content": user_message(evidence)}],
            ) as events,
        ):
            yield from events.text_stream


__all__ = ["AnthropicGenerator"]
