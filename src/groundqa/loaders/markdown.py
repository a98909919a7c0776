"""Load a Markdown file as one Document with one Section per `##` heading.

Section ids are `<file>#<heading text>` (the contract: `guide_kestrelford.md#Getting
there`), where `<file>` is the path relative to the folder that was loaded. The first
`# ` heading is the document title; the text between it and the first `##` (the
preamble) is merged into the first section, so that a town's opening facts are found
with "Getting there" instead of being lost or standing alone. Deeper headings stay in
their section's text. YAML front matter becomes the document's metadata.

It does not rewrite text (no re-wrapping, no Unicode normalisation; only CRLF becomes
LF and bodies are stripped), does not treat `#` lines inside fenced code as headings,
and does not drop a file that has no body: it yields a Document with no sections so
that validation blocks it by name.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from groundqa.loaders._common import block, normalise_newlines, read_text, source_of
from groundqa.models import Document, Finding, Section

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
# CommonMark: a closing run of #s counts only after a space, so `## C#` keeps its #.
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FENCE_CLOSE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*$")
_FRONT_MATTER_END = ("---", "...")


@dataclass
class _Block:
    heading: str
    lines: list[str] = field(default_factory=list)

    def body(self) -> str:
        return "\n".join(self.lines).strip()


def _heading(line: str) -> tuple[int, str] | None:
    match = _ATX.match(line)
    if match is None:
        return None
    text = _CLOSING_HASHES.sub("", match.group(2) or "").strip()
    return len(match.group(1)), text


def yaml_plain(value: Any) -> Any:
    """YAML values made JSON-safe: dates become ISO strings, keys become strings."""
    if isinstance(value, dt.date):  # datetime is a date too
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): yaml_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [yaml_plain(v) for v in value]
    return value


def _front_matter(lines: list[str], path: Path) -> tuple[dict[str, Any], int, Finding | None]:
    """(metadata, index of the first body line, BLOCK finding or None).

    A `---` first line with no closing line is not front matter: it is a thematic
    break, and the file is read as plain Markdown.
    """
    if not lines or lines[0].rstrip() != "---":
        return {}, 0, None
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in _FRONT_MATTER_END), None)
    if end is None:
        return {}, 0, None
    try:
        data = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1
        problem = getattr(exc, "problem", None) or "cannot be parsed"
        return (
            {},
            end + 1,
            block(
                "front-matter",
                f"{path.name} front matter is not valid YAML ({problem} on line {line}); "
                "fix it or remove the --- block",
                path,
                line=line,
            ),
        )
    if data is None:
        return {}, end + 1, None
    if not isinstance(data, dict):
        return (
            {},
            end + 1,
            block(
                "front-matter",
                f"{path.name} front matter is a {type(data).__name__}, not a mapping; "
                "write it as `key: value` lines",
                path,
                line=2,
            ),
        )
    return yaml_plain(data), end + 1, None


def parse_markdown(
    text: str, name: str, path: Path
) -> tuple[str, tuple[Section, ...], dict[str, Any], list[Finding]]:
    """(title, sections, front-matter metadata, findings) for the Markdown `text`.

    `name` is the file part of every section id.
    """
    lines = normalise_newlines(text).split("\n")
    metadata, first, problem = _front_matter(lines, path)
    findings = [problem] if problem else []

    title: str | None = None
    preamble = _Block(heading="")
    blocks: list[_Block] = []
    current = preamble
    fence: str | None = None
    for line in lines[first:]:
        if fence is not None:
            closing = _FENCE_CLOSE.match(line)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                fence = None
            current.lines.append(line)
            continue
        opening = _FENCE_OPEN.match(line)
        if opening:
            fence = opening.group(1)
            current.lines.append(line)
            continue
        heading = _heading(line)
        if heading is not None:
            level, heading_text = heading
            if level == 1 and title is None:
                title = heading_text
                continue
            if level == 2:
                current = _Block(heading=heading_text)
                blocks.append(current)
                continue
        current.lines.append(line)

    if title is None:
        fm_title = metadata.get("title")
        title = str(fm_title).strip() if fm_title is not None else ""

    intro = preamble.body()
    if not blocks:
        # No `##` at all: the whole file is one section named after the document.
        if not intro:
            return title, (), metadata, findings
        section_id = f"{name}#{title}" if title else name
        section = Section(
            section_id=section_id,
            heading=title,
            text=intro,
            path=(title,) if title else (),
        )
        return title, (section,), metadata, findings

    bodies = [b.body() for b in blocks]
    bodies[0] = "\n\n".join(part for part in (intro, bodies[0]) if part)
    seen: dict[str, int] = {}
    sections: list[Section] = []
    for blk, body in zip(blocks, bodies, strict=True):
        if not body:
            continue  # a heading with nothing under it answers nothing
        seen[blk.heading] = seen.get(blk.heading, 0) + 1
        count = seen[blk.heading]
        # Ids are numbered among the kept sections, so the one with text keeps the plain id.
        suffix = f" ({count})" if count > 1 else ""
        sections.append(
            Section(
                section_id=f"{name}#{blk.heading}{suffix}",
                heading=blk.heading,
                text=body,
                path=(blk.heading,),
            )
        )
    return title, tuple(sections), metadata, findings


def load_markdown(path: Path, root: Path | None = None) -> tuple[list[Document], list[Finding]]:
    """One Document for the Markdown file `path`.

    Its id (and the file part of its section ids) is the path relative to `root`, the
    folder that was loaded; just the file name when `root` is None.
    """
    text = read_text(path)
    if isinstance(text, Finding):
        return [], [text]
    name = path.relative_to(root).as_posix() if root is not None else path.name
    title, sections, metadata, findings = parse_markdown(text, name, path)
    document = Document(
        doc_id=name,
        title=title,
        source=source_of(path),
        format="markdown",
        sections=sections,
        metadata=metadata,
    )
    return [document], findings
