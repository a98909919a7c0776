"""Metadata from beside the documents: sidecar files and folder defaults.

A PDF or a CSV has no front matter, yet a regulation needs its jurisdiction,
state, area and dates. Two YAML files supply them:

- `<file>.meta.yaml` beside a file (`noise_act.pdf.meta.yaml`) describes that
  file's documents;
- `_meta.yaml` in a folder describes every document under that folder
  (`local/fennick/_meta.yaml` with `jurisdiction: local`, `area: Fennick City`).

Folder defaults apply from the folder that was loaded down to the file's own
folder, the inner folder winning; a document's own metadata (front matter, CSV
columns) wins over them; a sidecar wins over everything, because it names one
file. Only folders inside the loaded folder are read: a `_meta.yaml` above it
belongs to someone else. A sidecar that is not valid YAML, or not a mapping, is
a BLOCK finding: metadata decides which rules apply, so a broken one must not
be ignored quietly. A metadata file that is a symbolic link out of the loaded
folder is not read at all (a REVIEW finding names it), as a document would not be.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from groundqa.loaders._common import block, link_problem
from groundqa.loaders.markdown import YamlProblem, read_yaml
from groundqa.models import Document, Finding

SIDECAR_SUFFIXES = (".meta.yaml", ".meta.yml")
FOLDER_FILES = ("_meta.yaml", "_meta.yml")


def is_metadata_file(path: Path) -> bool:
    """True for sidecars and folder defaults, which describe documents rather than hold them."""
    name = path.name.lower()
    return name in FOLDER_FILES or name.endswith(SIDECAR_SUFFIXES)


class _Reader:
    """Reads each metadata file once and remembers what it found."""

    def __init__(self, follow_links: bool) -> None:
        self.follow_links = follow_links
        self.cache: dict[Path, dict[str, Any]] = {}
        self.refused: set[Path] = set()
        self.findings: list[Finding] = []

    def read(self, path: Path) -> dict[str, Any]:
        if path in self.cache:
            return self.cache[path]
        data: dict[str, Any] = {}
        try:
            loaded = read_yaml(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, YamlProblem) as exc:
            reason = exc.problem if isinstance(exc, YamlProblem) else exc.__class__.__name__
            self.findings.append(
                block(
                    "metadata-file",
                    f"{path.name} cannot be read as YAML ({reason}); fix it or remove it",
                    path,
                )
            )
        else:
            if isinstance(loaded, Mapping):
                data = dict(loaded)
            elif loaded is not None:
                self.findings.append(
                    block(
                        "metadata-file",
                        f"{path.name} is a {type(loaded).__name__}, not a mapping; "
                        "write it as `key: value` lines",
                        path,
                    )
                )
        self.cache[path] = data
        return data

    def first(self, candidates: Sequence[Path], boundary: Path) -> dict[str, Any]:
        """The first of `candidates` that is a file, read; a link out of `boundary` (the
        folder loaded) is not read but named."""
        for path in candidates:
            problem = link_problem(path, boundary, self.follow_links)
            if problem is not None:
                if path not in self.refused:
                    self.refused.add(path)
                    self.findings.append(
                        Finding(
                            severity="REVIEW",
                            check="skipped-links",
                            message=f"{path.name} is a symbolic link that {problem}, so its "
                            "metadata was not applied; copy the file in, or pass "
                            "--follow-links to read it",
                            # The link itself, not where it points.
                            source=(path.parent.resolve() / path.name).as_posix(),
                        )
                    )
                continue
            if path.is_file():
                return self.read(path)
        return {}


def _folders(root: Path | None, file: Path) -> list[Path]:
    """The folders from `root` down to the file's own folder (none when no root contains it)."""
    if root is None:
        return []
    try:
        inside = file.parent.relative_to(root)
    except ValueError:
        return []
    folders = [root]
    for part in inside.parts:
        folders.append(folders[-1] / part)
    return folders


def with_metadata(
    documents: Sequence[Document],
    roots: Mapping[str, Path | None],
    *,
    follow_links: bool = False,
) -> tuple[list[Document], list[Finding]]:
    """`documents` with folder defaults and sidecars merged into their metadata.

    `roots` maps each document's source to the folder it was loaded from (None for
    a file named on its own, which reads its sidecar but no folder defaults). A
    metadata file that is a link out of that folder (out of the file's own folder, for
    a file named on its own) is not read, unless `follow_links`: it is named in a
    REVIEW finding instead.
    """
    reader = _Reader(follow_links)
    out: list[Document] = []
    for doc in documents:
        file = Path(doc.source)
        root = roots.get(doc.source)
        merged: dict[str, Any] = {}
        boundary = root if root is not None else file.parent
        for folder in _folders(root, file):
            merged.update(reader.first([folder / name for name in FOLDER_FILES], boundary))
        merged.update(doc.metadata)
        sidecars = [Path(f"{file}{suffix}") for suffix in SIDECAR_SUFFIXES]
        merged.update(reader.first(sidecars, boundary))
        out.append(doc if merged == doc.metadata else replace(doc, metadata=merged))
    return out, reader.findings
