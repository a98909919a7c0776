"""Generators turn retrieved passages into an answer with `[n]` citations.

One small protocol, one registry keyed by a config string (`extractive`,
later `ollama:MODEL`, `openai:MODEL`, ...). Built-in backends register the same
way optional ones will. A generator may refuse; it must never cite a passage
it was not given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from groundqa.errors import UsageError
from groundqa.models import Citation, Hit
from groundqa.text import PassageTerms


@dataclass(frozen=True)
class Evidence:
    """What a generator may use: the question, the passages, and the engine's term weights."""

    question: str
    weights: Mapping[str, float]  # topic term of the question -> idf
    hits: tuple[Hit, ...]
    text: PassageTerms


@dataclass(frozen=True)
class Generation:
    text: str
    citations: tuple[Citation, ...]
    refused: bool
    reason: str = ""


class Generator(Protocol):
    name: str
    streams: bool

    def generate(self, evidence: Evidence) -> Generation: ...


_REGISTRY: dict[str, Callable[[str], Generator]] = {}


def register(name: str, factory: Callable[[str], Generator]) -> None:
    """Make `name` (or `name:ARG`) resolvable by `get_generator`."""
    _REGISTRY[name] = factory


def available() -> list[str]:
    return sorted(_REGISTRY)


def get_generator(spec: str) -> Generator:
    name, _, arg = spec.partition(":")
    factory = _REGISTRY.get(name)
    if factory is None:
        raise UsageError(f"unknown generator {spec!r}; available: {', '.join(available())}")
    return factory(arg)


def cite(n: int, hit: Hit, snippet: str) -> Citation:
    c = hit.chunk
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
    )


def _register_builtins() -> None:
    from groundqa.generate.extractive import ExtractiveGenerator

    register("extractive", lambda arg: ExtractiveGenerator())


_register_builtins()

__all__ = [
    "Evidence",
    "Generation",
    "Generator",
    "available",
    "cite",
    "get_generator",
    "register",
]
