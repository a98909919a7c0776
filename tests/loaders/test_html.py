"""HTML pages: main content only, headings as nested sections, element ids as links, tables
with their headers, and one finding for a page that is no content. Small pages are written
here; the San Mateo municipal code pages in ../shared are read in place."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from groundqa.chunking import ChunkerSettings, chunk_documents
from groundqa.loaders.html import HTML_SUFFIXES, NAV_ONLY_CHARS, load_html
from groundqa.models import ANCHOR, Document, Finding, Section
from tests.conftest import need_shared

REAL_DOCS = ("corpora", "real_docs")
SIGNS = "san_mateo_municipal_code_title25_signs.html"
SUBDIVISIONS = "san_mateo_municipal_code_title26_subdivisions.html"

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Tree rules | Kestrelford Council</title>
<script>var tracker = "SCRIPT-TEXT";</script><style>p { color: red } /* STYLE-TEXT */</style>
</head><body>
<a href="#main" class="skip">Skip to main content</a>
<header><h1>Kestrelford Council</h1><p>SITE-BANNER</p></header>
<nav><ul><li><a href="/">Home</a></li><li><a href="/bins">NAV-BINS</a></li></ul></nav>
<main id="main">
<h1 id="top">Tree rules</h1>
<p>These rules protect   the town's
   trees.</p>
<section id="protected"><h2>Protected trees</h2>
<p>A tree is protected if its trunk is wider than <b>30</b> cm.<br>Fruit trees are not.</p>
<ol><li>(a) oak, ash and beech;</li><li>(b) any tree in a conservation area.</li></ol>
<div>A div's own text.<p>A paragraph inside it.</p></div>
<h3 id="felling">Felling</h3><p>Felling a protected tree needs consent.</p>
<h4>Emergencies</h4><p>A dangerous tree may be felled at once.</p>
<h3>Pruning</h3><p>Pruning by less than a fifth needs no consent.</p>
</section>
<h2>Fees</h2><p>Fees are set each April.</p>
<h2>Fees</h2><p>A second list of fees.</p>
<div hidden>HIDDEN-ATTR</div><p aria-hidden="true">ARIA-HIDDEN</p>
<p style="display: none">STYLE-HIDDEN</p>
<form><label>Search</label><input name="q"><button>FORM-BUTTON</button></form>
<noscript>NOSCRIPT-TEXT</noscript><template><p>TEMPLATE-TEXT</p></template>
<iframe src="x.html">IFRAME-TEXT</iframe><svg><text>SVG-TEXT</text></svg>
</main>
<footer><p>FOOTER-TEXT</p></footer>
</body></html>
"""

CHROME = (
    "Skip to main content",
    "SCRIPT-TEXT",
    "STYLE-TEXT",
    "SITE-BANNER",
    "Kestrelford Council",
    "NAV-BINS",
    "HIDDEN-ATTR",
    "ARIA-HIDDEN",
    "STYLE-HIDDEN",
    "FORM-BUTTON",
    "NOSCRIPT-TEXT",
    "TEMPLATE-TEXT",
    "IFRAME-TEXT",
    "SVG-TEXT",
    "FOOTER-TEXT",
)

FILLER = "This paragraph is here so that the page holds enough text to be an article. " * 4


def _write(tmp_path: Path, html: str, name: str = "page.html") -> Path:
    path = tmp_path / name
    path.write_text(html, encoding="utf-8")
    return path


def _one(path: Path) -> tuple[Document, list[Finding]]:
    docs, findings = load_html(path)
    assert len(docs) == 1, findings
    return docs[0], findings


def _section(doc: Document, heading: str) -> Section:
    matching = [s for s in doc.sections if s.heading == heading]
    assert len(matching) == 1, [s.heading for s in doc.sections]
    return matching[0]


def _all_text(doc: Document) -> str:
    return "\n".join(s.text for s in doc.sections)


@pytest.fixture
def page(tmp_path: Path) -> Document:
    doc, findings = _one(_write(tmp_path, PAGE))
    assert findings == []
    return doc


def test_only_the_main_content_is_kept(page: Document) -> None:
    text = _all_text(page)
    for chrome in CHROME:
        assert chrome not in text
    assert "protected if its trunk is wider than 30 cm." in text
    assert page.format == "html" and page.doc_id == "page.html"


