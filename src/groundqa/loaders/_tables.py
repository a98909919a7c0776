"""Tables as text that keeps each cell with its headers.

A threshold that lives in a table ("Rural | 40 ha") means nothing once the table is
flattened into a run of cells: retrieval cannot match "minimum lot size in the rural
zone" to it, and a quote cannot say what the number is. Every loader that meets a
table (PDF, HTML, DOCX) hands its rows here, and each body row becomes one line that
names every cell by its column header, led by the row's own header cell:

    Zone: Rural; Minimum lot size: 40 ha; Frontage: 100 m

Header rows are the first `header_rows` rows; several header rows are joined per
column ("Setback / Front"). A table with no header row names cells by their first
cell only; a table of one column is its cells, one a line. Empty cells are left out,
and a cell's inner line breaks and spacing are folded to single spaces.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["table_text"]


def _clean(cell: str | None) -> str:
    return " ".join((cell or "").split())


def _headers(rows: Sequence[Sequence[str]], width: int) -> list[str]:
    """One label per column, from every header row (a merged cell repeats its text)."""
    labels: list[str] = []
    for col in range(width):
        parts: list[str] = []
        for row in rows:
            cell = _clean(row[col]) if col < len(row) else ""
            if cell and (not parts or parts[-1] != cell):
                parts.append(cell)
        labels.append(" / ".join(parts))
    return labels


def table_text(rows: Sequence[Sequence[str | None]], header_rows: int = 1) -> str:
    """The table as lines of `Header: value; ...`, one line per body row (see above)."""
    cleaned = [[_clean(c) for c in row] for row in rows]
    cleaned = [row for row in cleaned if any(row)]
    if not cleaned:
        return ""
    width = max(len(row) for row in cleaned)
    if width == 1:
        return "\n".join(row[0] for row in cleaned)
    header_rows = max(0, min(header_rows, len(cleaned) - 1))
    labels = _headers(cleaned[:header_rows], width) if header_rows else [""] * width
    lines: list[str] = []
    for row in cleaned[header_rows:]:
        cells = []
        for col, cell in enumerate(row):
            if not cell:
                continue
            label = labels[col]
            cells.append(f"{label}: {cell}" if label and label != cell else cell)
        if cells:
            lines.append("; ".join(cells) + ("" if cells[-1].endswith(".") else "."))
    return "\n".join(lines)
