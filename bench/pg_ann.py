"""HNSW in PostgreSQL (pgvector): recall@10 of exact search by graph and search width,
over several builds of the same settings, at 100,000 or 1,000,000 real-vector chunks.

pgvector draws each node's level at random and builds on two processes, so two builds of
the same settings keep different shares of the true neighbours; and it caps ef_search at
1000, the width `index.dense.ann_ef_search` asks for at 1M chunks. This benchmark measures
both: for each graph (m, ef_construction) it builds the index BUILDS times over the same
vectors (bench/realistic.py, as bench/scale.py stores them, in the same row order) with
the function every build uses (`index.postgres.target.create_hnsw`), and searches it at
each width. A width over 1000 is pgvector's iterative scan (`hnsw.iterative_scan =
relaxed_order`, ef_search 1000) asked for that many rows, whose top 10 are then taken by
exact distance: the statement the store runs at such widths (`index.postgres.store`).

Queries are SciFact's 1,105 real queries with their real vectors: the 905 that
bench/ann.py chooses by, and the 200 bench/scale.py reports on. A setting is enough when
the one-sided 95% lower bound of its recall on the choosing queries reaches TARGET in every
build. Only the vector table is written (row, embedding): the graph sees what a store's
chunk table would give it.

    python bench/pg_ann.py                                    # 100k, about ten minutes
    BENCH_PG_ANN_SIZE=1000000 BENCH_PG_ANN_GRAPHS=32:400 python bench/pg_ann.py  # hours
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import numpy as np

from _common import ROOT, latency_summary, machine, write_result

sys.path.insert(0, str(ROOT))

import atscale
import pg

SIZE = int(os.environ.get("BENCH_PG_ANN_SIZE", "100000"))
GRAPHS = tuple(
    tuple(int(x) for x in g.split(":"))
    for g in os.environ.get("BENCH_PG_ANN_GRAPHS", "32:200,32:400,48:200").split(",")
)
BUILDS = int(os.environ.get("BENCH_PG_ANN_BUILDS", "2"))
WIDTHS = tuple(
    int(w) for w in os.environ.get("BENCH_PG_ANN_WIDTHS", "64,128,256,1000,1500,2000").split(",")
)
TARGET = 0.98
RESULT = "pg_ann" if SIZE <= 100_000 else "pg_ann_1m"


def _exact(vectors: np.ndarray, queries: np.ndarray, k: int = 10) -> list[set[int]]:
    """Each query's exact top k by inner product, in blocks of rows."""
    best_score = np.full((len(queries), 0), -np.inf, np.float32)
    best_row = np.zeros((len(queries), 0), np.int64)
    for start in range(0, len(vectors), 200_000):
        scores = queries @ vectors[start : start + 200_000].T
        top = np.argpartition(-scores, k, axis=1)[:, :k]
        best_score = np.concatenate([best_score, np.take_along_axis(scores, top, 1)], axis=1)
        best_row = np.concatenate([best_row, top + start], axis=1)
        keep = np.argsort(-best_score, axis=1)[:, :k]
        best_score = np.take_along_axis(best_score, keep, 1)
        best_row = np.take_along_axis(best_row, keep, 1)
    return [set(r.tolist()) for r in best_row]


def _load(url: str, vectors: np.ndarray) -> None:
    import psycopg
    from pgvector.psycopg import register_vector

    with psycopg.connect(url) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(conn)
        conn.execute(f"CREATE TABLE v (row int4 PRIMARY KEY, embedding vector({vectors.shape[1]}))")
        with conn.cursor() as cur, cur.copy("COPY v (row, embedding) FROM STDIN") as copy:
            for i, vector in enumerate(vectors):
                copy.write_row([i, vector])
        conn.execute("ANALYZE v")


def _search(cur: Any, query: np.ndarray, width: int) -> list[int]:
    from pgvector import Vector

    from groundqa.index.postgres.store import ann_settings, ann_statement

    for setting in ann_settings(width):
        cur.execute(*setting)
    cur.execute(ann_statement("v", width), {"qvec": Vector(query), "vec_k": 10})
    return [int(r) for r, _ in cur.fetchall()]


def _sweep(url: str, pairs: dict[str, tuple[np.ndarray, list[set[int]]]]) -> list[dict[str, Any]]:
    import psycopg
    from pgvector.psycopg import register_vector

    out = []
    with psycopg.connect(url) as conn:
        register_vector(conn)
        with conn.cursor() as cur:
            warm = pairs["choosing"][0]
            for query in warm[:100]:  # read the graph into the buffer cache first
                _search(cur, query, max(WIDTHS))
            conn.rollback()
            for width in WIDTHS:
                row: dict[str, Any] = {"width": width}
                for name, (queries, truth) in pairs.items():
                    ms, recall = [], []
                    for query, exact in zip(queries, truth, strict=True):
                        t = time.perf_counter()
                        found = _search(cur, query, width)
                        ms.append((time.perf_counter() - t) * 1000)
                        conn.rollback()
                        recall.append(len(set(found) & exact) / len(exact))
                    row[name] = {
                        "recall_at_10": round(float(np.mean(recall)), 4),
                        "recall_at_10_low95": atscale.lower_bound(recall),
                        **latency_summary(ms),
                    }
                out.append(row)
    return out


