"""Ingest: load, validate, chunk and index a corpus into an index directory.

Validation runs before anything is written: a BLOCK finding stops the build and
the current index stays as it was. An unchanged corpus with unchanged settings
is a no-op. A build that fails or is interrupted leaves the previous build
current (see `index.manifest`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from groundqa.chunking import ChunkerSettings, chunk_documents
from groundqa.embed import Embedder, EmbedderOptions, Matrix, get_embedder
from groundqa.errors import EmptyCorpusError, GroundqaError, Interrupted, ValidationBlocked
from groundqa.index.dense import DenseSettings, VectorIndex, describe, read_vectors, text_key
from groundqa.index.directory import BM25_DIR, write_acronyms, write_catalog, write_chunks
from groundqa.index.lexical import BM25Settings, LexicalIndex
from groundqa.index.manifest import (
    Manifest,
    build_lock,
    current_build,
    new_build_id,
    read_manifest,
    write_build,
)
from groundqa.index.open import is_store_url
from groundqa.loaders import LoadResult, OcrBudget, load
from groundqa.models import Chunk, Document, Finding
from groundqa.query.acronyms import mine_acronyms
from groundqa.text import Analyzer
from groundqa.validate import has_blocking, validate


class Reporter(Protocol):
    """Receives progress from long work; the CLI draws bars, a library user may ignore it."""

    def stage(self, name: str, total: int | None = None) -> None: ...

    def advance(self, n: int = 1) -> None: ...


class NullReporter:
    def stage(self, name: str, total: int | None = None) -> None:
        return None

    def advance(self, n: int = 1) -> None:
        return None


def ocr_progress(reporter: Reporter, after: str = "loading") -> Callable[[str, int, int], None]:
    """OCR's page-by-page progress as a stage of `reporter`, one per PDF read; when a
    PDF is done the stage goes back to `after`."""

    def heard(name: str, done: int, total: int) -> None:
        if done == 0:
            reporter.stage(f"OCR {name}", total=total)
        elif done == total:
            reporter.advance()
            reporter.stage(after)
        else:
            reporter.advance()

    return heard


@dataclass(frozen=True)
class IngestReport:
    index_dir: str
    build_id: str
    changed: bool
    counts: dict[str, int]
    findings: tuple[Finding, ...] = ()
    seconds: float = 0.0
    timings_s: dict[str, float] = field(default_factory=dict)
    # set when the previous build's calibration could not be kept, and what fitting the
    # gate's floor to the new build found
    gate_note: str = ""
    plan_note: str = ""  # what fitting the retrieval plan to the build chose, and why
    lexical_note: str = ""  # how the store searches BM25, where it has a choice

    @property
    def message(self) -> str:
        n = self.counts
        what = (
            f"{n.get('documents', 0)} documents, {n.get('sections', 0)} sections, "
            f"{n.get('chunks', 0)} chunks"
        )
        note = "".join(f"; {n}" for n in (self.plan_note, self.gate_note) if n)
        if not self.changed:
            return f"index at {self.index_dir} is up to date ({what}); nothing to do{note}"
        embedded = self.timings_s.get("embedded_chunks")
        chunks = n.get("chunks", 0)
        if embedded is not None and embedded < chunks:
            note += f"; embedded {int(embedded)} of {chunks} chunks, the rest kept their vectors"
        if self.lexical_note:
            note += f"; BM25: {self.lexical_note}"
        return f"built {self.index_dir} ({what}) in {self.seconds:.2f}s{note}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index_dir,
            "build_id": self.build_id,
            "changed": self.changed,
            "counts": dict(self.counts),
            "findings": [f.to_dict() for f in self.findings],
            "seconds": round(self.seconds, 4),
            "timings_s": {k: round(v, 4) for k, v in self.timings_s.items()},
            "lexical": self.lexical_note or None,
            "retrieval": self.plan_note or None,
            "message": self.message,
        }


# Formats whose headings do not name one section: a BEIR title names a whole paper,
# and an ObliQA breadcrumb is the chapter path shared by dozens of clauses. Boosting
# them costs nDCG@10 while section headings gain; `bench/retrieval.py` measures both
# weights on natech, SciFact train and ObliQA dev (the "breadcrumb field" table).
NO_HEADING_BOOST = frozenset({"beir", "obliqa"})

# "off" makes an ingest into PostgreSQL skip the pg_textsearch index even where the server
# has it (BM25 then runs in SQL, see `index.postgres.bm25`); "auto", the default, uses it.
PG_BM25_ENV = "GROUNDQA_PG_BM25"


# Vectors by default: the offline MiniLM, exact search below 100,000 chunks.
DEFAULT_DENSE = DenseSettings()


def default_bm25(documents: Sequence[Document]) -> BM25Settings:
    """BM25 settings for a corpus: a heading boost unless its headings are not section names."""
    if documents and all(d.format in NO_HEADING_BOOST for d in documents):
        return BM25Settings(heading_weight=0.0)
    return BM25Settings()


def reload_recorded(manifest: Manifest) -> LoadResult:
    """The corpus read again as the build recorded reading it: its sources, format, OCR
    setting and OCR budget (`inspect` and `calibrate --synthetic` compare it with the
    build by `corpus_fingerprint`)."""
    return load(
        [str(s) for s in manifest.corpus.get("sources", [])],
        fmt=str(manifest.corpus.get("format", "auto")),
        ocr=bool(manifest.corpus.get("ocr", True)),
        ocr_budget=OcrBudget(*manifest.corpus.get("ocr_budget", ())),
    )


def corpus_fingerprint(documents: Sequence[Document]) -> str:
    h = hashlib.sha256()
    for doc in documents:
        h.update(json.dumps(doc.to_dict(), sort_keys=True, ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def _settings_fingerprint(parts: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()


def ingest(
    sources: Sequence[str | Path],
    index_dir: str | Path,
    *,
    fmt: str = "auto",
    columns: Mapping[str, str] | None = None,
    chunker: ChunkerSettings | None = None,
    bm25: BM25Settings | None = None,
    dense: DenseSettings | None = DEFAULT_DENSE,
    embedder_options: EmbedderOptions | None = None,
    force: bool = False,
    reporter: Reporter | None = None,
    ocr: bool = True,
    follow_links: bool = False,
    ocr_budget: OcrBudget | None = None,
    fit_gate: Callable[[str], str] | None = None,
    fit_plan: Callable[[str], str] | None = None,
) -> IngestReport:
    """Build (or confirm up to date) the index for `sources` at `index_dir`.

    `dense=None` builds a BM25-only index (no embedding model needed); `ocr=False` reports
    PDF pages without a text layer instead of reading them by OCR, and `ocr_budget` says
    how long OCR may take (the defaults when None; its progress goes to `reporter`
    unless it has its own); `follow_links` reads
    symbolic links in a corpus folder that point outside it (see `loaders.load`);
    `fit_gate` fits the gate to the build (`groundqa ingest` passes
    `evaluate.selffit.self_fit`, which fits its floor and band), after `fit_plan` fits the
    retrieval plan (`groundqa ingest` passes `evaluate.planfit.tune_plan`), since the
    gate's features are read from what that plan retrieves. The embedder is loaded first,
    so a wrong model name fails before the corpus is read; a remote embedder that fails
    mid-build leaves the previous index current.
    """
    reporter = reporter or NullReporter()
    target = _target(index_dir)
    started = time.perf_counter()
    timings: dict[str, float] = {}
    try:
        embedder = None if dense is None else get_embedder(dense.embedder, embedder_options)
        reporter.stage("loading")
        budget = ocr_budget or OcrBudget()
        if budget.progress is None:
            budget.progress = ocr_progress(reporter)
        loaded = load(
            sources,
            fmt=fmt,
            columns=columns,
            ocr=ocr,
            follow_links=follow_links,
            ocr_budget=budget,
        )
        timings["load"] = time.perf_counter() - started
        t = time.perf_counter()
        reporter.stage("validating")
        findings = validate(loaded.documents, load_findings=loaded.findings)
        timings["validate"] = time.perf_counter() - t
        if has_blocking(findings):
            raise ValidationBlocked(findings)
        if not loaded.documents or not any(d.sections for d in loaded.documents):
            raise EmptyCorpusError(
                "the corpus has no text to index; check the paths given to ingest"
            )
        return _build(
            target,
            _Build(
                documents=loaded.documents,
                findings=findings,
                corpus={
                    "sources": list(loaded.sources),
                    "format": fmt,
                    "ocr": ocr,
                    "ocr_budget": [budget.file_s, budget.build_s],
                },
                chunker=chunker or ChunkerSettings(),
                bm25=bm25,
                dense=dense,
                embedder=embedder,
                force=force,
                fit_gate=fit_gate,
                fit_plan=fit_plan,
            ),
            reporter,
            started,
            timings,
        )
    except KeyboardInterrupt:
        raise _interrupted(target) from None


def ingest_documents(
    documents: Sequence[Document],
    index_dir: str | Path,
    *,
    chunker: ChunkerSettings | None = None,
    bm25: BM25Settings | None = None,
    dense: DenseSettings | None = DEFAULT_DENSE,
    embedder_options: EmbedderOptions | None = None,
    force: bool = False,
    reporter: Reporter | None = None,
    fit_gate: Callable[[str], str] | None = None,
    fit_plan: Callable[[str], str] | None = None,
) -> IngestReport:
    """Index Documents made elsewhere (not by `load`, and not validated here) at
    `index_dir`, as `ingest` indexes what it loads: the same chunking, indexes, manifest
    and atomic switch to the new build. For a baseline built from another reader's text."""
    target = _target(index_dir)
    started = time.perf_counter()
    try:
        embedder = None if dense is None else get_embedder(dense.embedder, embedder_options)
        if not documents or not any(d.sections for d in documents):
            raise EmptyCorpusError("there are no documents with text to index")
        build = _Build(
            documents=documents,
            findings=[],
            corpus={},
            chunker=chunker or ChunkerSettings(),
            bm25=bm25,
            dense=dense,
            embedder=embedder,
            force=force,
            fit_gate=fit_gate,
            fit_plan=fit_plan,
        )
        return _build(target, build, reporter or NullReporter(), started, {})
    except KeyboardInterrupt:
        raise _interrupted(target) from None


