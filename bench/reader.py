"""The answer model against today's reader and the untrained model, on sets it never saw.

Each set is (question, sentence, answers-it?) pairs grouped by question, built by
train/reader_data.py from ../shared/train in place. None of them was trained on:

- WikiQA test (research-only licence: evaluation only): question-level answer
  triggering, refuse the questions with no answering sentence.
- TREC CAsT answerability test split (no licence stated: evaluation only).
- SelQA test and PolicyQA test (their dev splits trained the model).

Three scorers, in the same run:

- `model`: the shipped int8 answer model (groundqa.read.model), P(answers).
- `untrained`: the cosine of the packaged MiniLM sentence embeddings of question and
  sentence, what the model starts from before training.
- `lexical`: today's reader without the model: idf-weighted share of the question's
  topic terms in the sentence and its title (idf over the set's own sentences), plus
  its bonus for holding the fact the reader ranks first (`read.preferred`).

And one scorer that does not ship, to show what training gave up out of domain: `blend`,
the model's logit plus w times the untrained cosine, with w (of BLEND_WEIGHTS) the one
that gives the best question AUC on WikiQA dev (scored in the same run, reported nowhere).

Figures: pooled sentence AUC; answer-sentence MRR over questions with an answer; and
per question, the best sentence's score as a refusal signal: AUC (answerable vs not),
and precision/recall of refusal at the cut that refuses 10% of answerable questions
(read off each set's own curve, a best case for every row), and for the model also
at its shipped `MIN_ANSWER` (fixed on held-out training questions before this ran).
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "train"))

import sets
from _common import machine, percentile, shared_path, write_result
from groundqa.gate.model import roc_auc
from groundqa.read import Reader, coverage, holds, preferred
from groundqa.read.model import MIN_ANSWER, MODEL_PATH, SHA256, AnswerModel
from groundqa.text import Analyzer

Row = dict[str, Any]
Scorer = Callable[[list[Row]], np.ndarray]


def model_scorer(path: Path = MODEL_PATH, digest: str = SHA256) -> Scorer:
    model = AnswerModel.load(2, path, digest)

    def score(rows: list[Row]) -> np.ndarray:
        out = np.zeros(len(rows), dtype=np.float32)
        for idx in _by_question(rows).values():
            q = rows[idx[0]]["q"]
            out[idx] = model.score(q, [(rows[i]["c"], rows[i]["s"]) for i in idx])
        return out

    return score


def cosine_scorer() -> Scorer:
    from groundqa.embed.minilm import load_minilm

    embedder = load_minilm("onnx-int8", 2, 32)

    def score(rows: list[Row]) -> np.ndarray:
        questions = sorted({r["q"] for r in rows})
        qv = dict(zip(questions, embedder.embed(questions), strict=True))
        sv = embedder.embed([r["s"] for r in rows])
        return np.array([float(qv[r["q"]] @ v) for r, v in zip(rows, sv, strict=True)])

    return score


def lexical_scorer() -> Scorer:
    analyzer = Analyzer()

    def score(rows: list[Row]) -> np.ndarray:
        terms = [analyzer.term_set(f"{r['c']} {r['s']}") for r in rows]
        df = Counter(t for ts in {frozenset(x) for x in terms} for t in ts)
        n = len(terms)
        out = np.zeros(len(rows))
        for i, r in enumerate(rows):
            weights = {t: math.log(1 + n / (1 + df[t])) for t in analyzer.query_terms(r["q"])}
            bonus = Reader.type_bonus if holds(preferred(r["q"]), r["s"]) else 0.0
            out[i] = coverage(weights, terms[i]) + bonus
        return out

    return score


BLEND_WEIGHTS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0)


def blended(model: np.ndarray, cosine: np.ndarray, weight: float) -> np.ndarray:
    """The model's logit plus `weight` times the untrained cosine."""
    p = np.clip(model.astype(np.float64), 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p)) + weight * cosine


def blend_weight(rows: list[Row], model: np.ndarray, cosine: np.ndarray) -> float:
    """The weight of BLEND_WEIGHTS with the best question AUC on `rows` (WikiQA dev)."""
    aucs = {
        w: figures(rows, blended(model, cosine, w), None)["question_auc"] for w in BLEND_WEIGHTS
    }
    return max(BLEND_WEIGHTS, key=lambda w: (aucs[w], -w))


