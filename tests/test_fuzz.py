"""Fuzzed loaders and parsers: any input gives documents, findings or one of our errors.

One property test per target (CSV, Markdown, front matter and metadata files, BEIR
JSONL, ObliQA JSON, probe files, PDF bytes, questions with their options, and the
HTTP request body). Inputs are generated, or mutated from valid ones, by hypothesis.
Each input runs under a wall-clock limit (`INPUT_SECONDS`), so a hang fails the test
with the input that caused it instead of blocking the run. Beside them, pathological
files (a 50 MB line, 10,000 headings, a PDF that inflates to gigabytes, looping and
deeply nested PDF objects) are loaded in a subprocess under a memory limit.

`GROUNDQA_FUZZ_EXAMPLES` sets the inputs per target (`bench/fuzz.py` runs thousands);
examples are derandomised and no example database is written, so a run is repeatable
and leaves nothing behind. Every crash these found is a named regression test below.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundqa.engine import Engine
from groundqa.errors import GroundqaError
from groundqa.evaluate.probes import load_probes
from groundqa.loaders import load
from groundqa.loaders.csv import ROLES
from groundqa.models import Document, Finding
from tests.conftest import copy_index
from tests.pdfgen import _assemble, write_pages

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = int(os.environ.get("GROUNDQA_FUZZ_EXAMPLES", "25"))
INPUT_SECONDS = float(os.environ.get("GROUNDQA_FUZZ_SECONDS", "5"))
# A pathological file gets this much address space and wall-clock time in its subprocess.
MEMORY_LIMIT = 2 * 1024**3
PATHOLOGICAL_SECONDS = 60

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,  # the wall-clock limit below replaces hypothesis' per-example deadline
    database=None,
    derandomize=True,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ---------------------------------------------------------------- running one input


class InputTimeout(BaseException):
    """Raised by the alarm. A BaseException, so that a loader's `except Exception` (the
    PDF loader turns whatever pypdf raises into a finding) cannot swallow it."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block with InputTimeout after `seconds` of wall-clock time."""

    def ring(signum: int, frame: Any) -> None:
        raise InputTimeout

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def one_line(message: str) -> None:
    assert message.strip() and "\n" not in message and "\r" not in message, repr(message)


def exercise(
    target: Callable[[Any, Path], None], case: Any, folder: Path, seconds: float = INPUT_SECONDS
) -> None:
    """Run `target` on one input within `seconds`; only our own errors may escape it.

    A GroundqaError is a correct answer to bad input (its message must be one line);
    anything else, and running out of time, fails with the input that did it.
    """
    try:
        with time_limit(seconds):
            target(case, folder)
    except InputTimeout:
        raise TimeoutError(f"no result within {seconds:g} s") from None
    except GroundqaError as exc:
        one_line(exc.message)


def fresh(folder: Path) -> Path:
    return Path(tempfile.mkdtemp(dir=folder))


def check_documents(documents: Any, findings: Any) -> None:
    """What a loader returned can be indexed: documents serialise as ingest hashes and
    stores them (UTF-8 JSON), findings are one line each."""
    for doc in documents:
        assert isinstance(doc, Document)
        json.dumps(doc.to_dict(), sort_keys=True, ensure_ascii=False).encode("utf-8")
    for finding in findings:
        assert isinstance(finding, Finding)
        one_line(finding.message)


# ---------------------------------------------------------------- strategies

# Characters and fragments that parsers treat specially, spliced into generated text.
TEXT_TOKENS = (
    "\n", "\r", "\r\n", "\t", " ", "\x00", "\x0b", "\x0c", "\x1c", "\x85", "\u2028",
    "\ufeff", "\u00a0", "é", "𝔸", "\\", "\\u", "\\ud800", "\\udc00", '"', "'", ",", ";",
    ":", "#", "## ", "# ", "####### ", "---", "...", "```", "~~~", "{", "}", "[", "]",
    "&a ", "*a", "!!binary ", "!!set ", "!!timestamp ", "!!int ", "<<: ", "? ", "- ",
    "|", ">", "%", "@", "`", "NaN", "1e999", "9" * 5000, "[" * 300, "{" * 300,
)  # fmt: skip


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[str]) -> str:
    """A string from `base` after a few random edits: splice a token or random text,
    delete, duplicate or cut off a stretch."""
    text = draw(base)
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(text)))
        edit = draw(st.sampled_from(("token", "text", "delete", "repeat", "cut")))
        if edit == "token":
            text = text[:at] + draw(st.sampled_from(TEXT_TOKENS)) + text[at:]
        elif edit == "text":
            text = text[:at] + draw(st.text(max_size=8)) + text[at:]
        elif edit == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 20)) :]
        elif edit == "repeat":
            piece = text[at : at + draw(st.integers(1, 40))]
            text = text[:at] + piece * draw(st.integers(2, 50)) + text[at:]
        else:
            text = text[:at]
    return text


def files_of(text: st.SearchStrategy[str]) -> st.SearchStrategy[bytes]:
    """File contents: the text as UTF-8, mutated, or raw bytes (invalid UTF-8 included)."""
    return st.one_of(
        text.map(str.encode),
        mutated(text).map(lambda t: t.encode("utf-8", "surrogatepass")),
        st.binary(max_size=300),
    )


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)

CELL = st.text(max_size=12) | st.sampled_from(("", " ", "1.2.3", '"', "a,b", "x\ny", "\r"))
COLUMN_NAMES = st.sampled_from(
    ("id", "title", "text", "Body", "chapter", "ref", "ID", " id ", "", "name", "passage")
) | st.text(max_size=6)


