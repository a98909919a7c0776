"""The Engine: one opened index, and the ask pipeline over it.

    retrieve -> gate -> generate -> Answer

The CLI, the HTTP API and the evaluation harness all go through `Engine.ask`
(or `Engine.retrieve` when only ranking is measured); none of them holds
pipeline logic of its own.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from functools import cached_property
from pathlib import Path

import numpy as np
import numpy.typing as npt

from groundqa.acronyms import expand_query
from groundqa.audit import audit_answer
from groundqa.chunking import ChunkerSettings
from groundqa.definitions import defined_term, defines
from groundqa.embed import Embedder, EmbedderOptions, Matrix, get_embedder
from groundqa.errors import GenerationError, UsageError
from groundqa.fusion import cap_per_group, mmr
from groundqa.gate import Gate, Reading, features, gate_for
from groundqa.generate import (
    Evidence,
    Generation,
    GenerationSettings,
    Generator,
    GeneratorOptions,
    get_generator,
)
from groundqa.generate.extractive import ExtractiveGenerator
from groundqa.generate.presets import preset_for
from groundqa.index.base import Store, bm25_idf
from groundqa.index.dense import check_embedder
from groundqa.index.open import open_store
from groundqa.index.store import Manifest
from groundqa.models import REFUSAL, Answer, Chunk, Citation, Hit
from groundqa.rerank import Reranker, get_reranker
from groundqa.retrieve import (
    DEFAULT_DENSE_PLAN,
    DEFAULT_LEXICAL_PLAN,
    DEFINITION_BOOST,
    PLACE_BOOST,
    POOL,
    FacetIndex,
    Plan,
    check_k,
    check_question,
    check_retriever,
)
from groundqa.text import Analyzer, PassageTerms
from groundqa.versions import Versions

Filters = Mapping[str, str | Sequence[str] | Mapping[str, Sequence[str]]]
# A reranker re-scores this many of the best hits (or the depth asked for, if more).
RERANK_DEPTH = 20
# The gate compares each method's own best this deep.
SIGNAL_DEPTH = 10
Mask = npt.NDArray[np.bool_] | None
Scope = Mapping[str, str | Sequence[str]]


class Engine:
    """Answers questions from one index directory. Safe to share between threads for reads."""

    def __init__(
        self,
        store: Store,
        analyzer: Analyzer,
        embedder_options: EmbedderOptions | None = None,
    ) -> None:
        self.store = store
        self.analyzer = analyzer
        self.embedder_options = embedder_options or EmbedderOptions()
        self._embedder: Embedder | None = None
        self._embedder_lock = threading.Lock()
        self._last_query = threading.local()
        self.gate: Gate = gate_for(store.manifest.gate, store.manifest.fingerprint)
        self.reader = ExtractiveGenerator()
        self.passage_text = PassageTerms(analyzer)
        self._generators: dict[tuple[str, GeneratorOptions], Generator] = {}
        self._rerankers: dict[tuple[str, GeneratorOptions], Reranker | None] = {}

    @classmethod
    def open(cls, location: str | Path, embedder_options: EmbedderOptions | None = None) -> Engine:
        """Open the current build of an index directory or a `postgresql://` store;
        `embedder_options` reach a remote query embedder."""
        analyzer = Analyzer()
        return cls(open_store(location, analyzer), analyzer, embedder_options)

    def reopen(self) -> Engine:
        """An Engine over the build the same index holds now (after a rebuild). The query
        model already loaded is kept when the new build was embedded by the same one, so a
        server does not load a model again at each rebuild."""
        engine = Engine(self.store.reopen(), self.analyzer, self.embedder_options)
        same = engine.store.manifest.dense.get("embedder") == self.store.manifest.dense.get(
            "embedder"
        )
        if same and self._embedder is not None:
            engine._embedder = self._embedder
        return engine

    @property
    def retrievers(self) -> tuple[str, ...]:
        """The retrieval methods this index can serve."""
        return ("bm25", "dense", "hybrid") if self.store.has_vectors else ("bm25",)

    @property
    def default_retriever(self) -> str:
        """The plan used when none is named: hybrid where the index has vectors, else bm25
        (`retrieve.DEFAULT_DENSE_PLAN`; see the README's retrieval tables)."""
        return DEFAULT_DENSE_PLAN if self.store.has_vectors else DEFAULT_LEXICAL_PLAN

    @property
    def compared_retrievers(self) -> list[str]:
        """What `eval` compares when not told: each method alone, and the default plan."""
        return list(dict.fromkeys([*self.retrievers, self.default_retriever]))

    @property
    def acronyms(self) -> dict[str, str]:
        """Acronyms the corpus defines ("Full Name (ABBR)"), mined at ingest."""
        return self.store.acronyms

    def query_embedder(self) -> Embedder:
        """The embedder the index was built with, loaded on first use (once, however many
        requests arrive together)."""
        if self._embedder is None:
            with self._embedder_lock:
                if self._embedder is None:
                    spec = str(self.store.manifest.dense["embedder"])
                    self._embedder = get_embedder(spec, self.embedder_options)
        return self._embedder

    def embed_query(self, text: str) -> Matrix:
        """The query's vector. Each thread keeps its last one, so retrieval and the gate
        embed a question once per `ask`; nothing is kept across questions."""
        last = getattr(self._last_query, "value", None)
        if last is not None and last[0] == text:
            cached: Matrix = last[1]
            return cached
        embedder = self.query_embedder()
        vector = embedder.embed([text])
        check_embedder(self.store.manifest.dense, embedder, vector)
        row: Matrix = vector[0]
        self._last_query.value = (text, row)
        return row

    @property
    def location(self) -> str:
        """The index directory, or the store's URL without its password."""
        return self.store.location

    @property
    def manifest(self) -> Manifest:
        return self.store.manifest

    @property
    def chunks(self) -> Sequence[Chunk]:
        return self.store.chunks

    @cached_property
    def facets(self) -> FacetIndex:
        return FacetIndex(self.store.chunks)

    @property
    def fingerprint(self) -> str:
        """Changes whenever the build or its gate does: the key that keeps cached answers
        from going stale."""
        return f"{self.manifest.build_id}:{self.manifest.fingerprint}:{self._gate_id}"

    @cached_property
    def _gate_id(self) -> str:
        settings = json.dumps(self.gate.to_dict(), sort_keys=True)
        return hashlib.sha256(settings.encode("utf-8")).hexdigest()[:12]

    @cached_property
    def _by_doc(self) -> dict[str, list[Chunk]]:
        docs: dict[str, list[Chunk]] = {}
        for c in self.store.chunks:
            docs.setdefault(c.doc_id, []).append(c)
        return docs

    def chunk(self, chunk_id: str) -> Chunk | None:
        row = self._row_of.get(chunk_id)
        return None if row is None else self.store.chunks[row]

    @cached_property
    def versions(self) -> Versions:
        """Each document's effective dates and successor (see `versions`)."""
        return Versions.of_chunks(self.store.chunks)

    @cached_property
    def _doc_of_row(self) -> list[str]:
        return [c.doc_id for c in self.store.chunks]

    @cached_property
    def _row_of(self) -> dict[str, int]:
        return {c.chunk_id: i for i, c in enumerate(self.store.chunks)}

    def rows_of(self, chunk_ids: Iterable[str]) -> list[int]:
        """Row numbers (positions in `chunks`) of the known chunk ids given."""
        return [self._row_of[c] for c in chunk_ids if c in self._row_of]

    def document_chunks(self, doc_id: str) -> list[Chunk]:
        """A document's chunks in reading order (empty when the id is unknown)."""
        return list(self._by_doc.get(doc_id, []))

    def weights(self, question: str) -> dict[str, float]:
        """Each topic term of the question with its idf in this index."""
        terms = self.analyzer.query_terms(question)
        n = self.store.num_docs
        return {t: bm25_idf(df, n) for t, df in self.store.document_frequencies(terms).items()}

    @cached_property
    def section_path(self) -> bool:
        """Whether the index holds each chunk's section path (`ChunkerSettings.section_path`)."""
        return ChunkerSettings.from_dict(self.manifest.chunker).section_path

    def _passage_terms(self, hit: Hit) -> frozenset[str]:
        # The gate's coverage reads the text BM25 scored, so it follows the index's setting.
        return self.passage_text.terms(hit.chunk.chunk_id, hit.chunk.index_text(self.section_path))

    def retrieve(
        self,
        question: str,
        *,
        k: int = 5,
        filters: Filters | None = None,
        scope: Scope | None = None,
        retriever: str | None = None,
        reranker: str | None = None,
    ) -> list[Hit]:
        """Top-k chunks for a user's question; k is capped for interactive use."""
        check_k(k)
        return self.search(
            question,
            depth=k,
            filters=filters,
            scope=scope,
            retriever=retriever,
            reranker=reranker,
        )

    def search(
        self,
        question: str,
        *,
        depth: int,
        filters: Filters | None = None,
        scope: Scope | None = None,
        retriever: str | None = None,
        reranker: str | None = None,
        options: GeneratorOptions | None = None,
        as_of: dt.date | None = None,
    ) -> list[Hit]:
        """Ranked chunks to any depth, for evaluation (recall@100 needs more than a user does).

        `retriever` is a plan such as `hybrid`, `bm25+acr` or `hybrid+weighted+cap=2`
        (see `retrieve.Plan`); None is this index's default. `reranker` (see
        `rerank.get_reranker`) re-scores the best `RERANK_DEPTH` (or `depth`, if more)
        before the list is cut; `options` reach an `llm:` reranker's server.
        """
        hits, _ = self._search(
            question,
            depth=depth,
            filters=filters,
            scope=scope,
            retriever=retriever,
            reranker=reranker,
            options=options,
            as_of=as_of,
        )
        return hits

    def _search(
        self,
        question: str,
        *,
        depth: int,
        filters: Filters | None,
        scope: Scope | None,
        retriever: str | None,
        reranker: str | None,
        options: GeneratorOptions | None,
        as_of: dt.date | None = None,
    ) -> tuple[list[Hit], Mask]:
        """`search`, and the mask of chunks it was allowed to return (None: all)."""
        question = check_question(question)
        plan = check_retriever(retriever or self.default_retriever, self.retrievers)
        allowed = self.facets.mask(filters or {})
        places = self.facets.detect_scope(question) if plan.places != "off" else {}
        given = self.facets.resolve_scope(scope or {})
        if plan.places == "boost":
            # Boost mode: the places (named in the question or given) rank first, and
            # nothing is filtered out.
            places, given = {**places, **given}, {}
        scoped = self.facets.scope_mask({**(places if plan.places == "filter" else {}), **given})
        if scoped is not None:
            allowed = scoped if allowed is None else allowed & scoped
        query = expand_query(question, self.acronyms) if plan.acronyms else question
        term = defined_term(question) if plan.definitions else None
        widen = (
            plan.method == "hybrid"
            or plan.cap
            or plan.mmr is not None
            or plan.places == "boost"
            or term is not None
        )
        pool = max(depth, POOL) if widen else max(depth, RERANK_DEPTH if reranker else 0)
        rerank = self.reranker(reranker, options) if reranker else None
        keep = max(depth, RERANK_DEPTH) if rerank is not None else depth
        ranked = self._rank(plan, query, pool, allowed)
        if plan.places == "boost" and places:
            named = np.zeros(len(self.chunks), dtype=bool)
            for key, values in places.items():
                named |= self.facets.rows(key, values)
            ranked = _lift(ranked, lambda row: bool(named[row]), PLACE_BOOST)
        if term is not None:
            ranked = _lift(
                ranked, lambda row: defines(self.chunks[row].text, term), DEFINITION_BOOST
            )
        ranked = self.versions.prefer(ranked, self._doc_of_row, as_of or dt.date.today())
        if plan.cap is not None:
            ranked = cap_per_group(ranked, lambda r: self.chunks[r[0]].doc_id, plan.cap, keep)
        if plan.mmr is not None:
            ranked = self._mmr(ranked, plan.mmr, keep)
        hits = [
            Hit(chunk=self.chunks[row], score=score, rank=rank, retriever=plan.spec)
            for rank, (row, score) in enumerate(ranked[:keep], start=1)
        ]
        return (hits if rerank is None else rerank.rerank(question, hits, top_n=depth)), allowed

    def reranker(self, spec: str, options: GeneratorOptions | None = None) -> Reranker | None:
        """The reranker for `spec`, created once per engine (a model loads only once)."""
        key = (spec, options or GeneratorOptions())
        if key not in self._rerankers:
            self._rerankers[key] = get_reranker(spec, key[1])
        return self._rerankers[key]

    def _rank(self, plan: Plan, query: str, pool: int, allowed: Mask) -> list[tuple[int, float]]:
        """Row indices and scores, best first, for the plan's method."""
        if plan.method == "bm25":
            return self.store.lexical_search(self.analyzer.terms(query), pool, allowed)
        vector = self.embed_query(query)
        if plan.method == "dense":
            return self.store.vector_search(vector, pool, allowed)
        return self.store.hybrid_search(
            self.analyzer.terms(query), vector, pool, allowed, plan.fusion
        )

    def _mmr(self, ranked: list[tuple[int, float]], lam: float, k: int) -> list[tuple[int, float]]:
        """Maximal marginal relevance over the candidates' own vectors."""
        if not self.store.has_vectors:
            raise UsageError("+mmr needs vectors and this index has none; use +cap=N instead")
        if not ranked:
            return ranked
        vectors = self.store.vectors_of([row for row, _ in ranked])
        relevance = np.asarray([score for _, score in ranked], dtype=np.float64)
        span = relevance.max() - relevance.min()
        relevance = (relevance - relevance.min()) / span if span > 0 else np.ones_like(relevance)
        picked = mmr(
            list(range(len(ranked))), relevance.tolist(), vectors @ vectors.T, k=k, lam=lam
        )
        return [ranked[i] for i in picked]

    def gate_features(self, evidence: Evidence, allowed: Mask = None) -> dict[str, float]:
        """What the gate weighs for this question (see `gate.features`): empty when no
        passage was found. Each method's own best are taken from the chunks `allowed`."""
        if not evidence.hits:
            return {}
        question = evidence.question
        terms = self.analyzer.terms(question)
        ranked = self.store.lexical_search(terms, SIGNAL_DEPTH, allowed)
        df = self.store.document_frequencies(set(terms) | set(evidence.weights))
        n = self.store.num_docs
        known = [t for t in dict.fromkeys(terms) if df[t] > 0]
        k1 = float(self.manifest.lexical.get("k1", 1.5))
        ceiling = (
            sum(bm25_idf(df[t], n) for t in known) * (k1 + 1) * (1 + self.store.heading_weight)
        )
        dense = None
        if self.store.has_vectors:
            dense = self.store.vector_search(self.embed_query(question), SIGNAL_DEPTH, allowed)
        return features(
            evidence.weights,
            {t for t in evidence.weights if df[t] == 0},
            [self._passage_terms(h) for h in evidence.hits],
            ranked,
            ceiling,
            self.reader.reading(evidence) if evidence.weights else Reading(),
            dense,
        )

    def screen(
        self, question: str, *, retriever: str | None = None, k: int | None = None
    ) -> tuple[Evidence, dict[str, float]]:
        """What `ask` would hand the gate and the generator for a question, without deciding:
        calibration fits the gate on these, and replays generators on the same evidence."""
        question = check_question(question)
        intent, preset = preset_for(question)
        evidence, allowed = self._gather(
            question,
            preset.merged(k=k),
            intent,
            filters=None,
            scope=None,
            retriever=retriever,
            reranker=None,
            options=None,
        )
        return evidence, self.gate_features(evidence, allowed)

    def _gather(
        self,
        question: str,
        settings: GenerationSettings,
        intent: str,
        *,
        filters: Filters | None,
        scope: Scope | None,
        retriever: str | None,
        reranker: str | None,
        options: GeneratorOptions | None,
        as_of: dt.date | None = None,
    ) -> tuple[Evidence, Mask]:
        """Retrieval as `ask` and `screen` both do it: the evidence the gate and the generator
        read, and the mask of chunks the search was allowed to return."""
        hits, allowed = self._search(
            question,
            depth=settings.k,
            filters=filters,
            scope=scope,
            retriever=retriever,
            reranker=reranker,
            options=options,
            as_of=as_of,
        )
        evidence = Evidence(
            question,
            self.weights(question),
            tuple(hits),
            self.passage_text,
            settings=settings,
            intent=intent,
        )
        return evidence, allowed

    def scope_for(
        self, question: str, scope: Scope | None, auto_scope: bool
    ) -> dict[str, list[str]]:
        """The scope to apply: the one given, plus places detected in the question if asked."""
        merged = self.facets.resolve_scope(scope or {})
        if auto_scope:
            for key, values in self.facets.detect_scope(question).items():
                merged.setdefault(key, values)
        return merged

    def generator(self, spec: str, options: GeneratorOptions | None = None) -> Generator:
        """The generator for `spec`, created once per engine (a local model loads only once)."""
        key = (spec, options or GeneratorOptions())
        gen = self._generators.get(key)
        if gen is None:
            gen = self._generators[key] = get_generator(spec, key[1])
        return gen

    def ask(
        self,
        question: str,
        *,
        k: int | None = None,
        filters: Filters | None = None,
        scope: Scope | None = None,
        auto_scope: bool = False,
        retriever: str | None = None,
        reranker: str | None = None,
        generator: str = "extractive",
        options: GeneratorOptions | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        as_of: dt.date | None = None,
    ) -> Answer:
        """Retrieve, gate, answer and audit.

        `k`, `temperature` and `max_tokens` default to the preset for the question's
        intent. `scope` keeps chunks that match or lack each key; `auto_scope` adds
        the places the question names (see `FacetIndex.detect_scope`). A generator
        that fails gives an Answer with `error` set and the passages kept.
        """
        answer: Answer | None = None
        for event in self.ask_stream(
            question,
            k=k,
            filters=filters,
            scope=scope,
            auto_scope=auto_scope,
            retriever=retriever,
            reranker=reranker,
            generator=generator,
            options=options,
            temperature=temperature,
            max_tokens=max_tokens,
            as_of=as_of,
        ):
            if isinstance(event, Answer):
                answer = event
        assert answer is not None  # ask_stream always ends with the Answer
        return answer

    def ask_stream(
        self,
        question: str,
        *,
        k: int | None = None,
        filters: Filters | None = None,
        scope: Scope | None = None,
        auto_scope: bool = False,
        retriever: str | None = None,
        reranker: str | None = None,
        generator: str = "extractive",
        options: GeneratorOptions | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        as_of: dt.date | None = None,
    ) -> Iterator[list[Hit] | str | Answer]:
        """`ask` as it happens: the retrieved hits, then answer text pieces, then the Answer."""
        started = time.perf_counter()
        question = check_question(question)
        gen = self.generator(generator, options)
        intent, preset = preset_for(question)
        settings = preset.merged(k=k, temperature=temperature, max_tokens=max_tokens)
        applied = self.scope_for(question, scope, auto_scope)
        check_k(settings.k)
        evidence, allowed = self._gather(
            question,
            settings,
            intent,
            filters=filters,
            scope=applied,
            retriever=retriever,
            reranker=reranker,
            options=options,
            as_of=as_of,
        )
        hits = list(evidence.hits)
        yield hits
        t_retrieved = time.perf_counter()
        decision = self.gate.decide(evidence.weights, self.gate_features(evidence, allowed))
        t_gated = time.perf_counter()
        timings = {
            "retrieve": (t_retrieved - started) * 1000,
            "gate": (t_gated - t_retrieved) * 1000,
        }
        base = Answer(
            question=question,
            answer=REFUSAL,
            refused=True,
            citations=(),
            passages=evidence.hits,
            gate=decision,
            refused_by="gate",
            generator=gen.name,
            scope=applied,
            intent=intent,
        )
        if not decision.answer:
            timings["total"] = (time.perf_counter() - started) * 1000
            yield self._audited(replace(base, timings_ms=timings))
            return
        result: Generation | None = None
        error: str | None = None
        try:
            for piece in gen.stream(evidence):
                if isinstance(piece, Generation):
                    result = piece
                else:
                    yield piece
        except GenerationError as exc:
            error = exc.message
        done = time.perf_counter()
        timings["generate"] = (done - t_gated) * 1000
        timings["total"] = (done - started) * 1000
        if result is None:
            yield replace(
                base,
                answer="",
                refused=False,
                refused_by=None,
                timings_ms=timings,
                error=error or f"{gen.name} returned no answer",
            )
            return
        citations = () if result.refused else result.citations
        yield self._audited(
            replace(
                base,
                answer=REFUSAL if result.refused else result.text,
                refused=result.refused,
                citations=citations,
                refused_by="generator" if result.refused else None,
                prompt_version=result.prompt_version,
                timings_ms=timings,
                notes=self.version_notes(citations, as_of),
            )
        )

    def version_notes(
        self, citations: Sequence[Citation], as_of: dt.date | None = None
    ) -> tuple[str, ...]:
        """A line for each cited document that is not in force on `as_of` (today)."""
        day = as_of or dt.date.today()
        notes = (self.versions.note(doc, day) for doc in dict.fromkeys(c.doc_id for c in citations))
        return tuple(n for n in notes if n)

    def _audited(self, answer: Answer) -> Answer:
        """The answer with its groundedness audit (claims, verdicts, citation check) attached."""
        t = time.perf_counter()
        audit = audit_answer(
            answer.answer, answer.citations, answer.passages, refused=answer.refused
        )
        timings = dict(answer.timings_ms)
        timings["audit"] = (time.perf_counter() - t) * 1000
        timings["total"] = timings.get("total", 0.0) + timings["audit"]
        notes = answer.notes
        injection = audit.get("injection") or {}
        if injection.get("flagged"):
            where = ", ".join(str(n) for n in sorted({m["passage"] for m in injection["matches"]}))
            # The answer still goes out, with the warning beside it: the reader decides.
            notes = (
                *notes,
                f"this answer repeats or follows an instruction found in source text "
                f"(passage {where}); source text is data, so treat the answer with suspicion",
            )
        return replace(answer, audit=audit, timings_ms=timings, notes=notes)


def _lift(
    ranked: list[tuple[int, float]], chosen: Callable[[int], bool], boost: float
) -> list[tuple[int, float]]:
    """The ranking with the chosen rows' scores raised by `boost` of themselves, re-sorted."""
    lifted = [(row, score * (1 + boost) if chosen(row) else score) for row, score in ranked]
    return sorted(lifted, key=lambda r: (-r[1], r[0]))
