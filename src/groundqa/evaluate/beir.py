"""BEIR-format evaluation: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.

Runs are plain `{query_id: {doc_id: score}}` dicts, the format trec_eval,
pytrec_eval and ranx read, and can be written as a TREC run file so anyone can
check the numbers with their own tools. A document's score is its best
chunk's score: retrieval is judged per document, however it was chunked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundqa.engine import Engine
from groundqa.errors import ProbeError
from groundqa.evaluate.metrics import (
    average_precision,
    mean,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
)

Run = dict[str, dict[str, float]]
Qrels = dict[str, dict[str, int]]

BEIR_KS = (1, 3, 5, 10, 20, 50, 100)


@dataclass(frozen=True)
class BeirSet:
    """The queries of one split that have judgements, and those judgements."""

    folder: Path
    split: str
    queries: dict[str, str]
    qrels: Qrels

    @property
    def corpus(self) -> Path:
        return self.folder / "corpus.jsonl"


def read_qrels(path: Path) -> Qrels:
    """A BEIR qrels TSV (query-id, corpus-id, score; header optional)."""
    qrels: Qrels = {}
    for line_no, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
        parts = line.strip().split("\t")
        if not line.strip():
            continue
        if len(parts) < 3:
            raise ProbeError(f"{path} line {line_no}: expected query-id, corpus-id, score")
        if line_no == 1 and parts[0].lower() in ("query-id", "query_id", "qid", "query"):
            continue
        try:
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
        except ValueError:
            raise ProbeError(
                f"{path} line {line_no}: score {parts[2]!r} is not a whole number"
            ) from None
    if not qrels:
        raise ProbeError(f"{path} has no judgements")
    return qrels


def load_beir_set(folder: str | Path, split: str = "test") -> BeirSet:
    root = Path(folder)
    needed = ["corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"]
    missing = [n for n in needed if not (root / n).is_file()]
    if missing:
        raise ProbeError(
            f"{root} is not a complete BEIR folder: missing {', '.join(missing)} "
            f"(needs corpus.jsonl, queries.jsonl and qrels/{split}.tsv)"
        )
    qrels = read_qrels(root / "qrels" / f"{split}.tsv")
    queries: dict[str, str] = {}
    with (root / "queries.jsonl").open(encoding="utf-8") as f:
        for line_no, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                q = json.loads(line)
                qid, text = str(q["_id"]), str(q["text"])
            except (ValueError, KeyError, TypeError):
                raise ProbeError(
                    f"{root / 'queries.jsonl'} line {line_no}: not a query object with _id and text"
                ) from None
            if qid in qrels:
                queries[qid] = text
    unjudged = sorted(set(qrels) - set(queries))
    if unjudged:
        raise ProbeError(
            f"{len(unjudged)} judged query id(s) are missing from queries.jsonl, e.g. {unjudged[0]!r}"
        )
    return BeirSet(root, split, queries, qrels)


def retrieve_run(
    engine: Engine, queries: Mapping[str, str], *, depth: int = 100, retriever: str | None = None
) -> Run:
    """Top `depth` documents per query; a document scores as its best chunk."""
    run: Run = {}
    chunk_depth = min(engine.store.num_docs, depth * 3)
    for qid, text in queries.items():
        scores: dict[str, float] = {}
        for hit in engine.search(text, depth=chunk_depth, retriever=retriever):
            scores.setdefault(hit.chunk.section_id, hit.score)
            if len(scores) >= depth:
                break
        run[qid] = scores
    return run


def ranked(scores: Mapping[str, float]) -> list[str]:
    """Ids by score, best first; ties broken by id so results are reproducible."""
    return [d for d, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0]))]


def score_run(run: Run, qrels: Qrels, ks: Sequence[int] = BEIR_KS) -> dict[str, Any]:
    """nDCG@10, MRR@10, MAP@10, recall@k over the judged queries (a query with no run counts 0)."""
    per_query: dict[str, dict[str, float]] = {}
    for qid, judged in qrels.items():
        order = ranked(run.get(qid, {}))
        relevant = {d for d, g in judged.items() if g > 0}
        gains = {d: float(g) for d, g in judged.items() if g > 0}
        row = {
            "ndcg@10": ndcg_at_k(order, gains, 10),
            "mrr@10": reciprocal_rank(order, relevant, 10),
            "map@10": average_precision(order, relevant, 10),
        }
        for k in ks:
            row[f"recall@{k}"] = recall_at_k(order, relevant, k)
        per_query[qid] = row
    keys = next(iter(per_query.values())).keys() if per_query else []
    summary: dict[str, Any] = {key: mean(q[key] for q in per_query.values()) for key in keys}
    summary["queries"] = len(per_query)
    summary["recall@k"] = {str(k): summary[f"recall@{k}"] for k in ks}
    return summary


def write_trec_run(run: Run, path: str | Path, tag: str = "groundqa") -> None:
    """`qid Q0 docid rank score tag`, one line per retrieved document."""
    with Path(path).open("w", encoding="utf-8") as f:
        for qid in sorted(run):
            for rank, doc in enumerate(ranked(run[qid]), start=1):
                f.write(f"{qid} Q0 {doc} {rank} {run[qid][doc]:.6f} {tag}\n")


def evaluate_beir(
    folder: str | Path,
    *,
    split: str = "test",
    index_dir: str | Path | None = None,
    retrievers: Sequence[str] = ("bm25",),
    depth: int = 100,
    run_file: str | Path | None = None,
    embedder: str = "minilm",
) -> dict[str, Any]:
    """Build (or reuse, when unchanged) an index over the BEIR corpus and score each retriever.

    Vectors are built only when a retriever needs them. Without `index_dir` the
    index is built in a temporary folder and removed after. With `run_file`, the
    first retriever's run is written in TREC format. The scores are under
    `metrics`, as `eval --probes` has them, beside `default_retriever`, the plan
    this index answers with when none is named.
    """
    import tempfile

    from groundqa.index.dense import DenseSettings
    from groundqa.ingestion import ingest
    from groundqa.retrieve import parse_plan

    data = load_beir_set(folder, split)
    with tempfile.TemporaryDirectory(prefix="groundqa-beir-") as tmp:
        target = Path(index_dir) if index_dir is not None else Path(tmp) / "index"
        dense = any(parse_plan(name).needs_vectors for name in retrievers)
        build = ingest(
            [data.corpus], target, fmt="beir", dense=DenseSettings(embedder) if dense else None
        )
        engine = Engine.open(target)
        default_retriever = engine.default_retriever
        results: dict[str, Any] = {}
        for i, name in enumerate(retrievers):
            run = retrieve_run(engine, data.queries, depth=depth, retriever=name)
            if run_file is not None and i == 0:
                write_trec_run(run, run_file, tag=f"groundqa-{name}")
            results[name] = score_run(run, data.qrels)
    return {
        "dataset": str(data.folder),
        "split": split,
        "queries": len(data.queries),
        "index": str(index_dir) if index_dir is not None else None,
        "index_reused": not build.changed,
        "chunks": build.counts.get("chunks"),
        "default_retriever": default_retriever,
        "metrics": results,
        # Deprecated: the old name of `metrics`, kept for one release so readers can move.
        "retrievers": results,
    }
