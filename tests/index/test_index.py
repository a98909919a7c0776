"""The index directory: atomic builds, verified manifests, refusals that say to rebuild."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from groundqa.engine import Engine
from groundqa.errors import (
    IndexCorruptError,
    IndexLockedError,
    IndexMissingError,
    IndexVersionError,
    IndexWriteError,
    UsageError,
)
from groundqa.index import manifest as manifest_module
from groundqa.index.directory import load_index, write_chunks
from groundqa.index.lexical import BM25Settings, LexicalIndex
from groundqa.index.manifest import (
    Manifest,
    build_lock,
    current_build,
    new_build_id,
    read_manifest,
    write_build,
)
from groundqa.inspection import inspect_index
from groundqa.models import Chunk
from groundqa.text import ANALYZERS, DEFAULT_ANALYZER, Analyzer

TEXTS = [
    "The bakery sells out by 11am every Saturday.",
    "Buses run hourly on weekdays and not at all on Sundays.",
    "The church tower costs two pounds to climb.",
]


def _chunks() -> list[Chunk]:
    return [
        Chunk(f"c{i}", "doc.md", f"doc.md#S{i}", "Doc", (f"S{i}",), t, "/c/doc.md")
        for i, t in enumerate(TEXTS)
    ]


def _writer(chunks: list[Chunk], analyzer: str = DEFAULT_ANALYZER):  # type: ignore[no-untyped-def]
    def write(tmp: Path) -> Manifest:
        terms = Analyzer(analyzer)
        lexical = LexicalIndex.build([c.index_text() for c in chunks], terms, BM25Settings())
        lexical.save(tmp / "bm25")
        write_chunks(tmp, chunks)
        return Manifest(
            build_id=new_build_id(),
            created_at="now",
            corpus={"build_fingerprint": "f"},
            chunker={},
            lexical={},
            analyzer=analyzer,
            counts={"chunks": len(chunks)},
        )

    return write


def _build(
    index_dir: Path, chunks: list[Chunk] | None = None, analyzer: str = DEFAULT_ANALYZER
) -> Manifest:
    with build_lock(index_dir):
        return write_build(index_dir, _writer(chunks or _chunks(), analyzer))


def test_build_then_load(tmp_path: Path) -> None:
    manifest = _build(tmp_path / "idx")
    loaded = load_index(tmp_path / "idx")
    assert loaded.manifest.build_id == manifest.build_id
    assert [c.text for c in loaded.chunks] == TEXTS
    assert set(manifest.files) >= {"chunks.jsonl"}
    assert (tmp_path / "idx" / "current").is_symlink()


def test_lexical_scores_and_idf(tmp_path: Path) -> None:
    _build(tmp_path / "idx")
    lexical = load_index(tmp_path / "idx").lexical
    scores = lexical.scores(Analyzer().terms("bakery Saturday"))
    assert int(scores.argmax()) == 0 and scores[1] == 0
    assert lexical.df("bakeri") == 1
    assert lexical.idf("mongolia") > lexical.idf("bakeri")


def test_missing_and_foreign_directories(tmp_path: Path) -> None:
    with pytest.raises(IndexMissingError, match="groundqa ingest"):
        load_index(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexMissingError):
        load_index(tmp_path / "empty")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="not a groundqa index"):
        _build(docs)
    assert (docs / "notes.txt").read_text() == "mine"


def test_tampered_file_is_refused(tmp_path: Path) -> None:
    _build(tmp_path / "idx")
    chunks_file = current_build(tmp_path / "idx") / "chunks.jsonl"
    chunks_file.write_text(chunks_file.read_text().replace("11am", "12pm"))
    with pytest.raises(IndexCorruptError, match="does not match its manifest"):
        load_index(tmp_path / "idx")


def test_a_file_is_hashed_again_only_when_its_size_or_time_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _build(tmp_path / "idx")
    build = current_build(tmp_path / "idx")
    hashed: list[str] = []
    real = manifest_module._sha256
    monkeypatch.setattr(
        manifest_module, "_sha256", lambda path: hashed.append(path.name) or real(path)
    )
    load_index(tmp_path / "idx")
    assert hashed == []  # every file as it was sealed: sizes and times are enough
    chunks_file = build / "chunks.jsonl"
    sealed = chunks_file.stat().st_mtime_ns
    os.utime(chunks_file, ns=(sealed, sealed + 1_000_000_000))  # touched, not changed
    load_index(tmp_path / "idx")
    assert hashed == ["chunks.jsonl"]


def test_missing_or_incomplete_manifest_is_refused(tmp_path: Path) -> None:
    _build(tmp_path / "idx")
    manifest = current_build(tmp_path / "idx") / "manifest.json"
    data = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**data, "complete": False}))
    with pytest.raises(IndexCorruptError, match="incomplete"):
        load_index(tmp_path / "idx")
    del data["counts"]
    manifest.write_text(json.dumps(data))
    with pytest.raises(IndexCorruptError, match="incomplete manifest"):
        load_index(tmp_path / "idx")
    manifest.unlink()
    with pytest.raises(IndexCorruptError, match="without a manifest"):
        load_index(tmp_path / "idx")


def test_other_format_versions_are_refused(tmp_path: Path) -> None:
    _build(tmp_path / "idx")
    manifest = current_build(tmp_path / "idx") / "manifest.json"
    data = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**data, "format_version": 0}))
    with pytest.raises(IndexVersionError, match="rebuild"):
        read_manifest(manifest.parent)
    old = tmp_path / "old"
    old.mkdir()
    (old / "manifest.json").write_text("{}")
    with pytest.raises(IndexVersionError, match="older groundqa"):
        load_index(old)


def test_an_index_is_read_with_the_analyzer_it_was_built_with(tmp_path: Path) -> None:
    fines = [
        Chunk("c0", "bylaw.md", "bylaw.md#S0", "By-law", ("Fines",), text, "/c/bylaw.md")
        for text in ["A second offence is fined 35 dollars."]
    ] + _chunks()
    _build(tmp_path / "old", fines, analyzer="en-snowball-v1")
    _build(tmp_path / "new", fines)
    old, new = Engine.open(tmp_path / "old"), Engine.open(tmp_path / "new")
    assert (old.analyzer.name, new.analyzer.name) == ("en-snowball-v1", DEFAULT_ANALYZER)
    # The build made before spellings were folded still matches only its own spelling,
    # as it always did; the current analyzer hears "offense" as the by-law's "offence".
    assert [h.chunk.chunk_id for h in old.search("offence", 5)] == ["c0"]
    assert old.search("offense", 5) == []
    assert [h.chunk.chunk_id for h in new.search("offense", 5)] == ["c0"]
    assert ANALYZERS.index(DEFAULT_ANALYZER) == len(ANALYZERS) - 1
    with pytest.raises(IndexVersionError, match="opened with 'en-snowball-v1'"):
        Engine(load_index(tmp_path / "new"), Analyzer("en-snowball-v1"))
    assert "en-snowball-v1 analyzer" in inspect_index(tmp_path / "old").staleness
    assert "analyzer" not in inspect_index(tmp_path / "new").staleness
    # A server reopening the index after a rebuild with the current analyzer reads the
    # new build with that one.
    _build(tmp_path / "old", fines)
    assert old.reopen().analyzer.name == DEFAULT_ANALYZER
    assert [h.chunk.chunk_id for h in old.reopen().search("offense", 5)] == ["c0"]


def test_an_analyzer_this_version_lacks_is_refused_with_what_to_do(tmp_path: Path) -> None:
    _build(tmp_path / "idx")
    manifest = current_build(tmp_path / "idx") / "manifest.json"
    data = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**data, "analyzer": "en-snowball-v9"}))
    with pytest.raises(IndexVersionError, match=r"'en-snowball-v9'.*rebuild the index"):
        load_index(tmp_path / "idx")


def test_failed_build_keeps_previous_and_cleans_up(tmp_path: Path) -> None:
    first = _build(tmp_path / "idx")

    def broken(tmp: Path) -> Manifest:
        (tmp / "half-written").write_text("x")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), build_lock(tmp_path / "idx"):
        write_build(tmp_path / "idx", broken)
    assert load_index(tmp_path / "idx").manifest.build_id == first.build_id
    assert not list((tmp_path / "idx" / "builds").glob(".tmp-*"))


def test_leftover_tmp_from_a_killed_build_is_ignored_then_removed(tmp_path: Path) -> None:
    first = _build(tmp_path / "idx")
    leftover = tmp_path / "idx" / "builds" / ".tmp-killed"
    leftover.mkdir()
    (leftover / "chunks.jsonl").write_text("partial")
    assert load_index(tmp_path / "idx").manifest.build_id == first.build_id
    _build(tmp_path / "idx")
    assert not leftover.exists()


def test_no_complete_build(tmp_path: Path) -> None:
    (tmp_path / "idx" / "builds" / ".tmp-x").mkdir(parents=True)
    with pytest.raises(IndexCorruptError, match="no complete build"):
        load_index(tmp_path / "idx")


def test_dangling_pointer(tmp_path: Path) -> None:
    _build(tmp_path / "idx")
    os.replace(tmp_path / "idx" / "current", tmp_path / "moved")
    os.symlink("builds/gone", tmp_path / "idx" / "current")
    with pytest.raises(IndexCorruptError, match="gone"):
        load_index(tmp_path / "idx")


def test_second_writer_is_refused(tmp_path: Path) -> None:
    with (
        build_lock(tmp_path / "idx"),
        pytest.raises(IndexLockedError),
        build_lock(tmp_path / "idx"),
    ):
        pass


def test_rebuilds_keep_only_current_and_previous(tmp_path: Path) -> None:
    builds = [_build(tmp_path / "idx").build_id for _ in range(4)]
    kept = sorted(p.name for p in (tmp_path / "idx" / "builds").iterdir())
    assert builds[-1] in kept and len(kept) == 2
    assert current_build(tmp_path / "idx").name == builds[-1]


def test_the_index_package_is_the_protocol_and_the_way_in() -> None:
    """`groundqa.index` exports the `Store` protocol and `open_store`, and importing it
    loads neither store nor a search library: each comes in with its own package."""
    code = (
        "import sys, groundqa.index as index; print(sorted(index.__all__)); "
        "print(sorted(m for m in sys.modules if m.startswith("
        "('groundqa.index.', 'bm25s', 'faiss', 'psycopg', 'pgvector'))))"
    )
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, check=True
    )
    exported, loaded = done.stdout.splitlines()
    names = "Manifest Mask Ranked Store bm25_idf current_manifest is_store_url open_store"
    assert exported == str(sorted([*names.split(), "set_gate", "set_part"]))
    assert loaded == str(
        [
            "groundqa.index.base",
            "groundqa.index.catalog",
            "groundqa.index.manifest",
            "groundqa.index.open",
        ]
    )


DIRECTORY_NAMES = """ACRONYMS BM25_DIR CHUNKS DirectoryStore load_index read_acronyms read_chunks
    write_acronyms write_catalog write_chunks"""
# What importers of `groundqa.index.postgres` use: its reader, its writer and its schema.
POSTGRES_NAMES = """BATCH CONNECT_TIMEOUT_S HNSW_BUILD_MEMORY_KB LOCK_KEY MIGRATIONS POOL_SIZE
    SCHEMA_VERSION BuildInfo PostgresStore PostgresTarget WriteStats connect ensure_schema
    ensure_vector_extension read_current_manifest redact term_counts update_gate
    update_part create_build_tables"""


@pytest.mark.parametrize(
    ("package", "names"),
    [("groundqa.index.directory", DIRECTORY_NAMES), ("groundqa.index.postgres", POSTGRES_NAMES)],
)
def test_each_store_package_exports_its_reader_and_writer(package: str, names: str) -> None:
    module = importlib.import_module(package)
    assert sorted(module.__all__) == sorted(names.split())
    assert all(hasattr(module, name) for name in names.split())


# ---------------------------------------------------------------- the system refuses a write

GROUNDQA = [sys.executable, "-m", "groundqa.cli"]


def _in_own_mounts(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run `script` (sh) as root of a private user and mount namespace, where it may mount
    a small tmpfs without touching the machine's own mounts; skip where that is not allowed."""
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=1m tmpfs {tmp_path}"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs in a private namespace here: {probe.stderr.strip()}")
    env = {**os.environ, "COLUMNS": "200", "GQ": " ".join(GROUNDQA)}
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_a_full_disk_is_one_line_and_the_previous_build_still_answers(tmp_path: Path) -> None:
    from tests.conftest import REGPACK

    disk = tmp_path / "disk"
    disk.mkdir()
    # A 4 MiB disk: the first build (BM25 only) fits; a filler then leaves too little for a
    # second, forced build, which fails partway through writing its files.
    script = f"""
    set -u
    mount -t tmpfs -o size=4m tmpfs {disk}
    $GQ ingest {REGPACK} --index {disk}/idx --no-dense >/dev/null || exit 90
    dd if=/dev/zero of={disk}/filler bs=64k 2>/dev/null
    $GQ ingest {REGPACK} --index {disk}/idx --no-dense --force
    echo "exit=$?"
    $GQ ask "How often are general waste bins collected?" --index {disk}/idx --json
    """
    proc = _in_own_mounts(script, disk)
    assert proc.returncode == 0, proc.stderr
    line = _one_line(proc.stderr)
    assert "disk is full" in line and "unchanged" in line, line
    assert "exit=1" in proc.stdout
    answer = json.loads(proc.stdout.split("exit=1", 1)[1])
    assert answer["refused"] is False and answer["citations"]