def _target(index_dir: str | Path) -> Target:
    if is_store_url(index_dir):
        return _postgres_target(str(index_dir))
    return DirectoryTarget(Path(index_dir))


def _interrupted(target: Target) -> Interrupted:
    """What Ctrl-C during a build is: one clear error; the previous build stays current."""
    return Interrupted(
        f"ingest interrupted; the previous index at {target.location} (if any) is unchanged"
    )


@dataclass(frozen=True)
class _Build:
    """What one build is made from, once the corpus is loaded and checked."""

    documents: Sequence[Document]
    findings: Sequence[Finding]
    corpus: dict[str, Any]  # what the manifest records of where the corpus came from
    chunker: ChunkerSettings
    bm25: BM25Settings | None  # None: the default for these documents
    dense: DenseSettings | None
    embedder: Embedder | None
    force: bool
    # Fits the gate to the build now current (index location -> a note for the report),
    # e.g. `evaluate.selffit.self_fit`; None: the gate is left as the build has it.
    fit_gate: Callable[[str], str] | None = None
    # Fits the retrieval plan the same way (`evaluate.planfit.tune_plan`), before the gate.
    fit_plan: Callable[[str], str] | None = None


def _write_build(
    target: Target,
    build: _Build,
    reporter: Reporter,
    started: float,
    timings: dict[str, float],
) -> IngestReport:
    """Chunk, index and write `build` to `target`, or confirm the current build is it."""
    documents, chunker, dense, embedder = (
        build.documents,
        build.chunker,
        build.dense,
        build.embedder,
    )
    index_path = target.location
    findings = tuple(build.findings)
    bm25 = build.bm25 or default_bm25(documents)
    analyzer = Analyzer()
    settings: dict[str, Any] = {
        "chunker": chunker.to_dict(),
        "lexical": bm25.to_dict(),
        "analyzer": analyzer.name,
        "dense": (
            None
            if dense is None or embedder is None
            else {**dense.to_dict(), "model_id": embedder.model_id}
        ),
    }
    fingerprint = corpus_fingerprint(documents)
    build_fingerprint = _settings_fingerprint({"corpus": fingerprint, **settings})
    severity_counts = Counter(f.severity for f in findings)
    with target.lock():
        previous = target.current_manifest()
        if previous and previous.fingerprint == build_fingerprint and not build.force:
            return IngestReport(
                index_dir=index_path,
                build_id=previous.build_id,
                changed=False,
                counts=previous.counts,
                findings=findings,
                seconds=time.perf_counter() - started,
                timings_s=timings,
            )
        gate, gate_note = _carried_gate(previous, build_fingerprint)
        t = time.perf_counter()
        reporter.stage("chunking", total=len(documents))
        chunks = chunk_documents(documents, chunker)
        reporter.advance(len(documents))
        timings["chunk"] = time.perf_counter() - t
        counts = {
            "documents": len(documents),
            "sections": sum(len(d.sections) for d in documents),
            "chunks": len(chunks),
        }

        def make_manifest(build_id: str, dense_entry: dict[str, Any]) -> Manifest:
            return Manifest(
                build_id=build_id or new_build_id(),
                created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                corpus={
                    "fingerprint": fingerprint,
                    "build_fingerprint": build_fingerprint,
                    **build.corpus,
                },
                chunker=settings["chunker"],
                lexical=settings["lexical"],
                analyzer=analyzer.name,
                gate=gate,
                dense=dense_entry,
                timings_s={k: round(v, 3) for k, v in timings.items()},
                counts=counts,
                findings={k: int(v) for k, v in severity_counts.items()},
            )

        t = time.perf_counter()
        build_input = BuildInput(
            chunks=chunks,
            documents=documents,
            analyzer=analyzer,
            bm25=bm25,
            dense=dense,
            embedder=embedder,
            # Without the section path it reaches neither the body, the breadcrumb
            # field (which then holds the title) nor the vectors; chunks keep it.
            with_path=chunker.section_path,
            make_manifest=make_manifest,
            timings=timings,
        )
        manifest = target.write(build_input, reporter)
        timings["write"] = (
            time.perf_counter() - t - sum(timings.get(k, 0.0) for k in ("index", "embed"))
        )
    return IngestReport(
        index_dir=index_path,
        build_id=manifest.build_id,
        changed=True,
        counts=counts,
        findings=findings,
        seconds=time.perf_counter() - started,
        timings_s=timings,
        gate_note=gate_note,
        lexical_note=build_input.notes.get("lexical", ""),
    )


