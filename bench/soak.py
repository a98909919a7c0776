"""Soak: `groundqa serve` under steady load while its index is rebuilt again and again.

16 concurrent clients on 127.0.0.1 ask the example corpus's probe questions for
10 minutes (cache off, so every request does the full work). Every 2 minutes a
real `groundqa ingest` rebuilds the index, alternating between the example corpus
and a copy with one document edited; the server must notice each new build on its
own, with no restart and no failed request. The server's memory is sampled every
10 s from /proc.

Baseline, in the same run: the latency of the first 2 minutes, before any rebuild,
against the minutes in which a rebuild was running.

    python bench/soak.py                                   # 10 minutes
    BENCH_SOAK_SECONDS=120 BENCH_SOAK_REBUILD_S=30 python bench/soak.py   # a short look
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, WORK, machine, percentile, write_result
from serving import example_questions, load, pss_mb, rss_mb, server

SECONDS = float(os.environ.get("BENCH_SOAK_SECONDS", "600"))
REBUILD_S = float(os.environ.get("BENCH_SOAK_REBUILD_S", "120"))
CLIENTS = 16
SAMPLE_S = 10.0
EDITED = "local_fennick_waste_collection.md"


def _memory_mb(pid: int) -> dict[str, float]:
    """The server's resident and proportional set sizes, MB."""
    return {"rss_mb": rss_mb(pid), "pss_mb": pss_mb([pid])}


def _corpora(work: Path) -> list[Path]:
    """The example corpus, and a copy with one document edited (a section added)."""
    first = ROOT / "examples" / "regpack"
    second = work / "regpack-edited"
    shutil.rmtree(second, ignore_errors=True)
    shutil.copytree(first, second)
    edited = second / EDITED
    edited.write_text(
        edited.read_text(encoding="utf-8")
        + "\n\n## Bulky items\n\nResidents may book two bulky item pickups a year, "
        "each of up to two cubic metres, at no charge.\n",
        encoding="utf-8",
    )
    return [first, second]


def _build_id(url: str) -> str:
    health = httpx.get(f"{url}/health", timeout=10).json()
    return str(health["index"]["build_id"])


