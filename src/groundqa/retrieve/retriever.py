"""The retriever: one Query in, one `Retrieval` out, and the only place that searches.

It applies filters and the scope before top-k (a filter can never starve a list),
runs each method the plan names once, fuses, lifts the passages a plan option
favours (places, definitions), prefers the version in force, keeps one
document's sections from crowding the list, and reranks when asked. Everything
later stages need from the index for this question — each method's own best,
the query vector, the question's term weights — is computed here, once, and
carried in the Retrieval: nothing downstream searches again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from groundqa.chunking import ChunkerSettings
from groundqa.embed import Embedder, EmbedderOptions, Matrix, get_embedder
from groundqa.errors import UsageError
from groundqa.facets import Facets
from groundqa.fusion import Fusion, cap_per_group, mmr
from groundqa.index.base import Ranked, Store, bm25_idf
from groundqa.index.dense import check_embedder
from groundqa.models import Chunk, Hit
from groundqa.providers import GeneratorOptions
from groundqa.query import Query
from groundqa.query.acronyms import expand_query
from groundqa.query.definitions import defined_term, defines
from groundqa.retrieve.plan import (
    DEFAULT_DENSE_PLAN,
    DEFAULT_LEXICAL_PLAN,
    DEFINITION_BOOST,
    PLACE_BOOST,
    POOL,
    check_retriever,
    fitted_plan,
)
from groundqa.retrieve.rerank import Reranker, get_reranker
from groundqa.text import Analyzer

# A reranker re-scores this many of the best hits (or the depth asked for, if more).
RERANK_DEPTH = 20
# Each method's own best is kept this deep for the gate, whatever the plan.
SIGNAL_DEPTH = 10
# The vectors of this many recent query texts are kept: an evaluation asks the same
# questions of several plans, and a plan fit asks each of its probes of every plan.
QUERY_VECTORS = 1024
Mask = npt.NDArray[np.bool_] | None


@dataclass(frozen=True, eq=False)
class Retrieval:
    """What retrieval found for one Query, and what it computed on the way.

    `hits` are the ranked chunks (as deep as asked). `lexical` and `dense` are each
    method's own best over the allowed chunks for the searched text (`dense` is
    None when the index has no vectors). `weights` maps the question's topic terms
    to their idf, `unknown` holds those the corpus never uses, and `bm25_ceiling`
    is the most the searched terms could score; `chunks` is how many chunks the index
    holds, over which those idfs were counted (0: not known). `allowed` marks the rows filters
    and scope let through (None: all), `scope` the scope applied, `vector` the
    query's embedding (None when no vector search ran). `signals` is False for a
    ranking made without what the gate needs (see `Retriever.retrieve`).
    """

    query: Query
    plan: str
    text: str
    hits: tuple[Hit, ...]
    lexical: tuple[tuple[int, float], ...]
    dense: tuple[tuple[int, float], ...] | None
    weights: Mapping[str, float]
    unknown: frozenset[str]
    bm25_ceiling: float
    scope: Mapping[str, Sequence[str]] = field(default_factory=dict)
    allowed: Mask = None
    vector: Matrix | None = None
    signals: bool = True
    chunks: int = 0

    def top(self, k: int) -> Retrieval:
        """The same retrieval with only its first `k` hits (the signals are kept whole)."""
        if k >= len(self.hits):
            return self
        return replace(self, hits=self.hits[:k])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Retrieval) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # equal by value, and holds mutable maps

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query.to_dict(),
            "plan": self.plan,
            "text": self.text,
            "hits": [h.to_dict() for h in self.hits],
            "lexical": [[r, s] for r, s in self.lexical],
            "dense": None if self.dense is None else [[r, s] for r, s in self.dense],
            "weights": dict(self.weights),
            "unknown": sorted(self.unknown),
            "bm25_ceiling": self.bm25_ceiling,
            "scope": {k: list(v) for k, v in self.scope.items()},
            "allowed": None if self.allowed is None else np.flatnonzero(self.allowed).tolist(),
            "size": len(self.allowed) if self.allowed is not None else None,
            "vector": None if self.vector is None else [float(x) for x in self.vector],
            "signals": self.signals,
            "chunks": self.chunks,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Retrieval:
        def ranked(rows: Any) -> tuple[tuple[int, float], ...]:
            return tuple((int(r), float(s)) for r, s in rows)

        return cls(
            query=Query.from_dict(d["query"]),
            plan=d["plan"],
            text=d["text"],
            hits=tuple(Hit.from_dict(h) for h in d["hits"]),
            lexical=ranked(d["lexical"]),
            dense=None if d.get("dense") is None else ranked(d["dense"]),
            weights={str(t): float(w) for t, w in d["weights"].items()},
            unknown=frozenset(d.get("unknown", ())),
            bm25_ceiling=float(d["bm25_ceiling"]),
            scope={k: list(v) for k, v in d.get("scope", {}).items()},
            allowed=_mask(d.get("allowed"), d.get("size")),
            vector=None if d.get("vector") is None else np.asarray(d["vector"], dtype=np.float32),
            signals=bool(d.get("signals", True)),
            chunks=int(d.get("chunks", 0)),
        )


class Retriever:
    """Searches one opened store. Safe to share between threads."""

    def __init__(
        self,
        store: Store,
        analyzer: Analyzer,
        embedder_options: EmbedderOptions | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.store = store
        self.analyzer = analyzer
        self.embedder_options = embedder_options or EmbedderOptions()
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        self._rerankers: dict[tuple[str, GeneratorOptions], Reranker | None] = {}
        self._vectors: OrderedDict[str, Matrix] = OrderedDict()

    # What the index can serve -----------------------------------------------------------

    @property
    def methods(self) -> tuple[str, ...]:
        """The retrieval methods this index can serve."""
        return ("bm25", "dense", "hybrid") if self.store.has_vectors else ("bm25",)

    @property
    def builtin_plan(self) -> str:
        """The built-in plan for this index: hybrid where it has vectors, else bm25."""
        return DEFAULT_DENSE_PLAN if self.store.has_vectors else DEFAULT_LEXICAL_PLAN

    @property
    def default_plan(self) -> str:
        """The plan used when none is named: the one fitted to this build, if one was
        chosen (`evaluate.planfit`), else the built-in plan."""
        return fitted_plan(self.store.manifest.retrieval) or self.builtin_plan

    @property
    def facets(self) -> Facets:
        return self.store.catalog.facets

    @cached_property
    def section_path(self) -> bool:
        """Whether the index holds each chunk's section path (`ChunkerSettings.section_path`)."""
        return ChunkerSettings.from_dict(self.store.manifest.chunker).section_path

    # Backends loaded on first use -------------------------------------------------------

    @property
    def loaded_embedder(self) -> Embedder | None:
        """The query model, if one has been loaded (a reopened index may keep it)."""
        return self._embedder

    def query_embedder(self) -> Embedder:
        """The embedder the index was built with, loaded on first use (once, however many
        requests arrive together)."""
        if self._embedder is None:
            with self._embedder_lock:
                if self._embedder is None:
                    spec = str(self.store.manifest.dense["embedder"])
                    self._embedder = get_embedder(spec, self.embedder_options)
        return self._embedder

    def embed(self, text: str) -> Matrix:
        """The vector of one query text (the last `QUERY_VECTORS` texts' are kept)."""
        with self._embedder_lock:
            cached = self._vectors.get(text)
            if cached is not None:
                self._vectors.move_to_end(text)
                return cached
        embedder = self.query_embedder()
        vector = embedder.embed([text])
        check_embedder(self.store.manifest.dense, embedder, vector)
        row: Matrix = vector[0]
        row.setflags(write=False)
        with self._embedder_lock:
            self._vectors[text] = row
            while len(self._vectors) > QUERY_VECTORS:
                self._vectors.popitem(last=False)
        return row

    def forget_queries(self) -> None:
        """Drop the kept query vectors, so the next search embeds its query again (a
        benchmark times a new question this way)."""
        with self._embedder_lock:
            self._vectors.clear()

    def reranker(self, spec: str, options: GeneratorOptions | None = None) -> Reranker | None:
        """The reranker for `spec`, created once per retriever (a model loads only once)."""
        key = (spec, options or GeneratorOptions())
        if key not in self._rerankers:
            self._rerankers[key] = get_reranker(spec, key[1])
        return self._rerankers[key]

    # The stage --------------------------------------------------------------------------

    def scope_for(self, query: Query) -> dict[str, list[str]]:
        """The scope to apply: the one given, plus places detected in the question if asked."""
        merged = self.facets.resolve_scope(query.scope)
        if query.auto_scope:
            for key, values in self.facets.detect_scope(query.question).items():
                merged.setdefault(key, values)
        return merged

    def retrieve(self, query: Query, depth: int, *, signals: bool = True) -> Retrieval:
        """Ranked chunks to `depth`, and each method's own best, for one Query.

        The plan is `query.retriever` (None: this index's default, see `retrieve.plan`);
        a reranker re-scores the best `RERANK_DEPTH` (or `depth`, if more) before the
        list is cut. With `signals` False only the ranking is made (evaluation of ranking
        alone): the methods the plan does not use are not run, and the Retrieval cannot
        be gated (`signals` says so).
        """
        plan = check_retriever(query.retriever or self.default_plan, self.methods)
        scope = self.scope_for(query)
        allowed = self.facets.mask(query.filters)
        places = self.facets.detect_scope(query.question) if plan.places != "off" else {}
        given: dict[str, list[str]] = dict(scope)
        if plan.places == "boost":
            # Boost mode: the places (named in the question or given) rank first, and
            # nothing is filtered out.
            places, given = {**places, **given}, {}
        scoped = self.facets.scope_mask({**(places if plan.places == "filter" else {}), **given})
        if scoped is not None:
            allowed = scoped if allowed is None else allowed & scoped
        text = (
            expand_query(query.question, self.store.acronyms) if plan.acronyms else query.question
        )
        term = defined_term(query.question) if plan.definitions else None
        widen = (
            plan.method == "hybrid"
            or plan.cap
            or plan.mmr is not None
            or plan.places == "boost"
            or term is not None
        )
        rerank = self.reranker(query.reranker, query.options) if query.reranker else None
        pool = max(depth, POOL) if widen else max(depth, RERANK_DEPTH if query.reranker else 0)
        keep = max(depth, RERANK_DEPTH) if rerank is not None else depth

        terms = self.analyzer.terms(text)
        # The gate weighs each method's own best, whatever the plan: with `signals`, a
        # method the plan does not rank with is still run, to SIGNAL_DEPTH.
        lexical_k = 0
        if plan.method != "dense":
            lexical_k = max(pool, SIGNAL_DEPTH)
        elif terms and signals:
            lexical_k = SIGNAL_DEPTH
        deep = plan.method != "bm25"
        vector_k = max(pool, SIGNAL_DEPTH) if deep else SIGNAL_DEPTH

        def search_lexical() -> Ranked:
            return self.store.lexical_search(terms, lexical_k, allowed) if lexical_k else []

        def search_dense() -> tuple[Matrix, Ranked]:
            vector = self.embed(text)
            return vector, self.store.vector_search(vector, vector_k, allowed)

        vector: Matrix | None = None
        dense: Ranked | None = None
        if self.store.has_vectors and (deep or signals):
            # Independent: a store that searches in a server runs them at once.
            (vector, dense), lexical = self.store.both(search_dense, search_lexical)
        else:
            lexical = search_lexical()
        if plan.method == "bm25":
            ranked = lexical[:pool]
        elif plan.method == "dense":
            assert dense is not None  # check_retriever refuses a dense plan without vectors
            ranked = dense[:pool]
        else:
            assert dense is not None
            ranked = fuse(plan.fusion, lexical[:pool], dense[:pool])

        # The candidates' documents; their text only where a step reads it (a definition
        # asked for), and the chunks of the hits alone (a store may read them per request).
        catalog = self.store.catalog
        rows = [row for row, _ in ranked]
        doc_of = dict(zip(rows, catalog.doc_ids(rows), strict=True))
        if plan.places == "boost" and places:
            named = np.zeros(self.store.num_docs, dtype=bool)
            for key, values in places.items():
                named |= self.facets.rows(key, values)
            ranked = _lift(ranked, lambda row: bool(named[row]), PLACE_BOOST)
        read: dict[int, Chunk] = {}
        if term is not None:
            read.update(zip(rows, catalog.chunks_at(rows), strict=True))
            ranked = _lift(ranked, lambda row: defines(read[row].text, term), DEFINITION_BOOST)
        versions = catalog.versions(set(doc_of.values()))
        ranked = versions.prefer(ranked, doc_of, query.day)
        if plan.cap is not None:
            ranked = cap_per_group(ranked, lambda r: doc_of[r[0]], plan.cap, keep)
        if plan.mmr is not None:
            ranked = self._mmr(ranked, plan.mmr, keep)
        top = ranked[:keep]
        unread = [row for row, _ in top if row not in read]
        read.update(zip(unread, catalog.chunks_at(unread), strict=True))
        hits = [
            Hit(chunk=read[row], score=score, rank=rank, retriever=plan.spec)
            for rank, (row, score) in enumerate(top, start=1)
        ]
        if rerank is not None:
            hits = rerank.rerank(query.question, hits, top_n=depth)
        # One document-frequency lookup serves the topic weights and the BM25 ceiling.
        topic = self.analyzer.query_terms(query.question) if signals else []
        df = self.store.document_frequencies(set(terms) | set(topic)) if signals else {}
        n = self.store.num_docs
        weights = {t: bm25_idf(df[t], n) for t in dict.fromkeys(topic)}
        return Retrieval(
            query=query,
            plan=plan.spec,
            text=text,
            hits=tuple(hits),
            lexical=tuple(lexical[:SIGNAL_DEPTH]),
            dense=None if dense is None else tuple(dense[:SIGNAL_DEPTH]),
            weights=weights,
            unknown=frozenset(t for t in weights if df.get(t, 0) == 0),
            bm25_ceiling=self._ceiling(terms, df) if signals else 0.0,
            scope=scope,
            allowed=allowed,
            vector=vector,
            signals=signals,
            chunks=n if signals else 0,
        )

    def _ceiling(self, terms: Sequence[str], df: Mapping[str, int]) -> float:
        """The most the searched terms could score in BM25: each known term's idf times
        k1+1, times the heading weight (so the gate's `bm25_top` reads the same anywhere)."""
        n = self.store.num_docs
        known = [t for t in dict.fromkeys(terms) if df.get(t, 0) > 0]
        k1 = float(self.store.manifest.lexical.get("k1", 1.5))
        return sum(bm25_idf(df[t], n) for t in known) * (k1 + 1) * (1 + self.store.heading_weight)

    def _mmr(self, ranked: Ranked, lam: float, k: int) -> Ranked:
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


def fuse(fusion: Fusion, lexical: Ranked, dense: Ranked) -> Ranked:
    """Two ranked row lists fused by `fusion`, as rows and fused scores."""
    fused = fusion.apply([[(str(i), s) for i, s in lexical], [(str(i), s) for i, s in dense]])
    return [(int(key), score) for key, score in fused]


def _mask(rows: Sequence[int] | None, size: int | None) -> Mask:
    if rows is None or size is None:
        return None
    mask = np.zeros(size, dtype=bool)
    mask[list(rows)] = True
    return mask


def _lift(ranked: Ranked, chosen: Callable[[int], bool], boost: float) -> Ranked:
    """The ranking with the chosen rows' scores raised by `boost` of themselves, re-sorted."""
    lifted = [(row, score * (1 + boost) if chosen(row) else score) for row, score in ranked]
    return sorted(lifted, key=lambda r: (-r[1], r[0]))


__all__ = ["RERANK_DEPTH", "SIGNAL_DEPTH", "Retrieval", "Retriever"]
