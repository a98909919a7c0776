"""SIGKILL during ingest: a reader sees the previous build or the new one, never a mix.

Each test kills a real `groundqa ingest` subprocess at chosen system calls (see
tests/crashkit.py), always including the renames and the symlink that swap the
new build in, then opens the index, compares it with clean reference builds and
runs the ingest again. This is a sample of the points; `python bench/crash.py`
kills at every state-changing call of the same builds.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests import crashkit

# Minutes of killed builds: in `make test-slow`, which CI runs after `make test`.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not crashkit.have_strace(), reason="strace is not installed (.ci/run installs it)"
    ),
]


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return crashkit.write_corpora(tmp_path_factory.mktemp("corpora"))


@pytest.fixture(scope="module")
def expected(
    corpora: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    found = crashkit.reference(corpora, tmp_path_factory.mktemp("reference"))
    assert found["v1"] != found["v2"], "the two versions must be told apart"
    return found


def _report(points: list[crashkit.Point]) -> str:
    return "\n".join(
        f"k={p.k} {p.before}->{p.after} exit={p.exit_code} seen={p.seen} {p.detail} "
        f"recovered={p.recovered} {p.recovery_detail} at {p.call}"
        for p in points
        if not p.consistent
    )


def _check(points: list[crashkit.Point], calls: list[str]) -> None:
    assert points, "no kill point ran"
    assert all(p.consistent for p in points), _report(points)
    # The points really interrupted the builds (SIGKILL is exit -9) before they finished.
    killed = [p for p in points if p.exit_code == -9]
    assert len(killed) == len(points), _report(points)
    assert any(c.startswith("rename") for c in calls), "the build has no rename to kill at"


def test_killed_directory_updates_serve_the_previous_or_the_new_build(
    tmp_path: Path, corpora: dict[str, Path], expected: dict[str, dict[str, Any]]
) -> None:
    location = str(tmp_path / "index")
    calls = crashkit.prepare_updates(location, corpora, tmp_path / "trace")
    harness = crashkit.Harness(location, corpora, expected, crashkit.directory_leftovers)
    crashkit.kill_updates(harness, calls, lambda seq: crashkit.spread(seq, 5))
    _check(harness.points, calls["v2"])
    # A kill before the swap leaves the previous build; one after it, the new one.
    seen = {p.seen for p in harness.points}
    assert seen == {"previous", "new"}, _report(harness.points)


def test_a_killed_first_build_refuses_and_says_to_ingest(
    tmp_path: Path, corpora: dict[str, Path], expected: dict[str, dict[str, Any]]
) -> None:
    location = str(tmp_path / "index")
    harness = crashkit.Harness(location, corpora, expected, crashkit.directory_leftovers)
    crashkit.kill_first_builds(harness, [3, 40], crashkit.reset_directory, tmp_path / "trace")
    _check(harness.points, ["rename"])
    assert {p.seen for p in harness.points} == {"refused"}, _report(harness.points)
    assert all("groundqa ingest" in p.detail for p in harness.points)


def test_killed_postgres_updates_keep_the_previous_build_current(
    tmp_path: Path, pg_url: str, corpora: dict[str, Path], expected: dict[str, dict[str, Any]]
) -> None:
    calls = crashkit.prepare_updates(pg_url, corpora, tmp_path / "trace")
    harness = crashkit.Harness(pg_url, corpora, expected, crashkit.postgres_leftovers)

    def pick(seq: list[str]) -> list[int]:
        # At the connection, mid-COPY, at the index builds, at the COMMIT that makes the
        # new build current, and at the one that prunes the oldest build.
        commits = [i + 1 for i, c in enumerate(seq) if "COMMIT" in c]
        copy = next(i + 1 for i, c in enumerate(seq) if '"d\\0' in c)
        return sorted({1, copy, len(seq) * 3 // 4, commits[-2], commits[-1]})

    crashkit.kill_updates(harness, calls, pick)
    assert all(p.consistent for p in harness.points), _report(harness.points)
    assert {p.seen for p in harness.points} == {"previous", "new"}, _report(harness.points)


def test_readers_during_a_rebuild_see_one_whole_build_then_the_new_one(
    tmp_path: Path, corpora: dict[str, Path], expected: dict[str, dict[str, Any]]
) -> None:
    """While `groundqa ingest` rebuilds, each newly opened reader gets the old build or the
    new one, whole; a reader opened before the rebuild keeps answering from the old one."""
    from groundqa.engine import Engine

    location = str(tmp_path / "index")
    assert crashkit.ingest(corpora["v1"], location).returncode == 0
    before = Engine.open(location)
    old_answer = before.ask(crashkit.QUESTION).answer
    assert old_answer == expected["v1"]["answer"]
    log = tmp_path / "ingest.log"
    with log.open("wb") as sink:
        rebuild = subprocess.Popen(
            crashkit.ingest_args(corpora["v2"], location), stdout=sink, stderr=subprocess.STDOUT
        )
    seen = []
    while rebuild.poll() is None:
        now = crashkit.snapshot(location)
        seen.append(next((v for v in ("v1", "v2") if now == expected[v]), "neither"))
        assert before.ask(crashkit.QUESTION).answer == old_answer
    assert rebuild.wait() == 0, log.read_text()
    seen.append(next((v for v in ("v1", "v2") if crashkit.snapshot(location) == expected[v]), "-"))
    assert "neither" not in seen and seen[-1] == "v2", seen
    assert seen == sorted(seen), f"a reader went back to the old build: {seen}"
    assert len(seen) >= 2, "no reader opened the index while it was rebuilt"
    assert before.ask(crashkit.QUESTION).answer == old_answer
    before.store.close()
