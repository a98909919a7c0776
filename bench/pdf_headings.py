"""PDF headings found by their type, checked against the outlines of real PDFs.

A PDF's outline (its bookmarks) is the author's own list of its headings. So on PDFs
that have one, the heading finders that the loader uses when there is none can be
measured against it: the loader is asked what the type (`pdf_headings`) and, as the
baseline in the same run, what the numbering alone (the finder used before) would give,
and each is compared with the outline.

The PDFs: those in ../shared/corpora/real_docs with a usable outline, and two manuals
that ship with Debian packages when they are installed (shared-mime-info's
specification and libtasn1's manual; skipped, with a message, where they are not).
Neither manual is in the labelled set of bench/real_docs.py.

Measured per PDF:

- outline entries, and headings found;
- recall: outline entries found as a heading, comparing the text (case, punctuation and
  a leading number or appendix letter aside: an outline often leaves the number off);
- nesting: of the entries found, the share whose nearest found ancestor in the outline
  is the found heading's own parent (the top level counts when both are at the top);
- found headings not in the outline. An outline is often shallower than the text's
  headings (a manual's function entries, a by-law's sections), so these are not all
  errors; the table lists them so a reader can judge;
- and what the loader does with the outline itself: the share of its sections whose
  breadcrumb is their entry's path in the outline (the issue of siblings nested under
  each other).

    python bench/pdf_headings.py
"""

from __future__ import annotations

import difflib
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, shared_path, write_result
from groundqa.loaders.pdf import heading_view, load_pdf
from groundqa.loaders.pdf_furniture import norm
from report import pct

DEBIAN = (
    Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"),
    Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf"),
)
_LABEL = re.compile(r"^(?:appendix [a-z] |[a-z] |(?:\d+ )+)")
EXTRA_SHOWN = 8


def key(text: str) -> str:
    """A heading as compared with an outline entry (see the module docstring)."""
    return _LABEL.sub("", norm(text))


def score(
    outline: Sequence[tuple[int, str, int]], found: Sequence[tuple[str, tuple[str, ...]]]
) -> dict[str, Any]:
    """How the `found` headings ((text, path), in document order) match the outline's
    entries, aligned in order (the longest common subsequence of their texts, so "SECTION
    1." in chapter II is matched to chapter II's)."""
    wanted = [key(t) for _, t, _ in outline]
    keys = [key(text) for text, _ in found]
    match: list[int | None] = [None] * len(wanted)
    aligned = difflib.SequenceMatcher(None, wanted, keys, autojunk=False)
    for block in aligned.get_matching_blocks():
        for k in range(block.size):
            match[block.a + k] = block.b + k
    matched = {i for i in match if i is not None}
    # Nesting: the found heading's parent is the nearest outline ancestor that was found.
    nested = 0
    stack: list[tuple[int, int | None]] = []
    for (depth, _, _), i in zip(outline, match, strict=True):
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if i is not None:
            above = next((j for _, j in reversed(stack) if j is not None), None)
            path = found[i][1]
            parent = key(path[-2]) if len(path) > 1 else None
            nested += parent == (keys[above] if above is not None else None)
        stack.append((depth, i))
    hits = len(matched)
    extra = [text for i, (text, _) in enumerate(found) if i not in matched]
    return {
        "outline": len(wanted),
        "found": len(found),
        "recall": round(hits / len(wanted), 4) if wanted else None,
        "nesting": round(nested / hits, 4) if hits else None,
        "missed": [t for (_, t, _), i in zip(outline, match, strict=True) if i is None],
        "not_in_outline": len(extra),
        "not_in_outline_shown": extra[:EXTRA_SHOWN],
    }


def outline_breadcrumbs(path: Path, outline: Sequence[tuple[int, str, int]]) -> dict[str, Any]:
    """The loader's own sections (it uses the outline): the share of its headed sections
    whose path is their outline entry's path (ancestors and itself, as the outline nests
    them), entries taken in order."""
    (doc,), _ = load_pdf(path, ocr=False)
    paths: list[tuple[str, ...]] = []
    stack: list[tuple[int, str]] = []
    for depth, title, _ in outline:
        while stack and stack[-1][0] >= depth:
            stack.pop()
        stack.append((depth, title))
        paths.append(tuple(t for _, t in stack))
    headed = [s for s in doc.sections if s.heading]
    remaining = iter(paths)
    right = sum(section.path in remaining for section in headed)
    return {"sections": len(headed), "matching": right, "share": round(right / len(headed), 4)}


def pdfs() -> list[Path]:
    files: list[Path] = []
    folder = shared_path("corpora", "real_docs")
    if folder is not None:
        files += sorted(folder.glob("*.pdf"))
    for path in DEBIAN:
        if path.exists():
            files.append(path)
        else:
            print(f"skipped: {path} not installed", file=sys.stderr)
    return files


def run() -> dict[str, Any] | None:
    started = time.perf_counter()
    rows: dict[str, Any] = {}
    for path in pdfs():
        view = heading_view(path)
        if not view.outline:
            continue
        rows[path.name] = {
            "source": "debian" if path in DEBIAN else "real_docs",
            "type": score(view.outline, [(h.text, h.path) for h in view.found]),
            "numbered": score(view.outline, [(h.text, h.path) for h in view.numbered]),
            "loaded": outline_breadcrumbs(path, view.outline),
        }
    if not rows:
        print("skipped: no PDF with an outline found", file=sys.stderr)
        return None
    data = {
        "machine": machine(),
        "pdfs": rows,
        "seconds": round(time.perf_counter() - started, 1),
    }
    write_result("pdf_headings", data, markdown(data))
    return data


def markdown(data: dict[str, Any]) -> str:
    lines = [
        "## PDF headings by their type, against real outlines",
        "",
        f"`python bench/pdf_headings.py` ({data['seconds']} s): for each PDF with an outline, "
        "the headings the loader would find without it, by their type (`pdf_headings`) and, "
        "as the baseline, by their numbering alone, compared with the outline. Recall: "
        "outline entries found as headings (case, punctuation and a leading number aside). "
        "Nesting: of those, the share under the right parent. Not in the outline: found "
        "headings the outline does not list (often deeper headings than the outline's).",
        "",
        "| PDF | outline entries | by type: recall / nesting / not in outline "
        "| by numbering: recall / nesting / not in outline "
        "| loaded with the outline: breadcrumbs as the outline |",
        "|---|---:|---|---|---|",
    ]
    for name, row in data["pdfs"].items():
        cells = [
            f"{pct(row[k]['recall'])} / {pct(row[k]['nesting'])} / {row[k]['not_in_outline']}"
            for k in ("type", "numbered")
        ]
        loaded = row["loaded"]
        cells.append(f"{pct(loaded['share'])} ({loaded['matching']}/{loaded['sections']})")
        lines.append(
            f"| {name} ({row['source']}) | {row['type']['outline']} | {' | '.join(cells)} |"
        )
    lines += ["", "Missed by type, and the first found headings not in the outline:", ""]
    for name, row in data["pdfs"].items():
        missed = "; ".join(row["type"]["missed"]) or "none"
        extra = "; ".join(row["type"]["not_in_outline_shown"]) or "none"
        lines.append(f"- **{name}**: missed: {missed}. Not in the outline: {extra}.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    run()
