"""Export the trained reader to int8 ONNX inside the package, and print its sha256.

    .venv-ref/bin/python train/reader_export.py [--checkpoint train/.work/reader/model/final.pt]

Writes src/groundqa/read/reader-int8.onnx (dynamic int8 quantisation, per channel, of every MatMul
and of the word-embedding table) and checks that the int8 file agrees with the fp32 model on
a sample of validation pairs. The weights take 7 bits (`reduce_range`): onnxruntime multiplies
uint8 activations by int8 weights, and CPUs without VNNI add those products in pairs in 16
bits, which full-range weights can overflow (255 * 127 * 2 > 32767) and 7-bit ones cannot
(255 * 64 * 2 < 32767). So the file gives the same scores on every x86 CPU;
tests/read/test_reader_model.py checks the weights of the shipped file. The new file's
sha256 is written into `groundqa.read.model.SHA256`, where every load checks it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "train"))
sys.path.insert(0, str(ROOT / "src"))

from reader_train import WORK, batch_tensors, build_model, load_rows, tokenizer  # noqa: E402

from groundqa.read.model import MODEL_PATH  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", type=Path, default=WORK / "model" / "final.pt")
    ap.add_argument("--out", type=Path, default=MODEL_PATH)
    args = ap.parse_args()

    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = build_model()
    state = torch.load(args.checkpoint, weights_only=False)
    model.load_state_dict(state.get("model", state))
    model.eval()
    tok = tokenizer()
    sample = load_rows(WORK / "valid.jsonl")[:256]
    inputs = batch_tensors(tok, sample[:4])
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "reader.onnx"
        torch.onnx.export(
            model,
            (inputs["input_ids"], inputs["attention_mask"], inputs["token_type_ids"]),
            str(fp32),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["logit"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "tokens"},
                "attention_mask": {0: "batch", 1: "tokens"},
                "token_type_ids": {0: "batch", 1: "tokens"},
                "logit": {0: "batch"},
            },
            opset_version=17,
            dynamo=False,
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        quantize_dynamic(
            str(fp32),
            str(args.out),
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul", "Gather"],
            per_channel=True,
            reduce_range=True,
        )
    # The int8 file against the fp32 model on held-out pairs.
    import onnxruntime as ort

    session = ort.InferenceSession(str(args.out), providers=["CPUExecutionProvider"])
    ref, got = [], []
    for i in range(0, len(sample), 32):
        batch = batch_tensors(tok, sample[i : i + 32])
        with torch.no_grad():
            ref += model(**batch).tolist()
        (out,) = session.run(["logit"], {k: v.numpy() for k, v in batch.items()})
        got += out.tolist()
    a, b = np.array(ref), np.array(got)
    agree = float(np.mean((a > 0) == (b > 0)))
    corr = float(np.corrcoef(a, b)[0, 1])
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    if args.out == MODEL_PATH:  # pin the new file's digest where the loader checks it
        source = ROOT / "src" / "groundqa" / "read" / "model.py"
        text = re.sub(
            r'^SHA256 = "[0-9a-f]*"$', f'SHA256 = "{digest}"', source.read_text(), flags=re.M
        )
        source.write_text(text)
    report = {
        "file": str(args.out),
        "bytes": args.out.stat().st_size,
        "sha256": digest,
        "int8_vs_fp32": {"pairs": len(a), "same_side_of_0": agree, "logit_correlation": corr},
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