def _build(
    target: Target,
    build: _Build,
    reporter: Reporter,
    started: float,
    timings: dict[str, float],
) -> IngestReport:
    """`_write_build`, then the fits over the build now current: `build.fit_plan` where
    the build has no plan fit yet, and `build.fit_gate` after a new build or for one whose
    gate was never fitted (or fitted before the band was), unless it is calibrated."""
    report = _write_build(target, build, reporter, started, timings)
    if build.fit_plan is None and build.fit_gate is None:
        return report
    # Each fit is a query stage, run over the build now current through the engine as a
    # user's questions will be asked of it; the build side only calls it.
    plan_note, gate_notes = report.plan_note, [report.gate_note]
    with target.lock():
        manifest = target.current_manifest()
    retrieval = manifest.retrieval if manifest is not None else {}
    if build.fit_plan is not None and "plan_fit" not in retrieval:
        t = time.perf_counter()
        reporter.stage("fitting the retrieval plan")
        plan_note = build.fit_plan(report.index_dir)
        timings["plan_fit"] = time.perf_counter() - t
    gate = manifest.gate if manifest is not None else {}
    # A gate fitted before the band was (an entry without one) is fitted again.
    refit = report.changed or "band" not in gate.get("self_fit", {})
    if build.fit_gate is not None and not gate.get("calibrated") and refit:
        t = time.perf_counter()
        reporter.stage("fitting the gate's floor and band")
        gate_notes.append(build.fit_gate(report.index_dir))
        timings["self_fit"] = time.perf_counter() - t
    return replace(
        report,
        seconds=time.perf_counter() - started,
        timings_s=timings,
        plan_note=plan_note,
        gate_note="; ".join(n for n in gate_notes if n),
    )


