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
A rewrite by an LLM backend is not measured: no model runs offline in this benchmark.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import ROOT, WORK, machine, write_result

SETS = {
    "development (in-sample)": ROOT / "examples" / "regpack.followups.jsonl",
    "held-out": ROOT / "bench" / "followups.heldout.jsonl",
}
KINDS = ("followup", "switch", "first")
K = 3
READINGS = ("alone", "joined", "standalone")


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _recall(found: Sequence[str], expected: Sequence[str]) -> float:
    return sum(e in found for e in expected) / len(expected)


def play(engine: Any, conversation: dict[str, Any]) -> list[dict[str, Any]]:
    """Each turn of one conversation, asked with the turns before it."""
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
        row: dict[str, Any] = {"kind": turn["kind"], "rewritten": followup.rewritten}
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
            },
            "rewritten": round(sum(r["rewritten"] for r in mine) / len(mine), 4),
            "answer contains the fact": round(sum(facts) / len(facts), 4) if facts else None,
        }
    return out


def run() -> dict[str, Any]:
    from groundqa.engine import Engine
    from groundqa.ingestion import ingest

    started = time.perf_counter()
    index = WORK / "followups" / "regpack"
    ingest([ROOT / "examples" / "regpack"], index)
    engine = Engine.open(index)
    sets: dict[str, Any] = {}
    for label, path in SETS.items():
        conversations = load(path)
        rows = [row for c in conversations for row in play(engine, c)]
        sets[label] = {
            "file": str(path.relative_to(ROOT)),
            "conversations": len(conversations),
            "by_kind": summarise(rows),
        }
    data = {
        "machine": machine(),
        "retriever": engine.default_retriever,
        "k": K,
        "sets": sets,
        "seconds": round(time.perf_counter() - started, 1),
    }
    lines = [
        "## Follow-up questions: recall@3 with and without making them standalone",
        "",
        f"`python bench/followups.py` (part of `make bench`; {data['seconds']} s): each "
        "conversation is played turn by turn through `Engine.ask` with the turns before it; "
        f"retrieval is the default plan ({data['retriever']}), no language model (the rule "
        "reads the follow-ups). *alone* is the question as typed (the baseline), *joined* the "
        "earlier questions and this one run together, *standalone* the question the engine "
        "made of it. The development set was written beside the rule (in-sample); the "
        "held-out set was written apart from both and not used to change the rule.",
        "",
    ]
    for label, result in sets.items():
        lines += [
            f"### {label}: `{result['file']}`, {result['conversations']} conversations",
            "",
            "| turns | n | recall@3 alone | recall@3 joined | recall@3 standalone | "
            "read as a follow-up | answer contains the fact (standalone) |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for kind, s in result["by_kind"].items():
            fact = s["answer contains the fact"]
            lines.append(
                f"| {kind} | {s['turns']} | {s[f'recall@{K} alone']:.3f} | "
                f"{s[f'recall@{K} joined']:.3f} | {s[f'recall@{K} standalone']:.3f} | "
                f"{s['rewritten']:.3f} | {'-' if fact is None else f'{fact:.3f}'} |"
            )
        lines.append("")
    write_result("followups", data, "\n".join(lines))
    return data


if __name__ == "__main__":
    run()