@st.composite
def csv_texts(draw: st.DrawFn) -> str:
    header = draw(st.lists(COLUMN_NAMES, max_size=5))
    rows = draw(st.lists(st.lists(CELL, max_size=6), max_size=5))
    out = io.StringIO()
    newline = draw(st.sampled_from(("\n", "\r\n")))
    if draw(st.booleans()):
        writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator=newline)
    else:
        writer = csv.writer(out, quoting=csv.QUOTE_MINIMAL, lineterminator=newline)
    for row in [header, *rows]:
        writer.writerow(row)
    return out.getvalue()


CSV_CASES = st.tuples(
    files_of(csv_texts()),
    st.none() | st.dictionaries(st.sampled_from((*ROLES, "bogus")), COLUMN_NAMES, max_size=3),
)

MARKDOWN_LINES = st.one_of(
    st.builds(
        lambda level, gap, text, close: "#" * level + gap + text + close,
        st.integers(1, 8),
        st.sampled_from((" ", "\t", "", "  ")),
        st.text(max_size=15),
        st.sampled_from(("", " #", " ##", "#", "   ")),
    ),
    st.sampled_from(("```", "~~~~", "```python", "   ```", "", "---", "...", "    # code")),
    st.text(max_size=30),
)
MARKDOWN = st.builds(
    lambda lines, newline: newline.join(lines),
    st.lists(MARKDOWN_LINES, max_size=15),
    st.sampled_from(("\n", "\r\n", "\r")),
)

YAML_LINES = st.sampled_from(
    (
        "key: value", "title: A title", "area: Fennick City", "date: 2020-01-31",
        "date: 2020-02-30", "date: 2020-13-01", "when: 2024-01-01 10:00:00 +99:00",
        "n: " + "9" * 5000, "n: 0x1F", "f: .nan", "i: -.inf", "big: 1e400",
        "b: !!binary aGVsbG8=", "b: !!binary ###", "s: !!set {a, b}", "o: !!omap [a: 1]",
        "p: !!pairs [a: 1, a: 2]", "a: &x [1, 2]", "c: *x", "r: &r [*r]", "m: &m {self: *m}",
        "? [1, 2]\n: 3", "? !!binary aGk=\n: bytes key", "<<: {a: 1}", "<<: 5", "<<: [*x]",
        "x: !!python/object:os.system 1", "t: !!timestamp 2020-13-01", 'q: "\\ud800"',
        "t: !!timestamp x", "b: !!bool x", "f: !!float x",
        'q: "\\U0001F600"', "nested: {a: {b: [c, {d: e}]}}", "- item", "  indented: x",
        "key: |\n  block\n  text", "~: null key", "2020-01-01: date key", "1.5: float key",
        "\t", "'unclosed", "[", "{", "%YAML 1.1", "--- ", "...", "k: " + "[" * 200,
        "k: " + "{a: " * 200,
    )
)  # fmt: skip
YAML_TEXTS = st.one_of(
    st.lists(YAML_LINES | st.text(max_size=20), max_size=8).map("\n".join),
    st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=5).map(
        lambda d: yaml.safe_dump(d, allow_unicode=True)
    ),
)

RECORD_KEYS = st.sampled_from(("_id", "title", "text", "metadata", "extra"))
BEIR_LINES = st.one_of(
    st.dictionaries(RECORD_KEYS, JSON_VALUES, max_size=5).map(json.dumps),
    st.dictionaries(RECORD_KEYS, st.text(max_size=20), max_size=4).map(
        lambda d: json.dumps(d, ensure_ascii=False)
    ),
    JSON_VALUES.map(json.dumps),
    st.sampled_from(('{"_id": "a", "text": "\\ud800"}', "[" * 5000, '{"_id": ' + "1" * 5000 + "}")),
)
JSONL = st.builds(
    lambda lines, newline: newline.join(lines),
    st.lists(BEIR_LINES, max_size=6),
    st.sampled_from(("\n", "\r\n")),
)

PASSAGE_KEYS = st.sampled_from(("ID", "DocumentID", "PassageID", "Passage", "Other"))
PASSAGE_VALUES = JSON_VALUES | st.sampled_from(("1.", "1.2", "1.2.1.Guidance.1.", "..", "", " "))
OBLIQA = st.one_of(
    st.lists(st.dictionaries(PASSAGE_KEYS, PASSAGE_VALUES, max_size=5), max_size=6).map(json.dumps),
    JSON_VALUES.map(json.dumps),
)

PROBE_KEYS = st.sampled_from(
    ("id", "question", "expected", "kind", "group", "answer_contains", "scope", "other")
)
PROBE_VALUES = JSON_VALUES | st.sampled_from(
    ("answerable", "out_of_scope", "near_miss", "Why?", ["a.md#S"], {"area": "X"}, {"area": ["X"]})
)
PROBE_LINES = st.one_of(
    st.dictionaries(PROBE_KEYS, PROBE_VALUES, max_size=6).map(json.dumps),
    st.dictionaries(PROBE_KEYS, PROBE_VALUES, max_size=6).map(
        lambda d: json.dumps(d, ensure_ascii=False)
    ),
    st.sampled_from(
        ('{"question": "\\ud800?"}', "[" * 5000, '{"question": "q", "id": ' + "1" * 5000 + "}")
    ),
)
PROBES = st.builds("\n".join, st.lists(PROBE_LINES, max_size=6))

