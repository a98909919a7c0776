"""Crash consistency: SIGKILL `groundqa ingest` at every state-changing system call.

For each store (an index directory, and PostgreSQL with pgvector) a small corpus
is built, then updated back and forth between two versions (one document edited,
one dropped, one added, so each update reuses some vectors and embeds others).
A clean traced run lists every write, fsync, rename, mkdir, unlink and socket
send of the update; the benchmark then kills an update at each of them in turn
(tests/crashkit.py), opens the index, compares chunks, vectors and one answer
with clean reference builds, and runs the update again. First builds into an
empty location are killed at a spread of points too: there the only acceptable
outcomes are the new build or a refusal that says to run `groundqa ingest`.

Baseline, in the same run: the same kills against a writer that copies a new
build's files over the live build in place (no build folder, no swap). It shows
what the harness reports when a writer is not crash-safe.

    python bench/crash.py            # every point (about 15 minutes here)
    BENCH_CRASH_EVERY=3 python bench/crash.py   # every third point
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import crashkit

import pg
from _common import machine, write_result

FIRST_BUILD_POINTS = 8


def _summary(name: str, points: list[crashkit.Point], calls: int, started: float) -> dict[str, Any]:
    """One scenario's row: its outcomes by kind, its failures, and its time since `started`."""
    seen = Counter(p.seen for p in points)
    row = {
        "scenario": name,
        "calls_in_trace": calls,
        "kill_points": len(points),
        "killed": sum(1 for p in points if p.exit_code == -9),
        "previous": seen["previous"],
        "new": seen["new"],
        "refused": seen["refused"],
        "inconsistent": seen["inconsistent"],
        "not_recovered": sum(1 for p in points if not p.recovered),
        "seconds": round(time.perf_counter() - started, 1),
        "by_call": dict(Counter(crashkit.syscall_of(p.call) for p in points)),
        "failures": [
            {
                "k": p.k,
                "call": p.call,
                "seen": p.seen,
                "detail": p.detail,
                "recovered": p.recovered,
                "recovery": p.recovery_detail,
            }
            for p in points
            if not p.consistent
        ],
    }
    print(f"{name}: {len(points)} points, {seen['inconsistent']} inconsistent", flush=True)
    return row


def _every(step: int) -> Any:
    return lambda seq: list(range(1, len(seq) + 1, step))


def _updates(
    name: str,
    location: str,
    corpora: dict[str, Path],
    expected: Any,
    leftovers: Any,
    work: Path,
    step: int,
) -> dict[str, Any]:
    started = time.perf_counter()
    calls = crashkit.prepare_updates(location, corpora, work)
    harness = crashkit.Harness(location, corpora, expected, leftovers)
    crashkit.kill_updates(harness, calls, _every(step))
    return _summary(name, harness.points, max(len(c) for c in calls.values()), started)


def _first(
    name: str,
    location: str,
    corpora: dict[str, Path],
    expected: Any,
    leftovers: Any,
    reset: Any,
    work: Path,
) -> dict[str, Any]:
    started = time.perf_counter()
    reset(location)
    calls = crashkit.traced_calls(corpora["v1"], location, work)
    harness = crashkit.Harness(location, corpora, expected, leftovers)
    crashkit.kill_first_builds(harness, crashkit.spread(calls, FIRST_BUILD_POINTS), reset, work)
    return _summary(name, harness.points, len(calls), started)


# ---------------------------------------------------------------- the in-place baseline

_IN_PLACE = """
import shutil, sys
from pathlib import Path
source, live = Path(sys.argv[1]), Path(sys.argv[2])
for path in sorted(p for p in source.rglob("*") if p.is_file()):
    target = live / path.relative_to(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, target)
"""


