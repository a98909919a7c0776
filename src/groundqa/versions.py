"""Which version of a document is in force on a given day, and preferring it.

A regulation is amended and replaced; a corpus often holds the old text beside
the new, and an answer from the old one is wrong without saying so. Documents
declare their dates in metadata (front matter, a sidecar file):

    effective_date: 2022-05-01     (or effective_from) the day it takes effect
    effective_to: 2024-06-30       the last day it applies (repealed or lapsed)
    superseded_by: <doc>           the document that replaces it: its doc id,
                                   file name, file stem or title

On a given day (`as_of`, today by default) a document is `in force`, `not yet in
force` (its effective date is later), `ended` (after its effective_to), or
`superseded` (its successor is in the corpus and has taken effect, or is not in
the corpus at all: the document itself says it was replaced). Documents linked
by `superseded_by` form one family.

Retrieval prefers the version in force: when a question matches both a version
in force and an out-of-force version of the same family, the out-of-force one
is left out, so a reader never quotes the old rule beside the new. When only an
out-of-force version matches (a provision the new text dropped, a law not yet in
force) it is kept, and the answer carries a note naming the version it cites.
Asking `as_of` an earlier day answers from the versions in force on that day.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from groundqa.models import Chunk, Document, Finding

FROM_KEYS = ("effective_date", "effective_from")
TO_KEY = "effective_to"
SUCCESSOR_KEY = "superseded_by"
IN_FORCE = "in force"


def parse_date(value: Any) -> dt.date | None:
    """A date from `2022-05-01` (or a date object); None when absent or not a date."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip()[:10])
        except ValueError:
            return None
    return None


def _effective(metadata: Mapping[str, Any]) -> Any:
    return next((metadata[k] for k in FROM_KEYS if metadata.get(k) is not None), None)


def _dated(v: Version) -> bool:
    return bool(v.successor or v.until or v.effective)


@dataclass(frozen=True)
class Version:
    doc_id: str
    title: str
    effective: dt.date | None
    until: dt.date | None
    successor: str | None  # resolved doc id, or the raw name when not in the corpus
    successor_known: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "title": self.title,
            "effective": self.effective.isoformat() if self.effective else None,
            "until": self.until.isoformat() if self.until else None,
            "successor": self.successor,
            "successor_known": self.successor_known,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Version:
        return cls(
            doc_id=str(d["doc_id"]),
            title=str(d["title"]),
            effective=parse_date(d.get("effective")),
            until=parse_date(d.get("until")),
            successor=d.get("successor"),
            successor_known=bool(d.get("successor_known")),
        )


def _names(doc_id: str, title: str, source: str) -> set[str]:
    names = {doc_id, title}
    if source:
        path = PurePosixPath(source)
        names |= {path.name, path.stem}
    path = PurePosixPath(doc_id)
    names |= {path.name, path.stem}
    return {n.strip().casefold() for n in names if n and n.strip()}


