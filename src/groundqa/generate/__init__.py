"""Generators turn retrieved passages into an answer with `[n]` citations.

One small protocol; the config string that names a backend (`extractive`, the
offline default, and `extractive:concise`; `ollama:MODEL`, `openai:MODEL`,
`anthropic:MODEL`, `bedrock:MODEL_ID`, `gguf:PATH`) resolves through `groundqa.registry`, where
built-in backends are entries like optional ones, imported only when asked for.
A generator may refuse; it must never cite a passage it was not given (the audit
checks that every `[n]` resolves). A backend that fails (unreachable, timed out,
malformed reply, broken stream) raises `GenerationError`; the engine turns that
into an Answer that says so and still carries the passages.

Network backends take their endpoint from `GeneratorOptions.base_url` or their
provider's usual environment variable, and API keys from the environment only
(`groundqa.providers` holds that knowledge, shared with the reranker and the
embedders); `bedrock:` leaves region and credentials to boto3's own resolution.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from groundqa import registry
from groundqa.clauses import clause_ref
from groundqa.errors import UsageError
from groundqa.index.catalog import Catalog
from groundqa.models import REFUSAL, Answer, Citation, Hit
from groundqa.providers import GeneratorOptions
from groundqa.query import Query
from groundqa.query.intent import GenerationSettings
from groundqa.read import Reading
from groundqa.retrieve import Retrieval
from groundqa.text import PassageTerms, find_opening, split_sentences


@dataclass(frozen=True)
class Evidence:
    """What a generator may use: the question, the passages, the engine's term weights, and
    the reader's `Reading` of those passages (None: the generator reads them itself)."""

    question: str
    weights: Mapping[str, float]  # topic term of the question -> idf
    hits: tuple[Hit, ...]
    text: PassageTerms
    settings: GenerationSettings = field(default_factory=GenerationSettings)
    intent: str = "lookup"
    reading: Reading | None = None

    @classmethod
    def of(
        cls, query: Query, retrieval: Retrieval, reading: Reading, text: PassageTerms
    ) -> Evidence:
        """What the engine hands a generator for `query`: its retrieval, read."""
        intent, settings = query.settings()
        return cls(
            query.question,
            retrieval.weights,
            retrieval.hits,
            text,
            settings=settings,
            intent=intent,
            reading=reading,
        )


@dataclass(frozen=True)
class Generation:
    text: str
    citations: tuple[Citation, ...]
    refused: bool
    reason: str = ""
    prompt_version: str | None = None


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


def register(name: str, factory: Factory | str) -> None:
    """Make `name` (or `name:ARG`) resolvable by `get_generator`; `factory` may be a
    lazily imported `"module:attribute"`."""
    registry.register("generator", name, factory)


def available() -> list[str]:
    return registry.available("generator")


def get_generator(spec: str, options: GeneratorOptions | None = None) -> Generator:
    generator: Generator = registry.create("generator", spec, options or GeneratorOptions())
    return generator


def extractive_generator(arg: str, options: GeneratorOptions) -> Generator:
    """The `extractive` entry of the registry: no model; `extractive:concise` quotes a
    further sentence only for what the quoted ones leave out (see `generate.extractive`)."""
    from groundqa.generate.extractive import ExtractiveGenerator

    if arg not in ("", "concise"):
        raise UsageError(
            f"unknown extractive mode {arg!r}: use `extractive` or `extractive:concise`"
        )
    return ExtractiveGenerator(concise=arg == "concise")


def cite(n: int, hit: Hit, snippet: str) -> Citation:
    """Citation `n` of `hit`, quoting `snippet`: on the page the snippet's first
    sentence is on, where the chunk runs over a page break and that sentence is found in
    it (a snippet joins sentences that need not be adjacent in the chunk)."""
    c = hit.chunk
    page = c.page
    if c.page_starts:
        at = find_opening(c.text, next(iter(split_sentences(snippet)), snippet))
        page = c.page_at(at) if at >= 0 else c.page
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
        page=page,
        uri=c.uri_at(page),
        snippet=snippet,
        clause=clause,
    )


def answered(base: Answer, result: Generation | str, catalog: Catalog, day: dt.date) -> Answer:
    """`base`, the gate's answer before generation, as the generator left it: its text and
    citations, its own refusal, or `result` the error that stopped it (the passages are
    kept). An answer that cites a document not in force on `day` says so."""
    if isinstance(result, str):
        return replace(base, answer="", refused=False, refused_by=None, error=result)
    citations = () if result.refused else result.citations
    docs = [c.doc_id for c in citations]
    return replace(
        base,
        answer=REFUSAL if result.refused else result.text,
        refused=result.refused,
        citations=citations,
        refused_by="generator" if result.refused else None,
        prompt_version=result.prompt_version,
        notes=base.notes + catalog.versions(docs).notes(docs, day),
    )


__all__ = [
    "Evidence",
    "Generation",
    "GenerationSettings",
    "Generator",
    "GeneratorOptions",
    "answered",
    "available",
    "cite",
    "get_generator",
    "register",
]
