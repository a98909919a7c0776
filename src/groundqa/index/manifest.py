"""Manifests, and the index directory's builds: side by side, one pointer to the current one.

`Manifest` says what a build holds and how it was made; both stores keep one per build
(PostgreSQL as a row, see `index.postgres`). The rest of this module is the directory's
bookkeeping:

    DIR/
      current           symlink -> builds/<build id>   (swapped atomically)
      builds/<id>/      manifest.json (written last), chunks.jsonl, bm25/
      .lock             held by a build while it writes

A build writes into `builds/.tmp-*`, records every file's size, sha256 and modification
time in its manifest, then renames itself into place and swaps `current` with one rename.
A reader resolves `current` once and verifies the manifest against the files (hashing a
file only when its size or time differ from the sealed ones), so it sees either the
previous complete build or the new one, never a mix.
A killed build leaves only a `.tmp-*` folder that the next build removes.

This module refuses to open anything it cannot vouch for: a missing or
incomplete manifest, a file whose size or hash differs, or a build from
another format version is an error that says to rebuild.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groundqa._version import __version__
from groundqa.errors import (
    CalibrationError,
    IndexCorruptError,
    IndexLockedError,
    IndexMissingError,
    IndexVersionError,
    IndexWriteError,
    UsageError,
)

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
CURRENT = "current"
BUILDS = "builds"
LOCK = ".lock"


@dataclass(frozen=True)
class Manifest:
    """What a build contains and how it was made; the reader's contract with the writer."""

    build_id: str
    created_at: str
    corpus: dict[str, Any]
    chunker: dict[str, Any]
    lexical: dict[str, Any]
    analyzer: str
    counts: dict[str, int]
    findings: dict[str, int] = field(default_factory=dict)
    gate: dict[str, Any] = field(default_factory=dict)
    dense: dict[str, Any] = field(default_factory=dict)  # empty: no vectors in this build
    # the plan fitted to this build (`evaluate.planfit`); empty: the built-in plan
    retrieval: dict[str, Any] = field(default_factory=dict)
    timings_s: dict[str, float] = field(default_factory=dict)  # how long each build stage took
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION
    groundqa_version: str = __version__
    complete: bool = True

    @property
    def fingerprint(self) -> str:
        """Identifies corpus plus settings: equal fingerprints mean an identical build."""
        return str(self.corpus.get("build_fingerprint", ""))

    def to_dict(self) -> dict[str, Any]:
        return {
            "format_version": self.format_version,
            "groundqa_version": self.groundqa_version,
            "build_id": self.build_id,
            "created_at": self.created_at,
            "complete": self.complete,
            "corpus": self.corpus,
            "chunker": self.chunker,
            "lexical": self.lexical,
            "analyzer": self.analyzer,
            "gate": self.gate,
            "dense": self.dense,
            "retrieval": self.retrieval,
            "timings_s": self.timings_s,
            "counts": self.counts,
            "findings": self.findings,
            "files": self.files,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Manifest:
        return cls(
            format_version=int(d["format_version"]),
            groundqa_version=str(d.get("groundqa_version", "")),
            build_id=str(d["build_id"]),
            created_at=str(d["created_at"]),
            complete=bool(d.get("complete", False)),
            corpus=dict(d["corpus"]),
            chunker=dict(d["chunker"]),
            lexical=dict(d["lexical"]),
            analyzer=str(d["analyzer"]),
            gate=dict(d.get("gate", {})),
            dense=dict(d.get("dense", {})),
            retrieval=dict(d.get("retrieval", {})),
            timings_s={k: float(v) for k, v in d.get("timings_s", {}).items()},
            counts={k: int(v) for k, v in d["counts"].items()},
            findings={k: int(v) for k, v in d.get("findings", {}).items()},
            files=dict(d.get("files", {})),
        )


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _rebuild_hint(index_dir: Path) -> str:
    return f"rebuild it with `groundqa ingest SOURCE... --index {index_dir}`"


def looks_like_index(index_dir: Path) -> bool:
    return any(
        (index_dir / name).exists() or (index_dir / name).is_symlink()
        for name in (CURRENT, BUILDS, LOCK, MANIFEST)
    )


def current_build(index_dir: Path) -> Path:
    """The folder of the current complete build, or an error that says what to do."""
    if not index_dir.is_dir():
        raise IndexMissingError(
            f"no index at {index_dir}; build one with `groundqa ingest SOURCE... --index {index_dir}`"
        )
    pointer = index_dir / CURRENT
    if not pointer.is_symlink():
        if (index_dir / MANIFEST).exists():
            raise IndexVersionError(
                f"{index_dir} was built by an older groundqa with another layout; "
                + _rebuild_hint(index_dir)
            )
        if (index_dir / BUILDS).exists():
            raise IndexCorruptError(
                f"{index_dir} has no complete build (an ingest was stopped); "
                + _rebuild_hint(index_dir)
            )
        raise IndexMissingError(
            f"no index at {index_dir}; build one with `groundqa ingest SOURCE... --index {index_dir}`"
        )
    target = index_dir / os.readlink(pointer)
    if not target.is_dir():
        raise IndexCorruptError(
            f"{index_dir} points to a build that is gone ({target.name}); "
            + _rebuild_hint(index_dir)
        )
    return target


def read_manifest(build_dir: Path, *, verify: bool = True) -> Manifest:
    index_dir = build_dir.parent.parent
    path = build_dir / MANIFEST
    try:
        raw = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise IndexCorruptError(
            f"{index_dir} has a build without a manifest; " + _rebuild_hint(index_dir)
        ) from None
    except (OSError, ValueError) as exc:
        raise IndexCorruptError(
            f"{index_dir} has an unreadable manifest ({exc}); " + _rebuild_hint(index_dir)
        ) from None
    if not isinstance(raw, dict) or "format_version" not in raw:
        raise IndexCorruptError(
            f"{index_dir} has an incomplete manifest; " + _rebuild_hint(index_dir)
        )
    if raw["format_version"] != FORMAT_VERSION:
        raise IndexVersionError(
            f"{index_dir} uses index format {raw['format_version']} "
            f"(groundqa {raw.get('groundqa_version', '?')}); this groundqa reads format "
            f"{FORMAT_VERSION}; " + _rebuild_hint(index_dir)
        )
    try:
        manifest = Manifest.from_dict(raw)
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexCorruptError(
            f"{index_dir} has an incomplete manifest (missing {exc}); " + _rebuild_hint(index_dir)
        ) from None
    if not manifest.complete:
        raise IndexCorruptError(
            f"{index_dir} build is marked incomplete; " + _rebuild_hint(index_dir)
        )
    if verify:
        for name, meta in manifest.files.items():
            file = build_dir / name
            if not file.is_file():
                raise IndexCorruptError(
                    f"{index_dir} is missing {name}; " + _rebuild_hint(index_dir)
                )
            if not _sealed(file, meta):
                raise IndexCorruptError(
                    f"{index_dir}: {name} does not match its manifest; " + _rebuild_hint(index_dir)
                )
    return manifest


def _sealed(file: Path, meta: dict[str, Any]) -> bool:
    """Whether `file` is the one the manifest sealed. A file with the size and modification
    time recorded when it was sealed has not been written since and is not hashed again
    (at a million chunks, hashing every file took longer than the rest of opening); any
    other, an index copied without its times for one, is hashed."""
    stat = file.stat()
    if stat.st_size != meta["bytes"]:
        return False
    if meta.get("mtime_ns") == stat.st_mtime_ns:
        return True
    return bool(_sha256(file) == meta["sha256"])


# What to do when the system refuses a write, by errno; anything else gets its own words.
_WRITE_ADVICE = {
    errno.ENOSPC: "the disk is full: free some space, or choose an --index on another disk",
    errno.EDQUOT: "the disk quota is used up: free some space, or choose another --index",
    errno.EROFS: "it is on a read-only filesystem: choose a writable folder for --index",
    errno.EACCES: "permission denied: choose a folder you can write for --index",
    errno.EPERM: "permission denied: choose a folder you can write for --index",
    errno.EFBIG: "a file grew past the size the system allows (ulimit -f)",
}


def write_error(exc: OSError, index_dir: Path) -> IndexWriteError:
    """An OSError met writing `index_dir`, as one line that says what to do; the caller
    has left the previous build as it was."""
    advice = _WRITE_ADVICE.get(exc.errno or 0)
    if advice is None:
        reason = exc.strerror or exc.__class__.__name__
        advice = f"{reason}: choose an ordinary, writable folder for --index"
    return IndexWriteError(
        f"cannot write the index at {index_dir}; {advice} (the previous build, if any, is unchanged)"
    )


@contextlib.contextmanager
def _writing(index_dir: Path) -> Iterator[None]:
    """OSErrors inside become IndexWriteError naming `index_dir`."""
    try:
        yield
    except OSError as exc:
        raise write_error(exc, index_dir) from None


@contextlib.contextmanager
def build_lock(index_dir: Path) -> Iterator[None]:
    """Exclusive lock for writers; a second ingest fails at once instead of interleaving.

    It also refuses to take over a folder that holds something other than an index,
    so pointing `--index` at a documents folder cannot clutter or lose anything.
    """
    if index_dir.is_dir() and any(index_dir.iterdir()) and not looks_like_index(index_dir):
        raise UsageError(
            f"{index_dir} exists and is not a groundqa index; choose a new or empty folder"
        )
    if index_dir.exists() and not index_dir.is_dir():
        raise UsageError(f"{index_dir} is a file; --index needs a folder")
    with _writing(index_dir):
        index_dir.mkdir(parents=True, exist_ok=True)
        handle = (index_dir / LOCK).open("a+")
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise IndexLockedError(
                    f"another ingest is writing {index_dir}; wait for it to finish and try again"
                ) from None
            raise
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_build(
    index_dir: Path, write: Callable[[Path], Manifest], *, keep_previous: bool = True
) -> Manifest:
    """Run `write(tmp_dir)`, seal its files in the manifest, and make it current atomically.

    The caller must hold `build_lock(index_dir)`. Any exception, including
    KeyboardInterrupt, removes the partial build and leaves `current` as it was.
    """
    with _writing(index_dir):
        return _write_build(index_dir, write, keep_previous=keep_previous)


def _write_build(
    index_dir: Path, write: Callable[[Path], Manifest], *, keep_previous: bool
) -> Manifest:
    builds = index_dir / BUILDS
    builds.mkdir(parents=True, exist_ok=True)
    for stale in builds.glob(".tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    tmp = builds / f".tmp-{uuid.uuid4().hex[:12]}"
    tmp.mkdir()
    try:
        manifest = write(tmp)
        files = {}
        for file in sorted(p for p in tmp.rglob("*") if p.is_file()):
            rel = file.relative_to(tmp).as_posix()
            stat = file.stat()
            files[rel] = {
                "bytes": stat.st_size,
                "sha256": _sha256(file),
                "mtime_ns": stat.st_mtime_ns,
            }
        sealed = Manifest.from_dict({**manifest.to_dict(), "files": files, "complete": True})
        with (tmp / MANIFEST).open("w", encoding="utf-8") as f:
            json.dump(sealed.to_dict(), f, ensure_ascii=False, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        final = builds / sealed.build_id
        if final.exists():
            shutil.rmtree(final)
        os.rename(tmp, final)
        _fsync_dir(builds)
        link_tmp = index_dir / f".{CURRENT}-{uuid.uuid4().hex[:8]}"
        os.symlink(f"{BUILDS}/{sealed.build_id}", link_tmp)
        os.replace(link_tmp, index_dir / CURRENT)
        _fsync_dir(index_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _prune(builds, keep={sealed.build_id}, keep_previous=keep_previous)
    return sealed


# The parts of a manifest that may change after its build is written, and what to run
# when the build changed under a fit meant for another.
UPDATABLE = {
    "gate": "calibrate this index itself",
    "retrieval": "run `groundqa tune` on this index again",
}


def update_gate(index_dir: Path, gate: dict[str, Any], fingerprint: str | None = None) -> Manifest:
    """Replace the current build's gate settings in its manifest (see `update_part`)."""
    return update_part(index_dir, "gate", gate, fingerprint)


def stale_fit(part: str, fingerprint: str, location: str, current: str) -> CalibrationError:
    """The error for a `part` fitted to build `fingerprint` while `location` holds `current`."""
    noun = "gate" if part == "gate" else "retrieval plan"
    return CalibrationError(
        f"the {noun} was fitted for index build {fingerprint[:12]}, but {location} now "
        f"holds build {current[:12]}; {UPDATABLE[part]}"
    )


def update_part(
    index_dir: Path, part: str, value: dict[str, Any], fingerprint: str | None = None
) -> Manifest:
    """Replace one updatable part (`UPDATABLE`) of the current build's manifest, atomically.

    Only the manifest changes (its `files` seal the data files, which stay as they
    are); a reader sees the old manifest or the new one, never half of either.
    With `fingerprint`, the current build must still be that one (checked under
    the lock, so a rebuild in between cannot receive a fit made for another).
    """
    if part not in UPDATABLE:
        raise ValueError(f"a manifest's {part!r} is not updatable")
    with build_lock(index_dir):
        build = current_build(index_dir)
        manifest = read_manifest(build)
        if fingerprint is not None and manifest.fingerprint != fingerprint:
            raise stale_fit(part, fingerprint, str(index_dir), manifest.fingerprint)
        updated = Manifest.from_dict({**manifest.to_dict(), part: value})
        tmp = build / f".{MANIFEST}-{uuid.uuid4().hex[:8]}"
        with _writing(index_dir):
            try:
                with tmp.open("w", encoding="utf-8") as f:
                    json.dump(updated.to_dict(), f, ensure_ascii=False, indent=1, sort_keys=True)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, build / MANIFEST)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
            _fsync_dir(build)
    return updated


def _prune(builds: Path, keep: set[str], *, keep_previous: bool) -> None:
    """Remove old builds; keep the newest previous one so open readers can finish."""
    older = sorted(
        (
            p
            for p in builds.iterdir()
            if p.is_dir() and p.name not in keep and not p.name.startswith(".")
        ),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for old in older[1 if keep_previous else 0 :]:
        shutil.rmtree(old, ignore_errors=True)


def new_build_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:8]
