"""`loaders._zip`: members read in chunks, counted as they inflate, refused past a limit.

Archives are written here by `tests.hostilekit.write_zip`, which can make a member
inflate to far more than it occupies and state any size in its headers.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from groundqa.loaders._zip import GuardedZip, ZipLimits, ZipRefused, size_words
from tests.hostilekit import MiB, Part, write_zip

LIMITS = ZipLimits(member_bytes=4 * MiB, total_bytes=6 * MiB, max_ratio=100, ratio_after=MiB)


def varied(size: int) -> Part:
    """`size` bytes that compress about ten to one, as XML does."""
    text = "".join(f"<w:p><w:t>{n:x}</w:t></w:p>" for n in range(size // 20 + 1)).encode()
    return Part.of(text[:size])


def zeros(size: int, declared: int | None = None) -> Part:
    return Part(((bytes(MiB), size // MiB),), declared=declared)


def test_a_member_is_read_whole_and_counted(tmp_path: Path) -> None:
    path = write_zip(tmp_path / "a.zip", {"a.xml": varied(3 * MiB), "b.xml": Part.of("<b/>")})
    with GuardedZip(path, LIMITS) as archive:
        assert archive.read("a.xml") == zipfile.ZipFile(path).read("a.xml")
        assert archive.read("b.xml") == b"<b/>"
        assert archive.inflated == 3 * MiB + 4
        assert archive.has("a.xml") and not archive.has("c.xml")
        with pytest.raises(KeyError):
            archive.read("c.xml")


def test_a_member_past_its_limit_is_refused(tmp_path: Path) -> None:
    path = write_zip(tmp_path / "a.zip", {"a.xml": varied(5 * MiB)})
    with GuardedZip(path, LIMITS) as archive, pytest.raises(ZipRefused) as caught:
        archive.read("a.xml")
    assert (caught.value.member, caught.value.reason) == ("a.xml", "inflates past 4 MiB")
    # It stopped one chunk past the limit, not at the end of the member.
    assert archive.inflated < 4 * MiB + 300 * 1024
    with GuardedZip(path, LIMITS) as archive, pytest.raises(ZipRefused, match="past 1 MiB"):
        archive.read("a.xml", limit=MiB)


def test_the_archive_total_holds_across_members(tmp_path: Path) -> None:
    members = {name: varied(7 * MiB // 2) for name in ("a.xml", "b.xml")}
    path = write_zip(tmp_path / "a.zip", members)
    with GuardedZip(path, LIMITS) as archive:
        archive.read("a.xml")
        with pytest.raises(ZipRefused, match="takes the archive past 6 MiB inflated"):
            archive.read("b.xml")


def test_a_member_that_inflates_too_well_is_refused_once_past_a_small_size(
    tmp_path: Path,
) -> None:
    path = write_zip(tmp_path / "a.zip", {"small.xml": zeros(MiB), "big.xml": zeros(3 * MiB)})
    with GuardedZip(path, LIMITS) as archive:
        assert archive.read("small.xml") == bytes(MiB)  # a thousand to one, but small
        with pytest.raises(ZipRefused, match="inflates more than 100 times its compressed"):
            archive.read("big.xml")
        assert archive.inflated < 2 * MiB + 300 * 1024


def test_a_header_that_understates_a_member_buys_nothing(tmp_path: Path) -> None:
    path = write_zip(tmp_path / "a.zip", {"a.xml": zeros(64 * MiB, declared=5_000)})
    with GuardedZip(path, LIMITS) as archive:
        assert archive.declared_bytes() == 5_000
        with pytest.raises(zipfile.BadZipFile, match="Bad CRC-32"):
            archive.read("a.xml")
        assert archive.inflated <= 5_000


def test_head_reads_only_the_start(tmp_path: Path) -> None:
    path = write_zip(tmp_path / "a.zip", {"mimetype": zeros(64 * MiB)})
    with GuardedZip(path, LIMITS) as archive:
        assert archive.head("mimetype", 100) == bytes(100)
        assert archive.inflated < 300 * 1024


def test_limits_and_sizes_in_words() -> None:
    with pytest.raises(ValueError):
        ZipLimits(member_bytes=MiB, total_bytes=MiB, max_ratio=1)
    assert (size_words(16 * MiB), size_words(3 * 1024**3), size_words(900 * 1024)) == (
        "16 MiB",
        "3,072 MiB",
        "900 KiB",
    )
