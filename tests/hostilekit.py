"""Hostile corpus files, made by code at test time: small on disk, costly if trusted.

Each generator writes one attack into a folder the caller owns (a test's `tmp_path`,
a benchmark's scratch folder) and returns the path to load. The tests for the loaders
use them to show that each attack is refused cheaply (`tests/loaders/test_loaders.py`,
`tests/loaders/test_docx.py`, `tests/loaders/test_ocr.py`); `bench/fuzz.py` may load them to measure
what each costs. Nothing here reads the project's code: an attack is bytes on disk.

- `corpus_with_outside_symlink`: a corpus folder whose links point outside it (a
  document, a metadata sidecar, a folder default and a linked folder), beside a link
  that stays inside, one that points nowhere and one that points at itself.
- `docx_with_huge_media`, `docx_with_huge_styles`, `docx_lying_header`,
  `docx_big_document_xml`: Word files whose parts inflate to far more than the file's
  size, or whose zip headers understate it; `docx_tiny_paragraphs` and
  `docx_at_limits`: the most a Word file can make a loader read within its limits.
- `pdf_speckle_pages`: a scanned-looking PDF of many pages that each draw one shared
  image of random noise, which OCR reads slowly and finds nothing in.
"""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import sys
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Text that exists only outside the corpus folder; it must never reach a Document.
OUTSIDE_SECRET = "root:x:0:0:outside-the-corpus"
INSIDE_TEXT = "The ferry leaves the quay at nine and returns at five."

MiB = 1024**2
GiB = 1024**3
ROOT = Path(__file__).resolve().parents[1]


# --- loading one under limits -----------------------------------------------------

