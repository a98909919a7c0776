"""Load a CSV file as one Document per row.

Each row becomes a Document with a single Section whose id is the row's id value
(natech: the Chapter, `4.6.2.2`). Which column holds the id, the title and the text
is given by the `columns` mapping or found by name (see `ROLE_NAMES`).

It refuses to guess around a broken file: an unterminated quote, a row with the
wrong number of fields or a missing id/text column is a BLOCK finding with the line
number, not a best-effort read. It does not drop rows either: a row with an empty id
is kept (doc_id "") so that validation can report it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from pathlib import Path

from groundqa.loaders._common import (
    block,
    clean_body,
    read_text,
    record_document,
    review,
    source_of,
)
from groundqa.models import Document, Finding

ROLES = ("id", "title", "text")

# Column names tried, in this order and case-insensitively, for a role the caller did
# not map.
ROLE_NAMES: dict[str, tuple[str, ...]] = {
    "id": ("id", "_id", "doc_id", "section_id", "chapter", "section", "clause", "number", "ref"),
    "title": ("title", "heading", "name", "subject"),
    "text": ("text", "content", "contents", "body", "passage"),
}

_REQUIRED = ("id", "text")


def _find(header: list[str], name: str) -> int | None:
    if name in header:
        return header.index(name)
    lowered = [h.lower() for h in header]
    return lowered.index(name.lower()) if name.lower() in lowered else None


def _resolve_columns(
    header: list[str], columns: Mapping[str, str], path: Path
) -> tuple[dict[str, int], list[Finding]]:
    """Map each role to a column index; a missing id or text column is a BLOCK finding."""
    # A name with a line break or control character in it is shown quoted, so that the
    # message stays on one line and says exactly what the header holds.
    found = ", ".join(h if h.isprintable() else repr(h) for h in header) if header else "none"
    roles: dict[str, int] = {}
    findings: list[Finding] = []
    for role, name in columns.items():
        index = _find(header, name.strip())
        if index is None:
            findings.append(
                block(
                    "missing-column",
                    f"{path.name} has no column {name!r} for {role} (columns: {found}); "
                    f"pass --columns {role}=NAME with one of them",
                    path,
                    line=1,
                )
            )
        else:
            roles[role] = index
    taken = set(roles.values())
    for role in ROLES:
        if role in roles or role in columns:
            continue
        for candidate in ROLE_NAMES[role]:
            index = _find(header, candidate)
            if index is not None and index not in taken:
                roles[role] = index
                taken.add(index)
                break
        else:
            if role in _REQUIRED:
                findings.append(
                    block(
                        "missing-column",
                        f"{path.name} has no {role} column (columns: {found}); "
                        f"pass --columns {role}=NAME to say which column holds it",
                        path,
                        line=1,
                    )
                )
    return roles, findings


def _csv_error_message(path: Path, line: int, error: csv.Error) -> str:
    reason = str(error)
    if "unexpected end of data" in reason:
        reason = "a quoted field that starts here is never closed"
    elif "field larger than field limit" in reason:
        # Python's csv refuses fields over its limit; nearly always a quote left open
        # that swallowed the rest of the file, or a document that is not one row's text.
        limit = csv.field_size_limit()
        reason = f"a field is longer than {limit:,} characters"
        return (
            f"{path.name} line {line}: {reason}; check the quoting on that line, or split "
            "the text into several rows or load it as Markdown"
        )
    return f"{path.name} line {line}: {reason}; fix the quoting on that line"


def load_csv(
    path: Path, columns: Mapping[str, str] | None = None
) -> tuple[list[Document], list[Finding]]:
    """One Document per data row of the CSV file `path`.

    `columns` maps a role (`id`, `title`, `text`) to a column name; roles it leaves out
    are found by name. Blank lines are skipped; everything else is a row.
    """
    text = read_text(path)
    if isinstance(text, Finding):
        return [], [text]
    source = source_of(path)
    # strict: without it an unterminated quote silently swallows the rest of the file
    # into one field, and `"a"b` is read as `ab`.
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    documents: list[Document] = []
    findings: list[Finding] = []
    header: list[str] | None = None
    roles: dict[str, int] = {}
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            # The reader cannot find the next row boundary after this; what was read
            # before stays, so that validation can still look at it.
            findings.append(
                block("malformed-csv", _csv_error_message(path, start, exc), path, line=start)
            )
            break
        if not row or not any(cell.strip() for cell in row):
            continue  # a blank line, or a spreadsheet's trailing `,,,` row: no record
        if header is None:
            header = [h.strip() for h in row]
            roles, missing = _resolve_columns(header, columns or {}, path)
            if missing:
                return [], missing
            continue
        if len(row) != len(header):
            findings.append(
                block(
                    "malformed-csv",
                    f"{path.name} line {start}: the row has {len(row)} fields but the header "
                    f"has {len(header)}; fix the commas or quoting on that line",
                    path,
                    line=start,
                )
            )
            continue
        doc_id = row[roles["id"]].strip()
        title = row[roles["title"]].strip() if "title" in roles else ""
        used = set(roles.values())
        metadata = {
            header[i]: clean_body(value)
            for i, value in enumerate(row)
            if i not in used and value.strip()
        }
        documents.append(
            record_document(
                doc_id=doc_id,
                title=title,
                text=row[roles["text"]],
                source=source,
                fmt="csv",
                metadata=metadata,
                line=start,
            )
        )
    if not documents and not findings:
        what = "is empty" if header is None else "has a header but no rows"
        findings.append(
            review("empty-file", f"{path.name} {what}; add rows or remove the file", path)
        )
    return documents, findings
