"""The answer model's 8-bit arithmetic: the shipped file against two CPU-independent variants.

The shipped `reader-int8.onnx` multiplies uint8 activations by int8 weights over their
full range (`MatMulInteger`, onnxruntime's U8S8), which CPUs without VNNI can saturate.
Two variants of the same file avoid that, and this measures what each would change:

- `float`: the same int8 weights, multiplied in float (`Cast`, the weight scale, `MatMul`),
  as the packaged embedder runs;
- `7-bit`: the weights requantised to [-64, 63] with twice the scale (`reduce_range`).

Baseline in the same run: the shipped file. Pairs: each question of the example corpus's
probes against 12 sentences drawn (seed 0) from the corpus; per variant, the mean and
largest |difference| in P(answers), the share of pairs on the other side of `MIN_ANSWER`,
and milliseconds per 12-pair call (one thread). Nothing here is shipped.

    .venv-ref/bin/python bench/answer_int8.py   # needs onnx: pip install 'onnx>=1.16'
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


def _scale_of(graph: Any, node: Any) -> tuple[Any, str]:
    """A `MatMulInteger`'s output Mul, and the name of its weight-scale initializer."""
    users = {i: n for n in graph.node for i in n.input}
    makers = {o: n for n in graph.node for o in n.output}
    cast = users[node.output[0]]
    mul = users[cast.output[0]]
    inits = {t.name for t in graph.initializer}
    scale = next(i for i in makers[mul.input[1]].input if i in inits)
    return mul, scale


def float_variant(src: Path, dst: Path) -> None:
    """The same int8 weights, multiplied in float."""
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(src)
    graph = model.graph
    makers = {o: n for n in graph.node for o in n.output}
    users = {i: n for n in graph.node for i in n.input}
    drop, added = set(), []
    for node in [n for n in graph.node if n.op_type == "MatMulInteger"]:
        activations = makers[node.input[0]].input[0]  # the float input DynamicQuantizeLinear read
        mul, scale = _scale_of(graph, node)
        name = node.name + "_float"
        added += [
            helper.make_node("Cast", [node.input[1]], [name + "_w8"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [name + "_w8", scale], [name + "_w"]),
            helper.make_node("MatMul", [activations, name + "_w"], [mul.output[0]], name=name),
        ]
        drop |= {node.name, users[node.output[0]].name, mul.name}
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


def seven_bit_variant(src: Path, dst: Path) -> None:
    """The weights requantised to 7 bits, the scale doubled."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(src)
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    for node in [n for n in graph.node if n.op_type == "MatMulInteger"]:
        _, scale = _scale_of(graph, node)
        weights = numpy_helper.to_array(inits[node.input[1]]).astype(np.int32)
        seven = np.clip(np.round(weights / 2.0), -64, 63).astype(np.int8)
        doubled = numpy_helper.to_array(inits[scale]).astype(np.float32) * 2
        inits[node.input[1]].CopyFrom(numpy_helper.from_array(seven, node.input[1]))
        inits[scale].CopyFrom(numpy_helper.from_array(doubled, scale))
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
        "pairs": int(shipped.size),
        "min_answer": MIN_ANSWER,
        "shipped_ms": round(shipped_ms, 1),
        "variants": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in (("float", float_variant), ("7-bit", seven_bit_variant)):
            path = Path(tmp) / f"{name}.onnx"
            make(MODEL_PATH, path)
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            scores, ms = _scores(AnswerModel.load(1, path, digest), asked)
            diff = np.abs(scores - shipped)
            data["variants"][name] = {
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
        "`.venv-ref/bin/python bench/answer_int8.py`: the shipped `reader-int8.onnx` "
        "(uint8 activations times int8 weights, which CPUs without VNNI can saturate) "
        "against two variants that do not depend on the CPU, scored on the same "
        f"{data['pairs']} (question, sentence) pairs of the example corpus. Baseline in the "
        f"same run: the shipped file, {data['shipped_ms']} ms per 12-pair call on one thread. "
        "Nothing here is shipped.",
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
