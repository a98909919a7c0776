"""Kill `groundqa ingest` at chosen system calls and check what a reader sees afterwards.

A kill point is the k-th state-changing system call of the ingest process: a
write, an fsync, a rename, a mkdir or unlink, a socket send to PostgreSQL. A clean
traced run of the same build lists every such call, which names each point and
says how many there are. strace counts each system call separately, so the k-th
call is reached as the n-th call of its kind (`-e inject=rename:signal=KILL:when=2`);
SIGKILL arrives as the call is entered, so it never happens, exactly as if the
process were lost there.

After each kill the index is opened fresh and compared with clean reference
builds of the two corpus versions: its chunks, its vectors and its answer to a
fixed question must be those of the build that was current before the kill or of
the new one, never a mix. An index with no complete build may instead refuse with
a message that says to build it. Then the same ingest runs again without a kill
and must finish, serve the new build, and leave no half-written build behind.

Used by tests/test_crash.py (a sample of points) and bench/crash.py (every point).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
GROUNDQA = Path(sys.executable).with_name("groundqa")
EXAMPLES = ROOT / "examples" / "regpack"

# System calls that change a file, a directory or what PostgreSQL is told.
MUTATING = (
    "write,pwrite64,writev,pwritev,pwritev2,ftruncate,fsync,fdatasync,"
    "rename,renameat,renameat2,unlink,unlinkat,rmdir,mkdir,mkdirat,symlink,symlinkat,"
    "sendto,sendmsg"
)
QUESTION = "How often are general waste bins collected?"
# Version 1 of the corpus; version 2 edits one document, drops one and adds one, so an
# update reuses some vectors and embeds others.
V1_DOCS = (
    "federal_heritage_places_act.md",
    "local_fennick_waste_collection.md",
    "state_westhaven_groundwater_rules.md",
    "local_ashcombe_regulated_trees.md",
)
V2_DROP = "local_ashcombe_regulated_trees.md"
V2_ADD = "federal_workplace_noise_standard.md"
V2_EDIT = "local_fennick_waste_collection.md"


def have_strace() -> bool:
    return shutil.which("strace") is not None


def write_corpora(root: Path) -> dict[str, Path]:
    """Two versions of a small corpus taken from the example regulations."""
    v1, v2 = root / "v1", root / "v2"
    for folder in (v1, v2):
        folder.mkdir(parents=True, exist_ok=True)
    for name in V1_DOCS:
        shutil.copy(EXAMPLES / name, v1 / name)
        if name != V2_DROP:
            shutil.copy(EXAMPLES / name, v2 / name)
    shutil.copy(EXAMPLES / V2_ADD, v2 / V2_ADD)
    edited = v2 / V2_EDIT
    edited.write_text(
        edited.read_text()
        + "\n\n## Bulky items\n\nResidents may book two bulky item pickups a year, "
        "each of up to two cubic metres, at no charge.\n"
    )
    return {"v1": v1, "v2": v2}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def ingest_args(corpus: Path, location: str) -> list[str]:
    # --ann-threshold 1 also writes the HNSW graph, so its file has kill points too.
    return [
        str(GROUNDQA),
        "ingest",
        str(corpus),
        "--index",
        location,
        "--ann-threshold",
        "1",
        "--threads",
        "1",
    ]


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, capture_output=True, text=True, env=_env(), timeout=600, check=False
    )


def ingest(corpus: Path, location: str) -> subprocess.CompletedProcess[str]:
    return _run(ingest_args(corpus, location))


def traced(command: list[str], work: Path) -> list[str]:
    """The state-changing calls of one clean run of `command`'s main thread, in order."""
    work.mkdir(parents=True, exist_ok=True)
    prefix = work / "trace"
    for old in work.glob("trace.*"):
        old.unlink()
    done = _run(["strace", "-ff", "-qq", "-e", f"trace={MUTATING}", "-o", str(prefix), *command])
    if done.returncode != 0:
        raise RuntimeError(f"the traced run failed: {done.stderr.strip()[-500:]}")
    # strace -ff writes one file per thread; the process's own thread has the lowest id.
    main = min(work.glob("trace.*"), key=lambda p: int(p.suffix[1:]))
    return [line.split("(", 1)[0] + "(" + line.split("(", 1)[1][:70] for line in _lines(main)]