PDF_TOKENS = (
    b"obj", b"endobj", b"<<", b">>", b"[", b"]", b" R", b" 0 R", b"/Length 999999999",
    b"/Length -1", b"stream\n", b"endstream", b"/Filter /FlateDecode", b"/Filter /LZWDecode",
    b"/Count -1", b"/Count 99999999", b"/Kids [2 0 R]", b"/Parent 3 0 R", b"%%EOF", b"xref",
    b"trailer", b"startxref", b"/Outlines 1 0 R", b"/First 1 0 R", b"/Next 3 0 R",
    b"/Encrypt 1 0 R", b"\x00", b"(", b")", b"\\", b"BT", b"ET", b"Tj", b"TJ", b"Td", b"9" * 400,
    b"[" * 2000, b"<<" * 500, b"%PDF-1.7",
)  # fmt: skip


@cache
def valid_pdfs() -> tuple[bytes, ...]:
    """Small valid PDFs to mutate: a plain two-page one and an fpdf2 one with an outline."""
    from fpdf import FPDF

    with tempfile.TemporaryDirectory() as tmp:
        plain = write_pages(Path(tmp) / "plain.pdf", 2).read_bytes()
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for n in (1, 2):
        pdf.add_page()
        pdf.start_section(f"{n} Section {n}")
        pdf.multi_cell(0, 5, f"{n} Section {n}\nThe holder of a licence must keep records. " * 3)
    return plain, bytes(pdf.output())


@st.composite
def pdf_bytes(draw: st.DrawFn) -> bytes:
    """A valid PDF after a few byte-level edits, or random bytes after a PDF header."""
    if draw(st.integers(0, 4)) == 0:
        return b"%PDF-1.7\n" + draw(st.binary(max_size=400))
    data = draw(st.sampled_from(valid_pdfs()))
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(data)))
        edit = draw(st.sampled_from(("token", "byte", "delete", "repeat", "cut")))
        if edit == "token":
            data = data[:at] + draw(st.sampled_from(PDF_TOKENS)) + data[at:]
        elif edit == "byte":
            data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
        elif edit == "delete":
            data = data[:at] + data[at + draw(st.integers(1, 200)) :]
        elif edit == "repeat":
            piece = data[at : at + draw(st.integers(1, 200))]
            data = data[:at] + piece * draw(st.integers(2, 20)) + data[at:]
        else:
            data = data[:at]
    return data


QUESTIONS = st.one_of(
    st.text(max_size=80),
    st.text(st.characters(codec="utf-8", categories=["Cc", "Cf", "Zs", "Zl", "Zp", "Mn"])),
    mutated(
        st.sampled_from(
            (
                "When is a NEER report due?",
                "What is a protected tree in Fennick City?",
                "How many penalty units is the fine for late NEER lodgement?",
                "What is it?",
            )
        )
    ),
    st.builds(lambda piece, n: piece * n, st.text(min_size=1, max_size=4), st.integers(300, 700)),
)
PLAN_OPTIONS = st.one_of(
    st.sampled_from(("acr", "defs", "places=filter", "places=boost", "weighted", "rrf", "")),
    st.builds("rrf={}".format, st.integers(-100, 100) | st.text(max_size=4)),
    st.builds("cap={}".format, st.integers(-2, 5) | st.text(max_size=4)),
    st.builds("mmr={}".format, st.floats() | st.text(max_size=4)),
    st.builds("weighted={}/{}".format, st.floats(), st.floats()),
    st.builds("weighted={}".format, st.text(max_size=6)),
    st.text(max_size=6),
)
RETRIEVERS = st.none() | st.builds(
    lambda method, options: "+".join([method, *options]),
    st.sampled_from(("bm25", "dense", "hybrid", "", "BM25", "hybrid ")) | st.text(max_size=5),
    st.lists(PLAN_OPTIONS, max_size=3),
)
FACET_KEYS = st.sampled_from(("jurisdiction", "state", "area", "category", "Area", "nope"))
FACET_VALUES = st.sampled_from(
    ("federal", "state", "local", "Westhaven", "Northmere", "Fennick City", "fennick", "x")
) | st.text(max_size=6)
FILTER_VALUES = st.one_of(
    FACET_VALUES,
    st.lists(FACET_VALUES, max_size=3),
    st.dictionaries(st.sampled_from(("all", "any", "none")), st.lists(FACET_VALUES, max_size=2)),
)


@dataclass(frozen=True)
class Question:
    text: str
    k: int | None
    retriever: str | None
    filters: dict[str, Any] | None
    scope: dict[str, Any] | None
    auto_scope: bool
    as_of: dt.date | None


QUESTION_CASES = st.builds(
    Question,
    text=QUESTIONS,
    k=st.none() | st.integers(-2, 60),
    retriever=RETRIEVERS,
    filters=st.none()
    | st.dictionaries(FACET_KEYS | st.text(max_size=4), FILTER_VALUES, max_size=2),
    scope=st.none()
    | st.dictionaries(FACET_KEYS, FACET_VALUES | st.lists(FACET_VALUES, max_size=2), max_size=2),
    auto_scope=st.booleans(),
    as_of=st.none() | st.dates(),
)

QUERY_FIELDS = st.sampled_from(
    ("question", "k", "retriever", "generator", "temperature", "max_tokens", "filters",
     "scope", "as_of", "auto_location", "explain", "other")
)  # fmt: skip
BODIES = st.one_of(
    st.dictionaries(QUERY_FIELDS, JSON_VALUES | QUESTIONS, max_size=6).map(
        lambda d: json.dumps(d).encode()
    ),
    st.builds(
        lambda q, extra: json.dumps({"question": q, **extra}).encode(),
        QUESTIONS,
        st.dictionaries(QUERY_FIELDS, JSON_VALUES, max_size=3),
    ),
    st.sampled_from(
        (b'{"question": "\\ud800"}', b'{"question": "a\\u0000b"}', b"[" * 5000, b"{", b"")
    ),
    st.binary(max_size=200),
)


