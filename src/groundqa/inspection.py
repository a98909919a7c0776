"""What an index holds, checked rather than trusted.

`inspect_index` opens the current build (verifying its manifest), summarises
chunk sizes, re-reads the corpus it was built from to place every chunk
boundary in its source section, and says whether the corpus on disk has
changed since the build (a stale index is reported, never silently served as
current by `ingest`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundqa.chunking import BoundaryIssue, check_boundaries, size_summary
from groundqa.errors import GroundqaError
from groundqa.gate import gate_for
from groundqa.index.manifest import Manifest
from groundqa.index.open import open_store
from groundqa.ingestion import corpus_fingerprint, reload_recorded
from groundqa.retrieve import DEFAULT_DENSE_PLAN, DEFAULT_LEXICAL_PLAN, describe_fit
from groundqa.text import DEFAULT_ANALYZER


@dataclass(frozen=True)
class InspectReport:
    manifest: Manifest
    sizes: dict[str, float]
    split_sections: int
    boundary_issues: list[BoundaryIssue]
    staleness: str
    section_ids: list[str]
    acronyms: int = 0
    gate: str = ""
    retrieval: str = ""  # the plan the index answers with when none is named, and why
    lexical: dict[str, Any] | None = None
    vectors: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "manifest": self.manifest.to_dict(),
            "sizes": self.sizes,
            "split_sections": self.split_sections,
            "boundary_issues": [b.to_dict() for b in self.boundary_issues],
            "staleness": self.staleness,
            "acronyms": self.acronyms,
            "gate": self.gate,
            "retrieval": self.retrieval,
            "lexical_engine": self.lexical,
            "vector_engine": self.vectors,
        }


def inspect_index(index_dir: str | Path) -> InspectReport:
    loaded = open_store(index_dir)
    chunks = loaded.chunks
    manifest = loaded.manifest
    sources = manifest.corpus.get("sources", [])
    section_texts: dict[str, str] = {}
    missing = [s for s in sources if not Path(s).exists()]
    if missing:
        staleness = f"{len(missing)} source file(s) no longer exist (e.g. {missing[0]})"
    else:
        try:
            corpus = reload_recorded(manifest)
        except GroundqaError as exc:
            staleness = f"the sources cannot be re-read: {exc.message}"
        else:
            for doc in corpus.documents:
                for section in doc.sections:
                    section_texts[section.section_id] = section.text
            same = corpus_fingerprint(corpus.documents) == manifest.corpus.get("fingerprint")
            staleness = (
                "up to date with its sources"
                if same
                else "STALE: the sources changed since this build; run ingest again"
            )
    if manifest.analyzer != DEFAULT_ANALYZER:
        staleness += (
            f"; its terms were made by the {manifest.analyzer} analyzer, not the current "
            f"{DEFAULT_ANALYZER}: run ingest again to rebuild with it"
        )
    issues = check_boundaries(chunks, section_texts) if section_texts else []
    return InspectReport(
        manifest=manifest,
        sizes=size_summary(chunks),
        split_sections=len({c.section_id for c in chunks if c.parts > 1}),
        boundary_issues=issues,
        staleness=staleness,
        section_ids=sorted({c.section_id for c in chunks}),
        acronyms=len(loaded.acronyms),
        gate=gate_for(manifest.gate, manifest.fingerprint).describe(),
        retrieval=describe_fit(
            manifest.retrieval,
            DEFAULT_DENSE_PLAN if loaded.has_vectors else DEFAULT_LEXICAL_PLAN,
        ),
        lexical=loaded.lexical_engine,
        vectors=loaded.vector_engine,
    )
