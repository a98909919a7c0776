"""Citation check: every `[n]` in an answer must resolve to a passage that was retrieved.

`check_citations` asks whether each marker number names a citation of a
retrieved passage, whether a real answer carries any marker at all, and whether
a refusal cites anything. `citation_positions` says which retrieved passage each
citation names, so the fact screen can read a claim against the passages it cites.

What this check refuses to do: it never repairs a citation (a marker with no
passage stays unresolved, however close a passage looks) and never reads what a
cited passage says; that is the fact screen's work.
"""

from __future__ import annotations

from collections.abc import Sequence

from groundqa.lexicon import marker_numbers
from groundqa.models import Citation, Hit
from groundqa.verdicts import CitationCheck


def check_citations(
    answer_text: str, citation_ns: Sequence[int], n_passages: int, refused: bool
) -> CitationCheck:
    """Whether every `[n]` in the text resolves to a citation of a retrieved passage.

    `citation_ns` are the numbers of the citations that name a retrieved passage;
    a marker resolves when its number is one of them and within `n_passages`.
    """
    markers = sorted(set(marker_numbers(answer_text)))
    given = {n for n in citation_ns if 1 <= n <= n_passages}
    return CitationCheck(
        markers=tuple(markers),
        unresolved=tuple(n for n in markers if n not in given),
        unused=tuple(sorted(set(citation_ns) - set(markers))),
        no_markers=not refused and not markers,
        refusal_cites=refused and bool(markers or citation_ns),
    )


def citation_positions(citations: Sequence[Citation], passages: Sequence[Hit]) -> dict[int, int]:
    """Citation number -> 1-based position of the retrieved passage it names."""
    by_chunk: dict[str, int] = {}
    by_section: dict[tuple[str, str], int] = {}
    for i, hit in enumerate(passages, start=1):
        by_chunk.setdefault(hit.chunk.chunk_id, i)
        by_section.setdefault((hit.chunk.doc_id, hit.chunk.section_id), i)
    out: dict[int, int] = {}
    for c in citations:
        pos = by_chunk.get(c.chunk_id) if c.chunk_id else by_section.get((c.doc_id, c.section_id))
        if pos is not None:
            out.setdefault(c.n, pos)
    return out