def test_the_title_is_the_h1_that_the_title_element_names(page: Document) -> None:
    # <title> adds the site's name; the h1 it contains is the page's own title.
    assert page.title == "Tree rules"
    intro = page.sections[0]
    assert intro.section_id == "page.html#Tree rules" and intro.path == ()
    assert intro.text == "These rules protect the town's trees."
    assert intro.metadata[ANCHOR] == "top"


def test_headings_nest_by_level(page: Document) -> None:
    paths = {s.heading: s.path for s in page.sections}
    assert paths["Protected trees"] == ("Protected trees",)
    assert paths["Felling"] == ("Protected trees", "Felling")
    assert paths["Emergencies"] == ("Protected trees", "Felling", "Emergencies")
    # The same level again is a sibling, not a child.
    assert paths["Pruning"] == ("Protected trees", "Pruning")


def test_blocks_are_paragraphs_and_inline_text_is_folded(page: Document) -> None:
    paragraphs = _section(page, "Protected trees").text.split("\n\n")
    assert paragraphs == [
        "A tree is protected if its trunk is wider than 30 cm.\nFruit trees are not.",
        "(a) oak, ash and beech;",
        "(b) any tree in a conservation area.",
        "A div's own text.",
        "A paragraph inside it.",
    ]


def test_repeated_headings_get_numbered_ids(page: Document) -> None:
    fees = [s for s in page.sections if s.heading == "Fees"]
    assert [s.section_id for s in fees] == ["page.html#Fees", "page.html#Fees (2)"]
    assert len({s.section_id for s in page.sections}) == len(page.sections)


def test_element_ids_become_the_links_of_chunks(page: Document) -> None:
    anchors = {s.heading: s.metadata.get(ANCHOR) for s in page.sections}
    assert anchors["Felling"] == "felling"  # the heading's own id
    assert anchors["Protected trees"] == "protected"  # the <section> the heading opens
    assert anchors["Pruning"] is None  # its <section> opens with another heading
    chunks = chunk_documents([page], ChunkerSettings())
    by_heading = {c.section_id.split("#", 1)[1]: c for c in chunks}
    assert by_heading["Felling"].uri.endswith("/page.html#felling")
    assert by_heading["Protected trees"].uri.endswith("/page.html#protected")
    assert by_heading["Pruning"].uri.endswith("/page.html")
    assert by_heading["Felling"].breadcrumb == "Tree rules > Protected trees > Felling"


TABLES = f"""<html><body><main><h1>Lot sizes</h1><p>{FILLER}</p>
<h2 id="t1">Table one</h2>
<table><caption>Table 1: Minimum lots</caption>
<thead><tr><th>Zone</th><th>Minimum lot size</th><th>Frontage</th></tr></thead>
<tbody>
<tr><th rowspan="2">Rural</th><td>40 ha</td><td>100 m</td></tr>
<tr><td colspan="2">20 ha with consent</td></tr>
<tr><td colspan="3">Lots on a flood plain need a survey.</td></tr>
<tr><td>Urban</td><td>600 m2</td><td></td></tr>
</tbody></table>
<h2>Table two</h2>
<table><tr><th>Setback</th><th colspan="2">Side</th></tr>
<tr><th></th><th>Left</th><th>Right</th></tr>
<tr><td>6 m</td><td>2 m</td><td>3 m</td></tr></table>
<h2>Table three</h2>
<table><tr><th>Permit fee</th><td>120 pounds</td></tr><tr><th>Appeal fee</th><td>80 pounds</td></tr></table>
<h2>Table four</h2>
<table><tr><th>Fee</th><th>Amount</th></tr><tr><td>Permit</td><td>120</td></tr>
<tr><th>Sign</th><th>Maximum size</th></tr><tr><td>Face</td><td>20 sq. ft.</td></tr></table>
</main></body></html>"""