@dataclass(frozen=True)
class BuildInput:
    """What a store needs to write one build."""

    chunks: Sequence[Chunk]
    documents: Sequence[Document]
    analyzer: Analyzer
    bm25: BM25Settings
    dense: DenseSettings | None
    embedder: Embedder | None
    with_path: bool
    make_manifest: Callable[[str, dict[str, Any]], Manifest]  # (build id or "", dense entry)
    timings: dict[str, float]
    # What the store says of the build for the report, e.g. {"lexical": "pg_textsearch 0.6.1"}.
    notes: dict[str, str] = field(default_factory=dict)

    def index_texts(self) -> list[str]:
        return [c.index_text(self.with_path) for c in self.chunks]


class Target(Protocol):
    """Where an ingest writes: `lock` first, then read the current manifest and write."""

    @property
    def location(self) -> str: ...

    def lock(self) -> contextlib.AbstractContextManager[None]: ...

    def current_manifest(self) -> Manifest | None: ...

    def write(self, build: BuildInput, reporter: Reporter) -> Manifest: ...


class DirectoryTarget:
    """An index directory: bm25s and numpy files sealed into a build (see `index.manifest`)."""

    def __init__(self, index_dir: Path) -> None:
        self.index_dir = index_dir
        # The current build as `current_manifest` found it, its files verified (under the
        # lock): the one whose vectors a write may reuse.
        self._current: tuple[Path, Manifest] | None = None

    @property
    def location(self) -> str:
        return str(self.index_dir)

    def lock(self) -> contextlib.AbstractContextManager[None]:
        return build_lock(self.index_dir)

    def current_manifest(self) -> Manifest | None:
        self._current = None
        try:
            build_dir = current_build(self.index_dir)
            manifest = read_manifest(build_dir)
        except GroundqaError:
            return None
        self._current = (build_dir, manifest)
        return manifest

    def write(self, build: BuildInput, reporter: Reporter) -> Manifest:
        chunks, timings = build.chunks, build.timings

        def write(tmp: Path) -> Manifest:
            t_index = time.perf_counter()
            reporter.stage("indexing (bm25)", total=len(chunks))
            lexical = LexicalIndex.build(
                build.index_texts(),
                build.analyzer,
                build.bm25,
                [c.breadcrumb if build.with_path else c.title for c in chunks],
            )
            lexical.save(tmp / BM25_DIR)
            reporter.advance(len(chunks))
            write_chunks(tmp, chunks)
            write_catalog(tmp, chunks)
            write_acronyms(tmp, mine_acronyms(c.text for c in chunks))
            timings["index"] = time.perf_counter() - t_index
            dense_entry: dict[str, Any] = {}
            if build.dense is not None and build.embedder is not None:
                t_embed = time.perf_counter()
                reporter.stage(f"embedding ({build.embedder.name})", total=len(chunks))
                vectors = self._vectors(build, build.embedder, reporter)
                VectorIndex.build(vectors, build.dense).save(tmp)
                dense_entry = describe(build.embedder, int(vectors.shape[1]), build.dense)
                timings["embed"] = time.perf_counter() - t_embed
            return build.make_manifest("", dense_entry)

        reporter.stage("writing")
        return write_build(self.index_dir, write)

    def _vectors(self, build: BuildInput, embedder: Embedder, reporter: Reporter) -> Matrix:
        """Every chunk's vector: the current build's for a text it embedded with this
        embedder, the embedder's for the rest (so an edit embeds only changed chunks)."""
        texts = build.index_texts()
        known = self._known_vectors(embedder)
        keys = [text_key(t) for t in texts]
        todo = [i for i, key in enumerate(keys) if key not in known]
        fresh = embedder.embed([texts[i] for i in todo], reporter.advance) if todo else None
        dim = int(fresh.shape[1]) if fresh is not None else len(next(iter(known.values())))
        vectors = np.empty((len(texts), dim), dtype=np.float32)
        for i, key in enumerate(keys):
            if key in known:
                vectors[i] = known[key]
        if fresh is not None:
            vectors[todo] = fresh
        reporter.advance(len(texts) - len(todo))
        build.timings["embedded_chunks"] = float(len(todo))
        build.timings["reused_vectors"] = float(len(texts) - len(todo))
        return vectors

    def _known_vectors(self, embedder: Embedder) -> dict[str, Matrix]:
        """The current build's vectors by the text each embeds, if this embedder made them
        (the build `current_manifest` verified; none when it was not asked)."""
        from groundqa.index.directory import read_chunks

        if self._current is None:
            return {}
        build_dir, manifest = self._current
        if manifest.dense.get("model_id") != embedder.model_id:
            return {}
        try:
            chunks = read_chunks(build_dir)
            vectors = read_vectors(build_dir)
        except GroundqaError:
            return {}
        if len(chunks) != len(vectors):
            return {}
        with_path = ChunkerSettings.from_dict(manifest.chunker).section_path
        return {text_key(c.index_text(with_path)): vectors[i] for i, c in enumerate(chunks)}