def test_a_read_only_filesystem_is_one_line(tmp_path: Path) -> None:
    disk = tmp_path / "ro"
    disk.mkdir()
    from tests.conftest import REGPACK

    script = f"""
    mount -t tmpfs -o size=1m,ro tmpfs {disk}
    $GQ ingest {REGPACK} --index {disk}/idx --no-dense
    echo "exit=$?"
    """
    proc = _in_own_mounts(script, disk)
    assert "exit=1" in proc.stdout, proc.stderr
    assert "read-only filesystem" in _one_line(proc.stderr)


def test_an_index_under_proc_is_one_line() -> None:
    from tests.conftest import REGPACK

    proc = subprocess.run(
        [*GROUNDQA, "ingest", str(REGPACK), "--index", "/proc/groundqa-index", "--no-dense"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 1
    line = _one_line(proc.stderr)
    assert "cannot write the index at /proc/groundqa-index" in line, line


def test_an_os_error_writing_a_build_keeps_the_previous_one(tmp_path: Path) -> None:
    first = _build(tmp_path / "idx")

    def refused(tmp: Path) -> Manifest:
        (tmp / "half-written").write_text("x")
        raise OSError(28, "No space left on device")

    with pytest.raises(IndexWriteError, match="disk is full"), build_lock(tmp_path / "idx"):
        write_build(tmp_path / "idx", refused)
    assert load_index(tmp_path / "idx").manifest.build_id == first.build_id
    assert not list((tmp_path / "idx" / "builds").glob(".tmp-*"))