def test_tables_keep_each_cell_with_its_headers(tmp_path: Path) -> None:
    doc, _ = _one(_write(tmp_path, TABLES))
    assert _section(doc, "Table one").text.split("\n") == [
        "Table 1: Minimum lots",
        "Zone: Rural; Minimum lot size: 40 ha; Frontage: 100 m.",
        # rowspan repeats "Rural" down, colspan repeats the merged cell across.
        "Zone: Rural; Minimum lot size: 20 ha with consent; Frontage: 20 ha with consent.",
        # A row that is one cell across the whole table is a note, said once.
        "Lots on a flood plain need a survey.",
        "Zone: Urban; Minimum lot size: 600 m2.",
    ]
    # Two leading rows of <th> are two header rows, joined per column.
    assert _section(doc, "Table two").text == "Setback: 6 m; Side / Left: 2 m; Side / Right: 3 m."
    # No header row: a row's cells stand together, led by its own header cell.
    assert _section(doc, "Table three").text == "Permit fee; 120 pounds.\nAppeal fee; 80 pounds."
    # A row of header cells in the body gives the rows below it their headers.
    assert _section(doc, "Table four").text == (
        "Fee: Permit; Amount: 120.\nSign: Face; Maximum size: 20 sq. ft."
    )


def test_spans_that_would_fill_a_huge_table_keep_each_cell_once(tmp_path: Path) -> None:
    # Every row's first cell spans to the end, pushing each next row one column right:
    # repeated, 2,000 rows would fill two million cells.
    rows = "<tr><td rowspan=0>held</td><td>cell</td></tr>" * 2000
    page = f"<html><body><main><h1>Big</h1><table>{rows}</table></main></body></html>"
    doc, _ = _one(_write(tmp_path, page))
    assert doc.sections[0].text.count("held") == 2000
    assert len(doc.sections[0].text) < 40_000


CODE = f"""<html><head><title>Title 9 ROADS | Law Library</title></head><body><main>
<h1 id="t9">Title 9 ROADS</h1>
<h2 id="c2" class="h__chapter">Chapter 9.02 GENERAL</h2>
<h2 id="s1" class="h__section">9.02.010 PURPOSE.</h2><p>{FILLER}</p>
<aside class="annotations" role="note"><p>(Ord. No. 2010-8 § 1.)</p>
<h4>Cross References</h4><p><a href="/9.04.010">Section 9.04.010</a></p></aside>
<h2 id="s2" class="h__section">9.02.020 SCOPE.</h2><p>Scope.</p>
<h2 id="c4" class="h__chapter">Chapter 9.04 MAPS</h2>
<h2 class="line subheading">ARTICLE I TENTATIVE MAPS</h2>
<h2 id="s3" class="h__section">9.04.010 PREPARATION.</h2><p>Preparation.</p>
<h2 class="line subheading">ARTICLE II FINAL MAPS</h2>
<h2 id="s4" class="h__section">9.04.020 FILING.</h2><p>Filing.</p>
<aside><a href="/a">Related page one</a> <a href="/b">Related page two</a></aside>
</main></body></html>"""


def test_headings_of_one_tag_nest_by_their_classes(tmp_path: Path) -> None:
    # Chapters, articles and sections are all <h2>, told apart by class only. A chapter
    # heading is followed at once by a section or article heading: it holds them.
    doc, _ = _one(_write(tmp_path, CODE))
    paths = {s.heading: s.path for s in doc.sections}
    assert paths == {
        "9.02.010 PURPOSE.": ("Chapter 9.02 GENERAL", "9.02.010 PURPOSE."),
        "9.02.020 SCOPE.": ("Chapter 9.02 GENERAL", "9.02.020 SCOPE."),
        "9.04.010 PREPARATION.": (
            "Chapter 9.04 MAPS",
            "ARTICLE I TENTATIVE MAPS",
            "9.04.010 PREPARATION.",
        ),
        "9.04.020 FILING.": ("Chapter 9.04 MAPS", "ARTICLE II FINAL MAPS", "9.04.020 FILING."),
    }


def test_classes_with_text_between_stay_siblings(tmp_path: Path) -> None:
    # Different classes alone say nothing: every heading here has text under it.
    body = "".join(
        f'<h2 class="{kind}">{name}</h2><p>{FILLER}</p>'
        for kind, name in [("a", "One"), ("b", "Two"), ("a", "Three"), ("b", "Four")]
    )
    doc, _ = _one(_write(tmp_path, f"<html><body><main>{body}</main></body></html>"))
    assert [s.path for s in doc.sections] == [("One",), ("Two",), ("Three",), ("Four",)]


