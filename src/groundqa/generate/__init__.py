"""Generators turn retrieved passages into an answer with `[n]` citations.

One small protocol, one registry keyed by a config string: `extractive` (the
offline default), `ollama:MODEL`, `openai:MODEL`, `anthropic:MODEL`,
`gguf:PATH`. Built-in backends register the same way optional ones do. A
generator may refuse; it must never cite a passage it was not given (the audit
checks that every `[n]` resolves). A backend that fails (unreachable, timed out,
malformed reply, broken stream) raises `GenerationError`; the engine turns that
into an Answer that says so and still carries the passages.

Network backends take their endpoint from `GeneratorOptions.base_url` or their
provider's usual environment variable, and API keys from the environment only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from groundqa.clauses import clause_ref
from groundqa.errors import UsageError
from groundqa.models import Citation, Hit
from groundqa.text import PassageTerms


@dataclass(frozen=True)
class GenerationSettings:
    """How much to retrieve and how to sample; presets per question intent set these."""

    k: int = 5
    temperature: float = 0.0
    max_tokens: int = 400

    def merged(
        self,
        *,
        k: int | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> GenerationSettings:
        """These settings with every override that is not None applied."""
        return GenerationSettings(
            k=self.k if k is None else k,
            temperature=self.temperature if temperature is None else temperature,
            max_tokens=self.max_tokens if max_tokens is None else max_tokens,
        )


@dataclass(frozen=True)
class Evidence:
    """What a generator may use: the question, the passages, and the engine's term weights."""

    question: str
    weights: Mapping[str, float]  # topic term of the question -> idf
    hits: tuple[Hit, ...]
    text: PassageTerms
    settings: GenerationSettings = field(default_factory=GenerationSettings)
    intent: str = "lookup"


@dataclass(frozen=True)
class Generation:
    text: str
    citations: tuple[Citation, ...]
    refused: bool
    reason: str = ""
    prompt_version: str | None = None


@dataclass(frozen=True)
class GeneratorOptions:
    """Connection settings a backend may use; None means the provider's default."""

    base_url: str | None = None
    timeout_s: float = 60.0


class Generator(Protocol):
    """`generate` returns a whole answer; `stream` yields its text in pieces as they come,
    then the finished `Generation` as its last item.

    A backend without native streaming yields its whole text once. The pieces,
    joined, are the text of the final Generation.
    """

    name: str
    streams: bool

    def generate(self, evidence: Evidence) -> Generation: ...

    def stream(self, evidence: Evidence) -> Iterator[str | Generation]: ...


Factory = Callable[[str, GeneratorOptions], Generator]
_REGISTRY: dict[str, Factory] = {}


def register(name: str, factory: Factory) -> None:
    """Make `name` (or `name:ARG`) resolvable by `get_generator`."""
    _REGISTRY[name] = factory


def available() -> list[str]:
    return sorted(_REGISTRY)


def get_generator(spec: str, options: GeneratorOptions | None = None) -> Generator:
    name, _, arg = spec.partition(":")
    factory = _REGISTRY.get(name)
    if factory is None:
        raise UsageError(f"unknown generator {spec!r}; available: {', '.join(available())}")
    return factory(arg, options or GeneratorOptions())


def cite(n: int, hit: Hit, snippet: str) -> Citation:
    c = hit.chunk
    heading = c.section_path[-1] if c.section_path else c.section_id.rpartition("#")[2]
    clause = clause_ref(
        doc_id=c.doc_id,
        section_id=c.section_id,
        heading=heading,
        title=c.title,
        text=c.text,
        snippet=snippet,
        metadata=c.metadata,
    )
    return Citation(
        n=n,
        chunk_id=c.chunk_id,
        doc_id=c.doc_id,
        section_id=c.section_id,
        title=c.title,
        section=c.breadcrumb,
        page=c.page,
        uri=c.uri,
        snippet=snippet,
        clause=clause,
    )


def _register_builtins() -> None:
    from groundqa.generate.extractive import ExtractiveGenerator

    register("extractive", lambda arg, options: ExtractiveGenerator())

    # Model backends import their module (and its HTTP client or SDK) only when asked for.
    def ollama(arg: str, options: GeneratorOptions) -> Generator:
        from groundqa.generate.ollama import OllamaGenerator

        return OllamaGenerator.from_spec(arg, options)

    def openai(arg: str, options: GeneratorOptions) -> Generator:
        from groundqa.generate.openai_compat import OpenAIGenerator

        return OpenAIGenerator.from_spec(arg, options)

    def anthropic(arg: str, options: GeneratorOptions) -> Generator:
        from groundqa.generate.anthropic import AnthropicGenerator

        return AnthropicGenerator.from_spec(arg, options)

    def gguf(arg: str, options: GeneratorOptions) -> Generator:
        from groundqa.generate.gguf import GGUFGenerator

        return GGUFGenerator.from_spec(arg, options)

    register("ollama", ollama)
    register("openai", openai)
    register("anthropic", anthropic)
    register("gguf", gguf)


_register_builtins()

__all__ = [
    "Evidence",
    "Generation",
    "GenerationSettings",
    "Generator",
    "GeneratorOptions",
    "available",
    "cite",
    "get_generator",
    "register",
]
