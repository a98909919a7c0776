"""Clause references a reader can look up: s.3.2.1, cl.42, reg.12, Sch 1, Pt 2.

A citation names the section it came from; for a regulation that is not enough,
because the reader checks the clause. The reference is read from what the
document already says, never invented:

- a heading that names its unit: "Part 2 Obligations" -> `Pt 2`, "Schedule 1" ->
  `Sch 1`, "Regulation 12 ..." -> `reg.12`, "Clause 42" -> `cl.42`;
- a heading that is only numbered ("3 Reporting thresholds", "2.1.3 Scope 1")
  takes the unit its kind of instrument uses: sections in an Act, regulations in
  Regulations, clauses in by-laws, codes, standards and policies (a document's
  `clause_style` metadata overrides this: `s.`, `cl.`, `reg.`, `r.`, `art.`);
- the paragraph a cited sentence sits in, when it opens with a finer number
  under the section's ("3.1 A corporation must ..." under "3 Reporting
  thresholds") gives the finer reference;
- ids of the form `DOC:CLAUSE` (ObliQA's `DocumentID:PassageID`) are already
  clause ids and are shown as they are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from groundqa.lexicon import LEGAL_UNITS

_NUMBER = r"\d+[A-Za-z]?(?:\.\d+[A-Za-z]?)*"
_NAMED = re.compile(
    rf"^\s*(?P<unit>{'|'.join(sorted(LEGAL_UNITS, key=len, reverse=True))})\.?\s+(?P<num>{_NUMBER}|[IVXLC]+)\b",
    re.IGNORECASE,
)
_NUMBERED = re.compile(rf"^\s*(?P<num>{_NUMBER})\.?(?=\s|$)")
_STYLES = {s.rstrip(". ").casefold(): s for s in LEGAL_UNITS.values()}
# The unit a bare number names, by the kind of instrument the title says it is.
_BY_TITLE = (
    (re.compile(r"\bregulations?\b", re.I), "reg."),
    (
        re.compile(
            r"\b(by-?laws?|local law|codes?|standards?|polic(?:y|ies)|overlay|rules|"
            r"schemes?|guidelines?|labelling)\b",
            re.I,
        ),
        "cl.",
    ),
    (re.compile(r"\bacts?\b", re.I), "s."),
)


def unit_for(title: str, metadata: Mapping[str, Any] | None = None) -> str:
    """The prefix a bare clause number takes in this document: `s.`, `cl.`, `reg.` ..."""
    style = str((metadata or {}).get("clause_style") or "").strip()
    if style:
        return _STYLES.get(style.rstrip(". ").casefold(), style)
    for pattern, unit in _BY_TITLE:
        if pattern.search(title):
            return unit
    return "s."


def heading_ref(heading: str, unit: str) -> str | None:
    """`Pt 2` from "Part 2 Obligations", `s.2.1.3` from "2.1.3 Scope 1" (Act); else None."""
    named = _NAMED.match(heading)
    if named:
        return f"{LEGAL_UNITS[named['unit'].casefold()]}{named['num']}"
    numbered = _NUMBERED.match(heading)
    return f"{unit}{numbered['num']}" if numbered else None


def paragraph_number(text: str, snippet: str) -> str | None:
    """The number the paragraph holding `snippet` opens with ("3.1"), if it has one."""
    at = text.find(snippet[:80]) if snippet else -1
    if at < 0:
        return None
    start = text.rfind("\n\n", 0, at)
    paragraph = text[start + 2 if start >= 0 else 0 :].lstrip()
    numbered = _NUMBERED.match(paragraph)
    return numbered["num"] if numbered else None


def clause_ref(
    *,
    doc_id: str,
    section_id: str,
    heading: str,
    title: str,
    text: str = "",
    snippet: str = "",
    metadata: Mapping[str, Any] | None = None,
) -> str | None:
    """The clause reference for a citation (see the module docstring), or None."""
    prefix = f"{doc_id}:"
    if section_id.startswith(prefix) and section_id[len(prefix) :][:1].isdigit():
        return section_id[len(prefix) :]
    unit = unit_for(title, metadata)
    ref = heading_ref(heading, unit)
    finer = paragraph_number(text, snippet)
    if finer is None:
        return ref
    base = ref[len(unit) :] if ref and ref.startswith(unit) else None
    if base is not None and (finer == base or finer.startswith(f"{base}.")):
        return f"{unit}{finer}"  # a finer number under a numbered section
    return f"{unit}{finer}" if ref is None else ref
