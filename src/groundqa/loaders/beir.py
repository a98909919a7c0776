"""Load a BEIR corpus (`corpus.jsonl`) as one Document per line.

Each line is a JSON object with `_id`, `title`, `text` and optionally `metadata`; the
section id is the `_id`, so BEIR qrels score against it unchanged. Keys beyond those
travel in the document's metadata.

It does not stop at a bad line: each malformed line is its own BLOCK finding with its
line number and the rest of the file still loads, so one validate run shows them all.
It reads only the corpus: queries and qrels belong to evaluation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from groundqa.loaders._common import (
    block,
    clean_body,
    json_problem,
    read_text,
    record_document,
    review,
    source_of,
    unpaired_surrogate,
)
from groundqa.models import Document, Finding

_KNOWN = ("_id", "title", "text", "metadata")


def _as_str(value: Any) -> str:
    return "" if value is None else str(value)


def load_beir(path: Path) -> tuple[list[Document], list[Finding]]:
    """One Document per non-blank line of the JSONL file `path`."""
    text = read_text(path)
    if isinstance(text, Finding):
        return [], [text]
    source = source_of(path)
    documents: list[Document] = []
    findings: list[Finding] = []
    # split("\n"), not splitlines(): JSON strings may hold U+2028, which splitlines
    # would treat as a line end.
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line:
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as exc:
            findings.append(
                block(
                    "malformed-json",
                    f"{path.name} line {number} is not valid JSON ({json_problem(exc)}); "
                    "fix or remove that line",
                    path,
                    line=number,
                )
            )
            continue
        if not isinstance(record, dict):
            findings.append(
                block(
                    "malformed-json",
                    f"{path.name} line {number} is a JSON {type(record).__name__}, not an "
                    'object; write each line as {"_id": ..., "title": ..., "text": ...}',
                    path,
                    line=number,
                )
            )
            continue
        if unpaired_surrogate(line, record):
            findings.append(
                block(
                    "malformed-json",
                    f"{path.name} line {number} escapes half of a surrogate pair (e.g. "
                    "\\ud800 alone), which is no character; fix the escape or remove that line",
                    path,
                    line=number,
                )
            )
            continue
        doc_id = _as_str(record.get("_id")).strip()
        title = clean_body(_as_str(record.get("title")))
        meta = record.get("metadata")
        metadata: dict[str, Any] = dict(meta) if isinstance(meta, dict) else {}
        if meta is not None and not isinstance(meta, dict):
            metadata["metadata"] = meta  # kept as given rather than dropped
        metadata.update({k: v for k, v in record.items() if k not in _KNOWN})
        documents.append(
            record_document(
                doc_id=doc_id,
                title=title,
                text=_as_str(record.get("text")),
                source=source,
                fmt="beir",
                metadata=metadata,
                line=number,
            )
        )
    if not documents and not findings:
        findings.append(
            review("empty-file", f"{path.name} has no records; add lines or remove it", path)
        )
    return documents, findings
