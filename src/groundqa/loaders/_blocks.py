"""Sections from a document read as a stream of headings and paragraphs.

Formats without pages (Word files, plain text) are read in document order into
headings (with a level, 1 the highest) and paragraphs. Each heading starts a section
that runs to the next heading; its path is the chain of headings above it by level,
so a level-2 heading after a level-3 one closes the level-3 one. Text before the first
heading is the `<file>#preamble` section; a document without headings is one section
named after its title. Section ids are `<file>#<heading>` with " (2)", " (3)" for a
heading text met again, as in the Markdown and PDF loaders. A heading with nothing
under it answers nothing and makes no section (its text stays in the path of the
sections below it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from groundqa.clauses import heading_ref
from groundqa.models import Section


@dataclass(frozen=True)
class Heading:
    """A heading in the stream: its text as shown, its level, and metadata for its section."""

    text: str
    level: int
    metadata: dict[str, Any] = field(default_factory=dict)


Block = Heading | str


def numbered_heading(text: str, level: int) -> Heading:
    """A heading whose number, if it shows one ("2.1 Scope", "Part 2 Fees"), becomes its
    section's `clause` metadata ("2.1", "Pt 2"), as ObliQA passages carry theirs."""
    clause = heading_ref(text, "")
    return Heading(text, level, {"clause": clause} if clause else {})


def build_sections(name: str, title: str, blocks: Sequence[Block]) -> list[Section]:
    """The sections of the stream `blocks` (see the module docstring); `name` is the
    file part of every section id."""
    runs: list[tuple[Heading | None, tuple[str, ...], list[str]]] = [(None, (), [])]
    stack: list[Heading] = []
    for item in blocks:
        if isinstance(item, Heading):
            while stack and stack[-1].level >= item.level:
                stack.pop()
            stack.append(item)
            runs.append((item, tuple(h.text for h in stack), []))
        elif item.strip():
            runs[-1][2].append(item.strip())
    if len(runs) == 1:
        text = "\n\n".join(runs[0][2])
        if not text:
            return []
        section_id = f"{name}#{title}" if title else name
        return [
            Section(section_id=section_id, heading=title, text=text, path=(title,) if title else ())
        ]

    seen: Counter[str] = Counter()
    sections: list[Section] = []
    for heading, path, paragraphs in runs:
        text = "\n\n".join(paragraphs)
        if not text:
            continue
        label = heading.text if heading is not None else "preamble"
        seen[label] += 1
        suffix = f" ({seen[label]})" if seen[label] > 1 else ""
        sections.append(
            Section(
                section_id=f"{name}#{label}{suffix}",
                heading=heading.text if heading is not None else "",
                text=text,
                path=path,
                metadata=dict(heading.metadata) if heading is not None else {},
            )
        )
    return sections
