"""bench/serving.py, which every serving benchmark starts its server with: a real
`groundqa serve` on 127.0.0.1 over a real index, loaded from concurrent clients, then
stopped; a server that cannot start is an error naming why, and leaves no process behind.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT, copy_index

sys.path.insert(0, str(ROOT / "bench"))

import serving


def test_example_questions_are_the_probe_files_questions() -> None:
    questions = serving.example_questions()
    lines = (ROOT / "examples" / "regpack.probes.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(questions) == len([line for line in lines if line.strip()])
    assert all(q.strip() for q in questions)


def test_a_server_answers_under_load_and_is_stopped_after(
    tmp_path: Path, regpack_build: Path
) -> None:
    index = copy_index(regpack_build, tmp_path / "idx")
    questions = serving.example_questions()[:5]
    failures: Counter[str] = Counter()
    timeline: list[tuple[float, float]] = []
    with serving.server(index, log=tmp_path / "serve.log") as serve:
        assert serve.url == f"http://127.0.0.1:{serve.port}"
        assert serve.ready_s > 0
        result = asyncio.run(serving.load(serve.url, questions, 2, 1.0, failures, timeline))
        health = httpx.get(f"{serve.url}/health", timeout=10)
        assert health.status_code == 200
        assert serving.peak_rss_mb(serve.proc.pid) >= serving.rss_mb(serve.proc.pid) > 0
        assert serving.pss_mb([serve.proc.pid]) > 0
        assert serving.cpu_seconds(serve.proc.pid) > 0
        proc = serve.proc
    assert proc.poll() is not None  # stopped on leaving the block
    assert result["clients"] == 2 and result["requests"] == len(timeline) > 0
    assert result["errors"] == 0 and not failures
    assert result["p50_ms"] <= result["p95_ms"] <= result["p99_ms"]


def test_a_server_that_cannot_start_says_why(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    with (
        pytest.raises(RuntimeError, match="serve exited"),
        serving.server(tmp_path / "no-index", log=log),
    ):
        pass
    assert log.read_text(encoding="utf-8").strip()  # the server's own error is kept


def test_this_process_memory_is_read() -> None:
    assert serving.peak_rss_mb() >= serving.rss_mb() > 0
    assert serving.pss_mb([os.getpid()]) > 0
    assert serving.free_port() > 0