class Versions:
    """Every document's dates and successor, from the chunks of one index."""

    def __init__(self, docs: Iterable[tuple[str, str, str, Mapping[str, Any]]]) -> None:
        entries = list(docs)
        by_name: dict[str, str] = {}
        for doc_id, title, source, _ in entries:
            for name in _names(doc_id, title, source):
                by_name.setdefault(name, doc_id)
        versions: list[Version] = []
        for doc_id, title, _, metadata in entries:
            raw = metadata.get(SUCCESSOR_KEY)
            successor = str(raw).strip() if raw not in (None, "") else None
            resolved = by_name.get(successor.casefold()) if successor else None
            versions.append(
                Version(
                    doc_id=doc_id,
                    title=title,
                    effective=parse_date(_effective(metadata)),
                    until=parse_date(metadata.get(TO_KEY)),
                    successor=resolved or successor,
                    successor_known=resolved is not None,
                )
            )
        self._set(versions)

    def _set(self, versions: Iterable[Version]) -> None:
        self._versions = {v.doc_id: v for v in versions}
        self.active = any(_dated(v) for v in self._versions.values())
        self._families = self._linked()

    @classmethod
    def resolved(cls, versions: Iterable[Version]) -> Versions:
        """Versions whose successors were resolved already (`dated` of a whole corpus, or
        the part of it a question needs)."""
        out = cls.__new__(cls)
        out._set(versions)
        return out

    def dated(self) -> list[Version]:
        """The versions that say anything: those with a date or a successor, and the
        documents named as successors. Every family is whole in it, and `resolved` of it
        answers every question as this does, for any document."""
        named = {v.successor for v in self._versions.values() if v.successor_known}
        return [v for v in self._versions.values() if _dated(v) or v.doc_id in named]

    def get(self, doc_id: str) -> Version | None:
        return self._versions.get(doc_id)

    @classmethod
    def of_chunks(cls, chunks: Sequence[Chunk]) -> Versions:
        seen: dict[str, tuple[str, str, str, Mapping[str, Any]]] = {}
        for c in chunks:
            seen.setdefault(c.doc_id, (c.doc_id, c.title, c.source, c.metadata))
        return cls(seen.values())

    def status(self, doc_id: str, as_of: dt.date) -> str:
        """`in force`, `not yet in force`, `ended` or `superseded` on `as_of`."""
        v = self._versions.get(doc_id)
        if v is None:
            return IN_FORCE
        if v.effective is not None and v.effective > as_of:
            return "not yet in force"
        if v.until is not None and v.until < as_of:
            return "ended"
        if v.successor is not None:
            nxt = self._versions.get(v.successor) if v.successor_known else None
            if nxt is None or nxt.effective is None or nxt.effective <= as_of:
                return "superseded"
        return IN_FORCE

    def family(self, doc_id: str) -> list[str]:
        """The documents linked to `doc_id` by `superseded_by`, either way, itself included."""
        return list(self._families.get(doc_id, (doc_id,)))

    def _linked(self) -> dict[str, tuple[str, ...]]:
        """Each linked document's family, found once: versions do not change after loading."""
        links: dict[str, set[str]] = {}
        for v in self._versions.values():
            if v.successor_known and v.successor is not None:
                links.setdefault(v.doc_id, set()).add(v.successor)
                links.setdefault(v.successor, set()).add(v.doc_id)
        families: dict[str, tuple[str, ...]] = {}
        for start in links:
            if start in families:
                continue
            seen = {start}
            todo = [start]
            while todo:
                for other in links[todo.pop()]:
                    if other not in seen:
                        seen.add(other)
                        todo.append(other)
            members = tuple(sorted(seen))
            families.update(dict.fromkeys(members, members))
        return families

    def in_force_of(self, doc_id: str, as_of: dt.date) -> str | None:
        """The member of `doc_id`'s family in force on `as_of`, if exactly one is."""
        live = [d for d in self.family(doc_id) if self.status(d, as_of) == IN_FORCE]
        return live[0] if len(live) == 1 else None

    def prefer(
        self, ranked: list[tuple[int, float]], doc_of: Mapping[int, str], as_of: dt.date
    ) -> list[tuple[int, float]]:
        """`ranked` without the chunks of out-of-force versions whose family's version in
        force is also in the list: when both versions match, the one in force answers."""
        if not self.active:
            return ranked
        present = {doc_of[row] for row, _ in ranked}
        kept = []
        for item in ranked:
            doc = doc_of[item[0]]
            if self.status(doc, as_of) != IN_FORCE and self.in_force_of(doc, as_of) in present:
                continue
            kept.append(item)
        return kept

    def notes(self, doc_ids: Iterable[str], as_of: dt.date) -> tuple[str, ...]:
        """A line for each document of `doc_ids` (once each) not in force on `as_of`."""
        found = (self.note(doc, as_of) for doc in dict.fromkeys(doc_ids))
        return tuple(n for n in found if n)

    def note(self, doc_id: str, as_of: dt.date) -> str | None:
        """One line for an answer that cites `doc_id` when it is not in force on `as_of`."""
        status = self.status(doc_id, as_of)
        if status == IN_FORCE:
            return None
        v = self._versions[doc_id]
        day = as_of.isoformat()
        if status == "not yet in force":
            assert v.effective is not None
            return f"{v.title} is not yet in force on {day} (it takes effect {v.effective})"
        if status == "ended":
            return f"{v.title} ceased to apply on {v.until} (answer as of {day})"
        if v.successor_known and v.successor in self._versions:
            nxt = self._versions[v.successor]
            since = f" from {nxt.effective}" if nxt.effective else ""
            return f"{v.title} is superseded by {nxt.title}{since} (answer as of {day})"
        return f"{v.title} is superseded by {v.successor}, which is not in this corpus"


def version_findings(documents: Sequence[Document]) -> list[Finding]:
    """REVIEW findings for dates that do not parse and successors the corpus lacks."""
    findings: list[Finding] = []
    versions = Versions((d.doc_id, d.title, d.source, d.metadata) for d in documents)
    for doc in documents:
        for key in (*FROM_KEYS, TO_KEY):
            value = doc.metadata.get(key)
            if value is not None and parse_date(value) is None:
                findings.append(
                    Finding(
                        severity="REVIEW",
                        check="bad-date",
                        message=f"{key} {value!r} is not a date; write it as YYYY-MM-DD",
                        source=doc.source,
                        doc_id=doc.doc_id,
                    )
                )
        v = versions.get(doc.doc_id)
        assert v is not None  # every document was given to Versions
        if v.successor is not None and not v.successor_known:
            findings.append(
                Finding(
                    severity="REVIEW",
                    check="unknown-successor",
                    message=(
                        f"superseded_by {v.successor!r} names no document in this corpus; "
                        "the document is still treated as superseded (use a doc id, file name "
                        "or title to link the versions)"
                    ),
                    source=doc.source,
                    doc_id=doc.doc_id,
                )
            )
        if v.successor == doc.doc_id:
            findings.append(
                Finding(
                    severity="REVIEW",
                    check="unknown-successor",
                    message="superseded_by names the document itself",
                    source=doc.source,
                    doc_id=doc.doc_id,
                )
            )
    return findings