# The child: load under an address-space limit and report on one JSON line. The same
# shape as tests/test_fuzz.py's, with each finding's severity and check.
_CHILD = """
import json, resource, sys, time
limit, options, paths = int(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3:]
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from groundqa.errors import GroundqaError
from groundqa.loaders import load
report = {}
started = time.perf_counter()
try:
    result = load(paths, **options)
    report["documents"] = [d.doc_id for d in result.documents]
    report["findings"] = [[f.severity, f.check, f.message] for f in result.findings]
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


def load_in_child(
    paths: Sequence[Path],
    memory: int = 2 * GiB,
    seconds: float = 120,
    **options: Any,
) -> dict[str, Any]:
    """`loaders.load(paths, **options)` in a subprocess under `memory` bytes of address
    space and `seconds` of wall-clock time, so that an attack that is not stopped fails
    a test instead of taking the machine.

    Returns the child's report: `documents` (ids), `findings` ([severity, check,
    message]) or `error`, `seconds`, `peak_mb`, and `crash`: None when the child ended
    cleanly, else what went wrong (the time limit, the memory limit, another exception).
    """
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-c", _CHILD, str(memory), json.dumps(options)]
    try:
        proc = subprocess.run(
            [*command, *map(str, paths)],
            capture_output=True,
            text=True,
            timeout=seconds,
            cwd=ROOT,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return {"crash": f"no result within {seconds:g} s"}
    last = proc.stdout.strip().splitlines()[-1:]
    if proc.returncode != 0 or not last:
        error = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"crash": f"exit {proc.returncode}: {error}"}
    report: dict[str, Any] = json.loads(last[0])
    report["crash"] = "memory limit hit" if report.get("memory_error") else None
    return report


# --- symbolic links ---------------------------------------------------------------


def corpus_with_outside_symlink(folder: Path, target: Path | None = None) -> Path:
    """A corpus folder under `folder`, returned, whose links reach outside it.

    Outside the corpus (in `folder/outside`, or `target` for the document link, e.g.
    /etc/passwd) lie a text file and a YAML mapping holding `OUTSIDE_SECRET`. Inside:

    - `guide.md`, an ordinary document, and `alias.md` linking to it (stays inside);
    - `passwd.txt` linking to the outside text file (or `target`);
    - `guide.md.meta.yaml` and `sub/_meta.yaml` linking to the outside YAML;
    - `sub/note.md`, an ordinary document that the folder default would describe;
    - `elsewhere/` linking to the outside folder;
    - `dangling.md` linking to a file that does not exist, `loop.md` linking to itself.
    """
    outside = folder / "outside"
    outside.mkdir(parents=True, exist_ok=True)
    secret_text = outside / "secret.txt"
    secret_text.write_text(f"{OUTSIDE_SECRET}\n", encoding="utf-8")
    secret_yaml = outside / "secret.yaml"
    secret_yaml.write_text(f"secret: {OUTSIDE_SECRET}\n", encoding="utf-8")
    (outside / "more.md").write_text(f"# More\n\n{OUTSIDE_SECRET}\n", encoding="utf-8")

    corpus = folder / "corpus"
    (corpus / "sub").mkdir(parents=True, exist_ok=True)
    (corpus / "guide.md").write_text(f"# Ferry guide\n\n## Times\n\n{INSIDE_TEXT}\n", "utf-8")
    (corpus / "sub" / "note.md").write_text(
        "# Harbour note\n\n## Moorings\n\nVisitors moor on the north wall for a small fee.\n",
        "utf-8",
    )
    (corpus / "alias.md").symlink_to(corpus / "guide.md")
    (corpus / "passwd.txt").symlink_to(target or secret_text)
    (corpus / "guide.md.meta.yaml").symlink_to(secret_yaml)
    (corpus / "sub" / "_meta.yaml").symlink_to(secret_yaml)
    (corpus / "elsewhere").symlink_to(outside, target_is_directory=True)
    (corpus / "dangling.md").symlink_to(corpus / "missing.md")
    (corpus / "loop.md").symlink_to(corpus / "loop.md")
    return corpus


def outside_link(folder: Path, name: str, content: str) -> Path:
    """`folder/name` as a link to a file holding `content` outside `folder`; the link."""
    outside = folder.parent / f"{folder.name}-outside"
    outside.mkdir(parents=True, exist_ok=True)
    target = outside / name
    target.write_text(content, encoding="utf-8")
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / name
    link.symlink_to(target)
    return link


# --- Word files -------------------------------------------------------------------

_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" '
    'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Default Extension="png" ContentType="image/png"/>'
    '<Override PartName="/word/document.xml" ContentType="application/'
    'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
    '<Override PartName="/word/styles.xml" ContentType="application/'
    'vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>'
    '<Override PartName="/word/numbering.xml" ContentType="application/'
    'vnd.openxmlformats-officedocument.wordprocessingml.numbering+xml"/>'
    "</Types>"
)
_PACKAGE_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    'relationships/officeDocument" Target="word/document.xml"/>'
    "</Relationships>"
)
_REL = (
    '<Relationship Id="{id}" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    'relationships/{kind}" Target="{target}"/>'
)
_W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_DOCUMENT_HEAD = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    f'<w:document xmlns:w="{_W_NS}"><w:body>'
)
_DOCUMENT_TAIL = "</w:body></w:document>"
_STYLES_HEAD = (
    f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:styles xmlns:w="{_W_NS}">'
)
_STYLES_TAIL = "</w:styles>"
# A heading and a paragraph, so that the document part alone is a good Word document.
BODY = (
    '<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Mooring rules</w:t></w:r></w:p>'
    "<w:p><w:r><w:t>Visitors moor on the north wall and pay the harbour master.</w:t></w:r></w:p>"
)
STYLES = '<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/></w:style>'


def _document_rels(extra: Iterable[tuple[str, str]]) -> str:
    rels = [("styles", "styles.xml"), *extra]
    body = "".join(
        _REL.format(id=f"rId{i}", kind=kind, target=target)
        for i, (kind, target) in enumerate(rels, 1)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        f"{body}</Relationships>"
    )


@dataclass(frozen=True)
class Part:
    """A zip member as runs of text: each (bytes, times) is written `times` over.

    `declared` is the uncompressed size its headers state (None: the true size).
    """

    runs: tuple[tuple[bytes, int], ...]
    declared: int | None = None

    @classmethod
    def of(cls, text: str | bytes) -> Part:
        return cls(((text.encode() if isinstance(text, str) else text, 1),))

    @property
    def size(self) -> int:
        return sum(len(data) * times for data, times in self.runs)


def repeated(head: str, unit: str, tail: str, size: int) -> Part:
    """`head`, `unit` repeated to come to about `size` bytes, then `tail`."""
    chunk = unit.encode() * max(1, MiB // len(unit.encode()))
    times = max(0, (size - len(head) - len(tail)) // len(chunk))
    return Part(((head.encode(), 1), (chunk, times), (tail.encode(), 1)))


def _deflate(part: Part) -> tuple[bytes, int]:
    """(the part deflated, its CRC-32), made in time and memory of its compressed size.

    Each run is deflated once and ended with a full flush, which empties the compressor's
    history and aligns to a byte: the bytes for a run are then the same every time it is
    written, so `times` copies of them inflate to `times` copies of the run.
    """
    out = bytearray()
    crc = 0
    for data, times in part.runs:
        compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
        block = compressor.compress(data) + compressor.flush(zlib.Z_FULL_FLUSH)
        out += block * times
        for _ in range(times):
            crc = zlib.crc32(data, crc)
    out += zlib.compressobj(9, zlib.DEFLATED, -15).flush(zlib.Z_FINISH)
    return bytes(out), crc


def write_zip(path: Path, parts: dict[str, Part]) -> Path:
    """A zip of deflated `parts` at `path`, written by hand so that a member can inflate
    to gigabytes from a few megabytes of input and state whatever size it likes.

    Sizes stay under 4 GiB (no zip64 records).
    """
    out = bytearray()
    central = bytearray()
    for name, part in parts.items():
        data, crc = _deflate(part)
        size = part.size if part.declared is None else part.declared
        encoded = name.encode()
        offset = len(out)
        # version 20, no flags, deflate, 2024-01-01 00:00
        fields = struct.pack("<HHHHHIII", 20, 0, 8, 0, 0x5821, crc, len(data), size)
        out += b"PK\x03\x04" + fields + struct.pack("<HH", len(encoded), 0) + encoded + data
        central += (
            b"PK\x01\x02"
            + struct.pack("<H", 20)
            + fields
            + struct.pack("<HHHHHII", len(encoded), 0, 0, 0, 0, 0, offset)
            + encoded
        )
    start = len(out)
    out += central
    out += b"PK\x05\x06" + struct.pack(
        "<HHHHIIH", 0, 0, len(parts), len(parts), len(central), start, 0
    )
    path.write_bytes(bytes(out))
    return path


def _write_docx(path: Path, members: dict[str, Part], rels: Iterable[tuple[str, str]] = ()) -> Path:
    """A .docx at `path`: a small good Word package, with `members` added or replacing its
    parts and the document's relationships to `rels` ((kind, target) pairs) added."""
    parts = {
        "[Content_Types].xml": Part.of(_CONTENT_TYPES),
        "_rels/.rels": Part.of(_PACKAGE_RELS),
        "word/_rels/document.xml.rels": Part.of(_document_rels(rels)),
        "word/document.xml": Part.of(_DOCUMENT_HEAD + BODY + _DOCUMENT_TAIL),
        "word/styles.xml": Part.of(_STYLES_HEAD + STYLES + _STYLES_TAIL),
    }
    parts.update(members)
    return write_zip(path, parts)


