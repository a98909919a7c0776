"""What every loader shares: reading a file as text, turning a failure into a finding,
and walking a folder.

A file that cannot be read is a BLOCK finding here, never an exception, so that one
`groundqa validate` run can list every broken file at once. Nothing in this module
guesses an encoding: a corpus is UTF-8 (with or without a BOM) or it is reported.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from groundqa.models import Document, Finding, Section

BINARY_SNIFF_BYTES = 8192

# A JSON escape for half of a UTF-16 surrogate pair (`\ud83d`), and such a half on its own
# in a decoded string: valid UTF-8 cannot hold one, so neither can an index.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")

# Extensions each format reads when it walks a folder.
MARKDOWN_SUFFIXES = (".md", ".markdown")
CSV_SUFFIXES = (".csv",)

# Files that describe a corpus rather than belong to it (a README beside the guides, a
# PROVENANCE note beside the data). They are skipped in folder walks, and the skip is
# reported; a user who wants one indexed names the file itself.
HOUSEKEEPING_STEMS = frozenset(
    {
        "readme",
        "provenance",
        "license",
        "licence",
        "copying",
        "notice",
        "changelog",
        "changes",
        "contributing",
        "authors",
        "code_of_conduct",
        "security",
        "manifest",
    }
)


def source_of(path: Path) -> str:
    """The string a Document or Finding names its file by: resolved, absolute, posix."""
    return path.resolve().as_posix()


def pages_named(numbers: Sequence[int], most: int = 20) -> str:
    """ "page 3", "pages 3, 4", with runs of three or more as ranges ("pages 2-4999, 5001");
    past `most` parts, the rest are counted ("and 12 more")."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    parts = [
        part
        for run in runs
        for part in ([f"{run[0]}-{run[-1]}"] if len(run) > 2 else [str(n) for n in run])
    ]
    more = f" and {len(parts) - most} more" if len(parts) > most else ""
    return ("page " if len(numbers) == 1 else "pages ") + ", ".join(parts[:most]) + more


def doc_id_of(path: Path, root: Path | None) -> str:
    """A file's document id (and the file part of its section ids): its path relative to
    `root`, the folder that was loaded; just the file name when `root` is None."""
    return path.relative_to(root).as_posix() if root is not None else path.name


def block(check: str, message: str, path: Path, line: int | None = None) -> Finding:
    return Finding(
        severity="BLOCK", check=check, message=message, source=source_of(path), line=line
    )


def review(check: str, message: str, path: Path, excerpt: str = "") -> Finding:
    return Finding(
        severity="REVIEW", check=check, message=message, source=source_of(path), excerpt=excerpt
    )


def read_text(path: Path) -> str | Finding:
    """The file decoded as UTF-8 (a leading BOM dropped), or the BLOCK finding saying why not.

    Line endings are left as they are: CSV needs them untouched to tell a row end from
    a line break inside a quoted field.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        return block(
            "unreadable",
            f"cannot read {path.name} ({reason}); check the path and its permissions",
            path,
        )
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return block(
            "binary",
            f"{path.name} looks like a binary file (NUL bytes in its first 8 KiB); "
            "remove it from the corpus or export it as text",
            path,
        )
    bom = len(b"\xef\xbb\xbf") if data.startswith(b"\xef\xbb\xbf") else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = bom + exc.start
        line = data.count(b"\n", 0, offset) + 1
        return block(
            "not-utf8",
            f"{path.name} is not valid UTF-8 (byte {offset}, line {line}); re-save it as UTF-8",
            path,
            line=line,
        )


def json_problem(exc: ValueError | RecursionError) -> str:
    """Why `json.loads` refused a text, in a few words.

    Besides a syntax error (JSONDecodeError) it refuses numbers longer than Python
    converts (ValueError) and nesting deeper than the stack (RecursionError).
    """
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg
    if isinstance(exc, RecursionError):
        return "arrays or objects nested too deeply"
    return f"a number longer than {sys.get_int_max_str_digits()} digits"


def unpaired_surrogate(raw: str, value: Any) -> bool:
    """Whether `value`, parsed from the JSON `raw`, holds half a surrogate pair (`"\\ud800"`
    escaped without its other half), which no UTF-8 file, and so no index, can store."""
    return bool(_SURROGATE_ESCAPE.search(raw)) and has_surrogate(
        json.dumps(value, ensure_ascii=False)
    )


def has_surrogate(text: str) -> bool:
    """Whether `text` holds half a surrogate pair (a YAML or JSON escape can write one)."""
    return bool(_SURROGATE.search(text))


def normalise_newlines(text: str) -> str:
    """CRLF (and a lone CR, which some old editors write) become LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def clean_body(text: str) -> str:
    """A section body as stored: newlines normalised, surrounding whitespace stripped."""
    return normalise_newlines(text).strip()


def record_document(
    *,
    doc_id: str,
    title: str,
    text: str,
    source: str,
    fmt: str,
    metadata: dict[str, Any],
    line: int,
) -> Document:
    """A record (CSV row, BEIR entry): one Document whose single Section has the record's id."""
    section = Section(section_id=doc_id, heading=title, text=clean_body(text))
    return Document(
        doc_id=doc_id,
        title=title,
        source=source,
        format=fmt,
        sections=(section,),
        metadata=metadata,
        line=line,
    )


