"""A build's catalogue on disk: chunks read by row from the memory-mapped chunks file.

Opening a build parses none of its chunks. Beside `chunks.jsonl` an ingest writes

    chunks.offsets.npy   where each chunk's line starts (n + 1 offsets, int64)
    documents.json       the document ids, and doc_rows.npy: each row's document (int32)
    keys.json            each row's chunk id and section id
    facets.json          the facet postings (`FacetIndex.records`)
    versions.json        the documents that declare versions (`Versions.dated`)

and `FileCatalog` reads a chunk by slicing its line out of the memory-mapped file, so the
processes serving one index share the file's pages, and opening takes the same time at
a thousand chunks as at a million. The keys, facets and versions are read on first use.
Parsed chunks are kept in a bounded cache (`CACHED_CHUNKS`) for the questions that come
back to them.
"""

from __future__ import annotations

import json
import mmap
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from groundqa.errors import IndexCorruptError
from groundqa.facets import FacetIndex
from groundqa.index.catalog import rows_by
from groundqa.models import Chunk
from groundqa.versions import Version, Versions

OFFSETS = "chunks.offsets.npy"
DOCUMENTS = "documents.json"
DOC_ROWS = "doc_rows.npy"
KEYS = "keys.json"
FACETS = "facets.json"
VERSIONS = "versions.json"
CATALOG_FILES = (OFFSETS, DOCUMENTS, DOC_ROWS, KEYS, FACETS, VERSIONS)
CACHED_CHUNKS = 20_000


def write_catalog(directory: Path, chunks: Sequence[Chunk]) -> None:
    """The keys, facets and versions of a build's chunks (the offsets come with the chunks
    file, see `target.write_chunks`)."""
    documents = list(dict.fromkeys(c.doc_id for c in chunks))
    number = {doc: i for i, doc in enumerate(documents)}
    (directory / DOCUMENTS).write_text(json.dumps(documents, ensure_ascii=False), "utf-8")
    np.save(directory / DOC_ROWS, np.asarray([number[c.doc_id] for c in chunks], np.int32))
    keys = {"chunk_id": [c.chunk_id for c in chunks], "section_id": [c.section_id for c in chunks]}
    (directory / KEYS).write_text(json.dumps(keys, ensure_ascii=False), "utf-8")
    records = FacetIndex(chunks).records()
    (directory / FACETS).write_text(json.dumps(records, ensure_ascii=False), "utf-8")
    dated = [v.to_dict() for v in Versions.of_chunks(chunks).dated()]
    (directory / VERSIONS).write_text(json.dumps(dated, ensure_ascii=False), "utf-8")


def has_catalog(build_dir: Path) -> bool:
    return all((build_dir / name).is_file() for name in CATALOG_FILES)


class FileCatalog:
    """The `Catalog` of a build directory, read from its files."""

    def __init__(self, build_dir: Path, chunks_file: Path, size: int) -> None:
        self._dir = build_dir
        self._file = chunks_file
        offsets: npt.NDArray[np.int64] = np.load(
            build_dir / OFFSETS, allow_pickle=False, mmap_mode="r"
        )
        if offsets.ndim != 1 or len(offsets) != size + 1:
            raise IndexCorruptError(
                f"{build_dir / OFFSETS} holds {len(offsets) - 1} offsets for {size} chunks; "
                "rebuild the index"
            )
        self._offsets = offsets
        self._size = size
        self._map: mmap.mmap | None = None
        self._cache: OrderedDict[int, Chunk] = OrderedDict()
        self._lock = threading.Lock()

    def _mapped(self) -> mmap.mmap:
        if self._map is None:
            with self._lock, self._file.open("rb") as f:
                if self._map is None:
                    self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        return self._map

    def _read(self, row: int) -> Chunk:
        if not 0 <= row < self._size:
            raise IndexCorruptError(f"{self._dir}: no chunk at row {row}; rebuild the index")
        line = self._mapped()[int(self._offsets[row]) : int(self._offsets[row + 1])]
        try:
            return Chunk.from_dict(json.loads(line))
        except (ValueError, KeyError) as exc:
            raise IndexCorruptError(
                f"{self._file} line {row + 1} is unreadable ({exc}); rebuild the index"
            ) from None

    def chunks_at(self, rows: Sequence[int]) -> list[Chunk]:
        out = []
        for row in rows:
            chunk = self._cache.get(row)
            if chunk is None:
                chunk = self._read(row)
                with self._lock:
                    self._cache[row] = chunk
                    if len(self._cache) > CACHED_CHUNKS:
                        self._cache.popitem(last=False)
            out.append(chunk)
        return out

    @cached_property
    def _keys(self) -> dict[str, Any]:
        keys = self._json(KEYS)
        return {
            "row_of": {c: i for i, c in enumerate(keys["chunk_id"])},
            "section": rows_by(keys["section_id"]),
        }

    @cached_property
    def _documents(self) -> tuple[list[str], dict[str, int], npt.NDArray[np.int32]]:
        """The document ids, each one's number, and each row's document number."""
        documents = [str(d) for d in self._json(DOCUMENTS)]
        doc_rows: npt.NDArray[np.int32] = np.load(
            self._dir / DOC_ROWS, allow_pickle=False, mmap_mode="r"
        )
        if len(doc_rows) != self._size:
            raise IndexCorruptError(f"{self._dir / DOC_ROWS} does not match the chunks; rebuild")
        return documents, {d: i for i, d in enumerate(documents)}, doc_rows

    @cached_property
    def facets(self) -> FacetIndex:
        return FacetIndex.from_records(self._size, self._json(FACETS))

    @cached_property
    def _versions(self) -> Versions:
        return Versions.resolved(Version.from_dict(d) for d in self._json(VERSIONS))

    def _json(self, name: str) -> Any:
        try:
            return json.loads((self._dir / name).read_text("utf-8"))
        except (OSError, ValueError) as exc:
            raise IndexCorruptError(
                f"{self._dir / name} is unreadable ({exc}); rebuild the index"
            ) from None

    def doc_ids(self, rows: Sequence[int]) -> list[str]:
        documents, _, doc_rows = self._documents
        return [documents[int(n)] for n in doc_rows[list(rows)]]

    def rows_of(self, chunk_ids: Iterable[str]) -> dict[str, int]:
        row_of = self._keys["row_of"]
        return {c: row_of[c] for c in chunk_ids if c in row_of}

    def chunk(self, chunk_id: str) -> Chunk | None:
        row = self._keys["row_of"].get(chunk_id)
        return None if row is None else self.chunks_at([row])[0]

    def document(self, doc_id: str) -> list[Chunk]:
        _, number, doc_rows = self._documents
        if doc_id not in number:
            return []
        return self.chunks_at(np.flatnonzero(doc_rows == number[doc_id]).tolist())

    def section(self, section_id: str) -> list[Chunk]:
        return self.chunks_at(self._keys["section"].get(section_id, []))

    def versions(self, doc_ids: Iterable[str]) -> Versions:
        return self._versions


__all__ = ["CATALOG_FILES", "FileCatalog", "has_catalog", "write_catalog"]
