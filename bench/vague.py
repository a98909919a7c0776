"""Questions that name no topic ("What about the fees?"), before and after the gate weighs
coverage by how much the question says (`gate.features.specificity`).

Coverage is a share of the question's words, so a one-word question is covered in full
by any passage with the word, and the default gate answered such questions with
near-certain confidence (0.99). Every coverage is now weighed by the question's
specificity, and the lexical default gate was refitted on the same example-corpus probes
(`bench/default_gate.py`). Both gates judge the same retrieval and reading of every
question in one run:

- before: the default gate as it was at e55e5af (its literal below), over the features
  without specificity (the index's size left out, so specificity is 1): the baseline;
- now: today's default gate over today's features.

Each with its built-in floor (no index fits its own here, so the two are alike). An
answer is refused where the gate refuses it or the extractive answerer finds no
sentence, as `ask` does. Asked of every visible corpus (BM25-only builds, lexical reader):

- the corpus's own questions: answerable, near-miss and out-of-scope outcomes, and the
  reliability of the confidence (P(answerable) in bins against the answerable share);
- `bench/vague_questions.txt` (30 questions, asked of every corpus; they were looked at
  when `SPECIFIC_WORDS` was chosen, so they are in-sample for it) and
  `bench/vague_questions.heldout.txt` (20 more, written after it was chosen, and run
  once it was fixed): how many are answered with confidence, and the highest confidence.

    python bench/vague.py   # (part of `make bench`)
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, WORK, machine, write_result
from groundqa.engine import Engine
from groundqa.evaluate.calibrate import reliability
from groundqa.evaluate.probes import KINDS, Probe
from groundqa.gate import DEFAULT_GATE, Gate, gate_features
from groundqa.gate.features import LEXICAL_FEATURES
from groundqa.gate.model import Logistic
from groundqa.generate import Evidence
from groundqa.generate.extractive import ExtractiveGenerator
from groundqa.ingestion import ingest
from sets import corpora, real_documents

VAGUE_WORK = WORK / "vague"
SEEN = ROOT / "bench" / "vague_questions.txt"
HELD_OUT = ROOT / "bench" / "vague_questions.heldout.txt"
# The lexical default gate at e55e5af, fitted on the same probes over features without
# specificity: the baseline.
BEFORE = Gate(
    Logistic(
        names=LEXICAL_FEATURES,
        mean=(0.596077, 0.555142, 0.210331, 0.088898, 0.211530, 0.543518, 0.049383),
        scale=(0.270762, 0.276084, 0.313895, 0.033426, 0.148901, 0.250980, 0.216666),
        coef=(0.491738, 1.363217, 0.285379, -0.125997, 0.100162, 0.352444, -0.968589),
        intercept=0.770920,
    ),
    0.399527,
    calibrated=False,
    floor_at=0.373034,
)
GATES = {"before (no specificity)": BEFORE, "now (coverage weighed by specificity)": DEFAULT_GATE}
BINS = 5


def questions(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def judge(engine: Engine, question: str, scope: dict[str, Any]) -> dict[str, tuple[str, float]]:
    """gate name -> (outcome, P(answerable)) for one question, end to end."""
    retrieval = engine.retrieval(question, scope=scope)
    reading = engine.read(retrieval)
    evidence = Evidence(
        question, retrieval.weights, retrieval.hits, engine.passage_text, reading=reading
    )
    quoted = not ExtractiveGenerator().generate(evidence).refused
    out: dict[str, tuple[str, float]] = {}
    for name, gate in GATES.items():
        seen = retrieval if gate is not BEFORE else replace(retrieval, chunks=0)
        decision = gate.decide(retrieval.weights, gate_features(seen, reading))
        outcome = decision.outcome if quoted or decision.outcome == "refused" else "refused"
        out[name] = (outcome, decision.score)
    return out


def _tally(rows: Sequence[tuple[str, float]]) -> dict[str, Any]:
    outcomes = [o for o, _ in rows]
    p = [c for _, c in rows]
    return {
        "n": len(rows),
        "confident": outcomes.count("confident"),
        "cautious": outcomes.count("cautious"),
        "refused": outcomes.count("refused"),
        "highest": round(max(p), 4) if p else 0.0,
        "mean": round(statistics.fmean(p), 4) if p else 0.0,
    }


def measure(
    name: str, sources: Sequence[Path], fmt: str, probes: Sequence[Probe]
) -> dict[str, Any]:
    started = time.perf_counter()
    index = VAGUE_WORK / name.lower().replace(" ", "_").replace(",", "")
    ingest(list(sources), index, fmt=fmt, dense=None)
    engine = Engine.open(index, reader="lexical")
    judged = [(p, judge(engine, p.question, dict(p.scope or {}))) for p in probes]
    sets = {"seen": questions(SEEN), "held out": questions(HELD_OUT)}
    vague = {key: [judge(engine, q, {}) for q in qs] for key, qs in sets.items()}
    out: dict[str, Any] = {"questions": len(probes), "gates": {}}
    for gate in GATES:
        kinds = {
            kind: _tally([j[gate] for p, j in judged if p.kind == kind])
            for kind in KINDS
            if any(p.kind == kind for p, _ in judged)
        }
        row: dict[str, Any] = {
            "kinds": kinds,
            "vague": {key: _tally([j[gate] for j in rows]) for key, rows in vague.items()},
        }
        if len(kinds) > 1:
            y = np.asarray([float(p.answerable) for p, _ in judged])
            p = np.asarray([j[gate][1] for _, j in judged])
            row["reliability"] = reliability(y, p, BINS)
        out["gates"][gate] = row
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole}" if whole else "—"


def markdown(data: dict[str, Any]) -> str:
    lines = [
        "# Questions that name no topic",
        "",
        "Every visible corpus (BM25-only build, lexical reader), its own questions and two "
        "lists of questions that name no topic, judged end to end by two default gates "
        "from the same retrieval and reading: before (no specificity; the default at "
        "e55e5af) and now (every coverage weighed by the question's specificity). Built-in "
        "floors. `vague, seen`: `bench/vague_questions.txt`, looked at when "
        "`SPECIFIC_WORDS` was chosen; `vague, held out`: `bench/vague_questions.heldout.txt`, "
        "written after and run once. Produced by `python bench/vague.py`.",
        "",
        "| set | gate | answerable confident / cautious / refused | near miss confident | "
        "out of scope refused | vague, seen: confident (highest P) | "
        "vague, held out: confident (highest P) |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for name, result in data["sets"].items():
        for gate, row in result["gates"].items():
            k = row["kinds"]
            a = k.get("answerable")
            answerable = (
                f"{a['confident']} / {a['cautious']} / {a['refused']} of {a['n']}" if a else "—"
            )
            near = k.get("near_miss")
            oos = k.get("out_of_scope")
            seen, held = row["vague"]["seen"], row["vague"]["held out"]
            lines.append(
                f"| {name} | {gate} | {answerable} | "
                f"{_share(near['confident'], near['n']) if near else '—'} | "
                f"{_share(oos['refused'], oos['n']) if oos else '—'} | "
                f"{seen['confident']}/{seen['n']} ({seen['highest']:.2f}) | "
                f"{held['confident']}/{held['n']} ({held['highest']:.2f}) |"
            )
    lines += [
        "",
        "## Reliability of the confidence",
        "",
        "P(answerable) in five equal bins against the share of the corpus's own questions "
        "in the bin that are answerable (sets with more than one kind).",
        "",
        "| set | gate | bins: n, mean P → answerable share |",
        "|---|---|---|",
    ]
    for name, result in data["sets"].items():
        for gate, row in result["gates"].items():
            if not row.get("reliability"):
                continue
            cells = "; ".join(
                f"{b['lo']:.1f}–{b['hi']:.1f}: {b['n']}, {b['mean_confidence']:.2f} → "
                f"{b['answerable_share']:.2f}"
                for b in row["reliability"]
            )
            lines.append(f"| {name} | {gate} | {cells} |")
    m = data["machine"]
    lines += ["", f"Machine: {m['cpus']} CPUs, Python {m['python']}, run {m['date']}."]
    return "\n".join(lines)


def run(names: Sequence[str] | None = None) -> dict[str, Any]:
    sets: dict[str, Any] = {}
    for name, (sources, fmt, probes) in {**corpora(), **real_documents()}.items():
        if names and name not in names:
            continue
        print(f"vague: {name} ({len(probes)} questions)", flush=True)
        sets[name] = measure(name, sources, fmt, probes)
    data = {"sets": sets, "machine": machine()}
    write_result("vague", data, markdown(data))
    return data


if __name__ == "__main__":
    run(sys.argv[1:] or None)
