"""The PostgreSQL server itself killed with SIGKILL, during an ingest and while serving.

Each test runs a private server (tests/pgserver.py) that it can kill: the postmaster and
every process it started, as a lost machine or container would be. After a restart on
the same data directory the previous build must be the one served, nothing half-built
may ever be current, and the next ingest must finish; an API that was serving answers
503 with Retry-After while the server is down and recovers on its own once it is back.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from groundqa.engine import Engine
from groundqa.ingestion import ingest
from groundqa.serve import ServeSettings
from tests import pgserver
from tests.cli.test_cli import one_error_line
from tests.conftest import REGPACK
from tests.serve.test_api import live_server

psycopg = pytest.importorskip(
    "psycopg", reason="PostgreSQL tests need pip install -e '.[postgres]'"
)
# A database server killed and restarted, twice: in `make test-slow`, which CI runs.
pytestmark = pytest.mark.slow
GROUNDQA = [sys.executable, "-m", "groundqa.cli"]
QUESTION = {"question": "What is the turbine setback from a dwelling in Northmere?"}


@dataclass
class Server:
    data: Path
    port: int
    url: str  # the test database's URL

    def kill(self) -> None:
        """SIGKILL the postmaster and everything it started, and wait until they are gone."""
        pid = int((self.data / "postmaster.pid").read_text().split()[0])
        # Stopped, the postmaster starts no backend while its family is listed; a backend
        # that exits meanwhile is simply missing from the list.
        os.kill(pid, signal.SIGSTOP)
        family = [*_descendants(pid), pid]
        for p in family:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while any(_alive(p) for p in family):
            assert time.monotonic() < deadline, "the server did not die"
            time.sleep(0.05)
        # Nothing here reaps the daemonised postmaster, so it lingers as a zombie, which
        # PostgreSQL would take for a live server holding its lock files; a machine's init
        # would have reaped it, and the lock files would be stale, as they are now.
        for lock in [self.data / "postmaster.pid", *self.data.glob(".s.PGSQL.*.lock")]:
            lock.unlink()

    def start(self) -> None:
        pgserver.start(self.data, self.port, fast=False)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"


def _descendants(pid: int) -> list[int]:
    """Every live descendant of pid; one that exits while it is read is left out."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return []
    out: list[int] = []
    for task in tasks:
        try:
            children = [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
        for child in children:
            out += [child, *_descendants(child)]
    return out


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    try:
        pgserver.pg_bin()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    data = tmp_path / "pg" / "data"
    port = pgserver.free_port()
    # Durable settings: with synchronous_commit off a killed server loses the last commits.
    admin = pgserver.start(data, port, fast=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("CREATE DATABASE crash")
    url = admin.rsplit("/", 1)[0] + "/crash"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    box = Server(data, port, url)
    try:
        yield box
    finally:
        pid_file = data / "postmaster.pid"
        if pid_file.exists() and _alive(int(pid_file.read_text().split()[0])):
            pgserver.stop(data)


def _builds(url: str) -> tuple[str | None, list[tuple[str, bool]]]:
    with psycopg.connect(url) as conn:
        current = conn.execute("SELECT build_id FROM groundqa_current").fetchone()
        builds = conn.execute(
            "SELECT build_id, complete FROM groundqa_builds ORDER BY created_at"
        ).fetchall()
    return (current[0] if current else None), [(b, bool(c)) for b, c in builds]


def test_the_server_killed_during_an_ingest_keeps_the_previous_build(
    server: Server, tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(REGPACK, corpus)
    first = ingest([corpus], server.url)
    edited = sorted(corpus.glob("*.md"))[0]
    edited.write_text(edited.read_text("utf-8") + "\n\nHerons nest by the weir.\n", "utf-8")
    (corpus / "more.md").write_text("# More\n\n## Ferries\n\nFerries run hourly.\n", "utf-8")

    # The second ingest writes its build row first, then embeds; the server dies meanwhile.
    proc = subprocess.Popen(
        [*GROUNDQA, "ingest", str(corpus), "--store", server.url, "--force"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not any(not complete for _, complete in _builds(server.url)[1]):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the ingest never started its build"
            time.sleep(0.02)
        server.kill()
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:  # the test failed before the ingest ended
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, (out, err)
    line = one_error_line(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    assert "PostgreSQL" in line and "Traceback" not in err, err

    server.start()
    current, builds = _builds(server.url)
    assert current == first.build_id  # the previous build is served, the new one is not
    assert (first.build_id, True) in builds
    engine = Engine.open(server.url)
    try:
        assert engine.manifest.build_id == first.build_id
        assert engine.ask(QUESTION["question"]).citations
    finally:
        engine.store.close()

    again = ingest([corpus], server.url)
    current, builds = _builds(server.url)
    assert current == again.build_id != first.build_id
    assert all(complete for _, complete in builds)  # the half-built build was dropped
    assert again.counts["documents"] == first.counts["documents"] + 1


def test_the_server_killed_while_serving_is_a_503_until_it_is_back(
    server: Server, tmp_path: Path
) -> None:
    ingest([REGPACK], server.url, dense=None)
    engine = Engine.open(server.url)
    try:
        with live_server(engine, ServeSettings(cache="off")) as base:
            before = httpx.post(f"{base}/query", json=QUESTION, timeout=30)
            assert before.status_code == 200
            server.kill()
            for _ in range(2):
                reply = httpx.post(f"{base}/query", json=QUESTION, timeout=60)
                assert reply.status_code == 503, reply.text
                assert reply.headers["retry-after"] == "5"
                error = reply.json()["error"]
                assert error["code"] == "store_unavailable", error
                assert f"127.0.0.1:{server.port}" in error["message"]
            health = httpx.get(f"{base}/health", timeout=30)
            assert health.status_code == 200  # the process is alive; only the store is not
            lexical = health.json()["lexical"]
            assert lexical["engine"] == "sql" and "no pg_textsearch index" in lexical["note"]
            server.start()
            deadline = time.monotonic() + 60
            while (
                reply := httpx.post(f"{base}/query", json=QUESTION, timeout=60)
            ).status_code != 200:
                assert reply.status_code == 503, reply.text
                assert time.monotonic() < deadline, "the API did not recover"
                time.sleep(0.2)
            # The same answer as before the server died, without restarting the API.
            assert reply.json()["answer"] == before.json()["answer"]
            assert reply.json()["citations"] == before.json()["citations"]
    finally:
        engine.store.close()
