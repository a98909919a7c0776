"""The load stage: files and folders in, Documents and file-level findings out.

`load()` takes the paths a user named, decides which loader reads each file (by the
folder's layout and the file's extension, or as `fmt` says) and returns every Document
with the problems it met on the way. Formats: Markdown folders, CSV (with a column
mapping), PDF (text layer, page numbers kept; scanned pages by OCR), HTML pages (the
main content, headings as sections, element ids as links), Word .docx (heading styles
as sections, tables kept), plain text, BEIR `corpus.jsonl`, ObliQA structured JSON.
Folders mix Markdown, CSV, PDF, HTML, .docx and .txt files freely.

It refuses two things. It does not raise on a broken file: an unreadable, non-UTF-8,
binary or malformed file (a corrupt or encrypted PDF too) becomes a BLOCK finding and
the other files still load, so that `groundqa validate` lists every problem in one run.
And it does not pretend: a path that does not exist, an unknown format and a folder
with nothing loadable are errors, and files it skipped are named in a REVIEW finding.
Judging content (empty bodies, duplicate ids, extraction artefacts) is validation's
job, not this stage's.

Metadata can also sit beside the documents: `<file>.meta.yaml` sidecars and folder
`_meta.yaml` defaults (see `sidecar`), merged in as the last step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from groundqa.errors import EmptyCorpusError, LoadError, UsageError
from groundqa.loaders._common import (
    CSV_SUFFIXES,
    MARKDOWN_SUFFIXES,
    block,
    is_housekeeping,
    links_finding,
    looks_like_obliqa,
    skipped_finding,
    source_of,
    walk,
)
from groundqa.loaders.beir import load_beir
from groundqa.loaders.csv import ROLES, load_csv
from groundqa.loaders.docx import DOCX_SUFFIXES, load_docx
from groundqa.loaders.html import HTML_SUFFIXES, load_html
from groundqa.loaders.markdown import load_markdown
from groundqa.loaders.obliqa import load_obliqa
from groundqa.loaders.ocr import OcrBudget
from groundqa.loaders.pdf import PDF_SUFFIXES, load_pdf
from groundqa.loaders.sidecar import is_metadata_file, with_metadata
from groundqa.loaders.text import TEXT_SUFFIXES, load_text
from groundqa.models import Document, Finding

__all__ = [
    "FORMATS",
    "LoadResult",
    "OcrBudget",
    "detect_format",
    "load",
    "load_beir",
    "load_csv",
    "load_docx",
    "load_html",
    "load_markdown",
    "load_obliqa",
    "load_pdf",
    "load_text",
]

FORMATS = ("auto", "csv", "markdown", "pdf", "html", "docx", "text", "beir", "obliqa")

_SUFFIXES: dict[str, tuple[str, ...]] = {
    "markdown": MARKDOWN_SUFFIXES,
    "csv": CSV_SUFFIXES,
    "pdf": PDF_SUFFIXES,
    "html": HTML_SUFFIXES,
    "docx": DOCX_SUFFIXES,
    "text": TEXT_SUFFIXES,
    "beir": (".jsonl",),
    "obliqa": (".json",),
}
# What a folder walk under `auto` loads, by extension: every format but the benchmark
# layouts, which are recognised by their file names.
_AUTO_WALK = {fmt: suffixes for fmt, suffixes in _SUFFIXES.items() if fmt not in ("beir", "obliqa")}
_BEIR_CORPUS = "corpus.jsonl"

Loaded = tuple[list[Document], list[Finding]]


@dataclass(frozen=True)
class LoadResult:
    """What a load produced.

    `findings` holds a BLOCK finding for each file that could not be read and a
    REVIEW finding for files a folder walk skipped; `sources` every file that was
    read (resolved absolute posix paths, sorted).
    """

    documents: tuple[Document, ...]
    findings: tuple[Finding, ...]
    sources: tuple[str, ...]


def _format_for_file(path: Path) -> str | None:
    """The loader a lone file gets under `auto`, by extension; None if there is none."""
    suffix = path.suffix.lower()
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in CSV_SUFFIXES:
        return "csv"
    if suffix in PDF_SUFFIXES:
        return "pdf"
    for kind in ("html", "docx", "text"):
        if suffix in _SUFFIXES[kind]:
            return kind
    if suffix == ".jsonl":
        return "beir"
    if suffix == ".json" and looks_like_obliqa(path):
        return "obliqa"
    return None


def _walked_kind(suffix: str, wanted: Mapping[str, tuple[str, ...]]) -> str | None:
    return next((k for k, sfx in wanted.items() if suffix in sfx), None)


def _folder_format(top: Sequence[Path]) -> str | None:
    """`beir` or `obliqa` when a folder whose own files are `top` has that layout, else
    None (walk by extension)."""
    if any(p.name == _BEIR_CORPUS for p in top):
        return "beir"
    # Any passage file makes it an ObliQA folder: a single corrupt file among forty
    # should be reported by the ObliQA loader, not turn the folder into a Markdown walk.
    if any(p.suffix.lower() == ".json" and looks_like_obliqa(p) for p in top):
        return "obliqa"
    return None


def detect_format(path: Path, follow_links: bool = False) -> str:
    """The format `auto` reads `path` (one file or folder) as.

    One of `csv`, `markdown`, `pdf`, `html`, `docx`, `text`, `beir`, `obliqa`; `mixed`
    for a folder holding files of more than one of the walked formats; `unknown` when
    nothing in it is loadable. Links in a folder count as `load` reads them.
    """
    if not path.exists():
        raise LoadError(f"no such file or folder: {path}", source=str(path))
    if path.is_file():
        return _format_for_file(path) or "unknown"
    layout = _folder_format(walk(path, recursive=False, follow_links=follow_links).files)
    if layout is not None:
        return layout
    kinds = {
        kind
        for p in walk(path, follow_links=follow_links).files
        if not is_housekeeping(p)
        and (kind := _walked_kind(p.suffix.lower(), _AUTO_WALK)) is not None
    }
    if len(kinds) > 1:
        return "mixed"
    return kinds.pop() if kinds else "unknown"


@dataclass(frozen=True)
class _Plan:
    """What loading one folder reads (each file with its format) and leaves out."""

    files: list[tuple[Path, str]]
    skipped: list[Path]  # files of no format it reads, and corpus notes
    links: list[tuple[Path, str]]  # links not followed, and why


def _plan_folder(folder: Path, fmt: str, follow_links: bool) -> _Plan:
    """What to load in one folder the user named, and what to leave out.

    Every file comes from a walk, benchmark layouts' files too (a BEIR `corpus.jsonl`,
    ObliQA's .json files), so that no file is opened through a link the walk refused.
    """
    top = walk(folder, recursive=False, follow_links=follow_links)
    if fmt == "auto":
        fmt = _folder_format(top.files) or "auto"
    if fmt == "beir":
        corpus = [p for p in top.files if p.name == _BEIR_CORPUS]
        # The rest of a BEIR folder (queries, qrels) is evaluation data, not corpus.
        files = corpus or [p for p in top.files if p.suffix.lower() == ".jsonl"]
        return _Plan([(p, "beir") for p in files], [], top.links)
    if fmt == "obliqa":
        files = [p for p in top.files if p.suffix.lower() == ".json"]
        others = [p for p in top.files if p not in files]
        return _Plan([(p, "obliqa") for p in files], others, top.links)
    wanted = _AUTO_WALK if fmt == "auto" else {fmt: _SUFFIXES[fmt]}
    planned: list[tuple[Path, str]] = []
    skipped: list[Path] = []
    walked = walk(folder, follow_links=follow_links)
    for path in walked.files:
        kind = _walked_kind(path.suffix.lower(), wanted)
        if is_metadata_file(path):
            continue  # describes documents (see `sidecar`); read when they load
        if kind is None or is_housekeeping(path):
            skipped.append(path)
        else:
            planned.append((path, kind))
    # A metadata file that is a refused link is named when a document would read it.
    links = [(p, why) for p, why in walked.links if not is_metadata_file(p)]
    return _Plan(planned, skipped, links)


def _looked_for(fmt: str) -> str:
    if fmt == "beir":
        return f"{_BEIR_CORPUS} or *.jsonl"
    suffixes = _SUFFIXES[fmt] if fmt != "auto" else [s for v in _AUTO_WALK.values() for s in v]
    return ", ".join(suffixes)


def _unsupported(path: Path) -> Finding:
    if path.suffix.lower() == ".json":
        message = (
            f"{path.name} is not an ObliQA passage list; pass --format obliqa if it is one, "
            "or convert it to a BEIR corpus.jsonl"
        )
    else:
        message = (
            f"{path.name} is not a format groundqa loads (.md, .markdown, .csv, .pdf, .html, "
            ".htm, .docx, .txt, .jsonl, ObliQA .json); pass --format to choose a loader or "
            "convert the file"
        )
    return block("unsupported-format", message, path)


def _load_file(
    path: Path,
    fmt: str,
    root: Path | None,
    columns: Mapping[str, str] | None,
    ocr: bool,
    ocr_budget: OcrBudget,
) -> Loaded:
    loaders: dict[str, Callable[[], Loaded]] = {
        "markdown": lambda: load_markdown(path, root=root),
        "csv": lambda: load_csv(path, columns=columns),
        "pdf": lambda: load_pdf(path, root=root, ocr=ocr, ocr_budget=ocr_budget),
        "html": lambda: load_html(path, root=root),
        "docx": lambda: load_docx(path, root=root),
        "text": lambda: load_text(path, root=root),
        "beir": lambda: load_beir(path),
        "obliqa": lambda: load_obliqa(path),
    }
    return loaders[fmt]()


def _check_arguments(fmt: str, columns: Mapping[str, str] | None) -> None:
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}; use one of: {', '.join(FORMATS)}")
    for role, name in (columns or {}).items():
        if role not in ROLES:
            raise UsageError(
                f"unknown column role {role!r}; map one of {', '.join(ROLES)} (e.g. text=Body)"
            )
        if not name or not name.strip():
            raise UsageError(f"--columns {role}= needs a column name")


def load(
    sources: Sequence[str | Path],
    fmt: str = "auto",
    columns: Mapping[str, str] | None = None,
    ocr: bool = True,
    *,
    follow_links: bool = False,
    ocr_budget: OcrBudget | None = None,
) -> LoadResult:
    """Load every file under `sources` (files and folders) as `fmt` (`auto` detects).

    `columns` maps CSV roles (`id`, `title`, `text`) to column names. `ocr` reads PDF
    pages without a text layer by OCR, within `ocr_budget` (one budget for the whole load;
    the defaults when None); off, they are reported instead. A symbolic link
    found in a folder (a document, or a metadata file beside one) is read only when it
    points inside the folder named, or with `follow_links`; the others are named in a
    REVIEW finding. A path named in `sources` is read wherever it points. Raises LoadError
    for a path that does not exist, UsageError for an unknown format or column role,
    and EmptyCorpusError for a folder with nothing loadable or when nothing at all was
    loaded and nothing was broken.
    """
    _check_arguments(fmt, columns)
    if isinstance(sources, str | Path):
        sources = [sources]  # a lone path, not a sequence of one-letter paths
    if not sources:
        raise UsageError("no sources given; name at least one file or folder")
    paths: list[Path] = []
    for given in sources:
        path = Path(given).expanduser()
        if not path.exists():
            raise LoadError(f"no such file or folder: {given}", source=str(given))
        if path.resolve() not in {p.resolve() for p in paths}:
            paths.append(path)

    ocr_budget = ocr_budget or OcrBudget()
    documents: list[Document] = []
    findings: list[Finding] = []
    read: set[str] = set()
    roots: dict[str, Path | None] = {}
    for path in paths:
        if path.is_dir():
            plan = _plan_folder(path, fmt, follow_links)
            if not plan.files:
                raise EmptyCorpusError(
                    f"nothing to load in {path}: no {_looked_for(fmt)} files"
                    + (f" ({len(plan.skipped)} other file(s) skipped)" if plan.skipped else "")
                    + (f" ({len(plan.links)} symbolic link(s) skipped)" if plan.links else "")
                    + "; point at the folder that holds the corpus or pass --format"
                )
            for file, file_fmt in plan.files:
                docs, found = _load_file(file, file_fmt, path, columns, ocr, ocr_budget)
                roots.update((d.source, path.resolve()) for d in docs)
                documents.extend(docs)
                findings.extend(found)
                read.add(source_of(file))
            for note in (skipped_finding(path, plan.skipped), links_finding(path, plan.links)):
                if note is not None:
                    findings.append(note)
            continue
        kind: str | None = fmt if fmt != "auto" else _format_for_file(path)
        if kind is None:
            findings.append(_unsupported(path))
            continue
        docs, found = _load_file(path, kind, None, columns, ocr, ocr_budget)
        documents.extend(docs)
        findings.extend(found)
        read.add(source_of(path))

    documents, found = with_metadata(documents, roots, follow_links=follow_links)
    findings.extend(found)
    if not documents and not any(f.severity == "BLOCK" for f in findings):
        names = ", ".join(str(s) for s in sources)
        raise EmptyCorpusError(
            f"no documents found in {names}; check that the files hold records or sections"
        )
    return LoadResult(
        documents=tuple(documents), findings=tuple(findings), sources=tuple(sorted(read))
    )
