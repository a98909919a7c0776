"""HNSW `ef_search` for the index directory at a million chunks, past what scale.py sweeps.

Reads the 1,000,000-chunk directory build that `BENCH_SCALES=1000000 python bench/scale.py`
leaves in bench/.work-scale (and its saved queries), and measures recall@10 of exact
search and latency at each `ef_search`, on the 200 choosing queries and the 200 reported
ones, as scale.py's own sweep does (`scale._ef_sweep`). Run apart, after that build:

    python bench/ann.py          # about two minutes
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np

from _common import ROOT, machine, write_result

sys.path.insert(0, str(ROOT))

import scale

SIZE = 1_000_000
EF_SEARCH = (128, 256, 512, 768, 1024, 1536)


def run() -> dict[str, Any]:
    from groundqa.index.directory import load_index
    from groundqa.text import Analyzer

    folder = scale.SCALE_WORK / f"directory-{SIZE}"
    if not folder.is_dir():
        raise SystemExit(f"no {folder}: run BENCH_SCALES={SIZE} python bench/scale.py first")
    saved = np.load(scale._queries_file(SIZE))
    pairs = [(str(w).split(), v) for w, v in zip(saved["words"], saved["vectors"], strict=True)]
    queries, tuning = pairs[: scale.QUERIES], pairs[scale.QUERIES :]
    started = time.perf_counter()
    store = load_index(folder, Analyzer())
    # Warm-up at the widest setting, so the first rows do not pay for reading the graph's
    # mapped vectors from disk and the latencies compare settings, not the page cache.
    assert store.vectors is not None and store.vectors.ann is not None
    store.vectors.ann.hnsw.efSearch = max(EF_SEARCH)
    for _, vector in tuning + queries:
        store.vector_search(vector, 10)
    sweep = scale._ef_sweep(store, tuning, queries, EF_SEARCH)
    data = {
        "machine": machine(),
        "chunks": SIZE,
        "hnsw": {k: store.manifest.dense.get(k) for k in ("hnsw_m", "ef_construction")},
        "ef_search_sweep": sweep,
        "seconds": round(time.perf_counter() - started, 1),
    }
    row = {"store": "directory", "chunks": SIZE, "ef_search_sweep": sweep}
    lines = [
        "## HNSW ef_search in the index directory at 1,000,000 chunks",
        "",
        "`python bench/ann.py`, on the build `BENCH_SCALES=1000000 python bench/scale.py` "
        f"made (HNSW m={data['hnsw']['hnsw_m']}, ef_construction="
        f"{data['hnsw']['ef_construction']}); the same sweep as scale.py's, further up.",
        *scale._sweep_table([row])[1:],
    ]
    write_result("ann", data, "\n".join(lines))
    return data


if __name__ == "__main__":
    run()