def is_hidden(name: str) -> bool:
    return name.startswith(".")


def is_housekeeping(path: Path) -> bool:
    return path.stem.lower() in HOUSEKEEPING_STEMS


class Walk(NamedTuple):
    """What a folder walk found: the files to consider, and the links it did not follow,
    each with why (`links_finding` reports them)."""

    files: list[Path]
    links: list[tuple[Path, str]]


def link_problem(path: Path, root: Path, follow_links: bool = False) -> str | None:
    """Why the symbolic link `path`, found under `root` (the folder the user named), is
    not to be read, in a few words; None when it is not a link or may be read.

    A link is read when its target lies inside `root`, or anywhere with `follow_links`;
    a link to nothing (its target missing, or a chain of links that loops) never is.
    A corpus folder is a boundary: a link in it must not carry /etc/passwd, or a
    metadata file from someone else's folder, into an index that serves its text.
    """
    if not path.is_symlink():
        return None
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):  # missing target; RuntimeError is a loop (Python 3.11)
        return "points to nothing"
    if follow_links or target.is_relative_to(root.resolve()):
        return None
    return f"points outside the folder, to {target.as_posix()}"


def walk(folder: Path, recursive: bool = True, follow_links: bool = False) -> Walk:
    """Every non-hidden file under `folder`, sorted by its path relative to `folder`, and
    the links left out.

    Hidden files and folders (a leading dot: `.git`, `.DS_Store`) are never corpus. A
    link is followed only when `link_problem` allows it; linked folders only with
    `follow_links`, each real folder once, so that a link cycle cannot hang a load.
    """
    files: list[Path] = []
    links: list[tuple[Path, str]] = []
    seen: set[Path] = {folder.resolve()}

    def visit(directory: Path) -> None:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            # An unreadable subfolder shows up as missing files; the folder itself was
            # readable (the caller checked), so this is not worth failing the load for.
            return
        for entry in entries:
            if is_hidden(entry.name):
                continue
            path = Path(entry.path)
            if entry.is_symlink():
                problem = link_problem(path, folder, follow_links)
                if problem is None and path.is_dir():
                    if not follow_links:
                        problem = "a linked folder"
                    elif recursive and path.resolve() not in seen:
                        seen.add(path.resolve())
                        visit(path)
                    continue
                if problem is not None:
                    links.append((path, problem))
                elif path.is_file():
                    files.append(path)
                continue
            if entry.is_dir(follow_symlinks=False):
                if recursive:
                    seen.add(path.resolve())
                    visit(path)
            elif entry.is_file(follow_symlinks=False):
                files.append(path)

    visit(folder)

    def order(item: Path) -> str:
        return item.relative_to(folder).as_posix()

    return Walk(sorted(files, key=order), sorted(links, key=lambda link: order(link[0])))


def links_finding(folder: Path, links: Sequence[tuple[Path, str]]) -> Finding | None:
    """One REVIEW finding naming the links a folder walk did not follow, or None."""
    if not links:
        return None
    named = [f"{p.relative_to(folder).as_posix()} ({why})" for p, why in links]
    excerpt = "; ".join(named[:20]) + (f" and {len(named) - 20} more" if len(named) > 20 else "")
    return review(
        "skipped-links",
        f"skipped {len(links)} symbolic link(s) in {folder.name or folder.as_posix()} that "
        "point outside it, to nothing, or to a folder; copy the files in, or pass "
        "--follow-links to read links wherever they point",
        folder,
        excerpt=excerpt,
    )


def skipped_finding(folder: Path, skipped: Iterable[Path]) -> Finding | None:
    """One REVIEW finding for everything a folder walk left out, or None if nothing was."""
    skipped = list(skipped)
    if not skipped:
        return None
    kept_aside = [p for p in skipped if is_housekeeping(p)]
    other = [p for p in skipped if not is_housekeeping(p)]
    parts = []
    if other:
        counts = Counter(p.suffix.lower() or "(no extension)" for p in other)
        kinds = ", ".join(f"{n} {ext}" for ext, n in sorted(counts.items()))
        parts.append(f"{len(other)} file(s) of a type it does not load ({kinds})")
    if kept_aside:
        notes = ", ".join(p.name for p in kept_aside)
        parts.append(f"{len(kept_aside)} corpus note(s) ({notes})")
    names = [p.relative_to(folder).as_posix() for p in skipped]
    excerpt = ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
    return review(
        "skipped-files",
        f"skipped {' and '.join(parts)} in {folder.name or folder.as_posix()}; "
        "name a file explicitly (or convert it) if it belongs in the corpus",
        folder,
        excerpt=excerpt,
    )


def looks_like_obliqa(path: Path) -> bool:
    """A JSON file whose start is a list of passage objects (`"PassageID"` in the first 4 KiB).

    A sniff, not a parse: it decides which loader reads the file, and that loader reports
    whatever is actually wrong with it.
    """
    try:
        with path.open("rb") as fh:
            head = fh.read(4096).decode("utf-8", errors="ignore")
    except OSError:
        return False
    return head.lstrip("\ufeff \t\r\n").startswith("[") and '"PassageID"' in head
