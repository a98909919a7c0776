"""Writing a benchmark's report: Markdown tables and the cells they hold.

The figures come from each benchmark's data; this module only lays them out, so the
same data always reads the same way on every results page.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# How a retrieval plan is named in a table: the fusions by what they do, and the
# engine's default plan (retrieve.DEFAULT_DENSE_PLAN) as such.
PLAN_LABELS = {
    "hybrid": "hybrid (RRF, k=60)",
    "hybrid+weighted": "hybrid+weighted (0.3/0.7)",
    "hybrid+weighted=0.5/0.5+defs": "hybrid+weighted=0.5/0.5+defs (the default)",
}
NONE = "—"


def row(cells: Iterable[object]) -> str:
    """One Markdown table row."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(header: Sequence[object], rows: Iterable[Iterable[object]], align: str = "") -> list[str]:
    """A Markdown table's lines: the header, its rule and the rows. `align` gives a
    letter per column, `l` left and `r` right; by default the first column is left and
    the others right, as figures are."""
    align = align or "l" + "r" * (len(header) - 1)
    if len(align) != len(header):
        raise ValueError(f"{len(header)} columns but {len(align)} alignments ({align!r})")
    rule = "|" + "".join("---|" if a == "l" else "---:|" for a in align)
    return [row(header), rule, *(row(r) for r in rows)]


def pct(value: float | None, digits: int = 1) -> str:
    """A share as a percentage ("12.5%"), or a dash where there is none."""
    return NONE if value is None else f"{100 * value:.{digits}f}%"
