"""Helpers shared by the benchmarks: where the data is, timing, and writing results."""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
RESULTS = ROOT / "bench" / "results"
WORK = ROOT / "bench" / ".work"


def shared_path(*parts: str) -> Path | None:
    """A path under ../shared, or None (with a message) when the data is not there."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        print(
            f"skipped: {path} not found (benchmarks read ../shared beside the project)",
            file=sys.stderr,
        )
        return None
    return path


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    idx = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[idx]


def time_each(
    fn: Callable[[Any], Any], items: Sequence[Any], warmup: int = 10, repeats: int = 5
) -> list[float]:
    """Milliseconds per item: the median of `repeats` timed calls of fn(item), after warm-up.

    Sub-millisecond calls are at the mercy of the scheduler on a 2-core machine;
    the per-item median of several rounds keeps one hiccup from moving a percentile.
    """
    for item in items[:warmup]:
        fn(item)
    rounds: list[list[float]] = [[] for _ in items]
    for _ in range(repeats):
        for i, item in enumerate(items):
            t = time.perf_counter()
            fn(item)
            rounds[i].append((time.perf_counter() - t) * 1000)
    return [statistics.median(r) for r in rounds]


def latency_summary(ms: Sequence[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(ms, 50), 3),
        "p95_ms": round(percentile(ms, 95), 3),
        "mean_ms": round(statistics.fmean(ms), 3) if ms else 0.0,
        "n": len(ms),
    }


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
    }


def write_result(name: str, data: dict[str, Any], markdown: str) -> None:
    """Write results/<name>.json and .md, and copy the table into the README's marked block."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    (RESULTS / f"{name}.md").write_text(markdown.rstrip() + "\n")
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    start, end = f"<!-- bench:{name}:start -->\n", f"<!-- bench:{name}:end -->"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        readme.write_text(head + start + markdown.rstrip() + "\n" + end + tail, encoding="utf-8")
    print(markdown)