class _PostgresTarget:
    """The PostgreSQL store (see `index.postgres`): unchanged documents are copied inside
    the database and known chunk texts keep their vectors."""

    def __init__(self, url: str) -> None:
        from groundqa.index.postgres import PostgresTarget

        self.target = PostgresTarget(url, bm25=os.environ.get(PG_BM25_ENV) or "auto")

    @property
    def location(self) -> str:
        return self.target.location

    def lock(self) -> contextlib.AbstractContextManager[None]:
        return self.target.lock()

    def current_manifest(self) -> Manifest | None:
        return self.target.current_manifest()

    def write(self, build: BuildInput, reporter: Reporter) -> Manifest:
        embedder = build.embedder if build.dense is not None else None
        dense = build.dense
        reporter.stage("writing (postgresql)", total=len(build.chunks))
        manifest, stats = self.target.write(
            build.chunks,
            {d.doc_id: document_hash(d) for d in build.documents},
            analyzer=build.analyzer,
            with_path=build.with_path,
            heading_weight=build.bm25.heading_weight,
            embedder=embedder,
            make_manifest=build.make_manifest,
            dense_entry=lambda dim: (
                describe(embedder, dim, dense) if embedder is not None and dense else {}
            ),
            acronyms=mine_acronyms(c.text for c in build.chunks),
            progress=reporter.advance,
        )
        build.timings.update(stats.timings_s)
        build.timings["index"] = sum(
            stats.timings_s.get(k, 0.0) for k in ("index_lexical", "index_vectors", "index_bm25")
        )
        build.notes["lexical"] = stats.lexical
        build.timings["copied_documents"] = float(stats.copied_documents)
        build.timings["embedded_chunks"] = float(stats.embedded_chunks)
        return manifest


def _postgres_target(url: str) -> Target:
    return _PostgresTarget(url)


def document_hash(doc: Document) -> str:
    """Changes whenever anything about the document does (text, metadata, structure)."""
    raw = json.dumps(doc.to_dict(), sort_keys=True, ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(raw).hexdigest()


def _carried_gate(previous: Manifest | None, build_fingerprint: str) -> tuple[dict[str, Any], str]:
    """The gate for a new build: the previous calibration when it was made for an identical
    build (a forced rebuild), else none (`{}`: the engine uses the built-in default gate),
    with a note when a calibration is dropped. Ingestion stores a calibration without
    reading it: the gate is a query stage, and the build side does not import it."""
    stored = previous.gate if previous else {}
    if not stored.get("calibrated"):
        return {}, ""
    if stored.get("index_fingerprint") == build_fingerprint:
        return dict(stored), ""
    return {}, (
        "the corpus or settings changed, so the gate calibration was dropped; "
        "run `groundqa calibrate` again"
    )
