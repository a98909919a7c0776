"""The Engine: one opened index, and each stage of the ask pipeline handed what it needs.

    Query -> query (a follow-up made standalone) -> retrieve -> Retrieval -> read -> Reading
          -> gate -> GateDecision -> generate -> Generation -> audit -> Answer

Each arrow carries one frozen object, made once: the gate's features come from
the Retrieval and the Reading, and the extractive generator quotes from the same
Reading. The logic is in the stages; the Engine opens the index, holds the stages it
built over it and times the walk. The shells and the harness build a `Query` for it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from groundqa.audit import audited
from groundqa.embed import Embedder, EmbedderOptions
from groundqa.errors import GenerationError, IndexVersionError, UsageError
from groundqa.facets import Facets
from groundqa.gate import Gate, gate_features, gate_for
from groundqa.generate import Evidence, Generation, Generator, answered, get_generator
from groundqa.index.base import Store
from groundqa.index.catalog import Catalog
from groundqa.index.manifest import Manifest
from groundqa.index.open import open_store
from groundqa.models import REFUSAL, Answer, Chunk, Hit
from groundqa.providers import GeneratorOptions
from groundqa.query import Query, check_k
from groundqa.query.conversation import Followup, Vocabulary, resolve
from groundqa.read import DEFAULT_READER, READERS, Reader, Reading
from groundqa.read.model import load_answer_model
from groundqa.retrieve import Retrieval, Retriever
from groundqa.text import Analyzer, PassageTerms


class Engine:
    """Answers questions from one index. Safe to share between threads for reads."""

    def __init__(
        self,
        store: Store,
        analyzer: Analyzer | None = None,
        embedder_options: EmbedderOptions | None = None,
        embedder: Embedder | None = None,
        reader: str = DEFAULT_READER,
    ) -> None:
        if reader not in READERS:
            raise UsageError(f"unknown reader {reader!r}; choose one of: {', '.join(READERS)}")
        analyzer = analyzer or Analyzer(store.manifest.analyzer)
        if analyzer.name != store.manifest.analyzer:
            raise IndexVersionError(
                f"{store.location}: built with the {store.manifest.analyzer!r} analyzer, "
                f"opened with {analyzer.name!r}; open it without naming an analyzer"
            )
        self.store = store
        self.analyzer = analyzer
        self.retriever = Retriever(store, analyzer, embedder_options, embedder)
        self.passage_text = PassageTerms(analyzer)
        model = load_answer_model() if reader == "model" else None
        self.reader = Reader(self.passage_text, self.retriever.section_path, model=model)
        self.gate: Gate = gate_for(
            store.manifest.gate, store.manifest.fingerprint, reader=model is not None
        )
        self.vocabulary = Vocabulary.of(analyzer, self.retriever.facets)
        self._generators: dict[tuple[str, GeneratorOptions], Generator] = {}

    @classmethod
    def open(
        cls,
        location: str | Path,
        embedder_options: EmbedderOptions | None = None,
        reader: str = DEFAULT_READER,
    ) -> Engine:
        """Open the current build of an index directory or a `postgresql://` store;
        `embedder_options` reach a remote query embedder. `reader` is "lexical" (word
        coverage, the default) or "model" (the answer model reads the top passages)."""
        return cls(open_store(location), None, embedder_options, reader=reader)

    def reopen(self) -> Engine:
        """An Engine over the build the same index holds now (after a rebuild). The query
        model already loaded is kept when the new build was embedded by the same one, so a
        server does not load a model again at each rebuild."""
        store = self.store.reopen()
        same = store.manifest.dense.get("embedder") == self.manifest.dense.get("embedder")
        kept = self.retriever.loaded_embedder if same else None
        # A rebuild may have changed the analyzer (an index rebuilt after an upgrade).
        analyzer = self.analyzer if self.analyzer.name == store.manifest.analyzer else None
        return Engine(
            store, analyzer, self.retriever.embedder_options, kept, reader=self.reader_kind
        )

    # The index, as the shells and the harness see it -------------------------------------

    @property
    def reader_kind(self) -> str:
        """ "model" when the answer model reads the passages, "lexical" when it does not."""
        return "model" if self.reader.model is not None else "lexical"

    @property
    def retrievers(self) -> tuple[str, ...]:
        """The retrieval methods this index can serve."""
        return self.retriever.methods

    @property
    def default_retriever(self) -> str:
        """The plan used when none is named (see `retrieve.plan`)."""
        return self.retriever.default_plan

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

    @property
    def catalog(self) -> Catalog:
        """Chunks by id, document and section (see `index.catalog`)."""
        return self.store.catalog

    @property
    def facets(self) -> Facets:
        return self.retriever.facets

    @property
    def fingerprint(self) -> str:
        """Changes whenever the build or its gate does: the key that keeps cached answers
        from going stale."""
        return f"{self.manifest.build_id}:{self.manifest.fingerprint}:{self.gate.digest}"

    def generator(self, spec: str, options: GeneratorOptions | None = None) -> Generator:
        """The generator for `spec`, created once per engine (a local model loads only once)."""
        key = (spec, options or GeneratorOptions())
        gen = self._generators.get(key)
        if gen is None:
            gen = self._generators[key] = get_generator(spec, key[1])
        return gen

    # The pipeline ------------------------------------------------------------------------

    def resolve(self, question: Query | str, **fields: Any) -> tuple[Query, Followup]:
        """The query to retrieve and answer for, and how its conversation was read (see
        `query.conversation.resolve`)."""
        query = Query.of(question, **fields)
        gen = self.generator(query.generator, query.options) if query.history else None
        return resolve(query, self.vocabulary, gen)

    def retrieval(
        self, question: Query | str, depth: int | None = None, **fields: Any
    ) -> Retrieval:
        """The retrieve stage: ranked chunks to `depth` (default: the preset's k) and each
        method's own best. Evaluation asks deeper than a user may (recall@100)."""
        query = Query.of(question, **fields)
        return self.retriever.retrieve(query, depth if depth is not None else query.settings()[1].k)

    def search(self, question: Query | str, depth: int, **fields: Any) -> list[Hit]:
        """The ranked hits to any depth, and nothing else: the methods the plan does not
        rank with are not run (ranking evaluation; see `Retriever.retrieve`)."""
        query = Query.of(question, **fields)
        return list(self.retriever.retrieve(query, depth, signals=False).hits)

    def retrieve(self, question: Query | str, k: int = 5, **fields: Any) -> list[Hit]:
        """Top-k chunks for a user's question; k is capped for interactive use."""
        return self.search(question, check_k(k), **fields)

    def read(self, retrieval: Retrieval) -> Reading:
        """The read stage: what the retrieved passages' sentences say about the question."""
        return self.reader.read(retrieval.query.question, retrieval.weights, retrieval.hits)

    def ask(
        self, question: Query | str, *, retrieval: Retrieval | None = None, **fields: Any
    ) -> Answer:
        """Retrieve, read, gate, answer and audit (see `ask_stream`)."""
        *_, answer = self.ask_stream(question, retrieval=retrieval, **fields)
        assert isinstance(answer, Answer)  # ask_stream always ends with the Answer
        return answer

    def ask_stream(
        self, question: Query | str, *, retrieval: Retrieval | None = None, **fields: Any
    ) -> Iterator[list[Hit] | str | Answer]:
        """`ask` as it happens: the retrieved hits, then answer text pieces, then the Answer.

        `question` is a Query, or a question with Query fields as keywords. A `retrieval`
        made for this query to at least its k (evaluation retrieves deeper once and asks
        from it) is used instead of searching again, unless it was made without the gate's
        signals. A generator that fails gives an Answer with `error` set and the passages
        kept.
        """
        started = time.perf_counter()
        query, followup = self.resolve(question, **fields)
        t_resolved = time.perf_counter()
        gen = self.generator(query.generator, query.options)
        intent, settings = query.settings()
        if retrieval is None or not retrieval.signals:
            retrieval = self.retriever.retrieve(query, check_k(settings.k))
        retrieval = retrieval.top(settings.k)
        yield list(retrieval.hits)
        t_retrieved = time.perf_counter()
        reading = self.read(retrieval)
        t_read = time.perf_counter()
        decision = self.gate.for_reading(reading).decide(
            retrieval.weights, gate_features(retrieval, reading)
        )
        t_gated = time.perf_counter()
        timings = {
            "retrieve": (t_retrieved - t_resolved) * 1000,
            "read": (t_read - t_retrieved) * 1000,
            "gate": (t_gated - t_read) * 1000,
        }
        if followup.turns_used:
            timings["rewrite"] = (t_resolved - started) * 1000
        answer = Answer(
            question=followup.question,
            answer=REFUSAL,
            refused=True,
            citations=(),
            passages=retrieval.hits,
            gate=decision,
            refused_by="gate",
            generator=gen.name,
            scope={k: list(v) for k, v in retrieval.scope.items()},
            intent=intent,
            notes=followup.notes() + reading.notes(),
            standalone_question=followup.standalone if followup.rewritten else None,
        )
        if decision.answer:
            result: Generation | str = f"{gen.name} returned no answer"
            try:
                for piece in gen.stream(Evidence.of(query, retrieval, reading, self.passage_text)):
                    if isinstance(piece, Generation):
                        result = piece
                    else:
                        yield piece
            except GenerationError as exc:
                result = exc.message
            timings["generate"] = (time.perf_counter() - t_gated) * 1000
            answer = answered(answer, result, self.catalog, query.day)
        timings["total"] = (time.perf_counter() - started) * 1000
        answer = replace(answer, timings_ms=timings)
        yield answer if answer.error else audited(answer)