def docx_with_huge_media(path: Path, size: int = 3 * GiB, declared: int | None = None) -> Path:
    """A Word file whose one picture (`word/media/image1.png`) is `size` zero bytes, about
    3 MB on disk at 3 GiB; its headers state `declared` bytes (None: the truth).

    The document does not even show it: a relationship names it, which is enough for a
    reader that loads every part of the package.
    """
    zeros = Part(((bytes(8 * MiB), size // (8 * MiB)),), declared=declared)
    return _write_docx(path, {"word/media/image1.png": zeros}, rels=[("image", "media/image1.png")])


def docx_with_huge_styles(path: Path, size: int = 2 * GiB, declared: int | None = None) -> Path:
    """A Word file whose `styles.xml` is `size` bytes of well-formed XML (one style
    repeated), about 7 MB on disk at 2 GiB; its headers state `declared` bytes (None:
    the truth)."""
    unit = '<w:style w:type="character" w:styleId="Plain"><w:name w:val="Plain"/></w:style>'
    styles = repeated(_STYLES_HEAD + STYLES, unit, _STYLES_TAIL, size)
    return _write_docx(path, {"word/styles.xml": Part(styles.runs, declared=declared)})


def docx_big_document_xml(path: Path, size: int = 250 * MiB) -> Path:
    """A Word file whose `document.xml` is `size` bytes of one paragraph repeated: under
    a megabyte on disk at 250 MiB."""
    unit = "<w:p><w:r><w:t>Visitors moor on the north wall.</w:t></w:r></w:p>"
    return _write_docx(
        path, {"word/document.xml": repeated(_DOCUMENT_HEAD + BODY, unit, _DOCUMENT_TAIL, size)}
    )


def docx_lying_header(path: Path, size: int = GiB, declared: int = 5_000) -> Path:
    """A Word file whose `document.xml` inflates to `size` bytes while its zip headers
    (local and central) declare `declared`: a reader that trusts the declared size, or
    inflates a whole member in one call, is fooled."""
    unit = "<w:p><w:r><w:t>Visitors moor on the north wall.</w:t></w:r></w:p>"
    part = repeated(_DOCUMENT_HEAD + BODY, unit, _DOCUMENT_TAIL, size)
    return _write_docx(path, {"word/document.xml": Part(part.runs, declared=declared)})


def _varied(head: str, unit: str, tail: str, size: int) -> Part:
    """`head`, then `unit` with "{n}" counting up until about `size` bytes, then `tail`:
    the smallest elements that still differ, so they compress as real XML does."""
    pieces = [head]
    written, n = len(head) + len(tail), 0
    while written + len(piece := unit.format(n=f"{n:x}")) <= size:
        pieces.append(piece)
        written += len(piece)
        n += 1
    pieces.append(tail)
    return Part.of("".join(pieces))


def docx_tiny_paragraphs(path: Path, size: int, empty: bool = False, seed: int = 7) -> Path:
    """A Word file whose `document.xml` is `size` bytes of the smallest paragraphs: the
    most elements a document part of that size holds, each one for the loader to read.

    With text (`<w:p><w:r><w:t>1f</w:t></w:r></w:p>`, a counter), or `empty`
    (`<w:p/>`, about 6 bytes each). The paragraphs differ, so that they compress about
    as well as real text and no ratio limit refuses them: empty ones are followed by a
    space or not at random, one bit of news each.
    """
    if not empty:
        unit = "<w:p><w:r><w:t>{n}</w:t></w:r></w:p>"
        part = _varied(_DOCUMENT_HEAD + BODY, unit, _DOCUMENT_TAIL, size)
        return _write_docx(path, {"word/document.xml": part})
    rng = random.Random(seed)
    pieces = [_DOCUMENT_HEAD, BODY]
    written = len(_DOCUMENT_HEAD) + len(BODY) + len(_DOCUMENT_TAIL)
    while written + len(piece := "<w:p/> " if rng.random() < 0.5 else "<w:p/>") <= size:
        pieces.append(piece)
        written += len(piece)
    pieces.append(_DOCUMENT_TAIL)
    return _write_docx(path, {"word/document.xml": Part.of("".join(pieces))})


def docx_at_limits(path: Path, document: int, styles: int, numbering: int) -> Path:
    """A Word file whose document, styles and numbering parts are `document`, `styles`
    and `numbering` bytes of the smallest elements that differ (paragraphs with a little
    text, styles, list definitions): with each at its limit, the most a loader that
    keeps to its limits can be made to read."""
    numbering_head = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        f'<w:numbering xmlns:w="{_W_NS}">'
        '<w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:start w:val="1"/>'
        '<w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl></w:abstractNum>'
    )
    return _write_docx(
        path,
        {
            "word/document.xml": _varied(
                _DOCUMENT_HEAD + BODY,
                "<w:p><w:r><w:t>{n}</w:t></w:r></w:p>",
                _DOCUMENT_TAIL,
                document,
            ),
            "word/styles.xml": _varied(
                _STYLES_HEAD + STYLES,
                '<w:style w:type="paragraph" w:styleId="s{n}"/>',
                _STYLES_TAIL,
                styles,
            ),
            "word/numbering.xml": _varied(
                numbering_head,
                '<w:num w:numId="{n}"><w:abstractNumId w:val="1"/></w:num>',
                "</w:numbering>",
                numbering,
            ),
        },
        rels=[("numbering", "numbering.xml")],
    )


# --- PDF --------------------------------------------------------------------------


def pdf_speckle_pages(
    path: Path, pages: int, side: int = 1200, density: float = 0.5, seed: int = 7
) -> Path:
    """A PDF of `pages` pages, each drawing the same `side` x `side` image of random
    speckle (each pixel black with probability `density`) across the whole page, and no
    text layer.

    The image is stored once (1 bit a pixel, deflated), so a 5,000-page file stays
    under a megabyte; OCR renders and reads every page, and finds nothing.
    """
    rng = random.Random(seed)
    row_bytes = (side + 7) // 8

    def row() -> bytes:
        bits = [rng.random() >= density for _ in range(row_bytes * 8)]  # 1 is white
        return bytes([0]) + bytes(
            sum(bit << (7 - i) for i, bit in enumerate(bits[k : k + 8]))
            for k in range(0, len(bits), 8)
        )

    raw = b"".join(row() for _ in range(side))
    image = zlib.compress(raw, 9)
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in below, once the page tree's number is known
    tree = add(b"")
    picture = add(
        b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "
        b"/BitsPerComponent 1 /Filter /FlateDecode "
        b"/DecodeParms << /Predictor 15 /Colors 1 /BitsPerComponent 1 /Columns %d >> "
        b"/Length %d >>\nstream\n" % (side, side, side, len(image)) + image + b"\nendstream"
    )
    draw = b"q 612 0 0 792 0 0 cm /Im0 Do Q"
    content = add(b"<< /Length %d >>\nstream\n" % len(draw) + draw + b"\nendstream")
    kids = []
    for _ in range(pages):
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] "
                b"/Resources << /XObject << /Im0 %d 0 R >> >> /Contents %d 0 R >>"
                % (tree, picture, content)
            )
        )
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % tree
    objects[tree - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        pages,
    )
    out = bytearray(b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        catalog,
        xref,
    )
    path.write_bytes(bytes(out))
    return path
