"""BM25 retrieval quality on the seed corpora and standard benchmarks, each beside its baseline.

Every index here is built without vectors (`dense=None`), so these are the lexical
figures; `bench/dense.py` measures dense and hybrid retrieval beside them.

- SciFact test (BEIR): groundqa BM25 against bm25s used directly in the same run,
  with the published BM25 figures; our metrics cross-checked by trec_eval.
- Natech guidance: the seed system's 12 probes, converted on the fly, against its
  published keyword baseline.
- ObliQA dev: passage-level recall@10 and MAP@10.
- City guides: the seed questions (converted on the fly) and our own probe file,
  every harness metric including refusals with the default (uncalibrated) gate.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import sets
from _common import RESULTS, ROOT, WORK, Bm25sBaseline, machine, write_result

# Published figures quoted for comparison (see ../shared/bench/MANIFEST.md).
PUBLISHED_SCIFACT = {
    "Anserini BM25 flat": 0.679,
    "Anserini BM25 multifield": 0.665,
    "BEIR paper BM25": 0.665,
}
# Plain BM25, without the default plan's query understanding (+defs), so these stay the
# lexical baseline that bench/dense.py compares against.
BM25 = "bm25"
NATECH_SEED = {"hit@1": 0.33, "hit@2": 0.33, "hit@3": 0.58, "hit@5": 0.58, "hit@8": 0.67}


def scifact() -> dict[str, Any] | None:
    if (data := sets.scifact("test")) is None:
        return None
    import pytrec_eval

    from groundqa.engine import Engine
    from groundqa.evaluate.beir import retrieve_run, score_run
    from groundqa.ingestion import ingest

    index = WORK / "scifact"
    ingest([data.corpus], index, fmt="beir", dense=None)
    engine = Engine.open(index)
    ours = retrieve_run(engine, data.queries, depth=100, retriever=BM25)
    baseline = Bm25sBaseline(data.corpus)
    base = {qid: baseline.search(text, 100) for qid, text in data.queries.items()}
    evaluator = pytrec_eval.RelevanceEvaluator(data.qrels, {"ndcg_cut.10", "recall.100"})
    out: dict[str, Any] = {}
    for name, run in (("groundqa bm25", ours), ("bm25s directly", base)):
        s = score_run(run, data.qrels)
        ref = evaluator.evaluate(run)
        out[name] = {
            "ndcg@10": round(s["ndcg@10"], 4),
            "recall@100": round(s["recall@100"], 4),
            "mrr@10": round(s["mrr@10"], 4),
            "trec_eval ndcg@10": round(
                sum(r["ndcg_cut_10"] for r in ref.values()) / len(data.qrels), 4
            ),
            "trec_eval recall@100": round(
                sum(r["recall_100"] for r in ref.values()) / len(data.qrels), 4
            ),
        }
    return {"queries": len(data.queries), "runs": out, "published": PUBLISHED_SCIFACT}


def _probe_eval(corpus: list[Path], probes: list[Any], name: str, report: str | None = None) -> Any:
    """Index `corpus`, run the probes, and (with `report`) write Markdown, JSON and plots."""
    from groundqa.engine import Engine
    from groundqa.evaluate import evaluate_probes
    from groundqa.evaluate.report import write_probe_report
    from groundqa.ingestion import ingest

    index = WORK / name
    ingest(corpus, index, dense=None)
    result = evaluate_probes(
        Engine.open(index), probes, ks=(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), retriever=BM25
    )
    if report:
        write_probe_report([result], RESULTS / "reports" / report, title=report)
    return result


def natech() -> dict[str, Any] | None:
    if (natech := sets.natech()) is None:
        return None
    csv, probes = natech
    report = _probe_eval([csv], probes, "natech", report="natech")
    misses = [
        {
            "id": r.probe.id,
            "question": r.probe.question,
            "expected": list(r.probe.expected),
            "rank": r.rank,
            "top3": list(r.ranked_sections[:3]),
        }
        for r in report.results
        if r.rank is None or r.rank > 3
    ]
    keys = [f"recall@{k}" for k in range(1, 11)] + [f"hit@{k}" for k in range(1, 11)] + ["mrr"]
    return {
        "metrics": {k: round(report.metrics[k], 4) for k in keys},
        "seed_baseline": NATECH_SEED,
        "seed_mrr": "0.33-0.43",
        "misses_top3": misses,
        "sweep": report.sweep,
    }


def heading_weight() -> dict[str, Any] | None:
    """The breadcrumb field at weight 0 and 1, on the corpora that set its per-format default.

    SciFact is scored on its train split, so this choice is not made on the test queries.
    """
    natech, train, obliqa = sets.natech(), sets.scifact("train"), sets.obliqa()
    if natech is None or train is None or obliqa is None:
        return None
    from groundqa.engine import Engine
    from groundqa.evaluate import evaluate_probes
    from groundqa.evaluate.beir import retrieve_run, score_run
    from groundqa.index.lexical import BM25Settings
    from groundqa.ingestion import ingest

    natech_csv, probes = natech
    rows: dict[str, dict[str, float]] = {}
    for weight in (0.0, 1.0):
        bm25 = BM25Settings(heading_weight=weight)
        tag = f"hw{weight:g}"
        ingest([natech_csv], WORK / tag / "natech", bm25=bm25, dense=None)
        natech_report = evaluate_probes(
            Engine.open(WORK / tag / "natech"), probes, ks=(3,), retriever=BM25
        )
        ingest([train.corpus], WORK / tag / "scifact", fmt="beir", bm25=bm25, dense=None)
        sf = score_run(
            retrieve_run(
                Engine.open(WORK / tag / "scifact"), train.queries, depth=10, retriever=BM25
            ),
            train.qrels,
            ks=(10,),
        )
        ingest([obliqa.documents], WORK / tag / "obliqa", fmt="obliqa", bm25=bm25, dense=None)
        ob = score_run(
            retrieve_run(
                Engine.open(WORK / tag / "obliqa"), obliqa.queries, depth=10, retriever=BM25
            ),
            obliqa.qrels,
            ks=(10,),
        )
        rows[f"{weight:g}"] = {
            "natech hit@3": round(natech_report.metrics["hit@3"], 4),
            "SciFact train nDCG@10": round(sf["ndcg@10"], 4),
            "ObliQA dev nDCG@10": round(ob["ndcg@10"], 4),
        }
    return rows


def obliqa() -> dict[str, Any] | None:
    if (dev := sets.obliqa()) is None:
        return None
    from groundqa.engine import Engine
    from groundqa.evaluate.beir import retrieve_run, score_run
    from groundqa.ingestion import ingest

    queries, qrels = dev.queries, dev.qrels
    index = WORK / "obliqa"
    t = time.perf_counter()
    ingest([dev.documents], index, fmt="obliqa", dense=None)
    build_s = time.perf_counter() - t
    engine = Engine.open(index)
    known = {c.section_id for c in engine.chunks}
    judged = sum(1 for q in qrels.values() for d in q if d in known)
    total = sum(len(q) for q in qrels.values())
    t = time.perf_counter()
    run = retrieve_run(engine, queries, depth=10, retriever=BM25)
    query_s = time.perf_counter() - t
    s = score_run(run, qrels, ks=(1, 3, 5, 10))
    return {
        "queries": len(queries),
        "gold_passages_indexed": f"{judged}/{total}",
        "recall@10": round(s["recall@10"], 4),
        "map@10": round(s["map@10"], 4),
        "mrr@10": round(s["mrr@10"], 4),
        "ndcg@10": round(s["ndcg@10"], 4),
        "build_s": round(build_s, 2),
        "query_ms_mean": round(1000 * query_s / len(queries), 3),
    }


def city_guides() -> dict[str, Any] | None:
    if (city := sets.city_guides()) is None:
        return None
    guides, own, seeds = city
    out: dict[str, Any] = {}
    asked = {
        "seed questions (questions.json)": (seeds, "city_guides_seed"),
        "bench/city_guides.probes.jsonl": (own, "city_guides"),
    }
    for label, (probes, report_name) in asked.items():
        report = _probe_eval([guides], probes, "city_guides", report=report_name)
        out[label] = _probe_summary(report)
    return out


def regpack() -> dict[str, Any]:
    """The bundled example corpus and its probe file (no ../shared needed)."""
    from groundqa.evaluate import load_probes

    probes = load_probes(ROOT / "examples" / "regpack.probes.jsonl")
    report = _probe_eval([ROOT / "examples" / "regpack"], probes, "regpack", report="regpack")
    return {"examples/regpack.probes.jsonl": _probe_summary(report)}


def _probe_summary(report: Any) -> dict[str, Any]:
    by_kind = {
        k: [r for r in report.results if r.probe.kind == k]
        for k in ("answerable", "near_miss", "out_of_scope")
    }
    return {
        "metrics": {k: round(v, 4) for k, v in report.metrics.items() if not k.startswith("hit@")},
        "counts": report.counts,
        "refused": {k: f"{sum(r.refused for r in rs)}/{len(rs)}" for k, rs in by_kind.items()},
        "near_miss_answered": [r.probe.question for r in by_kind["near_miss"] if not r.refused],
        "gate_threshold": report.gate_threshold,
        "gate_sweep": report.gate_sweep,
    }


def _rank_text(rank: int | None) -> str:
    return f"rank {rank}" if rank else "not in the top 30 sections"


def _fmt(v: Any) -> str:
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def run() -> dict[str, Any]:
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    data: dict[str, Any] = {"machine": machine()}
    timings = {}
    parts = (
        ("scifact", scifact),
        ("natech", natech),
        ("obliqa", obliqa),
        ("city_guides", city_guides),
        ("regpack", regpack),
        ("heading_weight", heading_weight),
    )
    for name, fn in parts:
        t = time.perf_counter()
        data[name] = fn()
        timings[name] = round(time.perf_counter() - t, 1)
    data["seconds"] = timings
    md = [
        "## Retrieval quality (BM25 and the default gate)",
        "",
        "`python bench/retrieval.py` (part of `make bench`); seconds per part: "
        + ", ".join(f"{k} {v}" for k, v in timings.items())
        + ".",
        "",
    ]
    sf = data["scifact"]
    if sf:
        md += [
            f"**SciFact test** ({sf['queries']} queries), same run:",
            "",
            "| run | nDCG@10 | recall@100 | MRR@10 | trec_eval nDCG@10 |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, m in sf["runs"].items():
            md.append(
                f"| {name} | {m['ndcg@10']:.4f} | {m['recall@100']:.4f} | {m['mrr@10']:.4f} | {m['trec_eval ndcg@10']:.4f} |"
            )
        md += [
            "",
            "Published BM25 nDCG@10: "
            + ", ".join(f"{k} {v}" for k, v in sf["published"].items())
            + ".",
            "",
        ]
    nt = data["natech"]
    if nt:
        m = nt["metrics"]
        md += [
            "**Natech guidance**, the seed system's 12 probes, chapter level (hit@k: the share of "
            "probes with an expected chapter in the top k; the seed figures count the same way):",
            "",
            "| k | 1 | 2 | 3 | 5 | 8 | 10 |",
            "|---|---:|---:|---:|---:|---:|---:|",
            "| groundqa hit@k | "
            + " | ".join(f"{m[f'hit@{k}']:.2f}" for k in (1, 2, 3, 5, 8, 10))
            + " |",
            "| groundqa recall@k | "
            + " | ".join(f"{m[f'recall@{k}']:.2f}" for k in (1, 2, 3, 5, 8, 10))
            + " |",
            "| seed keyword baseline | 0.33 | 0.33 | 0.58 | 0.58 | 0.67 | — |",
            "",
            f"MRR {m['mrr']:.3f} (seed: {nt['seed_mrr']}). {nt['sweep'].get('note', '')}. "
            f"Not in the top 3: "
            + (
                "; ".join(
                    f'{x["id"]} "{x["question"]}" ({_rank_text(x["rank"])}, top: {", ".join(x["top3"])})'
                    for x in nt["misses_top3"]
                )
                or "none"
            )
            + ".",
            "",
        ]
    ob = data["obliqa"]
    if ob:
        md += [
            f"**ObliQA dev** ({ob['queries']} questions, passage level, gold passages indexed {ob['gold_passages_indexed']}): "
            f"recall@10 {ob['recall@10']:.4f}, MAP@10 {ob['map@10']:.4f}, MRR@10 {ob['mrr@10']:.4f}, nDCG@10 {ob['ndcg@10']:.4f}.",
            "",
        ]
    hw = data["heading_weight"]
    if hw:
        keys = list(hw["0"])
        md += [
            "**The breadcrumb field** (title and section path, added to the body score) at "
            "weight 0 and 1; the default is 1 for Markdown and CSV and 0 for BEIR and ObliQA "
            "(`ingestion.default_bm25`):",
            "",
            "| heading weight | " + " | ".join(keys) + " |",
            "|---|" + "---:|" * len(keys),
        ]
        for w, row in hw.items():
            md.append(f"| {w} | " + " | ".join(f"{row[k]:.4f}" for k in keys) + " |")
        md.append("")
    probe_sets = {**(data["city_guides"] or {}), **data["regpack"]}
    if probe_sets:
        keys = [
            "recall@1",
            "recall@3",
            "recall@5",
            "mrr",
            "ndcg@10",
            "crowding@5",
            "same_doc_crowding@5",
            "paraphrase_rank1_all",
            "paraphrase_rank1_any",
            "answer_contains",
            "answer_grounded",
            "false_refusal",
            "refused_near_miss",
            "refused_out_of_scope",
        ]
        labels = list(probe_sets)
        md += [
            "**Probe sets**: city guides (seed questions converted on the fly, and our own "
            "probe file) and the bundled example corpus; BM25 with the built-in default gate "
            f"(not calibrated for these indexes; threshold {probe_sets[labels[0]]['gate_threshold']:.3f}, "
            "fitted on the example corpus's probes, so that column is in-sample), refusals end to end:",
            "",
            "| metric | " + " | ".join(labels) + " |",
            "|---|" + "---:|" * len(labels),
        ]
        for k in keys:
            md.append(
                f"| {k} | "
                + " | ".join(_fmt(probe_sets[lab]["metrics"].get(k, "—")) for lab in labels)
                + " |"
            )
        md.append(
            "| refused: answerable / near-miss / out-of-scope | "
            + " | ".join(
                f"{probe_sets[lab]['refused']['answerable']} / {probe_sets[lab]['refused']['near_miss']} / "
                f"{probe_sets[lab]['refused']['out_of_scope']}"
                for lab in labels
            )
            + " |"
        )
        md += [
            "",
            "The same gate at other confidence thresholds (at the gate only; false refusal / "
            "out-of-scope refused / near-miss refused):",
            "",
            "| threshold | " + " | ".join(labels) + " |",
            "|---|" + "---:|" * len(labels),
        ]
        for i, row in enumerate(probe_sets[labels[0]]["gate_sweep"]):
            cells = []
            for lab in labels:
                r = probe_sets[lab]["gate_sweep"][i]
                cells.append(
                    " / ".join(
                        f"{r[k]:.2f}" if k in r else "—"
                        for k in ("false_refusal", "refused_out_of_scope", "refused_near_miss")
                    )
                )
            md.append(f"| {row['threshold']:.1f} | " + " | ".join(cells) + " |")
        md.append("")
    write_result("retrieval", data, "\n".join(md))
    return data


if __name__ == "__main__":
    run()