def test_notes_stay_in_their_section_and_link_boxes_go(tmp_path: Path) -> None:
    doc, _ = _one(_write(tmp_path, CODE))
    purpose = _section(doc, "9.02.010 PURPOSE.").text
    # The history note and its "Cross References" heading are text of the section.
    assert purpose.endswith("(Ord. No. 2010-8 § 1.)\n\nCross References\n\nSection 9.04.010")
    assert "Cross References" not in {s.heading for s in doc.sections}
    assert "Related page" not in _all_text(doc)


def test_a_page_of_links_is_reported_as_navigation(tmp_path: Path) -> None:
    links = "".join(f'<li><a href="/p{i}">Rule page {i}</a></li>' for i in range(40))
    index = f"<html><body><main><h1>Rules</h1><ul>{links}</ul></main></body></html>"
    docs, findings = load_html(_write(tmp_path, index))
    assert len(docs) == 1  # kept: a REVIEW, not a BLOCK
    assert [f.severity for f in findings] == ["REVIEW"]
    assert findings[0].check == "html-navigation-only"
    assert "only navigation" in findings[0].message
    assert "save the page of the article itself" in findings[0].message
    # The same page with an article's worth of text is not.
    article = index.replace("</ul>", f"</ul><p>{FILLER * 2}</p>")
    assert len(FILLER * 2) > NAV_ONLY_CHARS
    assert load_html(_write(tmp_path, article))[1] == []


def test_a_page_with_nothing_but_navigation_is_blocked(tmp_path: Path) -> None:
    page = '<html><body><nav><a href="/">Home</a></nav><footer>Contact</footer></body></html>'
    docs, findings = load_html(_write(tmp_path, page))
    assert docs == []
    assert [(f.severity, f.check) for f in findings] == [("BLOCK", "html-no-content")]


def test_a_binary_file_is_blocked(tmp_path: Path) -> None:
    path = tmp_path / "logo.html"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8)
    docs, findings = load_html(path)
    assert docs == []
    assert [(f.severity, f.check) for f in findings] == [("BLOCK", "binary")]
    assert "logo.html" in findings[0].message


def test_bytes_that_are_no_text_are_blocked_and_a_few_are_reported(tmp_path: Path) -> None:
    noise = tmp_path / "noise.htm"
    noise.write_bytes(bytes((i * 131 + 7) % 255 + 1 for i in range(6000)))
    docs, findings = load_html(noise)
    assert docs == [] and [(f.severity, f.check) for f in findings] == [("BLOCK", "not-decodable")]
    # Latin-1 bytes in a page that does not say so: the page loads, the damage is named.
    latin = tmp_path / "latin.html"
    latin.write_bytes(
        f"<html><body><h1>Fees</h1><p>{FILLER}</p><p>".encode()
        + "Caf\u00e9 ".encode("latin-1") * 20
        + b"</p></body></html>"
    )
    doc, findings = _one(latin)
    assert [(f.severity, f.check) for f in findings] == [("REVIEW", "encoding")]
    assert "20 bytes" in findings[0].message and "<meta charset>" in findings[0].message
    assert "Caf\ufffd" in _all_text(doc)


def test_the_declared_encoding_and_a_byte_order_mark_are_honoured(tmp_path: Path) -> None:
    declared = tmp_path / "declared.html"
    declared.write_bytes(
        b'<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">'
        + f"</head><body><h1>Caf\u00e9 cr\u00e8me</h1><p>{FILLER}</p></body></html>".encode(
            "latin-1"
        )
    )
    doc, findings = _one(declared)
    assert findings == [] and doc.title == "Café crème"
    bom = tmp_path / "utf16.html"
    bom.write_bytes(
        f"\ufeff<html><body><h1>Naïve</h1><p>{FILLER}</p></body></html>".encode("utf-16-le")
    )
    doc, findings = _one(bom)
    assert findings == [] and doc.title == "Naïve"


def test_a_malformed_page_still_loads(tmp_path: Path) -> None:
    broken = (
        "<html><body><h1>Broken page<p>First <b>bold <i>both</p><div><p>"
        + FILLER
        + "<table><tr><td>a<td>b</table><h2>Next</h2><p>After</b></i></body>"
    )
    doc, findings = _one(_write(tmp_path, broken))
    assert findings == []
    assert doc.title == "Broken page"
    assert _section(doc, "Next").text == "After"
    assert "First bold both" in _section(doc, "Broken page").text


