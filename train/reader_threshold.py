"""Choose the extractive generator's `MIN_ANSWER` on the held-out tenth of the training
questions (train/.work/reader/valid.jsonl), with the exported model.

The cut is the highest score that still leaves at least 95% of the answerable held-out
questions with a sentence at or above it: the reader alone then declines at most 5% of
questions it could answer. It is printed with what it refuses of the held-out questions
that have no answering sentence, for `groundqa.read.model.MIN_ANSWER`.

    .venv/bin/python train/reader_threshold.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "train" / ".work" / "reader"
TARGET = 0.05  # the share of answerable held-out questions the reader may decline


def main() -> int:
    from groundqa.read.model import load_answer_model

    rows = [json.loads(x) for x in (WORK / "valid.jsonl").read_text("utf-8").splitlines() if x]
    groups: dict[str, list[dict[str, object]]] = {}
    for r in rows:
        groups.setdefault(str(r["group"]), []).append(r)
    model = load_answer_model(2)
    best, answerable = [], []
    for items in groups.values():
        q = str(items[0]["q"])
        scores = model.score(q, [(str(r["c"]), str(r["s"])) for r in items])
        best.append(float(scores.max()))
        answerable.append(any(r["y"] for r in items))
    b, a = np.array(best), np.array(answerable)
    cut = float(np.floor(np.quantile(b[a], TARGET) * 100) / 100)
    print(
        json.dumps(
            {
                "questions": len(b),
                "answerable": int(a.sum()),
                "min_answer": cut,
                "answerable_declined": round(float((b[a] < cut).mean()), 4),
                "unanswerable_declined": round(float((b[~a] < cut).mean()), 4)
                if (~a).any()
                else None,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