# ---------------------------------------------------------------- targets
# Each takes one generated input and a scratch folder, and raises if the outcome is wrong.


def load_csv_file(case: tuple[bytes, dict[str, str] | None], folder: Path) -> None:
    data, columns = case
    path = fresh(folder) / "data.csv"
    path.write_bytes(data)
    result = load([path], fmt="csv", columns=columns)
    check_documents(result.documents, result.findings)


def load_markdown_file(data: bytes, folder: Path) -> None:
    path = fresh(folder) / "guide.md"
    path.write_bytes(data)
    result = load([path])
    check_documents(result.documents, result.findings)


def load_front_matter(text: str, folder: Path) -> None:
    """The YAML as front matter, as a sidecar and as a folder's `_meta.yaml`."""
    corpus = fresh(folder)
    body = "# Guide\n\n## Section\n\nThe body of the section.\n"
    (corpus / "guide.md").write_text(f"---\n{text}\n---\n{body}", "utf-8", "surrogatepass")
    (corpus / "plain.md").write_text(body, "utf-8")
    (corpus / "plain.md.meta.yaml").write_text(text, "utf-8", "surrogatepass")
    (corpus / "_meta.yaml").write_text(text, "utf-8", "surrogatepass")
    result = load([corpus])
    check_documents(result.documents, result.findings)


def load_jsonl_corpus(data: bytes, folder: Path) -> None:
    path = fresh(folder) / "corpus.jsonl"
    path.write_bytes(data)
    result = load([path])
    check_documents(result.documents, result.findings)


def load_obliqa_file(data: bytes, folder: Path) -> None:
    path = fresh(folder) / "passages.json"
    path.write_bytes(data)
    result = load([path], fmt="obliqa")
    check_documents(result.documents, result.findings)


def load_probe_file(data: bytes, folder: Path) -> None:
    path = fresh(folder) / "set.probes.jsonl"
    path.write_bytes(data)
    for probe in load_probes(path):
        json.dumps(probe.to_dict(), ensure_ascii=False).encode("utf-8")


def load_pdf_file(data: bytes, folder: Path) -> None:
    path = fresh(folder) / "doc.pdf"
    path.write_bytes(data)
    result = load([path])
    check_documents(result.documents, result.findings)


def ask_engine(engine: Engine) -> Callable[[Question, Path], None]:
    def ask(case: Question, folder: Path) -> None:
        answer = engine.ask(
            case.text,
            k=case.k,
            retriever=case.retriever,
            filters=case.filters,
            scope=case.scope,
            auto_scope=case.auto_scope,
            as_of=case.as_of,
        )
        json.dumps(answer.to_dict(), ensure_ascii=False).encode("utf-8")

    return ask


def post_query(client: Any) -> Callable[[bytes, Path], None]:
    """No body makes the server fail (500) or answer outside the one error shape, and
    every error message is one line (a key with a line break in it is quoted)."""

    def post(body: bytes, folder: Path) -> None:
        response = client.post("/query", content=body, headers={"content-type": "application/json"})
        assert response.status_code < 500, (response.status_code, response.text[:300])
        if response.status_code >= 400:
            error = response.json()["error"]
            assert set(error) == {"status", "code", "message", "type", "param"}, error
            assert error["message"].strip(), error
            one_line(error["message"])

    return post


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, regpack_build: Path) -> Engine:
    """One small real index, the example corpus, for every question."""
    index = tmp_path_factory.mktemp("fuzz-index") / "idx"
    copy_index(regpack_build, index)
    return Engine.open(index)


@pytest.fixture(scope="module")
def client(engine: Engine) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    from groundqa.serve import ServeSettings, create_app

    with TestClient(
        create_app(engine, ServeSettings(cache="off")), raise_server_exceptions=False
    ) as c:
        yield c


# ---------------------------------------------------------------- property tests


@FUZZ
@given(case=CSV_CASES)
def test_fuzz_csv(case: tuple[bytes, dict[str, str] | None], scratch: Path) -> None:
    exercise(load_csv_file, case, scratch)


@FUZZ
@given(data=files_of(MARKDOWN))
def test_fuzz_markdown(data: bytes, scratch: Path) -> None:
    exercise(load_markdown_file, data, scratch)


@FUZZ
@given(text=YAML_TEXTS | mutated(YAML_TEXTS))
def test_fuzz_front_matter_and_metadata_files(text: str, scratch: Path) -> None:
    exercise(load_front_matter, text, scratch)


@FUZZ
@given(data=files_of(JSONL))
def test_fuzz_jsonl_corpus(data: bytes, scratch: Path) -> None:
    exercise(load_jsonl_corpus, data, scratch)


@FUZZ
@given(data=files_of(OBLIQA))
def test_fuzz_obliqa_json(data: bytes, scratch: Path) -> None:
    exercise(load_obliqa_file, data, scratch)


@FUZZ
@given(data=files_of(PROBES))
def test_fuzz_probe_file(data: bytes, scratch: Path) -> None:
    exercise(load_probe_file, data, scratch)


@FUZZ
@given(data=pdf_bytes())
def test_fuzz_pdf_bytes(data: bytes, scratch: Path) -> None:
    exercise(load_pdf_file, data, scratch)


@FUZZ
@given(case=QUESTION_CASES)
def test_fuzz_questions(case: Question, engine: Engine, scratch: Path) -> None:
    exercise(ask_engine(engine), case, scratch)


