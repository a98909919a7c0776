"""Follow-up questions in a conversation: retrieval with and without making them standalone.

Two multi-turn sets over the example corpus, each conversation a few turns:
`examples/regpack.followups.jsonl` (the development set, written beside the rule,
so its figures are in-sample) and `bench/followups.heldout.jsonl` (written apart
from the rule and the development set, and not used to change either). Each turn
is `first` (opens a conversation), `followup` (cannot be understood without the
earlier turns) or `switch` (a new topic: the history must be dropped).

Each conversation is played as a user would: every turn is asked with the turns
before it (the questions and the answers the engine gave) through `Engine.ask`.
Recall@3 of the turn's expected sections is measured for three readings of the turn:

- **alone** (the baseline): the question as typed, no history;
- **joined** (a second baseline): the earlier questions and this one run together;
- **standalone**: the question the engine made of it (`Engine.resolve`: the rule,
  since no language model runs here).

and, for the standalone reading, whether the extractive answer holds the expected fact.

Where `make test-slow` has installed llama-cpp-python and the SmolLM2-135M model package,
a fourth reading is the question as that model rewrites it through the `gguf:` backend
(`Engine.resolve` with it as the generator; a rewrite that leaves out the question's own
words falls back to the rule). A 135M model is far below what the rewrite is meant for:
the figures say what the guard does with a weak model, not what a capable one achieves.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import ROOT, WORK, machine, smollm2_gguf, write_result

SETS = {
    "development (in-sample)": ROOT / "examples" / "regpack.followups.jsonl",
    "held-out": ROOT / "bench" / "followups.heldout.jsonl",
}
KINDS = ("followup", "switch", "first")
K = 3
READINGS = ("alone", "joined", "standalone", "model")


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _recall(found: Sequence[str], expected: Sequence[str]) -> float:
    return sum(e in found for e in expected) / len(expected)


def play(
    engine: Any, conversation: dict[str, Any], model: str | None = None
) -> list[dict[str, Any]]:
    """Each turn of one conversation, asked with the turns before it; with `model` (a
    generator spec), also read by that model's rewrite."""
    from groundqa.query import Query, Turn

    history: list[Turn] = []
    asked: list[str] = []
    rows: list[dict[str, Any]] = []
    for turn in conversation["turns"]:
        question, expected = turn["question"], turn["expected"]
        query = Query(question, history=history)
        resolved, followup = engine.resolve(query)
        readings = {
            "alone": question,
            "joined": " ".join([*asked, question]),
            "standalone": resolved.question,
        }
        if model is not None:
            by_model, read = engine.resolve(Query(question, history=history, generator=model))
            readings["model"] = by_model.question
        row: dict[str, Any] = {"kind": turn["kind"], "rewritten": followup.rewritten}
        if model is not None:
            row["model_kept"] = read.method.startswith("model:") and read.rewritten
        for name, text in readings.items():
            found = [h.chunk.section_id for h in engine.search(text[:2000], K)]
            row[name] = _recall(found, expected)
        answer = engine.ask(query)
        wanted = turn.get("answer_contains") or []
        row["answer_contains"] = (
            None if not wanted else (not answer.refused and any(w in answer.answer for w in wanted))
        )
        rows.append(row)
        history += [Turn("user", question), Turn("assistant", answer.answer)]
        asked.append(question)
    return rows


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        mine = [r for r in rows if r["kind"] == kind]
        if not mine:
            continue
        facts = [r["answer_contains"] for r in mine if r["answer_contains"] is not None]
        out[kind] = {
            "turns": len(mine),
            **{
                f"recall@{K} {name}": round(sum(r[name] for r in mine) / len(mine), 4)
                for name in READINGS
                if name in mine[0]
            },
            "rewritten": round(sum(r["rewritten"] for r in mine) / len(mine), 4),
            "answer contains the fact": round(sum(facts) / len(facts), 4) if facts else None,
        }
        if "model_kept" in mine[0]:
            out[kind]["model rewrite kept"] = round(
                sum(r["model_kept"] for r in mine) / len(mine), 4
            )
    return out


def run() -> dict[str, Any]:
    from groundqa.engine import Engine
    from groundqa.ingestion import ingest

    started = time.perf_counter()
    index = WORK / "followups" / "regpack"
    ingest([ROOT / "examples" / "regpack"], index)
    engine = Engine.open(index)
    gguf = smollm2_gguf()
    model = f"gguf:{gguf}" if gguf is not None else None
    sets: dict[str, Any] = {}
    for label, path in SETS.items():
        conversations = load(path)
        rows = [row for c in conversations for row in play(engine, c, model)]
        sets[label] = {
            "file": str(path.relative_to(ROOT)),
            "conversations": len(conversations),
            "by_kind": summarise(rows),
        }
    data = {
        "machine": machine(),
        "retriever": engine.default_retriever,
        "k": K,
        "model": gguf.name if gguf is not None else None,
        "sets": sets,
        "seconds": round(time.perf_counter() - started, 1),
    }
    lines = [
        "## Follow-up questions: recall@3 with and without making them standalone",
        "",
        f"`python bench/followups.py` (part of `make bench`; {data['seconds']} s): each "
        "conversation is played turn by turn through `Engine.ask` with the turns before it; "
        f"retrieval is the default plan ({data['retriever']}), answers extractive. *alone* is "
        "the question as typed (the baseline), *joined* the earlier questions and this one run "
        "together, *standalone* the question the engine made of it by the rule (the extractive "
        "generator has no model to rewrite with). The development set was written beside the rule (in-sample); the "
        "held-out set was written apart from both and not used to change the rule.",
        "",
    ]
    model_note = (
        f" *{data['model']}* is the question as that model rewrote it through `gguf:` "
        "(kept: the share of turns where its rewrite was used; the rest fell back to the rule)."
        if gguf is not None
        else " (The SmolLM2 model column needs `make test-slow`'s llama-cpp-python and model "
        "package; they were not installed for this run.)"
    )
    lines[-2] += model_note
    for label, result in sets.items():
        with_model = gguf is not None
        head = "| turns | n | recall@3 alone | recall@3 joined | recall@3 standalone |"
        rule = "|---|---:|---:|---:|---:|"
        if with_model:
            head += " recall@3 by the model | model rewrite kept |"
            rule += "---:|---:|"
        lines += [
            f"### {label}: `{result['file']}`, {result['conversations']} conversations",
            "",
            head + " read as a follow-up | answer contains the fact (standalone) |",
            rule + "---:|---:|",
        ]
        for kind, s in result["by_kind"].items():
            fact = s["answer contains the fact"]
            cells = [
                kind,
                str(s["turns"]),
                *(f"{s[f'recall@{K} {r}']:.3f}" for r in ("alone", "joined", "standalone")),
            ]
            if with_model:
                cells += [f"{s[f'recall@{K} model']:.3f}", f"{s['model rewrite kept']:.3f}"]
            cells += [f"{s['rewritten']:.3f}", "-" if fact is None else f"{fact:.3f}"]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    write_result("followups", data, "\n".join(lines))
    return data


if __name__ == "__main__":
    run()
