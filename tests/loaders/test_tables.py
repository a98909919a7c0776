"""Tables as text: every cell keeps its row and column headers."""

from __future__ import annotations

from groundqa.loaders._tables import table_text
from groundqa.models import Chunk


def test_each_body_row_names_its_cells_by_their_headers() -> None:
    rows = [
        ["Zone", "Minimum lot size", "Frontage"],
        ["Rural", "40 ha", "100 m"],
        ["Residential", "600 m2", None],
    ]
    assert table_text(rows) == (
        "Zone: Rural; Minimum lot size: 40 ha; Frontage: 100 m.\n"
        "Zone: Residential; Minimum lot size: 600 m2."
    )


def test_several_header_rows_join_per_column_and_merged_cells_count_once() -> None:
    rows = [["Setback", "Setback", ""], ["Front", "Side", "Zone"], ["6 m", "2 m", "R1"]]
    assert table_text(rows, header_rows=2) == "Setback / Front: 6 m; Setback / Side: 2 m; Zone: R1."


def test_spacing_is_folded_and_empty_rows_and_one_column_tables_are_plain() -> None:
    assert table_text([["A", "B"], ["  x\n y ", "z."], ["", ""]]) == "A: x y; B: z."
    assert table_text([["Only"], ["one"], ["column"]]) == "Only\none\ncolumn"
    assert table_text([]) == "" and table_text([["", None]]) == ""
    # Without a header row, cells stand by themselves.
    assert table_text([["Rural", "40 ha"]], header_rows=0) == "Rural; 40 ha."


def test_a_section_anchor_becomes_the_link_s_fragment() -> None:
    html = Chunk(
        "c", "d", "d#s", "T", (), "x", "/corpus/code.html", None, metadata={"anchor": "25.04 010"}
    )
    assert html.uri == "file:///corpus/code.html#25.04%20010"
    pdf = Chunk("c", "d", "d#s", "T", (), "x", "/corpus/a.pdf", 3, metadata={"anchor": "x"})
    assert pdf.uri == "file:///corpus/a.pdf#page=3"
    plain = Chunk("c", "d", "d#s", "T", (), "x", "/corpus/a.md", None)
    assert plain.uri == "file:///corpus/a.md"
