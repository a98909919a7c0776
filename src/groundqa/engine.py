"""The Engine: one opened index, and the ask pipeline over it.

    retrieve -> gate -> generate -> Answer

The CLI, the HTTP API and the evaluation harness all go through `Engine.ask`
(or `Engine.retrieve` when only ranking is measured); none of them holds
pipeline logic of its own.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path

from groundqa.gate import LexicalGate
from groundqa.generate import Evidence, get_generator
from groundqa.index import LoadedIndex, load_index
from groundqa.index.store import Manifest
from groundqa.models import REFUSAL, Answer, Chunk, Hit
from groundqa.retrieve import (
    FacetIndex,
    check_k,
    check_question,
    check_retriever,
    lexical_search,
)
from groundqa.text import Analyzer

Filters = Mapping[str, str | Sequence[str]]


class Engine:
    """Answers questions from one index directory. Safe to share between threads for reads."""

    def __init__(self, loaded: LoadedIndex, analyzer: Analyzer) -> None:
        self._loaded = loaded
        self.analyzer = analyzer
        gate = loaded.manifest.gate
        self.gate = LexicalGate(
            min_coverage=float(gate.get("min_coverage", LexicalGate.min_coverage)),
            top_n=int(gate.get("top_n", LexicalGate.top_n)),
        )
        self._term_cache: dict[str, frozenset[str]] = {}

    @classmethod
    def open(cls, index_dir: str | Path) -> Engine:
        analyzer = Analyzer()
        return cls(load_index(Path(index_dir), analyzer), analyzer)

    @property
    def index_dir(self) -> Path:
        return self._loaded.index_dir

    @property
    def manifest(self) -> Manifest:
        return self._loaded.manifest

    @property
    def chunks(self) -> list[Chunk]:
        return self._loaded.chunks

    @cached_property
    def facets(self) -> FacetIndex:
        return FacetIndex(self._loaded.chunks)

    def weight(self, term: str) -> float:
        return self._loaded.lexical.idf(term)

    def _passage_terms(self, hit: Hit) -> frozenset[str]:
        cached = self._term_cache.get(hit.chunk.chunk_id)
        if cached is None:
            cached = frozenset(self.analyzer.terms(hit.chunk.index_text()))
            if len(self._term_cache) < 50_000:
                self._term_cache[hit.chunk.chunk_id] = cached
        return cached

    def retrieve(
        self,
        question: str,
        *,
        k: int = 5,
        filters: Filters | None = None,
        retriever: str = "bm25",
    ) -> list[Hit]:
        question = check_question(question)
        check_k(k)
        check_retriever(retriever)
        allowed = self.facets.mask(filters or {})
        terms = self.analyzer.terms(question)
        return lexical_search(self._loaded.lexical, self._loaded.chunks, terms, k, allowed)

    def ask(
        self,
        question: str,
        *,
        k: int = 5,
        filters: Filters | None = None,
        retriever: str = "bm25",
        generator: str = "extractive",
    ) -> Answer:
        started = time.perf_counter()
        question = check_question(question)
        gen = get_generator(generator)
        hits = self.retrieve(question, k=k, filters=filters, retriever=retriever)
        t_retrieved = time.perf_counter()
        query_terms = self.analyzer.query_terms(question)
        decision = self.gate.decide(
            query_terms, hits, lambda h: set(self._passage_terms(h)), self.weight
        )
        t_gated = time.perf_counter()
        timings = {
            "retrieve": (t_retrieved - started) * 1000,
            "gate": (t_gated - t_retrieved) * 1000,
        }
        if not decision.answer:
            timings["total"] = (time.perf_counter() - started) * 1000
            return Answer(
                question=question,
                answer=REFUSAL,
                refused=True,
                citations=(),
                passages=tuple(hits),
                gate=decision,
                refused_by="gate",
                generator=gen.name,
                timings_ms=timings,
            )
        result = gen.generate(
            Evidence(question, tuple(query_terms), tuple(hits), self.analyzer, self.weight)
        )
        done = time.perf_counter()
        timings["generate"] = (done - t_gated) * 1000
        timings["total"] = (done - started) * 1000
        return Answer(
            question=question,
            answer=REFUSAL if result.refused else result.text,
            refused=result.refused,
            citations=() if result.refused else result.citations,
            passages=tuple(hits),
            gate=decision,
            refused_by="generator" if result.refused else None,
            generator=gen.name,
            timings_ms=timings,
        )