def traced_calls(corpus: Path, location: str, work: Path) -> list[str]:
    """The state-changing calls of one clean ingest's main thread, in order."""
    return traced(ingest_args(corpus, location), work)


def _lines(path: Path) -> list[str]:
    return [
        line
        for line in path.read_text(errors="replace").splitlines()
        if line and not line.startswith(("---", "+++")) and "(" in line
    ]


def syscall_of(call: str) -> str:
    return call.split("(", 1)[0]


def occurrence(calls: list[str], k: int) -> tuple[str, int]:
    """The k-th call (1-based) as (system call, its n-th occurrence): strace counts per call."""
    name = syscall_of(calls[k - 1])
    return name, sum(1 for c in calls[:k] if syscall_of(c) == name)


def killed(command: list[str], syscall: str, nth: int) -> subprocess.CompletedProcess[str]:
    """`command`, killed by SIGKILL as it enters the n-th call of `syscall`."""
    inject = f"inject={syscall}:signal=KILL:when={nth}"
    return _run(
        ["strace", "-f", "-qq", "-e", f"trace={syscall}", "-e", inject, "-o", "/dev/null", *command]
    )


def killed_ingest(
    corpus: Path, location: str, syscall: str, nth: int
) -> subprocess.CompletedProcess[str]:
    """The ingest, killed by SIGKILL as it enters the n-th call of `syscall`."""
    return killed(ingest_args(corpus, location), syscall, nth)


def snapshot(location: str) -> dict[str, Any]:
    """What a reader gets from the index: chunks, vectors and one answer, as digests."""
    from groundqa.engine import Engine

    engine = Engine.open(location)
    try:
        store = engine.store
        # In chunk id order: an update may place copied rows differently from a fresh build.
        order = sorted(range(len(store.chunks)), key=lambda i: store.chunks[i].chunk_id)
        chunks = hashlib.sha256()
        for i in order:
            c = store.chunks[i]
            chunks.update(f"{c.chunk_id}\x00{c.text}\x01".encode())
        vectors = np.ascontiguousarray(store.vectors_of(order))
        answer = engine.ask(QUESTION)
        return {
            "chunks": chunks.hexdigest(),
            "vectors": hashlib.sha256(vectors.astype(np.float32).tobytes()).hexdigest(),
            "answer": answer.answer,
            "cited": [c.chunk_id for c in answer.citations],
        }
    finally:
        engine.store.close()


@dataclass
class Point:
    """One kill point and what was found after it."""

    k: int
    call: str
    before: str
    after: str
    exit_code: int = 0
    seen: str = ""  # "previous", "new", "refused", or "inconsistent"
    detail: str = ""
    recovered: bool = False
    recovery_detail: str = ""

    @property
    def consistent(self) -> bool:
        return self.seen in ("previous", "new", "refused") and self.recovered


@dataclass
class Harness:
    """Kill points over one location (an index directory or a PostgreSQL URL)."""

    location: str
    corpora: dict[str, Path]
    expected: dict[str, dict[str, Any]]
    leftovers: Callable[[str], list[str]]
    points: list[Point] = field(default_factory=list)

    def classify(self, before: str | None, after: str) -> tuple[str, str]:
        try:
            seen = snapshot(self.location)
        except Exception as exc:
            from groundqa.errors import GroundqaError

            message = str(exc)
            if (
                before is None
                and isinstance(exc, GroundqaError)
                and ("ingest" in message or "rebuild" in message)
            ):
                return "refused", message
            return "inconsistent", f"{type(exc).__name__}: {message}"
        for name, label in ((before, "previous"), (after, "new")):
            if name is not None and seen == self.expected[name]:
                return label, ""
        differs = {
            key
            for key in seen
            if all(seen[key] != self.expected[v][key] for v in (before, after) if v is not None)
        }
        return "inconsistent", f"matches neither build in {sorted(differs)}"

    def kill_at(self, calls: list[str], k: int, before: str | None, after: str) -> Point:
        """Kill the ingest of `after` at the k-th call of `calls` (its clean trace)."""
        call = calls[k - 1]
        run = killed_ingest(self.corpora[after], self.location, *occurrence(calls, k))
        seen, detail = self.classify(before, after)
        point = Point(k, call, before or "none", after, run.returncode, seen, detail)
        if run.returncode == 0:
            point.detail = (point.detail + " the ingest finished before this point").strip()
        recovery = ingest(self.corpora[after], self.location)
        if recovery.returncode != 0:
            point.recovery_detail = recovery.stderr.strip()[-300:]
        else:
            got, why = self.classify(None, after)
            left = self.leftovers(self.location)
            point.recovered = got == "new" and not left
            point.recovery_detail = why or (f"left behind: {left}" if left else "")
        self.points.append(point)
        return point