class Rebuilder(threading.Thread):
    """Rebuild the index every `every` seconds; note when the server serves each build."""

    def __init__(
        self, index: Path, corpora: list[Path], url: str, every: float, t0: float, stop: float
    ):
        super().__init__(daemon=True)
        self.index, self.corpora, self.url = index, corpora, url
        self.every, self.t0, self.stop_at = every, t0, stop
        self.builds: list[dict[str, Any]] = []

    def run(self) -> None:
        n = 0
        while time.perf_counter() + self.every < self.stop_at:
            time.sleep(self.every)
            n += 1
            corpus = self.corpora[n % len(self.corpora)]
            started = time.perf_counter()
            done = subprocess.run(
                [
                    str(Path(sys.executable).with_name("groundqa")),
                    "ingest",
                    str(corpus),
                    "--index",
                    str(self.index),
                    "--json",
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            built = time.perf_counter()
            row: dict[str, Any] = {
                "started_s": round(started - self.t0, 1),
                "ingest_s": round(built - started, 1),
                "ok": done.returncode == 0,
            }
            if done.returncode == 0:
                build_id = json.loads(done.stdout)["build_id"]
                while _build_id(self.url) != build_id and time.perf_counter() < built + 60:
                    time.sleep(0.2)
                row["served"] = _build_id(self.url) == build_id
                row["picked_up_s"] = round(time.perf_counter() - built, 2)
                row["finished_s"] = round(time.perf_counter() - self.t0, 1)
            else:
                row["error"] = done.stderr.strip()[-300:]
            self.builds.append(row)


def _window(samples: list[tuple[float, float]], spans: list[tuple[float, float]]) -> list[float]:
    return [ms for at, ms in samples if any(a <= at < b for a, b in spans)]


def _stats(ms: list[float]) -> dict[str, float]:
    return {
        "requests": len(ms),
        "p50_ms": round(percentile(ms, 50), 1),
        "p99_ms": round(percentile(ms, 99), 1),
        "max_ms": round(max(ms), 1) if ms else 0.0,
    }


def run() -> dict[str, Any]:
    work = WORK / "soak"
    work.mkdir(parents=True, exist_ok=True)
    index = work / "index"
    shutil.rmtree(index, ignore_errors=True)
    corpora = _corpora(work)
    subprocess.run(
        [
            str(Path(sys.executable).with_name("groundqa")),
            "ingest",
            str(corpora[0]),
            "--index",
            str(index),
        ],
        check=True,
        capture_output=True,
    )
    questions = example_questions()
    with server(index, log=work / "serve.log") as serve:
        proc, url = serve.proc, serve.url
        at_ready = _memory_mb(proc.pid)
        memory: list[dict[str, float]] = []
        t0 = time.perf_counter()
        stop = t0 + SECONDS
        rebuilder = Rebuilder(index, corpora, url, REBUILD_S, t0, stop)
        rebuilder.start()
        done = threading.Event()

        def sample() -> None:
            while not done.wait(SAMPLE_S):
                memory.append({"at_s": round(time.perf_counter() - t0, 1), **_memory_mb(proc.pid)})

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        samples: list[tuple[float, float]] = []
        failures: Counter[str] = Counter()
        loading = load(url, questions, CLIENTS, SECONDS, failures, timeline=samples, t0=t0)
        total = asyncio.run(loading)["requests"]
        elapsed = time.perf_counter() - t0
        done.set()
        sampler.join()
        rebuilder.join(timeout=120)
        memory.append({"at_s": round(time.perf_counter() - t0, 1), **_memory_mb(proc.pid)})
        alive = proc.poll() is None
    latencies = [ms for _, ms in samples]
    first_rebuild = REBUILD_S
    rebuilding = [
        (b["started_s"], b.get("finished_s", b["started_s"] + b["ingest_s"]))
        for b in rebuilder.builds
    ]
    # The first full minute of load is the warm start; memory is compared from there.
    warm = next((m for m in memory if m["at_s"] >= 60), memory[0])
    end = memory[-1]
    data: dict[str, Any] = {
        "machine": machine(),
        "seconds": round(elapsed, 1),
        "clients": CLIENTS,
        "rebuild_every_s": REBUILD_S,
        "requests": total,
        "errors": sum(failures.values()),
        "failures": dict(failures),
        "throughput_rps": round(total / elapsed, 1),
        **{k: v for k, v in _stats(latencies).items() if k != "requests"},
        "before_first_rebuild": _stats(_window(samples, [(0.0, first_rebuild)])),
        "during_rebuilds": _stats(_window(samples, rebuilding)),
        "rebuilds": rebuilder.builds,
        "server_alive_at_end": alive,
        "memory_at_ready": at_ready,
        "memory_warm": warm,
        "memory_end": end,
        "rss_growth_pct": round(100 * (end["rss_mb"] - warm["rss_mb"]) / warm["rss_mb"], 1),
        "pss_growth_pct": round(100 * (end["pss_mb"] - warm["pss_mb"]) / warm["pss_mb"], 1),
        "memory": memory,
    }
    write_result("soak", data, _markdown(data))
    return data


def _markdown(d: dict[str, Any]) -> str:
    served = sum(1 for b in d["rebuilds"] if b.get("served"))
    pickups = [b["picked_up_s"] for b in d["rebuilds"] if "picked_up_s" in b]
    before, during = d["before_first_rebuild"], d["during_rebuilds"]
    return "\n".join(
        [
            f"`python bench/soak.py`: {d['clients']} clients on 127.0.0.1 for "
            f"{d['seconds'] / 60:.0f} min, cache off, the index rebuilt every "
            f"{d['rebuild_every_s'] / 60:g} min by `groundqa ingest` while the server runs.",
            "",
            "| requests | errors | req/s | p50 ms | p99 ms | max ms | rebuilds served | "
            "new build served within s | server RSS MB at 1 min | at end | growth |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            f"| {d['requests']} | {d['errors']} | {d['throughput_rps']} | {d['p50_ms']} | "
            f"{d['p99_ms']} | {d['max_ms']} | {served} of {len(d['rebuilds'])} | "
            f"{max(pickups) if pickups else '-'} | {d['memory_warm']['rss_mb']} | "
            f"{d['memory_end']['rss_mb']} | {d['rss_growth_pct']}% |",
            "",
            f"Baseline in the same run: before the first rebuild p50 {before['p50_ms']} ms, "
            f"p99 {before['p99_ms']} ms ({before['requests']} requests); while a rebuild ran "
            f"(the ingest shares the 2 cores) p50 {during['p50_ms']} ms, p99 "
            f"{during['p99_ms']} ms ({during['requests']} requests). Server memory at ready "
            f"{d['memory_at_ready']['rss_mb']} MB RSS; PSS at 1 min "
            f"{d['memory_warm']['pss_mb']} MB, at end {d['memory_end']['pss_mb']} MB "
            f"({d['pss_growth_pct']}%). Failures by kind: {d['failures'] or 'none'}.",
        ]
    )


if __name__ == "__main__":
    run()
