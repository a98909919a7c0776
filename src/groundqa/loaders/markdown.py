"""Load a Markdown file as one Document with one Section per `##` heading.

Section ids are `<file>#<heading text>` (the contract: `guide_kestrelford.md#Getting
there`), where `<file>` is the path relative to the folder that was loaded. The first
`# ` heading is the document title; the text between it and the first `##` (the
preamble) is merged into the first section, so that a town's opening facts are found
with "Getting there" instead of being lost or standing alone. Deeper headings stay in
their section's text. YAML front matter becomes the document's metadata; front matter
that cannot (not YAML, a binary value, too big, too deep, or aliases that expand past
`YAML_MAX_VALUES`) is a BLOCK finding and the body still loads.

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

from groundqa.loaders._common import (
    block,
    doc_id_of,
    has_surrogate,
    normalise_newlines,
    read_text,
    source_of,
)
from groundqa.models import Document, Finding, Section

# The opening run of an ATX heading; the rest of the line is cut with string methods,
# which take linear time where a regex that also matched the trailing blanks backtracked
# quadratically on a long line of spaces.
_ATX_OPEN = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FENCE_CLOSE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*$")
_FRONT_MATTER_END = ("---", "...")
# Front matter and metadata files describe a document in a few lines. These bounds keep a
# hostile one from costing minutes or gigabytes: YAML aliases let a 1 KiB file name a
# billion values, and the parser recurses once per level of nesting.
YAML_MAX_CHARS = 1_000_000
YAML_MAX_DEPTH = 50
YAML_MAX_VALUES = 100_000


class YamlProblem(Exception):
    """Front matter or a metadata file that cannot become metadata; `line` when known."""

    def __init__(self, problem: str, line: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line


@dataclass
class _Block:
    heading: str
    lines: list[str] = field(default_factory=list)

    def body(self) -> str:
        return "\n".join(self.lines).strip()


def _heading(line: str) -> tuple[int, str] | None:
    match = _ATX_OPEN.match(line)
    if match is None:
        return None
    text = line[match.end() :].strip(" \t")
    # CommonMark: a closing run of #s counts only after a blank, so `## C#` keeps its #.
    unclosed = text.rstrip("#")
    if unclosed != text and (not unclosed or unclosed[-1] in " \t"):
        text = unclosed
    return len(match.group(1)), text.strip()


def yaml_plain(value: Any) -> Any:
    """YAML values made JSON-safe: dates become ISO strings, keys become strings, sets
    sorted lists.

    Raises YamlProblem for what an index cannot store or should not: a binary value,
    half a surrogate pair, nesting deeper than YAML_MAX_DEPTH (an alias to itself is
    infinitely deep) and more than YAML_MAX_VALUES values once aliases are expanded.
    """
    count = 0

    def plain(item: Any, depth: int) -> Any:
        nonlocal count
        count += 1
        if count > YAML_MAX_VALUES:
            raise YamlProblem(f"more than {YAML_MAX_VALUES:,} values once aliases are expanded")
        if depth > YAML_MAX_DEPTH:
            raise YamlProblem(f"nested more than {YAML_MAX_DEPTH} levels deep")
        if isinstance(item, dt.date):  # datetime is a date too
            return item.isoformat()
        if isinstance(item, str):
            if has_surrogate(item):
                raise YamlProblem("an escape names half of a surrogate pair (e.g. \\ud800)")
            return item
        if isinstance(item, bytes):
            raise YamlProblem("a binary (!!binary) value; write it as text")
        if isinstance(item, dict):
            return {
                plain(k, depth + 1) if isinstance(k, str | bytes) else str(k): plain(v, depth + 1)
                for k, v in item.items()
            }
        if isinstance(item, set | frozenset):
            return sorted((plain(v, depth + 1) for v in item), key=str)
        if isinstance(item, list | tuple):
            return [plain(v, depth + 1) for v in item]
        return item

    return plain(value, 0)


def read_yaml(text: str) -> Any:
    """`text` parsed as YAML into JSON-safe values (see `yaml_plain`).

    Raises YamlProblem, never anything else, for text that is not YAML or is too big,
    too deep or too expansive to be metadata.
    """
    if len(text) > YAML_MAX_CHARS:
        raise YamlProblem(f"{len(text):,} characters, more than the {YAML_MAX_CHARS:,} allowed")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or "cannot be parsed"
        raise YamlProblem(problem, mark.line + 1 if mark is not None else None) from None
    except RecursionError:
        raise YamlProblem("nested too deeply") from None
    except (ValueError, OverflowError) as exc:
        # A value YAML's resolver accepts but Python cannot build: `2020-02-30`, or an
        # integer longer than Python converts.
        raise YamlProblem(str(exc).split(";")[0]) from None
    except (TypeError, AttributeError, KeyError, IndexError):
        # How PyYAML's constructors fail on a value its explicit tag does not fit
        # (`!!timestamp x`, `!!bool x`, an empty `!!int |`); only the parser runs inside
        # this `try`.
        raise YamlProblem("a value that does not fit its tag (e.g. !!timestamp x)") from None
    return yaml_plain(data)


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
        data = read_yaml("\n".join(lines[1:end]))
    except YamlProblem as exc:
        line = exc.line + 1 if exc.line is not None else 1  # + 1 for the opening ---
        where = f" on line {line}" if exc.line is not None else ""
        return (
            {},
            end + 1,
            block(
                "front-matter",
                f"{path.name} front matter is not valid YAML ({exc.problem}{where}); "
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
    return data, end + 1, None


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
    name = doc_id_of(path, root)
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