@FUZZ
@given(body=BODIES)
def test_fuzz_query_body(body: bytes, client: Any, scratch: Path) -> None:
    exercise(post_query(client), body, scratch)


def test_time_limit_interrupts_a_hang(tmp_path: Path) -> None:
    def hang(case: None, folder: Path) -> None:
        while True:
            time.sleep(0.01)

    started = time.perf_counter()
    with pytest.raises(TimeoutError):
        exercise(hang, None, tmp_path, seconds=0.2)
    assert time.perf_counter() - started < 2


# ---------------------------------------------------------------- pathological inputs
# Each builder writes one file (or folder) into an empty folder and returns (what reads
# it, its path): "load" is `groundqa.loaders.load`, "probes" `load_probes`.

FIFTY_MB = 50 * 1024 * 1024


def _write_50mb(out: Any, block: str) -> None:
    """50 MB of `block` (1 MiB of text) on one line, written a MiB at a time."""
    for _ in range(FIFTY_MB // (1 << 20)):
        out.write(block)


def _csv_50mb_line(folder: Path) -> tuple[str, Path]:
    path = folder / "wide.csv"
    with path.open("w", encoding="utf-8") as out:
        out.write("id,title,text\n1,One line,")
        _write_50mb(out, "x" * (1 << 20))
        out.write("\n")
    return "load", path


def _markdown_50mb_line(folder: Path) -> tuple[str, Path]:
    path = folder / "long.md"
    with path.open("w", encoding="utf-8") as out:
        out.write("# Long\n\n## One paragraph\n\n")
        _write_50mb(out, "word " * ((1 << 20) // 5))
        out.write("\n")
    return "load", path


def _markdown_50mb_blank_heading(folder: Path) -> tuple[str, Path]:
    path = folder / "blank.md"
    path.write_text("# Title\n\n## a" + " " * FIFTY_MB + "b\n\nBody.\n", "utf-8")
    return "load", path


def _markdown_nested_headings(folder: Path) -> tuple[str, Path]:
    """10,000 headings, each one level deeper than the one before (from the 7th on they
    are paragraphs to Markdown): 50 MB of #s."""
    path = folder / "nested.md"
    with path.open("w", encoding="utf-8") as out:
        for level in range(1, 10_001):
            out.write("#" * level + f" Heading {level}\n\nText under heading {level}.\n\n")
    return "load", path


def _markdown_cycling_headings(folder: Path) -> tuple[str, Path]:
    path = folder / "cycling.md"
    path.write_text(
        "".join(f"{'#' * (1 + n % 6)} Heading {n}\n\nText {n}.\n\n" for n in range(10_000)),
        "utf-8",
    )
    return "load", path


def _yaml_laughs(folder: Path) -> tuple[str, Path]:
    """Front matter whose aliases name 9**9 (387 million) values in a few hundred bytes."""
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, 9)]
    path = folder / "laughs.md"
    path.write_text("---\n" + "\n".join(lines) + "\n---\n# T\n\n## S\n\nBody.\n", "utf-8")
    return "load", path


def _yaml_deep(folder: Path) -> tuple[str, Path]:
    path = folder / "deep.md"
    path.write_text("---\nkey: " + "[" * 10_000 + "\n---\n# T\n\n## S\n\nBody.\n", "utf-8")
    return "load", path


def _jsonl_50mb_line(folder: Path) -> tuple[str, Path]:
    path = folder / "corpus.jsonl"
    with path.open("w", encoding="utf-8") as out:
        out.write('{"_id": "one", "title": "One", "text": "')
        _write_50mb(out, "word " * ((1 << 20) // 5))
        out.write('"}\n')
    return "load", path


def _jsonl_deep(folder: Path) -> tuple[str, Path]:
    path = folder / "corpus.jsonl"
    path.write_text('{"_id": "a", "text": "x"}\n' + "[" * 100_000 + "]" * 100_000 + "\n", "utf-8")
    return "load", path


def _probes_deep(folder: Path) -> tuple[str, Path]:
    path = folder / "deep.probes.jsonl"
    path.write_text('{"question": ' + "[" * 100_000 + "]" * 100_000 + "}\n", "utf-8")
    return "probes", path


def _probes_50mb_line(folder: Path) -> tuple[str, Path]:
    path = folder / "long.probes.jsonl"
    path.write_text('{"question": "' + "why " * (FIFTY_MB // 4) + '"}\n', "utf-8")
    return "probes", path


_TEXT = b"BT /F1 11 Tf 72 720 Td (The holder must keep records.) Tj ET"


def _stream(content: bytes, extra: bytes = b"") -> bytes:
    return b"<< /Length %d%s >>\nstream\n" % (len(content), extra) + content + b"\nendstream"


def _one_page_pdf(content: bytes, more: list[bytes] | None = None, catalog: bytes = b"") -> bytes:
    """A one-page PDF: objects 1-5 are the catalog, pages, page, its content and its font;
    `more` are objects 6 on."""
    return _assemble(
        [
            b"<< /Type /Catalog /Pages 2 0 R " + catalog + b">>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>",
            content,
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            *(more or []),
        ]
    )


def inflating_stream(inflated: int, chunk: int = 1 << 24) -> bytes:
    """A FlateDecode content stream: a line of text, then `inflated` bytes of zeros.

    The zeros are compressed one chunk at a time; after a full flush the compressor
    forgets what came before, so one compressed chunk stands for every chunk and GBs
    of output cost a few MB here. The zlib checksum is summed over every chunk.
    """
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = bytes(chunk)
    head = deflate.compress(_TEXT + b"\n") + deflate.flush(zlib.Z_FULL_FLUSH)
    block = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
    tail = deflate.flush()
    checksum = zlib.adler32(_TEXT + b"\n")
    for _ in range(inflated // chunk):
        checksum = zlib.adler32(zeros, checksum)
    data = b"\x78\xda" + head + block * (inflated // chunk) + tail + struct.pack(">I", checksum)
    return _stream(data, b" /Filter /FlateDecode")


def _pdf_zip_bomb(folder: Path) -> tuple[str, Path]:
    path = folder / "bomb.pdf"
    path.write_bytes(_one_page_pdf(inflating_stream(4 * 1024**3)))
    return "load", path


def _outline(items: list[bytes]) -> tuple[list[bytes], bytes]:
    """Outline objects from 6 on (6 the root, items from 7) and the catalog entry."""
    root = b"<< /Type /Outlines /First 7 0 R /Last %d 0 R /Count %d >>" % (
        6 + len(items),
        len(items),
    )
    return [root, *items], b"/Outlines 6 0 R "


def _pdf_outline_deep(folder: Path) -> tuple[str, Path]:
    """An outline 10,000 entries deep: each entry's only child is the next."""
    n = 10_000
    items = [
        b"<< /Title (Heading %d) /Parent %d 0 R /Dest [3 0 R /Fit]%s >>"
        % (i, 6 + i, b" /First %d 0 R /Last %d 0 R /Count 1" % (8 + i, 8 + i) if i + 1 < n else b"")
        for i in range(n)
    ]
    more, catalog = _outline(items[:1])
    path = folder / "deep-outline.pdf"
    path.write_bytes(_one_page_pdf(_stream(_TEXT), [*more, *items[1:]], catalog))
    return "load", path


def _pdf_outline_loop(folder: Path) -> tuple[str, Path]:
    """An outline entry that is its own next sibling and its own first child."""
    item = b"<< /Title (Loop) /Parent 6 0 R /Dest [3 0 R /Fit] /Next 7 0 R /First 7 0 R /Last 7 0 R /Count 1 >>"
    more, catalog = _outline([item])
    path = folder / "loop-outline.pdf"
    path.write_bytes(_one_page_pdf(_stream(_TEXT), more, catalog))
    return "load", path


def _pdf_outline_wide(folder: Path, entries: int = 20_000, lines: int = 5_000) -> tuple[str, Path]:
    """20,000 outline entries that all point at one page of 5,000 lines."""
    items = [
        b"<< /Title (Heading number %d) /Parent 6 0 R /Dest [3 0 R /Fit]%s >>"
        % (i, b" /Next %d 0 R" % (8 + i) if i + 1 < entries else b"")
        for i in range(entries)
    ]
    text = b" ".join(
        b"BT /F1 11 Tf 72 720 Td (Line %d of a long page) Tj ET" % i for i in range(lines)
    )
    more, catalog = _outline(items)
    path = folder / "wide-outline.pdf"
    path.write_bytes(_one_page_pdf(_stream(text), more, catalog))
    return "load", path


def _pdf_page_tree_loop(folder: Path) -> tuple[str, Path]:
    path = folder / "loop-pages.pdf"
    path.write_bytes(
        _assemble(
            [
                b"<< /Type /Catalog /Pages 2 0 R >>",
                b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
                b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >>",
                _stream(_TEXT),
            ]
        )
    )
    return "load", path


def _pdf_nested_objects(folder: Path) -> tuple[str, Path]:
    """An array nested 100,000 deep, objects that refer to themselves, and a content
    stream whose text operand is nested 100,000 deep."""
    deep = b"BT /F1 11 Tf 72 720 Td " + b"[" * 100_000 + b"(x)" + b"]" * 100_000 + b" TJ ET"
    path = folder / "nested.pdf"
    path.write_bytes(
        _one_page_pdf(
            _stream(deep),
            [b"[" * 100_000 + b"]" * 100_000, b"7 0 R", b"<< /Self 8 0 R /Other 7 0 R >>"],
            b"/Deep 6 0 R /Loop 7 0 R /Dict 8 0 R ",
        )
    )
    return "load", path


def _pdf_long_word(folder: Path) -> tuple[str, Path]:
    path = folder / "word.pdf"
    path.write_bytes(
        _one_page_pdf(_stream(b"BT /F1 11 Tf 72 720 Td (" + b"a" * 2_000_000 + b") Tj ET"))
    )
    return "load", path


PATHOLOGICAL: dict[str, Callable[[Path], tuple[str, Path]]] = {
    "csv: one 50 MB line": _csv_50mb_line,
    "markdown: one 50 MB line": _markdown_50mb_line,
    "markdown: a heading with 50 MB of blanks": _markdown_50mb_blank_heading,
    "markdown: 10,000 nested headings": _markdown_nested_headings,
    "markdown: 10,000 headings, levels 1-6": _markdown_cycling_headings,
    "front matter: aliases naming 9**9 values": _yaml_laughs,
    "front matter: nested 10,000 deep": _yaml_deep,
    "jsonl: one 50 MB line": _jsonl_50mb_line,
    "jsonl: a line nested 100,000 deep": _jsonl_deep,
    "probes: one 50 MB line": _probes_50mb_line,
    "probes: a line nested 100,000 deep": _probes_deep,
    "pdf: a stream inflating to 4 GiB": _pdf_zip_bomb,
    "pdf: an outline 10,000 deep": _pdf_outline_deep,
    "pdf: an outline that loops": _pdf_outline_loop,
    "pdf: 20,000 outline entries on a 5,000-line page": _pdf_outline_wide,
    "pdf: a page tree that loops": _pdf_page_tree_loop,
    "pdf: objects nested 100,000 deep and referring to themselves": _pdf_nested_objects,
    "pdf: a 2 MB word": _pdf_long_word,
}

# The child: load one file under an address-space limit and report on one JSON line.
_CHILD = """
import json, resource, sys, time
kind, path, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from groundqa.errors import GroundqaError
from groundqa.evaluate.probes import load_probes
from groundqa.loaders import load
report = {}
started = time.perf_counter()
try:
    if kind == "probes":
        report["documents"] = len(load_probes(path))
        report["findings"] = []
    else:
        result = load([path])
        report["documents"] = len(result.documents)
        report["findings"] = [f.message for f in result.findings]
except GroundqaError as exc:
    report["error"] = exc.message
except MemoryError:
    report["memory_error"] = True
report["seconds"] = time.perf_counter() - started
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across exec.
with open("/proc/self/status") as status:
    hwm = next(line for line in status if line.startswith("VmHWM:"))
report["peak_mb"] = int(hwm.split()[1]) / 1024
print(json.dumps(report))
"""


def run_pathological(
    name: str, folder: Path, memory: int = MEMORY_LIMIT, seconds: float = PATHOLOGICAL_SECONDS
) -> dict[str, Any]:
    """Build the named input in `folder` and load it in a subprocess under `memory` bytes
    of address space and `seconds` of wall-clock time.

    Returns the child's report (documents, findings or error, seconds, peak_mb), with
    `build_s` and `crash` added: None when it exited cleanly with a result, else what
    went wrong (a timeout, the memory limit, an exception other than ours).
    """
    started = time.perf_counter()
    kind, path = PATHOLOGICAL[name](folder)
    built = time.perf_counter() - started
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, kind, str(path), str(memory)],
            capture_output=True,
            text=True,
            timeout=seconds,
            cwd=ROOT,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return {"build_s": built, "crash": f"no result within {seconds:g} s"}
    last = proc.stdout.strip().splitlines()[-1:] if proc.stdout.strip() else []
    if proc.returncode != 0 or not last:
        error = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"build_s": built, "crash": f"exit {proc.returncode}: {error}"}
    report: dict[str, Any] = json.loads(last[0])
    report["build_s"] = built
    report["crash"] = "memory limit hit" if report.get("memory_error") else None
    return report


# The pathological inputs the test run loads; bench/fuzz.py loads them all.
IN_TESTS = (
    "csv: one 50 MB line",
    "markdown: one 50 MB line",
    "markdown: 10,000 nested headings",
    "markdown: 10,000 headings, levels 1-6",
    "pdf: a stream inflating to 4 GiB",
    "pdf: an outline 10,000 deep",
    "pdf: an outline that loops",
    "pdf: objects nested 100,000 deep and referring to themselves",
)


@pytest.mark.parametrize("name", IN_TESTS)
def test_pathological_input_ends_cleanly_within_limits(name: str, tmp_path: Path) -> None:
    report = run_pathological(name, tmp_path)
    assert report["crash"] is None, report
    assert report["seconds"] < PATHOLOGICAL_SECONDS
    assert report["peak_mb"] * 1024**2 < MEMORY_LIMIT
    assert report.get("documents") or report.get("findings") or report.get("error"), report
    for message in [*report.get("findings", []), *([report["error"]] if "error" in report else [])]:
        one_line(message)


# ---------------------------------------------------------------- regressions
# One test per crash the fuzzing found, each with the smallest input that showed it.


def _only_block(path: Path, check: str, **options: Any) -> Finding:
    """The first BLOCK finding `check` gives on `path`, loaded within the time limit."""
    with time_limit(INPUT_SECONDS):
        result = load([path], **options)
    check_documents(result.documents, result.findings)
    found = [f for f in result.findings if f.check == check]
    assert found and found[0].severity == "BLOCK", result.findings
    return found[0]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("[" * 100_000, "nested too deeply"),  # was a RecursionError
        ('{"_id": ' + "1" * 5000 + "}", "a number longer than 4300 digits"),  # a ValueError
        ('{"_id": "a", "text": "\\ud800"}', "surrogate pair"),  # ingest: UnicodeEncodeError
    ],
    ids=["deep-nesting", "long-integer", "lone-surrogate"],
)
def test_regression_jsonl_line_that_json_cannot_hold_is_a_finding(
    line: str, reason: str, tmp_path: Path
) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"_id": "ok", "text": "Kept."}\n' + line + "\n", "utf-8")
    finding = _only_block(path, "malformed-json")
    assert reason in finding.message and finding.line == 2
    assert [d.doc_id for d in load([path]).documents] == ["ok"]


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000,
        "[" + "1" * 5000 + "]",
        '[{"DocumentID": "d", "PassageID": "1", "Passage": "\\udfff"}]',
    ],
    ids=["deep-nesting", "long-integer", "lone-surrogate"],
)
def test_regression_obliqa_file_that_json_cannot_hold_is_a_finding(
    text: str, tmp_path: Path
) -> None:
    path = tmp_path / "passages.json"
    path.write_text(text, "utf-8")
    _only_block(path, "malformed-json", fmt="obliqa")