def directory_leftovers(location: str) -> list[str]:
    builds = Path(location) / "builds"
    return sorted(p.name for p in builds.glob(".tmp-*")) if builds.exists() else []


def postgres_leftovers(location: str) -> list[str]:
    import psycopg

    with psycopg.connect(location, autocommit=True) as db:
        rows = db.execute("SELECT build_id FROM groundqa_builds WHERE NOT complete").fetchall()
    return [str(r[0]) for r in rows]


def reference(corpora: dict[str, Path], work: Path) -> dict[str, dict[str, Any]]:
    """Snapshots of clean directory builds of each corpus version."""
    expected = {}
    for name, corpus in corpora.items():
        location = str(work / f"reference-{name}")
        done = ingest(corpus, location)
        if done.returncode != 0:
            raise RuntimeError(f"reference build {name} failed: {done.stderr.strip()[-500:]}")
        expected[name] = snapshot(location)
    return expected


def spread(calls: list[str], count: int) -> list[int]:
    """`count` kill points over the calls: every rename and symlink, the rest evenly spaced."""
    swaps = [i + 1 for i, c in enumerate(calls) if c.startswith(("rename", "symlink"))]
    n = len(calls)
    rest = max(0, count - len(swaps))
    even = [round(1 + j * (n - 1) / max(1, rest - 1)) for j in range(rest)] if rest else []
    return sorted(set(swaps + even))


def other(version: str) -> str:
    return "v2" if version == "v1" else "v1"


def prepare_updates(location: str, corpora: dict[str, Path], work: Path) -> dict[str, list[str]]:
    """Bring the location to its steady state (v1 current, v2 kept before it) and trace
    both updates: `calls["v2"]` is v1 -> v2, `calls["v1"]` is v2 -> v1. v1 is current after.
    """
    for version in ("v1", "v2", "v1"):
        done = ingest(corpora[version], location)
        if done.returncode != 0:
            raise RuntimeError(f"setup ingest failed: {done.stderr.strip()[-500:]}")
    calls = {"v2": traced_calls(corpora["v2"], location, work)}
    calls["v1"] = traced_calls(corpora["v1"], location, work)
    return calls


def kill_updates(
    harness: Harness, calls: dict[str, list[str]], pick: Callable[[list[str]], list[int]]
) -> None:
    """Kill updates at the points `pick` chooses from each update's trace, in turn; the
    updates alternate v1 -> v2 -> v1 ..., so the i-th point is taken from the i-th update's
    own trace (the two traces differ by a call or two).
    """
    chosen = {version: pick(seq) for version, seq in calls.items()}
    current = "v1"
    for i in range(max(len(ks) for ks in chosen.values())):
        after = other(current)
        ks = chosen[after]
        harness.kill_at(calls[after], ks[min(i, len(ks) - 1)], current, after)
        current = after


def kill_first_builds(
    harness: Harness, ks: list[int], reset: Callable[[str], None], work: Path
) -> None:
    """Kill the first build of an empty location at each k; it is emptied before each."""
    reset(harness.location)
    calls = traced_calls(harness.corpora["v1"], harness.location, work)
    for k in ks:
        reset(harness.location)
        harness.kill_at(calls, min(k, len(calls)), None, "v1")


def reset_directory(location: str) -> None:
    shutil.rmtree(location, ignore_errors=True)


def reset_postgres(location: str) -> None:
    import psycopg

    with psycopg.connect(location, autocommit=True) as db:
        db.execute("DROP SCHEMA public CASCADE")
        db.execute("CREATE SCHEMA public")
        db.execute("CREATE EXTENSION vector")
