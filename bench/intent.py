"""Question intent: the rules in `generate/presets.py` against a labelled question set.

Labelling guideline for `bench/intents.jsonl` (the labels were set by it before the
rules were tuned; a question gets the first intent below that fits):

1. **comparison**: it asks to relate two or more things: a difference, which is
   higher, cheaper or stricter, X or Y, X versus Y, whether two rules are the same.
   Comparing two thresholds is still a comparison.
2. **procedure**: it asks how something is done or what to do: steps, a process,
   how to apply, report, appeal or lodge, what to do in an emergency, how a value
   is calculated or measured (a method).
3. **threshold**: the answer is a number that marks a boundary on a quantity
   other than time: the point at which a rule starts or stops applying (a trigger or
   cut-off: "at what level must a facility report", "how much can be cleared
   without a permit") or the most or least that is allowed or required (a
   maximum, minimum, limit or cap: "maximum fine", "minimum setback", "how far must
   a turbine be", "how big must the tank be"). A cut-off found in data ("above what
   temperature did the catalyst fail") counts too.
4. **definition**: it asks what a term or concept is or means ("What is a
   reporting threshold?" is a definition; "What is the reporting threshold for
   energy?" asks for the value and is a threshold).
5. **lookup**: any other fact, numbers included when they are not a boundary: a
   fee or fixed penalty ("How much does a permit cost?", "What is the fine for..."),
   a date, deadline, period, duration or clock time even when phrased as a limit
   ("How late can a band play", "How many days can a tourist stay"), a rate or
   ratio that simply applies, a count of things, who/where/which, and yes/no or
   what-happens questions that mention a number ("Does a tree with a 2 m trunk need
   a permit?").

Time is left to lookup because telling "how long is the comment period" from "how
long may I stay" needs the meaning of the rule, not the words of the question, and
the two presets differ little.

The questions are split for good by a stable hash of their text: the rules may be
tuned on `dev`; `held_out` is reported as it falls. One caveat, stated rather than
hidden: the rules were first drafted from the guideline while their author had all
of round 1 (`"round": 1`, 205 questions) in mind, held-out half included, so that
half is not clean. Round 2 (`"round": 2`) was written and labelled after that draft,
in phrasings round 1 lacks (context clauses, contractions, no question mark); only
its dev half was looked at while tuning, so `held_out, round 2` is the honest figure.
Two named baselines run beside them: the majority class (always `lookup`) and the
four-intent rules as they stood before `threshold` (frozen below), which can never
get a threshold question right. The answerable questions of the example corpus's
probe file have no intent labels, so only how they spread over intents is shown.

    python bench/intent.py
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, machine, write_result
from groundqa.query.intent import INTENTS, detect_intent

QUESTIONS = ROOT / "bench" / "intents.jsonl"
PROBES = ROOT / "examples" / "regpack.probes.jsonl"
HALVES = ("dev", "held_out")
# Parts reported: each half, and the held-out questions written after the rules were drafted.
PARTS = ("dev", "held_out", "held_out_round2")

# Frozen copy of the rules before `threshold` existed: the baseline, not to be tuned.
_OLD_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "comparison",
        re.compile(
            r"\b(compare|comparison|differen\w*|versus|vs\.?|better|rather than|"
            r"which is (?:more|less|higher|lower|larger|smaller))\b|\bboth\b.*\band\b",
            re.I,
        ),
    ),
    (
        "procedure",
        re.compile(
            r"^\s*(how (?:do|can|should|must|would) (?:i|we|you|one|a|an|the)\b|how to\b|what (?:are )?"
            r"the steps|what steps|what (?:is|are) the (?:process|procedure)|steps? (?:to|for)|"
            r"apply for|process for)",
            re.I,
        ),
    ),
    (
        "definition",
        re.compile(
            r"^\s*(what (?:is|are|does) (?:a|an|the)?\s*[\w\-]+(?:\s+[\w\-]+){0,3}\s*(?:mean)?\??$|"
            r"define\b|definition of|what does .+ (?:mean|stand for)|meaning of)",
            re.I,
        ),
    ),
)


def old_rules(question: str) -> str:
    """The four-intent classifier as it was before `threshold` (baseline)."""
    for intent, rule in _OLD_RULES:
        if rule.search(question):
            return intent
    return "lookup"


def majority(question: str) -> str:
    """The majority-class baseline."""
    return "lookup"


CLASSIFIERS: dict[str, Callable[[str], str]] = {
    "rules": detect_intent,
    "old rules (4 intents)": old_rules,
    "majority (always lookup)": majority,
}


def half(question: str) -> str:
    """`dev` or `held_out`, fixed by the question's text alone."""
    return HALVES[hashlib.sha256(question.encode("utf-8")).digest()[0] % 2]


