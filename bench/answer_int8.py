"""The answer model's 8-bit arithmetic: the shipped file against its weights multiplied in float.

The shipped `reader-int8.onnx` multiplies uint8 activations by int8 weights
(`MatMulInteger`, onnxruntime's U8S8). CPUs without VNNI add those products in pairs in
16 bits, which weights over the full int8 range can overflow; the export keeps them to
7 bits (`reduce_range`), and this records the widest weight in the file. Against it, the
same int8 weights multiplied in float (`Cast`, the weight scale, `MatMul`, as the packaged
embedder runs): what rounding the activations to 8 bits moves, and what it saves.

Baseline in the same run: the shipped file. Pairs: each question of the example corpus's
probes against 12 sentences drawn (seed 0) from the corpus; the mean and largest
|difference| in P(answers), the share of pairs on the other side of `MIN_ANSWER`, and
milliseconds per 12-pair call (one thread).

    python bench/answer_int8.py   # in make bench
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, machine, write_result
from groundqa.read.model import MIN_ANSWER, MODEL_PATH, SHA256, AnswerModel

PAIRS_PER_QUESTION = 12


def widest_weight(path: Path) -> int:
    """The largest |int8 weight| any MatMulInteger of the file multiplies by."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(path).graph
    inits = {t.name: t for t in graph.initializer}
    return max(
        int(np.abs(numpy_helper.to_array(inits[n.input[1]]).astype(np.int32)).max())
        for n in graph.node
        if n.op_type == "MatMulInteger"
    )


def float_variant(src: Path, dst: Path) -> None:
    """The same int8 weights, multiplied in float."""
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(src)
    graph = model.graph
    makers = {o: n for n in graph.node for o in n.output}
    users = {i: n for n in graph.node for i in n.input}
    inits = {t.name for t in graph.initializer}
    drop, added = set(), []
    for node in [n for n in graph.node if n.op_type == "MatMulInteger"]:
        activations = makers[node.input[0]].input[0]  # the float input DynamicQuantizeLinear read
        cast = users[node.output[0]]  # int32 -> float, then the Mul by both scales
        mul = users[cast.output[0]]
        scale = next(i for i in makers[mul.input[1]].input if i in inits)  # the weights' own
        name = node.name + "_float"
        added += [
            helper.make_node("Cast", [node.input[1]], [name + "_w8"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [name + "_w8", scale], [name + "_w"]),
            helper.make_node("MatMul", [activations, name + "_w"], [mul.output[0]], name=name),
        ]
        drop |= {node.name, cast.name, mul.name}
    nodes = [n for n in graph.node if n.name not in drop] + added
    needed = {o.name for o in graph.output}
    while True:  # drop what only the removed nodes read (the activation quantisers)
        needed |= {i for n in nodes for i in n.input}
        kept = [n for n in nodes if any(o in needed for o in n.output)]
        if len(kept) == len(nodes):
            break
        nodes, needed = kept, {o.name for o in graph.output}
    ready = {i.name for i in graph.input} | {t.name for t in graph.initializer} | {""}
    ordered: list[Any] = []
    while len(ordered) < len(nodes):
        for n in nodes:
            if n not in ordered and all(i in ready for i in n.input):
                ordered.append(n)
                ready |= set(n.output)
    del graph.node[:]
    graph.node.extend(ordered)
    onnx.checker.check_model(model)
    onnx.save(model, dst)


def pairs() -> list[tuple[str, list[tuple[str, str]]]]:
    """Each probe question of the example corpus with 12 of its sentences (seed 0)."""
    probes = [json.loads(line) for line in (ROOT / "examples" / "regpack.probes.jsonl").open()]
    sentences = [
        s.strip()
        for path in sorted((ROOT / "examples" / "regpack").rglob("*.md"))
        for s in path.read_text(encoding="utf-8").split(".")
        if len(s.split()) > 4
    ]
    rng = random.Random(0)
    return [
        (p["question"], [("", s) for s in rng.sample(sentences, PAIRS_PER_QUESTION)])
        for p in probes
    ]


def _scores(model: AnswerModel, asked: list[tuple[str, list[tuple[str, str]]]]) -> Any:
    started = time.perf_counter()
    scores = np.concatenate([model.score(q, ps) for q, ps in asked])
    return scores, 1000 * (time.perf_counter() - started) / len(asked)


def run() -> dict[str, Any]:
    asked = pairs()
    shipped, shipped_ms = _scores(AnswerModel.load(1, MODEL_PATH, SHA256), asked)
    data: dict[str, Any] = {
        "machine": machine(),
        "widest_weight": widest_weight(MODEL_PATH),
        "pairs": int(shipped.size),
        "min_answer": MIN_ANSWER,
        "shipped_ms": round(shipped_ms, 1),
        "variants": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "float.onnx"
        float_variant(MODEL_PATH, path)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        scores, ms = _scores(AnswerModel.load(1, path, digest), asked)
    diff = np.abs(scores - shipped)
    data["variants"]["float"] = {
        "mean_abs_diff": round(float(diff.mean()), 4),
        "max_abs_diff": round(float(diff.max()), 4),
        "other_side_of_min_answer": round(
            float(np.mean((scores >= MIN_ANSWER) != (shipped >= MIN_ANSWER))), 4
        ),
        "ms": round(ms, 1),
    }
    write_result("answer_int8", data, markdown(data))
    return data


def markdown(data: dict[str, Any]) -> str:
    lines = [
        "## The answer model's 8-bit arithmetic",
        "",
        "`python bench/answer_int8.py` (in `make bench`): the shipped `reader-int8.onnx` "
        "(uint8 activations times int8 weights) against the same weights multiplied in "
        f"float, scored on the same {data['pairs']} (question, sentence) pairs of the example "
        f"corpus. Baseline in the same run: the shipped file, {data['shipped_ms']} ms per "
        f"12-pair call on one thread. Its widest int8 weight is {data['widest_weight']}: "
        "within 64, so a CPU without VNNI, which adds the products in pairs in 16 bits, "
        "cannot overflow (255 x 64 x 2 < 32767) and every x86 CPU gives the same scores.",
        "",
        f"| variant | mean abs. difference | largest | on the other side of MIN_ANSWER "
        f"({data['min_answer']}) | ms per 12 pairs |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, v in data["variants"].items():
        lines.append(
            f"| {name} | {v['mean_abs_diff']:.4f} | {v['max_abs_diff']:.4f} | "
            f"{100 * v['other_side_of_min_answer']:.1f}% | {v['ms']} |"
        )
    m = data["machine"]
    lines += ["", f"Machine: {m['cpus']} CPUs, Python {m['python']}, run {m['date']}."]
    return "\n".join(lines)


if __name__ == "__main__":
    run()
