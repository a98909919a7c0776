"""Writing an index directory: the files of one build, into the folder it is being made in.

`ingestion.DirectoryTarget` builds the BM25 index and the vectors, and calls these for the
chunks and the acronyms; `index.manifest.write_build` then seals every file in the manifest
and swaps `current` to the new build.

These functions write only into the temporary folder `write_build` hands them, never into
a build that is served, and seal nothing themselves: a file written here counts only once
the manifest lists its size and hash.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from groundqa.index.directory.catalog import OFFSETS
from groundqa.index.directory.store import ACRONYMS, CHUNKS
from groundqa.models import Chunk


def write_acronyms(directory: Path, acronyms: dict[str, str]) -> None:
    (directory / ACRONYMS).write_text(
        json.dumps(acronyms, ensure_ascii=False, indent=1, sort_keys=True), "utf-8"
    )


def write_chunks(directory: Path, chunks: Sequence[Chunk]) -> None:
    """The chunks file, one JSON object a line, and where each line starts (`catalog`)."""
    sizes = []
    with (directory / CHUNKS).open("wb") as f:
        for chunk in chunks:
            line = json.dumps(chunk.to_dict(), ensure_ascii=False, sort_keys=True) + "\n"
            data = line.encode("utf-8")
            f.write(data)
            sizes.append(len(data))
    np.save(directory / OFFSETS, np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]))