def load_questions(path: Path = QUESTIONS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def part_of(question: dict[str, Any], part: str) -> bool:
    if part == "held_out_round2":
        return half(question["question"]) == "held_out" and question.get("round") == 2
    return half(question["question"]) == part


def scores(gold: Sequence[str], predicted: Sequence[str]) -> dict[str, Any]:
    """Accuracy, per-intent precision/recall/F1, macro F1 and the confusion matrix."""
    confusion = {g: {p: 0 for p in INTENTS} for g in INTENTS}
    for g, p in zip(gold, predicted, strict=True):
        confusion[g][p] += 1
    per: dict[str, dict[str, float]] = {}
    for intent in INTENTS:
        tp = confusion[intent][intent]
        said = sum(confusion[g][intent] for g in INTENTS)
        truth = sum(confusion[intent].values())
        precision = tp / said if said else 0.0
        recall = tp / truth if truth else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per[intent] = {
            "precision": round(precision, 4),
            "recall": round(recall, 4),
            "f1": round(f1, 4),
            "n": truth,
        }
    right = sum(confusion[i][i] for i in INTENTS)
    return {
        "n": len(gold),
        "accuracy": round(right / len(gold), 4) if gold else 0.0,
        "macro_f1": round(sum(v["f1"] for v in per.values()) / len(INTENTS), 4),
        "per_intent": per,
        "confusion": confusion,
    }


def evaluate(questions: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in PARTS:
        items = [q for q in questions if part_of(q, part)]
        gold = [q["intent"] for q in items]
        out[part] = {}
        for name, fn in CLASSIFIERS.items():
            predicted = [fn(q["question"]) for q in items]
            result = scores(gold, predicted)
            result["wrong"] = [
                {"question": q["question"], "gold": g, "predicted": p}
                for q, g, p in zip(items, gold, predicted, strict=True)
                if g != p
            ]
            out[part][name] = result
    return out


def probe_spread(path: Path = PROBES) -> dict[str, dict[str, int]]:
    """How the answerable probe questions spread over intents, per classifier (no labels)."""
    probes = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    asked = [p["question"] for p in probes if p["kind"] == "answerable"]
    return {
        name: {i: Counter(fn(q) for q in asked)[i] for i in INTENTS}
        for name, fn in CLASSIFIERS.items()
        if name != "majority (always lookup)"
    }


# ---------------------------------------------------------------- markdown


def _summary(result: dict[str, Any]) -> list[str]:
    rows = [
        "| classifier | accuracy | macro F1 | " + " | ".join(f"{i} P/R/F1" for i in INTENTS) + " |",
        "|---|---:|---:|" + "---:|" * len(INTENTS),
    ]
    for name, r in result.items():
        cells = [
            f"{v['precision']:.2f}/{v['recall']:.2f}/{v['f1']:.2f}"
            for v in (r["per_intent"][i] for i in INTENTS)
        ]
        rows.append(
            f"| {name} | {r['accuracy']:.3f} | {r['macro_f1']:.3f} | " + " | ".join(cells) + " |"
        )
    return rows


def _confusion(r: dict[str, Any]) -> list[str]:
    rows = [
        "| labelled \\ predicted | " + " | ".join(INTENTS) + " |",
        "|---|" + "---:|" * len(INTENTS),
    ]
    for g in INTENTS:
        rows.append(f"| {g} | " + " | ".join(str(r["confusion"][g][p]) for p in INTENTS) + " |")
    return rows


TITLES = {
    "dev": "Dev half (the rules were tuned on it)",
    "held_out": "Held-out half (round 1 was in mind when the rules were drafted; see below)",
    "held_out_round2": "Held out, round 2 only (written after the draft, never tuned on)",
}


def markdown(data: dict[str, Any]) -> str:
    labels = data["labels"]
    md = [
        "## Question intent: the rules that pick a generation preset",
        "",
        f"`python bench/intent.py`; {labels['n']} questions written and labelled by hand "
        "(`bench/intents.jsonl`; labelling guideline at the top of `bench/intent.py`): "
        + ", ".join(f"{k} {v}" for k, v in labels["intents"].items())
        + f". Split for good by a hash of the text: {labels['dev']} dev, "
        f"{labels['held_out']} held out ({labels['held_out_round2']} of them from round 2)"
        + ". Round 1 (205 questions) was in mind when the rules were first drafted, its "
        "held-out half included; round 2 (73) was written afterwards in phrasings round 1 "
        "lacks, and only its dev half was looked at while tuning, so the last table is the "
        "honest one. Cells per intent: precision/recall/F1. `old rules` are the four-intent "
        "rules from before `threshold` (a threshold question can never be right for them).",
        "",
    ]
    for part in PARTS:
        md += [f"**{TITLES[part]}**", "", *_summary(data[part]), ""]
    for part in ("dev", "held_out"):
        md += [
            f"Confusion of `rules`, {part.replace('_', ' ')}:",
            "",
            *_confusion(data[part]["rules"]),
            "",
        ]
    wrong = data["held_out"]["rules"]["wrong"]
    if wrong:
        md += ["Held-out questions the rules get wrong:", ""]
        md += [f"- {w['question']} (labelled {w['gold']}, said {w['predicted']})" for w in wrong]
        md += [""]
    spread = data["probes"]
    md += [
        f"**The example corpus's {sum(spread['rules'].values())} answerable probe questions** "
        "(`examples/regpack.probes.jsonl`; no intent labels, counts only):",
        "",
        "| classifier | " + " | ".join(INTENTS) + " |",
        "|---|" + "---:|" * len(INTENTS),
        *(
            f"| {name} | " + " | ".join(str(c[i]) for i in INTENTS) + " |"
            for name, c in spread.items()
        ),
    ]
    return "\n".join(md)


def run() -> dict[str, Any]:
    questions = load_questions()
    labels: dict[str, Any] = {
        "n": len(questions),
        "intents": {i: sum(q["intent"] == i for q in questions) for i in INTENTS},
        **{p: sum(part_of(q, p) for q in questions) for p in PARTS},
    }
    data: dict[str, Any] = {"machine": machine(), "labels": labels, **evaluate(questions)}
    data["probes"] = probe_spread()
    write_result("intent", data, markdown(data))
    return data


if __name__ == "__main__":
    run()