@pytest.mark.parametrize(
    "line",
    ['{"question": ' + "[" * 100_000 + "}", '{"question": "\\ud800?"}'],
    ids=["deep-nesting", "lone-surrogate"],
)
def test_regression_probe_line_that_json_cannot_hold_is_a_probe_error(
    line: str, tmp_path: Path
) -> None:
    from groundqa.errors import ProbeError

    path = tmp_path / "set.probes.jsonl"
    path.write_text(line + "\n", "utf-8")
    with pytest.raises(ProbeError, match="line 1"), time_limit(INPUT_SECONDS):
        load_probes(path)


def test_regression_probe_question_may_hold_a_line_separator(tmp_path: Path) -> None:
    # splitlines() cut the JSON line at U+2028, inside the string, and refused the file.
    path = tmp_path / "set.probes.jsonl"
    path.write_text('\ufeff{"question": "Why\u2028not?"}\n', "utf-8")
    (probe,) = load_probes(path)
    assert probe.question == "Why\u2028not?"


@pytest.mark.parametrize(
    ("yaml_text", "reason"),
    [
        ("a: &x [*x]", "nested more than"),  # an alias to itself: RecursionError
        ("a: " + "[" * 600, "nested too deeply"),  # the parser's own RecursionError
        ("a: 2020-02-30", "day is out of range"),  # a ValueError from the date constructor
        ("a: " + "9" * 5000, "Exceeds the limit"),  # a ValueError from int()
        ("a: !!timestamp x", "does not fit its tag"),  # PyYAML's AttributeError
        ("a: !!bool x", "does not fit its tag"),  # PyYAML's KeyError
        ("!!int |", "does not fit its tag"),  # PyYAML's IndexError: an empty integer
        ("a: !!binary aGk=", "binary"),  # bytes in metadata: ingest's TypeError
        ('a: !!set {x}\nb: "\\ud800"', "surrogate"),  # ingest's UnicodeEncodeError
        (
            "\n".join(
                ["l0: &l0 [x, x, x, x, x, x, x, x, x]"]
                + [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, 9)]
            ),
            "values once aliases are expanded",  # 9**9 values: gigabytes
        ),
    ],
    ids=[
        "self-alias",
        "deep-nesting",
        "bad-date",
        "long-integer",
        "timestamp-tag",
        "bool-tag",
        "empty-int-tag",
        "binary",
        "surrogate",
        "laughs",
    ],
)
def test_regression_front_matter_and_metadata_files_that_cannot_be_metadata(
    yaml_text: str, reason: str, tmp_path: Path
) -> None:
    front = tmp_path / "guide.md"
    front.write_text(f"---\n{yaml_text}\n---\n# Guide\n\n## S\n\nBody.\n", "utf-8")
    assert reason in _only_block(front, "front-matter").message
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "plain.md").write_text("# Plain\n\n## S\n\nBody.\n", "utf-8")
    (folder / "plain.md.meta.yaml").write_text(yaml_text, "utf-8")
    assert reason in _only_block(folder, "metadata-file").message


