"""Read members of a zip archive (a Word file) without trusting what the archive says.

A zip states each member's sizes in its headers, and a hostile one lies: a few megabytes
on disk can inflate to gigabytes (zeros deflate a thousand to one), and a header can
declare 5,000 bytes for a member that inflates to a gigabyte. `zipfile`'s `read()` of a
member inflates all of it in one call before it checks anything. Every member a loader
opens goes through `GuardedZip` instead, which inflates in bounded chunks, counts the
bytes that actually come out, and stops as soon as a member passes its limit, all
members together pass the archive's, or a member inflates to more than `max_ratio`
times its compressed size.

The ratio is checked only once a member is past `ratio_after` bytes: a small XML part
compresses very well, and that is no attack. The compressed size it divides by is the
one `zipfile` itself stops reading at, so a header that understates it cannot buy a
larger ratio.

What it refuses to do: it does not list, extract or open a member nobody asked for,
and it never returns part of a member: a member over a limit raises `ZipRefused`,
whose `reason` says which limit in a few words.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

MiB = 1024 * 1024
# How much is inflated per call: small enough that a chunk never matters, large enough
# that a 64 MiB part takes a thousand calls, not a million.
CHUNK_BYTES = 256 * 1024


class ZipRefused(Exception):
    """A member passed a limit; `reason` says which ("inflates past 64 MiB")."""

    def __init__(self, member: str, reason: str) -> None:
        super().__init__(f"{member} {reason}")
        self.member = member
        self.reason = reason


@dataclass(frozen=True)
class ZipLimits:
    """What one archive may inflate to: per member, in all, and per compressed byte."""

    member_bytes: int
    total_bytes: int
    max_ratio: float
    ratio_after: int = MiB

    def __post_init__(self) -> None:
        if min(self.member_bytes, self.total_bytes, self.ratio_after) < 0 or self.max_ratio <= 1:
            raise ValueError(f"zip limits must be positive, with a ratio above 1: {self}")


def size_words(n: int) -> str:
    """A byte count for a message: "64 MiB", "900 KiB"."""
    if n >= MiB:
        return f"{n / MiB:,.0f} MiB"
    return f"{max(1, n // 1024):,} KiB"


class GuardedZip:
    """An open zip archive whose members are read only within `limits`.

    The count of inflated bytes runs across every `read` on one GuardedZip, so the
    archive's total holds however the loader splits its reading.
    """

    def __init__(self, path: Path, limits: ZipLimits) -> None:
        self.limits = limits
        self.inflated = 0
        self._archive = zipfile.ZipFile(path)

    def __enter__(self) -> GuardedZip:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._archive.close()

    def names(self) -> list[str]:
        return self._archive.namelist()

    def declared_bytes(self) -> int:
        """What the directory says every member unpacks to, together (unchecked)."""
        return sum(info.file_size for info in self._archive.infolist())

    def has(self, name: str) -> bool:
        try:
            self._archive.getinfo(name)
        except KeyError:
            return False
        return True

    def read(self, name: str, limit: int | None = None) -> bytes:
        """The member `name` whole, within `limit` bytes (at most the member limit).

        Raises KeyError for a member that is not there, ZipRefused for one past a limit,
        and whatever `zipfile` or `zlib` raise for a damaged one (a bad CRC-32 when its
        header understated its size).
        """
        cap = self.limits.member_bytes if limit is None else min(limit, self.limits.member_bytes)
        return self._inflate(name, cap, whole=True)

    def head(self, name: str, n: int) -> bytes:
        """At most the first `n` bytes of the member `name` (to sniff what it is)."""
        return self._inflate(name, n, whole=False)

    def _inflate(self, name: str, cap: int, whole: bool) -> bytes:
        info = self._archive.getinfo(name)
        # `zipfile` reads no more than compress_size bytes of the member's data, so the
        # ratio against it bounds what the member can still inflate to.
        compressed = max(info.compress_size, 1)
        chunks: list[bytes] = []
        size = 0
        with self._archive.open(info) as member:
            # One byte past the cap tells a member at the cap from one over it.
            while (chunk := member.read(min(CHUNK_BYTES, cap + 1 - size))) != b"":
                chunks.append(chunk)
                size += len(chunk)
                self.inflated += len(chunk)
                if size > cap:
                    if not whole:
                        return b"".join(chunks)[:cap]
                    raise ZipRefused(name, f"inflates past {size_words(cap)}")
                if self.inflated > self.limits.total_bytes:
                    raise ZipRefused(
                        name,
                        f"takes the archive past {size_words(self.limits.total_bytes)} inflated",
                    )
                if size > self.limits.ratio_after and size > self.limits.max_ratio * compressed:
                    raise ZipRefused(
                        name,
                        f"inflates more than {self.limits.max_ratio:,.0f} times its "
                        f"compressed size ({size_words(compressed)})",
                    )
        return b"".join(chunks)
