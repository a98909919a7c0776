"""`gguf:PATH`: a local GGUF model run in-process by llama-cpp-python.

The same grounded prompt as every other language-model backend, through
llama.cpp's chat completion with the model's own chat template. The model file
is loaded once per engine (the engine keeps one generator per spec) and never
downloaded: PATH must name a file on disk. Thread count is capped at the
machine's cores so llama.cpp does not fight another thread pool.

It refuses a path that does not exist or is not a GGUF file, and names the pip
line when llama-cpp-python is not installed (it compiles from source; see
docs/pipeline/generate.md for the build flags this machine needs).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groundqa.errors import GenerationError, UsageError
from groundqa.generate import Evidence, Generation, GeneratorOptions
from groundqa.generate.llm import finish, refuse_without_sources, relay
from groundqa.generate.prompts import PROMPT_VERSION, build_messages, plain_messages

GGUF_MAGIC = b"GGUF"


def check_model_path(spec: str) -> Path:
    if not spec.strip():
        raise UsageError("gguf: name a model file, e.g. --generator gguf:/models/model.gguf")
    path = Path(spec).expanduser()
    if not path.is_file():
        raise UsageError(f"gguf: no model file at {path}")
    with path.open("rb") as f:
        if f.read(4) != GGUF_MAGIC:
            raise UsageError(f"gguf: {path} is not a GGUF model file")
    return path


@dataclass
class GGUFGenerator:
    path: Path
    n_ctx: int = 4096
    threads: int = field(default_factory=lambda: max(1, min(4, os.cpu_count() or 1)))
    name: str = field(init=False)
    streams = True

    def __post_init__(self) -> None:
        self.name = f"gguf:{self.path.name}"
        self._model: Any = None
        # llama.cpp contexts are not safe to share between threads; one answer at a time.
        self._lock = threading.Lock()

    @classmethod
    def from_spec(cls, spec: str, options: GeneratorOptions) -> GGUFGenerator:
        return cls(check_model_path(spec))

    def _llama(self) -> Any:
        if self._model is None:
            try:
                from llama_cpp import Llama
            except ModuleNotFoundError:
                raise UsageError(
                    "gguf: needs llama-cpp-python: pip install 'groundqa[gguf]' "
                    "(it compiles; see docs/pipeline/generate.md for the CMAKE_ARGS)"
                ) from None
            try:
                self._model = Llama(
                    model_path=str(self.path),
                    n_ctx=self.n_ctx,
                    n_threads=self.threads,
                    verbose=False,
                )
            except (ValueError, RuntimeError) as exc:
                raise GenerationError(f"gguf: cannot load {self.path.name}: {exc}") from None
        return self._model

    def _completion(self, evidence: Evidence, *, stream: bool) -> Any:
        s = evidence.settings
        return self._chat(build_messages(evidence), s.temperature, s.max_tokens, stream=stream)

    def _chat(
        self, messages: list[dict[str, str]], temperature: float, max_tokens: int, *, stream: bool
    ) -> Any:
        try:
            return self._llama().create_chat_completion(
                messages=messages, temperature=temperature, max_tokens=max_tokens, stream=stream
            )
        except ValueError as exc:  # e.g. the prompt does not fit the context window
            raise GenerationError(f"gguf: {self.path.name} could not answer: {exc}") from None

    def complete(self, system: str, user: str, max_tokens: int) -> str:
        """The model's reply to one plain prompt (used to rewrite follow-up questions)."""
        with self._lock:
            reply = self._chat(plain_messages(system, user), 0.0, max_tokens, stream=False)
        return str(reply["choices"][0]["message"].get("content") or "")

    def generate(self, evidence: Evidence) -> Generation:
        early = refuse_without_sources(evidence, PROMPT_VERSION)
        if early is not None:
            return early
        with self._lock:
            reply = self._completion(evidence, stream=False)
        content = reply["choices"][0]["message"].get("content") or ""
        return finish(content, evidence, PROMPT_VERSION, backend=self.name)

    def stream(self, evidence: Evidence) -> Iterator[str | Generation]:
        return relay(evidence, lambda: self._pieces(evidence), PROMPT_VERSION, backend=self.name)

    def _pieces(self, evidence: Evidence) -> Iterator[str]:
        with self._lock:
            for chunk in self._completion(evidence, stream=True):
                yield chunk["choices"][0].get("delta", {}).get("content") or ""