def test_regression_front_matter_set_becomes_a_sorted_list(tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text("---\ntags: !!set {b, a}\n---\n# Guide\n\n## S\n\nBody.\n", "utf-8")
    (doc,) = load([path]).documents
    assert doc.metadata == {"tags": ["a", "b"]}


def test_regression_markdown_heading_with_a_long_run_of_blanks(tmp_path: Path) -> None:
    # The heading regex backtracked quadratically: 20,000 blanks took 4 s, 50 MB forever.
    path = tmp_path / "blank.md"
    path.write_text("## a" + " " * 1_000_000 + "b ##\n\nBody.\n", "utf-8")
    with time_limit(INPUT_SECONDS):
        (doc,) = load([path]).documents
    assert doc.sections[0].heading == "a" + " " * 1_000_000 + "b"


def test_regression_pdf_page_that_is_one_long_word(tmp_path: Path) -> None:
    # The compound-word and broken-word regexes were tried from every letter of a word:
    # 20,000 letters took 6.6 s.
    path = tmp_path / "word.pdf"
    line = b"BT /F1 11 Tf 72 720 Td (%s) Tj ET"
    words = b" ".join([line % (b"a" * 200_000 + b"-"), line % (b"a" * 200_000 + b"-b-")])
    path.write_bytes(_one_page_pdf(_stream(words)))
    with time_limit(INPUT_SECONDS):
        (doc,) = load([path]).documents
    assert len(doc.sections[0].text) > 400_000


def test_regression_pdf_outline_of_many_entries_over_a_long_page(tmp_path: Path) -> None:
    # Each entry re-read (and re-normalised) the whole page: 1,000 entries over 5,000
    # lines took 8 s, 20,000 took 3 minutes.
    _, path = _pdf_outline_wide(tmp_path, entries=2_000, lines=5_000)
    with time_limit(INPUT_SECONDS):
        (doc,) = load([path]).documents
    assert doc.sections


def test_regression_csv_header_with_a_line_break_gives_a_one_line_finding(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_bytes(b'\n"0\n0"\n')
    assert "'0\\n0'" in _only_block(path, "missing-column").message


def test_regression_csv_field_over_the_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("id,text\n1," + "x" * 200_000 + "\n", "utf-8")
    assert "longer than 131,072 characters" in _only_block(path, "malformed-csv").message


def test_inflating_stream_decompresses_to_its_size() -> None:
    """The zip-bomb builder writes a valid zlib stream of the size it claims."""
    stream = inflating_stream(3 << 20, chunk=1 << 20)
    data = stream.split(b"stream\n", 1)[1].rsplit(b"\nendstream", 1)[0]
    assert len(zlib.decompress(data)) == len(_TEXT) + 1 + (3 << 20)


def test_regression_validation_message_quotes_a_key_with_a_line_break(client: Any) -> None:
    body = json.dumps({"question": "q", "scope": {"a\nb": 1}}).encode()
    response = client.post("/query", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422
    message = response.json()["error"]["message"]
    one_line(message)
    assert 'scope."a\\nb"' in message, message