def _in_place(corpora: dict[str, Path], expected: Any, work: Path, step: int) -> dict[str, Any]:
    """Copy the v2 build's files over a live v1 build, killed at each call of the copy."""
    started = time.perf_counter()
    source_index = work / "source"
    live_index = work / "live"
    for version, index in (("v2", source_index), ("v1", live_index)):
        if crashkit.ingest(corpora[version], str(index)).returncode != 0:
            raise RuntimeError("the baseline's builds failed")
    source = (source_index / "current").resolve()
    pristine = work / "pristine"
    shutil.copytree(live_index, pristine, symlinks=True)
    command = [sys.executable, "-c", _IN_PLACE, str(source)]
    live_build = str((live_index / "current").resolve())
    calls = crashkit.traced([*command, live_build], work / "trace")
    harness = crashkit.Harness(str(live_index), corpora, expected, crashkit.directory_leftovers)
    for k in range(1, len(calls) + 1, step):
        shutil.rmtree(live_index)
        shutil.copytree(pristine, live_index, symlinks=True)
        call, nth = crashkit.occurrence(calls, k)
        run = crashkit.killed([*command, live_build], call, nth)
        seen, detail = harness.classify("v1", "v2")
        point = crashkit.Point(k, calls[k - 1], "v1", "v2", run.returncode, seen, detail)
        point.recovered = True  # the baseline has no recovery step of its own
        harness.points.append(point)
    name = "baseline: in-place copy over the live build (directory)"
    row = _summary(name, harness.points, len(calls), started)
    row["failures"] = row["failures"][:5]
    return row


# ---------------------------------------------------------------- report

COLUMNS = (
    ("scenario", "scenario"),
    ("calls_in_trace", "state-changing calls per build"),
    ("kill_points", "kill points"),
    ("killed", "killed (SIGKILL)"),
    ("previous", "served previous build"),
    ("new", "served new build"),
    ("refused", "refused: run ingest"),
    ("inconsistent", "**inconsistent**"),
    ("not_recovered", "next ingest failed"),
)


def _markdown(rows: list[dict[str, Any]], step: int) -> str:
    head = "| " + " | ".join(label for _, label in COLUMNS) + " |"
    rule = "|" + "|".join("---" if key == "scenario" else "---:" for key, _ in COLUMNS) + "|"
    lines = [head, rule]
    for row in rows:
        lines.append("| " + " | ".join(str(row[key]) for key, _ in COLUMNS) + " |")
    groundqa = [r for r in rows if not r["scenario"].startswith("baseline")]
    total = sum(r["kill_points"] for r in groundqa)
    bad = sum(r["inconsistent"] + r["not_recovered"] for r in groundqa)
    every = "every" if step == 1 else f"every {step}th"
    return "\n".join(
        [
            f"Kill points ({every} state-changing call of each update; first builds at a "
            f"spread of {FIRST_BUILD_POINTS}): **{total} tried, {bad} inconsistent or "
            "unrecovered** across both stores. `python bench/crash.py`.",
            "",
            *lines,
            "",
            "A point is consistent when the index answers exactly as the build current before "
            "the kill or the new build (chunks, vectors and one answer compared with clean "
            "reference builds), or, with no earlier build, refuses with a message naming "
            "`groundqa ingest`; and the same ingest run again then finishes and leaves no "
            "half-written build. PostgreSQL runs with fsync off (only the client is killed).",
        ]
    )


def run() -> dict[str, Any] | None:
    if not crashkit.have_strace():
        print("skipped: strace is not installed (apt-get install strace)", file=sys.stderr)
        return None
    step = int(os.environ.get("BENCH_CRASH_EVERY", "1"))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="gq-crash-") as tmp:
        work = Path(tmp)
        corpora = crashkit.write_corpora(work / "corpora")
        expected = crashkit.reference(corpora, work / "reference")
        rows.append(
            _updates(
                "directory: update",
                str(work / "dir"),
                corpora,
                expected,
                crashkit.directory_leftovers,
                work / "t1",
                step,
            )
        )
        rows.append(
            _first(
                "directory: first build",
                str(work / "first"),
                corpora,
                expected,
                crashkit.directory_leftovers,
                crashkit.reset_directory,
                work / "t2",
            )
        )
        with pg.server() as admin:
            url = pg.database(admin, "crash_update")
            rows.append(
                _updates(
                    "PostgreSQL: update",
                    url,
                    corpora,
                    expected,
                    crashkit.postgres_leftovers,
                    work / "t3",
                    step,
                )
            )
            url = pg.database(admin, "crash_first")
            rows.append(
                _first(
                    "PostgreSQL: first build",
                    url,
                    corpora,
                    expected,
                    crashkit.postgres_leftovers,
                    crashkit.reset_postgres,
                    work / "t4",
                )
            )
        rows.append(_in_place(corpora, expected, work / "baseline", max(1, step)))
    data = {"machine": machine(), "every": step, "rows": rows}
    write_result("crash", data, _markdown(rows, step))
    return data


if __name__ == "__main__":
    run()