def test_text_before_a_heading_that_is_not_the_title_is_the_preamble(tmp_path: Path) -> None:
    page = f"<html><head><title>Notices</title></head><body><p>{FILLER}</p><h2>A</h2><p>a</p>"
    doc, _ = _one(_write(tmp_path, page))
    assert doc.title == "Notices"
    assert [(s.section_id, s.heading, s.path) for s in doc.sections] == [
        ("page.html#preamble", "", ()),
        ("page.html#A", "A", ("A",)),
    ]
    # Without any heading, the page is one section named after its title.
    doc, _ = _one(_write(tmp_path, page.split("<h2>")[0]))
    assert [(s.section_id, s.heading) for s in doc.sections] == [("page.html#Notices", "Notices")]


def test_suffixes() -> None:
    assert HTML_SUFFIXES == (".html", ".htm")


# ------------------------------------------------------------------ real pages


def _real(name: str) -> Document:
    path = need_shared(*REAL_DOCS, name)
    docs, findings = load_html(path, root=path.parent)
    assert findings == [] and len(docs) == 1
    return docs[0]


NUMBERED = re.compile(r"^(\d+\.\d+)\.\d+ ")
CHAPTER = re.compile(r"^Chapter (\d+\.\d+) ")


def _check_code_page(doc: Document, sections: int) -> None:
    text = _all_text(doc)
    for chrome in (
        "Skip to main content",
        "Toggle mobile menu",
        "Please do not scrape",
        "Powered by the non-profit",
        "San Mateo Law Library",
    ):
        assert chrome not in text
    numbered = [s for s in doc.sections if NUMBERED.match(s.heading)]
    assert len(numbered) == sections
    for s in numbered:
        # Every code section sits under the chapter its number extends.
        chapters = [m.group(1) for p in s.path if (m := CHAPTER.match(p))]
        assert chapters == [NUMBERED.match(s.heading).group(1)], s.path  # type: ignore[union-attr]
        assert s.metadata[ANCHOR] == f"/us/ca/cities/san-mateo/code/{s.heading.split()[0]}"


def test_san_mateo_signs_title() -> None:
    doc = _real(SIGNS)
    assert doc.title == "Title 25 SIGNS"
    _check_code_page(doc, sections=16)
    zoning = _section(doc, "25.06.070 ZONING REGULATIONS APPLICABLE TO SIGNS ON PRIVATE PROPERTY.")
    chunks = [
        c for c in chunk_documents([doc], ChunkerSettings()) if c.section_id == zoning.section_id
    ]
    assert chunks[0].breadcrumb == (
        "Title 25 SIGNS > Chapter 25.06 SIGNS ON PRIVATE PROPERTY > "
        "25.06.070 ZONING REGULATIONS APPLICABLE TO SIGNS ON PRIVATE PROPERTY."
    )
    assert chunks[0].uri.endswith(f"/{SIGNS}#/us/ca/cities/san-mateo/code/25.06.070")
    # A table cell keeps its column header (Table 25.06-2, zoning plots of 10K-15K sq. ft.).
    assert "10K-15K sq. ft.: Three signs, none exceeding 10 sq. ft.; one may be freestanding" in (
        zoning.text
    )
    assert "Table 25.06-2: Sign Restrictions in Residential (R) Districts" in zoning.text
    # The history note stays in its section.
    purpose = _section(doc, "25.02.010 PURPOSE.")
    assert "Ord. No. 2010-8 § 1; Ord. No. 2009-2 § 1" in purpose.text
    assert purpose.text.startswith("The intent of this Title is to provide standards")


def test_san_mateo_subdivisions_title() -> None:
    doc = _real(SUBDIVISIONS)
    assert doc.title == "Title 26 SUBDIVISIONS"
    _check_code_page(doc, sections=135)
    filing = [s for s in doc.sections if s.heading == "26.56.130 FILING."]
    assert [s.path for s in filing] == [
        ("Chapter 26.56 PARCEL MAPS", "ARTICLE II FINAL PARCEL MAP", "26.56.130 FILING.")
    ]
    notes = _section(doc, "Editor's Notes")
    assert "Cal. Gov't. Code §§ 66410" in notes.text
    clause = _section(doc, "26.04.010 TITLE.")
    assert '"San Mateo City Subdivision Code."' in clause.text
    assert "(Ord. No. 1969-8 § 1; prior code § 139.01.)" in clause.text
