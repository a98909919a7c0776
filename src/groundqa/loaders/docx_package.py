"""What a Word file is, before it is read: a Word package within its limits, or a file
that says in one finding why it is not read (a Word 97-2003 document, one encrypted with
a password, another kind of file under a .docx name, or a zip whose parts would inflate
past what a document needs).
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path

from groundqa.loaders._common import block
from groundqa.loaders._zip import GuardedZip, ZipLimits, size_words
from groundqa.models import Finding

MiB = 1024 * 1024
# What the parts read may inflate to (measured in docs/pipeline/load.md): the document
# part, the worst case of which (the smallest paragraphs that differ) costs about a second
# and 20-25 MB of memory a megabyte to load; each other part read (styles, numbering, core
# properties, relationships, content types), tens or hundreds of kilobytes in real
# files; and all of them together. No member past 1 MiB may inflate more than 500 times
# its compressed size: deflate tops out near 1,000, and the most repetitive document
# made here (20,000 equal list paragraphs) comes to 270.
DOCUMENT_PART_BYTES = 16 * MiB
OTHER_PART_BYTES = 4 * MiB
ZIP_LIMITS = ZipLimits(
    member_bytes=DOCUMENT_PART_BYTES,
    total_bytes=DOCUMENT_PART_BYTES + 2 * OTHER_PART_BYTES + MiB,  # 1 MiB: rels, content types
    max_ratio=500,
    ratio_after=MiB,
)
# A file whose directory says its members unpack to more than this is refused unread:
# Word saves no file over 512 MB, and the pictures that make a file big barely deflate.
DECLARED_LIMIT = 1024 * MiB
# An OLE compound file: Word 97-2003 documents, and Office files encrypted with a password
# (the encrypted zip sits inside one as the stream "EncryptedPackage", MS-OFFCRYPTO).
_OLE_SIGNATURE = bytes.fromhex("d0cf11e0a1b11ae1")


def sniff(path: Path) -> Finding | None:
    """A BLOCK finding when `path` is not a Word document python-docx can open, else None."""
    try:
        with path.open("rb") as fh:
            head = fh.read(8)
        if head == _OLE_SIGNATURE:
            return _ole_finding(path, path.read_bytes())
        if not zipfile.is_zipfile(path):
            return block(
                "docx-not-docx",
                f"{path.name} is not a Word .docx file ({_kind_of(path, head)}); "
                "open it in Word and save it as a Word document (.docx), "
                "or download it again if it was cut short",
                path,
            )
        with GuardedZip(path, ZIP_LIMITS) as archive:
            names = archive.names()
            if "word/document.xml" not in names:
                return block(
                    "docx-not-word",
                    f"{path.name} is {_zip_kind(archive, names)}, not a Word document; "
                    "save or export it as .docx, or move it out of the corpus",
                    path,
                )
            declared = archive.declared_bytes()
    except Exception as exc:  # zipfile raises many kinds on a damaged archive
        reason = getattr(exc, "strerror", None) or " ".join(str(exc).split()) or "unreadable"
        return block(
            "docx-unreadable",
            f"{path.name} cannot be read ({reason}); check the file and its permissions, "
            "or download or save it again",
            path,
        )
    if declared > DECLARED_LIMIT:
        # Only what the directory says, and nothing is unpacked: a part that understates
        # its size is caught by the guard if it is read, and costs nothing if it is not.
        return bomb_finding(
            path, f"it says it unpacks to {size_words(declared)}, more than Word files hold"
        )
    return None


def bomb_finding(path: Path, what: str) -> Finding:
    return block(
        "docx-too-big",
        f"{path.name} is refused: {what} (a zip bomb, or a document too big to read "
        "safely); open it in Word and save it again, or split it into smaller documents",
        path,
    )


def _ole_finding(path: Path, data: bytes) -> Finding:
    """What an OLE compound file under a .docx name is: encrypted, an old .doc, or other.

    Told apart by the stream names in the file's directory (UTF-16 names; python-docx
    cannot open any of them, and reading the directory properly needs a library this
    check does not justify).
    """
    if "EncryptedPackage".encode("utf-16-le") in data:
        return block(
            "docx-encrypted",
            f"{path.name} is password-protected; save an unprotected copy "
            "(in Word: File > Info > Protect Document > Encrypt with Password, "
            "clear the password) and ingest that",
            path,
        )
    if "WordDocument".encode("utf-16-le") in data:
        return block(
            "docx-legacy-doc",
            f"{path.name} is a Word 97-2003 .doc; save it as .docx (in Word: File > Save As "
            "> Word Document) and ingest that",
            path,
        )
    return block(
        "docx-not-docx",
        f"{path.name} is not a Word .docx file (an old binary Office file, "
        "such as .xls or .ppt); save it in a current format or move it out of the corpus",
        path,
    )


def _kind_of(path: Path, head: bytes) -> str:
    """What a file that is not a zip looks like, from its first bytes, in a few words."""
    if head.startswith(b"%PDF"):
        return "it is a PDF"
    if head.startswith(b"{\\rtf"):
        return "it is an RTF file"
    try:
        sample = path.read_bytes()[:4096]
    except OSError:
        return "not a zip archive"
    if b"\x00" not in sample:
        try:
            sample.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < len(sample) - 3:  # a character cut at the sample's end is fine
                return "not a zip archive"
        return "it looks like a plain text file"
    return "not a zip archive"


def _zip_kind(archive: GuardedZip, names: Sequence[str]) -> str:
    """What a zip without a Word document part holds, in a few words."""
    present = set(names)
    if "xl/workbook.xml" in present:
        return "an Excel workbook (.xlsx)"
    if "ppt/presentation.xml" in present:
        return "a PowerPoint presentation (.pptx)"
    if "mimetype" in present:
        try:
            mimetype = archive.head("mimetype", 100).decode("ascii", "replace")
        except Exception:  # a damaged entry: the kind is unknown, not the error
            mimetype = ""
        kinds = {
            "opendocument.text": "an OpenDocument text (.odt)",
            "opendocument.spreadsheet": "an OpenDocument spreadsheet (.ods)",
            "opendocument.presentation": "an OpenDocument presentation (.odp)",
            "epub": "an EPUB e-book",
        }
        for key, kind in kinds.items():
            if key in mimetype:
                return kind
    files = [n for n in names if not n.endswith("/")]
    shown = ", ".join(files[:3]) + (", ..." if len(files) > 3 else "")
    return f"a zip archive of {len(files)} file(s) ({shown})" if files else "an empty zip archive"
