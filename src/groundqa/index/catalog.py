"""The catalogue of a build: chunks by row, id, document and section; facets; versions.

Scoring needs only the indexes; everything else the query side reads about chunks comes
through a `Catalog`: the hits' text and citations, a document or section for the API and
MCP, the facets that filters and scopes become masks with, and the versions that decide
which text is in force. `MemoryCatalog` answers from chunks held in memory (the index
directory); the PostgreSQL store answers each call with SQL, so a worker holds no corpus.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property
from typing import Protocol

from groundqa.facets import FacetIndex, Facets
from groundqa.models import Chunk
from groundqa.versions import Versions


class Catalog(Protocol):
    """Chunks by key, facets and versions of one build. Safe to share between threads."""

    @property
    def facets(self) -> Facets: ...

    def chunks_at(self, rows: Sequence[int]) -> list[Chunk]:
        """The chunks at `rows`, in that order."""
        ...

    def doc_ids(self, rows: Sequence[int]) -> list[str]:
        """The document of each row, in that order."""
        ...

    def rows_of(self, chunk_ids: Iterable[str]) -> dict[str, int]:
        """The rows of the chunk ids given that the build holds."""
        ...

    def chunk(self, chunk_id: str) -> Chunk | None:
        """The chunk with this id (None when the build has none)."""
        ...

    def document(self, doc_id: str) -> list[Chunk]:
        """A document's chunks in reading order (empty when the id is unknown)."""
        ...

    def section(self, section_id: str) -> list[Chunk]:
        """A section's chunks in reading order (empty when the id is unknown)."""
        ...

    def versions(self, doc_ids: Iterable[str]) -> Versions:
        """What `Versions` needs to judge these documents: at least their families."""
        ...


class MemoryCatalog:
    """A catalogue over chunks held in memory, in row order."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self._chunks = chunks

    @cached_property
    def facets(self) -> FacetIndex:
        return FacetIndex(self._chunks)

    @cached_property
    def _versions(self) -> Versions:
        return Versions.of_chunks(self._chunks)

    @cached_property
    def _row_of(self) -> dict[str, int]:
        return {c.chunk_id: i for i, c in enumerate(self._chunks)}

    @cached_property
    def _rows_by(self) -> dict[str, dict[str, list[int]]]:
        """Rows by doc_id and by section_id."""
        return {
            "doc": rows_by([c.doc_id for c in self._chunks]),
            "section": rows_by([c.section_id for c in self._chunks]),
        }

    def chunks_at(self, rows: Sequence[int]) -> list[Chunk]:
        return [self._chunks[r] for r in rows]

    def doc_ids(self, rows: Sequence[int]) -> list[str]:
        return [self._chunks[r].doc_id for r in rows]

    def rows_of(self, chunk_ids: Iterable[str]) -> dict[str, int]:
        return {c: self._row_of[c] for c in chunk_ids if c in self._row_of}

    def chunk(self, chunk_id: str) -> Chunk | None:
        row = self._row_of.get(chunk_id)
        return None if row is None else self._chunks[row]

    def document(self, doc_id: str) -> list[Chunk]:
        return self.chunks_at(self._rows_by["doc"].get(doc_id, []))

    def section(self, section_id: str) -> list[Chunk]:
        return self.chunks_at(self._rows_by["section"].get(section_id, []))

    def versions(self, doc_ids: Iterable[str]) -> Versions:
        return self._versions


def rows_by(values: Sequence[str]) -> dict[str, list[int]]:
    """The rows of each value, in row order."""
    out: dict[str, list[int]] = {}
    for row, value in enumerate(values):
        out.setdefault(value, []).append(row)
    return out


__all__ = ["Catalog", "MemoryCatalog", "rows_by"]
