"""HNSW `ef_search` for the index directory at 100k and 1M chunks, chosen on many queries.

Reads the 100,000- and 1,000,000-chunk directory builds that `python bench/scale.py` and
`BENCH_SCALES=1000000 python bench/scale.py` leave in bench/.work-scale, and measures
recall@10 of exact search and latency at each `ef_search`. It chooses on every real
SciFact query but the 200 that scale.py reports on (905 of them, against scale.py's own
choosing set of 200, which proved lucky: see docs/postgres.md), and reports on those 200.
The setting chosen is the smallest whose one-sided 95% lower confidence bound of recall
on the choosing queries reaches TARGET. These are the two points
`index.dense.ann_ef_search` grows through. Run apart, after those builds:

    python bench/ann.py          # about seven minutes
"""

from __future__ import annotations

import sys
import time
from typing import Any

from _common import ROOT, machine, write_result

sys.path.insert(0, str(ROOT))

import atscale

SIZES = (100_000, 1_000_000)
EF_SEARCH = (64, 96, 128, 192, 256, 512, 640, 768, 1000, 1280)
TARGET = 0.98  # recall@10 of exact: the target for both stores


def sweep(size: int) -> dict[str, Any]:
    """The sweep over the directory build of `size` chunks, and the setting it chooses."""
    from groundqa.index.dense import ann_ef_search
    from groundqa.index.directory import load_index
    from groundqa.text import Analyzer
    from realistic import base

    folder = atscale.SCALE_WORK / f"directory-{size}"
    if not folder.is_dir():
        raise SystemExit(f"no {folder}: run BENCH_SCALES={size} python bench/scale.py first")
    real = base()
    pairs = [
        (str(q).split(), v) for q, v in zip(real["queries"], real["query_vectors"], strict=True)
    ]
    # scale.py reports on the first QUERIES real queries (in its own order); every other
    # real query is one to choose by.
    queries, choosing = pairs[: atscale.QUERIES], pairs[atscale.QUERIES :]
    store = load_index(folder, Analyzer())
    # Warm-up at the widest setting, so the first rows do not pay for reading the graph's
    # mapped vectors from disk and the latencies compare settings, not the page cache.
    assert store.vectors is not None and store.vectors.ann is not None
    store.vectors.ann.hnsw.efSearch = max(EF_SEARCH)
    for _, vector in choosing + queries:
        store.vector_search(vector, 10)
    swept = atscale.ef_sweep(store, choosing, queries, EF_SEARCH)
    assert swept is not None
    enough = [e["ef_search"] for e in swept if e["tuning"]["recall_at_10_low95"] >= TARGET]
    return {
        "chunks": size,
        "choosing_queries": len(choosing),
        "reported_queries": len(queries),
        "hnsw": {k: store.manifest.dense.get(k) for k in ("hnsw_m", "ef_construction")},
        "ef_search_sweep": swept,
        "chosen_ef_search": min(enough) if enough else None,
        "rule_ef_search": ann_ef_search(int(store.manifest.dense.get("ef_search", 128)), size),
    }


def run() -> dict[str, Any]:
    started = time.perf_counter()
    sizes = [sweep(size) for size in SIZES]
    data = {
        "machine": machine(),
        "target": TARGET,
        "sizes": sizes,
        "seconds": round(time.perf_counter() - started, 1),
    }
    first = sizes[0]
    lines = [
        "## HNSW ef_search in the index directory at 100,000 and 1,000,000 chunks",
        "",
        "`python bench/ann.py`, on the builds `bench/scale.py` made (HNSW "
        f"m={first['hnsw']['hnsw_m']}, ef_construction={first['hnsw']['ef_construction']}): "
        "recall@10 of exact search and p50 of one vector search, on "
        f"{first['choosing_queries']} real queries to choose by (with the one-sided 95% lower "
        f"bound of their mean) and on the {first['reported_queries']} scale.py reports. The "
        f"setting chosen is the smallest whose lower bound reaches {TARGET}.",
    ]
    for s in sizes:
        lines += [
            "",
            f"### {s['chunks']:,} chunks",
            "",
            "| ef_search | recall@10, choosing | lower 95% bound | p50 ms | recall@10, reported "
            "| p50 ms |",
            "|---:|---:|---:|---:|---:|---:|",
            *(
                f"| {e['ef_search']} | {e['tuning']['recall_at_10']} | "
                f"{e['tuning']['recall_at_10_low95']} | {e['tuning']['p50_ms']:.2f} | "
                f"{e['reported']['recall_at_10']} | {e['reported']['p50_ms']:.2f} |"
                for e in s["ef_search_sweep"]
            ),
            "",
            f"Chosen: ef_search {s['chosen_ef_search']}. The store's size rule "
            f"(`index.dense.ann_ef_search`) gives {s['rule_ef_search']} at this size.",
        ]
    write_result("ann", data, "\n".join(lines))
    return data


if __name__ == "__main__":
    run()
