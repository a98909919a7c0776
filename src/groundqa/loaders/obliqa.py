"""Load ObliQA-style structured regulation files as one Document per regulation.

A file is a JSON list of passages `{ID, DocumentID, PassageID, Passage}` in document
order. Each passage with text becomes a Section with id `<DocumentID>:<PassageID>`,
exactly the pair ObliQA's qrels name, so benchmark gold ids match section ids as they
are. The clause hierarchy is read from the PassageID (`1.2.1.Guidance.1.` sits under
`1.2.1.Guidance`, `1.2.1`, `1.2`, `1.`): a short heading passage such as `1.2`
"Application" whose id has children becomes a breadcrumb component of its children
(`1. INTRODUCTION > 1.2 Application > 1.2.1.(1)`). It stays a section of its own as
well, holding just the heading, because it carries its own id and a qrel may name
it; only a passage with no text at all is a breadcrumb and nothing else.

It does not rename, renumber or split ids. Where the source repeats a PassageID within
a document (a handful of clauses are cut into several passages that share one id),
the passages are joined into one section under that id, in document order, because
that id is what the qrels call it. It does not invent a title: a document is
`Document <id>` unless its first passage is a dated regulation title.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from groundqa.loaders._common import (
    block,
    clean_body,
    json_problem,
    read_text,
    review,
    source_of,
    unpaired_surrogate,
)
from groundqa.models import Document, Finding, Section

_REQUIRED = ("DocumentID", "PassageID")

# A heading passage: at most this many words and no sentence or list punctuation at the
# end ("Application", "Guidance on the term "customer""). Clauses that happen to have
# children ("A Relevant Person must: ...", 20+ words, often gold answers) are longer or
# end in a full stop or a colon, and stay sections.
_HEADING_MAX_WORDS = 30
_SENTENCE_END = (".", ";", ":", ",")

# "BANK RECOVERY AND RESOLUTION REGULATIONS 2018": the only title the data states.
_TITLE = re.compile(r"^[A-Z][A-Z ,&'()\-]*\b(?:19|20)\d\d$")


def clause_key(passage_id: str) -> tuple[str, ...]:
    """`1.2.1.Guidance.1.` -> ("1", "2", "1", "Guidance", "1"): the id as a tree path."""
    return tuple(part.strip() for part in passage_id.strip().rstrip(".").split("."))


def _is_heading(text: str) -> bool:
    if len(text.split()) > _HEADING_MAX_WORDS:
        return False
    # ALL-CAPS chapter titles sometimes end in a full stop ("SCOPE."), and statute
    # headings in an "etc." ("Contraventions by bodies corporate etc.").
    return text.isupper() or text.endswith("etc.") or not text.endswith(_SENTENCE_END)


def _label(passage_id: str, text: str) -> str:
    return f"{passage_id.strip()} {' '.join(text.split())}"


def _document(doc_id: str, items: list[dict[str, Any]], source: str) -> Document:
    # pid -> [(position in the file, text)], pids in order of first appearance
    texts: dict[str, list[tuple[int, str]]] = {}
    for position, item in enumerate(items):
        passage = item.get("Passage")
        text = clean_body("" if passage is None else str(passage))
        texts.setdefault(str(item["PassageID"]), []).append((position, text))

    keys = {pid: clause_key(pid) for pid in texts}
    parents = {key[:i] for key in keys.values() for i in range(1, len(key))}

    labels: dict[tuple[str, ...], str] = {}
    content: dict[str, list[tuple[int, str]]] = {}
    for pid, passages in texts.items():
        nonempty = [(pos, t) for pos, t in passages if t]
        key = keys[pid]
        if key in parents and nonempty and _is_heading(nonempty[0][1]):
            labels.setdefault(key, _label(pid, nonempty[0][1]))
            # The heading is the section's text only when the id has nothing else to say.
            nonempty = nonempty[1:] or nonempty
        if nonempty:
            content[pid] = nonempty

    placed: list[tuple[int, Section]] = []
    for pid, body in content.items():
        key = keys[pid]
        trail = tuple(labels[key[:i]] for i in range(1, len(key)) if key[:i] in labels)
        section = Section(
            section_id=f"{doc_id}:{pid}",
            heading=pid,
            text="\n\n".join(t for _, t in body),
            path=(*trail, labels.get(key, pid.strip())),
            metadata={"clause": pid},
        )
        # A section sits where its first text is, not where a heading with its id was.
        placed.append((body[0][0], section))
    sections = [section for _, section in sorted(placed, key=lambda p: p[0])]

    first = str(items[0]["PassageID"]).strip() if items else ""
    title = first if _TITLE.match(first) else f"Document {doc_id}"
    return Document(
        doc_id=doc_id,
        title=title,
        source=source,
        format="obliqa",
        sections=tuple(sections),
    )


def _bad_entries(data: Iterable[Any]) -> list[int]:
    return [
        n
        for n, item in enumerate(data, start=1)
        if not isinstance(item, dict) or any(k not in item for k in _REQUIRED)
    ]


def load_obliqa(path: Path) -> tuple[list[Document], list[Finding]]:
    """One Document per DocumentID in the ObliQA JSON file `path` (normally exactly one)."""
    text = read_text(path)
    if isinstance(text, Finding):
        return [], [text]
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        line = exc.lineno if isinstance(exc, json.JSONDecodeError) else None
        where = f" line {line}" if line is not None else ""
        return [], [
            block(
                "malformed-json",
                f"{path.name}{where} is not valid JSON ({json_problem(exc)}); "
                "fix the file or export it again",
                path,
                line=line,
            )
        ]
    if unpaired_surrogate(text, data):
        return [], [
            block(
                "malformed-json",
                f"{path.name} escapes half of a surrogate pair (e.g. \\ud800 alone), which is "
                "no character; fix the escape or export the file again",
                path,
            )
        ]
    if not isinstance(data, list):
        return [], [
            block(
                "malformed-json",
                f"{path.name} holds a JSON {type(data).__name__}, not a list of passages; "
                "give a list of {DocumentID, PassageID, Passage} objects or pick another --format",
                path,
            )
        ]
    findings: list[Finding] = []
    bad = _bad_entries(data)
    if bad:
        findings.append(
            block(
                "malformed-json",
                f"{path.name} has {len(bad)} entr{'y' if len(bad) == 1 else 'ies'} without "
                f"DocumentID and PassageID (first: entry {bad[0]}); fix or remove them",
                path,
            )
        )
    skip = set(bad)
    groups: dict[str, list[dict[str, Any]]] = {}
    for n, item in enumerate(data, start=1):
        if n not in skip:
            groups.setdefault(str(item["DocumentID"]).strip(), []).append(item)
    source = source_of(path)
    documents = [_document(doc_id, items, source) for doc_id, items in groups.items()]
    if not documents and not findings:
        findings.append(
            review("empty-file", f"{path.name} holds no passages; add some or remove it", path)
        )
    return documents, findings