def run() -> dict[str, Any]:
    import psycopg

    from groundqa.index.postgres.target import create_hnsw
    from realistic import corpus

    started = time.perf_counter()
    made = corpus(SIZE)
    vectors = np.ascontiguousarray(made["vectors"], np.float32)
    queries = np.asarray(made["query_vectors"], np.float32)
    # scale.py reports on its first QUERIES real queries; every other one is to choose by.
    reported, choosing = queries[: atscale.QUERIES], queries[atscale.QUERIES :]
    pairs = {
        "choosing": (choosing, _exact(vectors, choosing)),
        "reported": (reported, _exact(vectors, reported)),
    }
    data_dir = atscale.SCALE_WORK / f"pgdata-{RESULT}"
    builds = []
    with pg.server(data_dir, fast=False, flavor="bm25") as admin:
        url = pg.database(admin, "pg_ann", vector=False)
        t = time.perf_counter()
        _load(url, vectors)
        load_s = round(time.perf_counter() - t, 1)
        for m, ef_construction in GRAPHS:
            for build in range(BUILDS):
                with psycopg.connect(url, autocommit=True) as conn, conn.cursor() as cur:
                    cur.execute("DROP INDEX IF EXISTS v_embedding_idx")
                    t = time.perf_counter()
                    create_hnsw(cur, "v", SIZE, vectors.shape[1], m, ef_construction)
                    build_s = round(time.perf_counter() - t, 1)
                    cur.execute("SELECT pg_relation_size('v_embedding_idx')")
                    index_mb = round(int(cur.fetchone()[0]) / 1e6, 1)
                builds.append(
                    {
                        "m": m,
                        "ef_construction": ef_construction,
                        "build": build + 1,
                        "build_s": build_s,
                        "index_mb": index_mb,
                        "sweep": _sweep(url, pairs),
                    }
                )
                print(f"m {m} ef_construction {ef_construction} build {build + 1}", flush=True)
    data = {
        "machine": machine(),
        "chunks": SIZE,
        "target": TARGET,
        "choosing_queries": len(choosing),
        "reported_queries": len(reported),
        "load_s": load_s,
        "builds": builds,
        "enough": _enough(builds),
        "seconds": round(time.perf_counter() - started, 1),
    }
    write_result(RESULT, data, _markdown(data))
    return data


def _enough(builds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each graph, the smallest width whose lower bound on the choosing queries reaches
    TARGET in every one of its builds (None where no width does)."""
    out = []
    for m, ef_construction in dict.fromkeys((b["m"], b["ef_construction"]) for b in builds):
        mine = [b for b in builds if (b["m"], b["ef_construction"]) == (m, ef_construction)]
        widths = [
            width
            for width in WIDTHS
            if all(
                next(r for r in b["sweep"] if r["width"] == width)["choosing"]["recall_at_10_low95"]
                >= TARGET
                for b in mine
            )
        ]
        out.append({"m": m, "ef_construction": ef_construction, "width": min(widths, default=None)})
    return out


def _markdown(data: dict[str, Any]) -> str:
    lines = [
        f"## HNSW in PostgreSQL at {data['chunks']:,} chunks: graph, search width and builds",
        "",
        f"`{'BENCH_PG_ANN_SIZE=' + str(data['chunks']) + ' ' if data['chunks'] != 100_000 else ''}"
        "python bench/pg_ann.py`: recall@10 of exact search on "
        f"{data['choosing_queries']} real queries to choose by (with the one-sided 95% lower "
        f"bound of the mean) and on the {data['reported_queries']} bench/scale.py reports, "
        "and p50 of one search, for each build. Widths over 1000 are pgvector's iterative "
        "scan. Loading the vectors took "
        f"{data['load_s']} s.",
        "",
        "| m | ef_construction | build | build s | index MB | width | recall, choosing "
        "| lower bound | p50 ms | recall, reported | p50 ms |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for b in data["builds"]:
        for r in b["sweep"]:
            lines.append(
                f"| {b['m']} | {b['ef_construction']} | {b['build']} | {b['build_s']} | "
                f"{b['index_mb']} | {r['width']} | {r['choosing']['recall_at_10']} | "
                f"{r['choosing']['recall_at_10_low95']} | {r['choosing']['p50_ms']:.2f} | "
                f"{r['reported']['recall_at_10']} | {r['reported']['p50_ms']:.2f} |"
            )
    lines += ["", f"The smallest width whose lower bound reaches {data['target']} in every build:"]
    lines += [
        f"- m {e['m']}, ef_construction {e['ef_construction']}: {e['width'] or 'none swept'}"
        for e in data["enough"]
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    run()