def _by_question(rows: list[Row]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault(r["group"], []).append(i)
    return groups


def figures(rows: list[Row], scores: np.ndarray, cut: float | None) -> dict[str, Any]:
    y = [r["y"] for r in rows]
    rr, best, answerable = [], [], []
    for idx in _by_question(rows).values():
        labels = [rows[i]["y"] for i in idx]
        ranked = sorted(idx, key=lambda i: -scores[i])
        best.append(float(scores[ranked[0]]))
        answerable.append(int(any(labels)))
        if any(labels):
            first = next(k for k, i in enumerate(ranked) if rows[i]["y"])
            rr.append(1.0 / (first + 1))
    out: dict[str, Any] = {
        "pairs": len(rows),
        "questions": len(best),
        "answerable": int(sum(answerable)),
        "sentence_auc": round(roc_auc(np.asarray(y), np.asarray(scores, dtype=np.float64)), 4),
        "mrr": round(float(np.mean(rr)), 4) if rr else None,
    }
    if 0 < sum(answerable) < len(answerable):
        a = np.array(answerable)
        b = np.array(best)
        out["question_auc"] = round(roc_auc(a, b), 4)
        at10 = float(np.quantile(b[a == 1], 0.10))
        out["refusal_at_10pct"] = _refusal(a, b, at10)
        if cut is not None:
            out["refusal_at_shipped_cut"] = _refusal(a, b, cut)
    return out


def _refusal(answerable: np.ndarray, best: np.ndarray, cut: float) -> dict[str, float]:
    refused = best < cut
    unanswerable = answerable == 0
    hit = int((refused & unanswerable).sum())
    return {
        "cut": round(cut, 4),
        "precision": round(hit / max(1, int(refused.sum())), 4),
        "recall": round(hit / max(1, int(unanswerable.sum())), 4),
        "false_refusal": round(float(refused[answerable == 1].mean()), 4),
    }


def labelled_sets() -> dict[str, list[Row]]:
    import random

    import reader_data

    rng = random.Random(reader_data.SEED)
    return {
        "wikiqa_test": list(reader_data.wikiqa("test")),
        "cast_test": list(reader_data.cast("test")),
        "selqa_test": list(reader_data.selqa("test", rng)),
        "policyqa_test": list(reader_data.policyqa("test", rng)),
    }


def markdown(data: dict[str, Any]) -> str:
    lines = [
        "# The answer model on sets it never trained on",
        "",
        "Command: `.venv/bin/python bench/reader.py` (in `make bench`). Scorers: `model` the "
        "shipped int8 answer model; `untrained` the MiniLM cosine it starts from; `lexical` "
        "today's word-coverage reader; `blend` (not shipped) the model's logit plus w times "
        "the untrained cosine, w chosen on WikiQA dev. Question-level figures use each "
        "question's best "
        "sentence: `refuse@10%` is read off the set's own curve where 10% of answerable "
        f"questions are refused; `shipped cut` is the model's fixed `MIN_ANSWER` "
        f"({data['min_answer']}).",
        "",
        "| set | scorer | sentence AUC | MRR | question AUC | refusal P / R @10% FR "
        "| at shipped cut: P / R / FR |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, rows in data["sets"].items():
        for scorer, f in rows.items():
            r10 = f.get("refusal_at_10pct")
            cut = f.get("refusal_at_shipped_cut")
            at10 = f"{r10['precision']:.2f} / {r10['recall']:.2f}" if r10 else "—"
            shipped = (
                f"{cut['precision']:.2f} / {cut['recall']:.2f} / {cut['false_refusal']:.2f}"
                if cut
                else "—"
            )
            mrr = f["mrr"] if f["mrr"] is not None else "—"
            lines.append(
                f"| {name} ({f['questions']} q) | {scorer} | {f['sentence_auc']:.3f} | {mrr} "
                f"| {f.get('question_auc', '—')} | {at10} | {shipped} |"
            )
    t = data["timing"]
    a = data["ask"]
    lines += [
        "",
        f"Scoring time on this machine: model {t['model_ms_per_pair']} ms per pair "
        f"(int8, 2 threads, batches of one question's sentences).",
        "",
        f"**Cost of `ask`** on the example corpus ({a['questions']} probe questions, 3 rounds, "
        "default build and plan, extractive answer), the same "
        "engine with the answer model and without it (the baseline), alternating:",
        "",
        "| reader | ask p50 (ms) | ask p95 (ms) |",
        "|---|---:|---:|",
        f"| answer model | {a['model']['p50_ms']} | {a['model']['p95_ms']} |",
        f"| word coverage (no model) | {a['lexical']['p50_ms']} | {a['lexical']['p95_ms']} |",
        "",
        f"The model reads a median of {a['sentences_read']['median']} sentences per question "
        f"(at most {a['sentences_read']['max']}); loading and checking it takes "
        f"{a['model_load_ms']} ms once per process; the file adds "
        f"{a['package_bytes'] / 1e6:.1f} MB to the package.",
    ]
    rr = data.get("rerank")
    if rr:
        lines += [
            "",
            "**The answer model as a reranker** of the default plan's top 20 passages (a "
            "passage scores as its best sentence; `--reranker reader`), nDCG@10 and "
            f"recall@10 on sections. ObliQA dev: a fixed sample of {RERANK_OBLIQA} questions.",
            "",
            "| set | default plan nDCG@10 | + reader nDCG@10 | default plan recall@10 "
            "| + reader recall@10 | seconds (plan / + reader) |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for name, row in rr.items():
            a0, a1 = row["default plan"], row["default plan + reader"]
            lines.append(
                f"| {name} ({row['queries']} q, `{row['plan']}`) | {a0['ndcg@10']:.4f} "
                f"| {a1['ndcg@10']:.4f} | {a0['recall@10']:.4f} | {a1['recall@10']:.4f} "
                f"| {a0['seconds']} / {a1['seconds']} |"
            )
    return "\n".join(lines)


RERANK_OBLIQA = 400  # ObliQA dev questions reranked (a fixed sample: 20 passages each)


def _reranked_run(engine: Any, queries: dict[str, str], reranker: str | None) -> dict[str, Any]:
    """Top 10 sections per query from the default plan, reranked or not."""
    run: dict[str, dict[str, float]] = {}
    for qid, text in queries.items():
        scores: dict[str, float] = {}
        for hit in engine.search(text, depth=20, reranker=reranker):
            scores.setdefault(hit.chunk.section_id, hit.score)
        run[qid] = dict(list(scores.items())[:10])
    return run


def rerank() -> dict[str, Any] | None:
    """nDCG@10 of the default plan, and of the same top 20 reranked by the answer model."""
    import random

    from groundqa.engine import Engine
    from groundqa.evaluate.beir import score_run
    from groundqa.ingestion import ingest

    test, obliqa = sets.scifact("test"), sets.obliqa()
    if test is None or obliqa is None:
        return None
    queries, qrels = obliqa.queries, obliqa.qrels
    picked = sorted(random.Random(13).sample(sorted(queries), RERANK_OBLIQA))
    runs = {
        "scifact_test": (
            sets.BUILDS / "scifact",
            [test.corpus],
            "beir",
            test.queries,
            test.qrels,
        ),
        "obliqa_dev_sample": (
            sets.BUILDS / "obliqa",
            [obliqa.documents],
            "obliqa",
            {q: queries[q] for q in picked},
            {q: qrels[q] for q in picked},
        ),
    }
    out: dict[str, Any] = {}
    for name, (index, sources, fmt, qs, rels) in runs.items():
        ingest(sources, index, fmt=fmt)  # reuses the dense benchmark's build when unchanged
        engine = Engine.open(index)
        row: dict[str, Any] = {"queries": len(qs), "plan": engine.default_retriever}
        for label, reranker in (("default plan", None), ("default plan + reader", "reader")):
            t = time.perf_counter()
            s = score_run(_reranked_run(engine, qs, reranker), rels, ks=(10,))
            row[label] = {
                "ndcg@10": round(s["ndcg@10"], 4),
                "recall@10": round(s["recall@10"], 4),
                "seconds": round(time.perf_counter() - t, 1),
            }
        out[name] = row
        print(name, row, flush=True)
    return out


def ask_cost() -> dict[str, Any]:
    """`ask` on the example corpus with the answer model and without it (the baseline),
    alternating question by question; how many sentences the model reads; load time."""
    import statistics
    import tempfile

    from groundqa.engine import Engine
    from groundqa.evaluate import load_probes
    from groundqa.ingestion import ingest
    from groundqa.read.model import AnswerModel

    root = Path(__file__).resolve().parents[1]
    questions = [p.question for p in load_probes(root / "examples" / "regpack.probes.jsonl")]
    t = time.perf_counter()
    AnswerModel.load(1)
    load_ms = (time.perf_counter() - t) * 1000
    with tempfile.TemporaryDirectory() as tmp:
        ingest([root / "examples" / "regpack"], Path(tmp) / "index")
        engines = {r: Engine.open(Path(tmp) / "index", reader=r) for r in ("model", "lexical")}
        for e in engines.values():
            for q in questions[:5]:
                e.ask(q)
        ms: dict[str, list[float]] = {r: [] for r in engines}
        read = []
        for _ in range(3):
            for q in questions:
                for r, e in engines.items():
                    t = time.perf_counter()
                    e.ask(q)
                    ms[r].append((time.perf_counter() - t) * 1000)
        for q in questions:
            reading = engines["model"].read(engines["model"].retrieval(q))
            read.append(len(reading.sentences))
    return {
        "questions": len(questions),
        "model_load_ms": round(load_ms, 1),
        "sentences_read": {"median": statistics.median(read), "max": max(read)},
        **{
            r: {"p50_ms": round(percentile(v, 50), 2), "p95_ms": round(percentile(v, 95), 2)}
            for r, v in ms.items()
        },
        "package_bytes": MODEL_PATH.stat().st_size,
    }


def candidate(paths: Sequence[Path]) -> dict[str, Any] | None:
    """Trained answer models that do not ship (exports of `train/reader_train.py` with
    other settings) beside the shipped one and the untrained cosine, on the same sets:
    `python bench/reader.py --candidate A.onnx [B.onnx ...]`. Each is named by its file's
    stem; its training settings are read from the JSON beside it."""
    if shared_path("train") is None:
        return None
    files = {path.stem: path for path in paths}
    digests = {name: hashlib.sha256(p.read_bytes()).hexdigest() for name, p in files.items()}
    scorers = {
        "model": model_scorer(),
        **{name: model_scorer(files[name], digests[name]) for name in files},
        "untrained": cosine_scorer(),
    }
    out = {
        name: {scorer: figures(rows, fn(rows), None) for scorer, fn in scorers.items()}
        for name, rows in labelled_sets().items()
    }
    data = {
        "machine": machine(),
        "candidates": {
            name: {
                "file": path.name,
                "sha256": digests[name],
                "training": json.loads(meta.read_text()) if meta.is_file() else None,
            }
            for name, path in files.items()
            for meta in [path.with_suffix(".json")]
        },
        "sets": out,
    }
    write_result("reader_candidate", data, candidate_markdown(data))
    return data


def candidate_markdown(data: dict[str, Any]) -> str:
    files = " ".join(c["file"] for c in data["candidates"].values())
    lines = [
        "# Candidate answer models beside the shipped one",
        "",
        f"Command: `.venv/bin/python bench/reader.py --candidate {files}` (not in "
        "`make bench`; the files do not ship). Baseline in the same run: the shipped model "
        "(`model`), and the untrained MiniLM cosine they all start from. Figures as on the "
        "answer model's page. Each candidate's training:",
        "",
        *(
            f"- `{name}` (sha256 `{c['sha256'][:12]}`): `{json.dumps(c['training'])}`"
            for name, c in data["candidates"].items()
        ),
        "",
        "| set | scorer | sentence AUC | MRR | question AUC |",
        "|---|---|---:|---:|---:|",
    ]
    for name, rows in data["sets"].items():
        for scorer, f in rows.items():
            mrr = f["mrr"] if f["mrr"] is not None else "—"
            lines.append(
                f"| {name} ({f['questions']} q) | {scorer} | {f['sentence_auc']:.3f} | {mrr} "
                f"| {f.get('question_auc', '—')} |"
            )
    return "\n".join(lines)


def run() -> dict[str, Any] | None:
    if shared_path("train") is None:
        return None
    import reader_data

    scorers = {"model": model_scorer(), "untrained": cosine_scorer(), "lexical": lexical_scorer()}
    dev = list(reader_data.wikiqa("dev"))
    weight = blend_weight(dev, scorers["model"](dev), scorers["untrained"](dev))
    blend = f"blend (w={weight:g})"
    out: dict[str, dict[str, Any]] = {}
    spent, pairs = 0.0, 0
    for name, rows in labelled_sets().items():
        out[name] = {}
        scored: dict[str, np.ndarray] = {}
        for scorer, fn in scorers.items():
            t = time.perf_counter()
            scores = scored[scorer] = fn(rows)
            if scorer == "model":
                spent += time.perf_counter() - t
                pairs += len(rows)
            out[name][scorer] = figures(rows, scores, MIN_ANSWER if scorer == "model" else None)
            print(name, scorer, out[name][scorer], flush=True)
        mixed = blended(scored["model"], scored["untrained"], weight)
        out[name][blend] = figures(rows, mixed, None)
    data = {
        "machine": machine(),
        "min_answer": MIN_ANSWER,
        "blend_weight": weight,
        "sets": out,
        "timing": {"model_ms_per_pair": round(1000 * spent / max(1, pairs), 3)},
        "ask": ask_cost(),
        "rerank": rerank(),
    }
    write_result("reader", data, markdown(data))
    return data


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--candidate":
        candidate([Path(a) for a in sys.argv[2:]])
    else:
        run()
