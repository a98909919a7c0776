"""Concise extractive answers: what the quoted answer says, and how much of it there is.

The extractive answerer (the offline default, lexical reader) quotes the best sentence
and every further sentence scoring within 0.75 of it (up to three). `extractive:concise`
quotes a further sentence only where that holds a word of the question's topic that none
of the quoted ones holds, or ties with the best (`ExtractiveGenerator.concise`). Four
answerers read the same evidence for every answerable question, in one run:

- the default: the sentences within 0.75 of the best, the baseline;
- `extractive:concise`;
- topic words only: the concise rule without the ties (`quote_ties=False`);
- best only: the best sentence, with the one after it when that holds the kind of fact
  asked for (`max_sentences=1`): the floor of what can be cut.

Each question is asked as `ask` asks it (retrieve and read; `Engine.screen`), over a
BM25-only build with the default settings, and every answerer quotes from that one
Reading, so the only difference is what is quoted. The gate is left out: it does not
depend on what is quoted.

Measured: the share of answers that hold the question's expected fact (sets whose
questions name one: the example corpus, the city guides, the real documents and the
held-out manuals), and words and sentences per answer. On ClapNQ's shared half, whose
answers were written by people from the passage's sentences, token precision, recall
and F1 against the best-matching reference answer (SQuAD's normalisation: lower case, no
punctuation or articles). ObliQA dev and Natech are included for length alone: their
questions name no answer.

The topic-word rule was written before any of these sets was run with it; the ties were
added after its first run on the example corpus, the city guides, Natech and ClapNQ, so those
are in-sample for that choice. The held-out manuals were run only with both in place.

    python bench/concise.py   # (part of `make bench`)
"""

from __future__ import annotations

import json
import re
import statistics
import string
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import WORK, machine, shared_path, write_result
from groundqa.engine import Engine
from groundqa.evaluate.calibrate import screen
from groundqa.evaluate.harness import holds_all
from groundqa.evaluate.probes import Probe
from groundqa.generate.extractive import ExtractiveGenerator
from groundqa.ingestion import ingest
from sets import corpora, real_documents

CONCISE_WORK = WORK / "concise"
ANSWERERS = {
    "default (within 0.75 of the best, up to 3)": ExtractiveGenerator(),
    "extractive:concise (a topic word not yet quoted, or a tie)": ExtractiveGenerator(concise=True),
    "topic words only (ties not quoted)": ExtractiveGenerator(concise=True, quote_ties=False),
    "best sentence only": ExtractiveGenerator(max_sentences=1),
}
_MARKER = re.compile(r" ?\[\d+\]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def tokens(text: str) -> list[str]:
    """SQuAD's answer normalisation: lower case, punctuation and articles removed."""
    text = _MARKER.sub("", text).lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    return _ARTICLES.sub(" ", text).split()


def overlap(answer: str, reference: str) -> tuple[float, float, float]:
    """Token precision, recall and F1 of `answer` against `reference`."""
    mine, theirs = tokens(answer), tokens(reference)
    common = sum((Counter(mine) & Counter(theirs)).values())
    if not mine or not theirs or common == 0:
        return 0.0, 0.0, 0.0
    p, r = common / len(mine), common / len(theirs)
    return p, r, 2 * p * r / (p + r)


def clapnq_references(folder: Path) -> dict[str, list[str]]:
    """Probe id (as `sets.clapnq_corpus` names it) -> the reference answers."""
    out: dict[str, list[str]] = {}
    path = folder / "clapnq_dev_answerable.jsonl"
    for raw in path.read_text(encoding="utf-8").splitlines():
        if raw.strip():
            item = json.loads(raw)
            answers = [o["answer"] for o in item.get("output", []) if o.get("answer")]
            out[f"clapnq-{item['id']}"] = answers
    return out


def measure(
    name: str,
    sources: Sequence[Path],
    fmt: str,
    probes: Sequence[Probe],
    references: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    started = time.perf_counter()
    index = CONCISE_WORK / name.lower().replace(" ", "_")
    ingest(list(sources), index, fmt=fmt, dense=None)
    engine = Engine.open(index, reader="lexical")
    rows: dict[str, dict[str, list[float]]] = {a: {} for a in ANSWERERS}
    answerable = [p for p in probes if p.kind == "answerable"]
    for probe in answerable:
        evidence, _ = screen(engine, probe.question, scope=probe.scope or {})
        for label, answerer in ANSWERERS.items():
            result = answerer.generate(evidence)
            if result.refused:
                continue
            into = rows[label]
            into.setdefault("words", []).append(len(_MARKER.sub("", result.text).split()))
            into.setdefault("sentences", []).append(len(_MARKER.findall(result.text)))
            if probe.answer_contains:
                held = holds_all(result.text, probe.answer_contains)
                into.setdefault("fact", []).append(float(held))
            refs = (references or {}).get(probe.id)
            if refs:
                best = max((overlap(result.text, r) for r in refs), key=lambda o: o[2])
                for key, value in zip(("precision", "recall", "f1"), best, strict=True):
                    into.setdefault(key, []).append(value)
    return {
        "answerable": len(answerable),
        "answerers": {label: _summary(values) for label, values in rows.items()},
        "seconds": round(time.perf_counter() - started, 1),
    }


def _summary(values: dict[str, list[float]]) -> dict[str, Any]:
    out: dict[str, Any] = {"answered": len(values.get("words", []))}
    if values.get("words"):
        out["words_median"] = statistics.median(values["words"])
        out["words_mean"] = round(statistics.fmean(values["words"]), 1)
        out["sentences_mean"] = round(statistics.fmean(values["sentences"]), 2)
        out["one_sentence"] = round(values["sentences"].count(1) / len(values["sentences"]), 3)
    if values.get("fact"):
        out["fact_checked"] = len(values["fact"])
        out["fact_held"] = int(sum(values["fact"]))
    for key in ("precision", "recall", "f1"):
        if values.get(key):
            out[f"token_{key}"] = round(statistics.fmean(values[key]), 4)
    return out


def markdown(data: dict[str, Any]) -> str:
    lines = [
        "# Concise extractive answers",
        "",
        "Every answerable question of each visible set, read once (lexical reader, BM25-only "
        "build, default settings) and quoted by three answerers from the same reading. "
        "`fact`: answers that hold the expected fact, of those answered that name one. "
        "Token figures: against ClapNQ's best-matching reference answer (mean over answered "
        "questions). Produced by `python bench/concise.py`.",
        "",
        "| set | answerer | answered | words (median / mean) | sentences (mean) | "
        "one sentence | fact | token P / R / F1 |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, result in data["sets"].items():
        for label, s in result["answerers"].items():
            fact = f"{s['fact_held']}/{s['fact_checked']}" if "fact_checked" in s else "—"
            token = (
                f"{s['token_precision']:.3f} / {s['token_recall']:.3f} / {s['token_f1']:.3f}"
                if "token_f1" in s
                else "—"
            )
            lines.append(
                f"| {name} | {label} | {s['answered']}/{result['answerable']} | "
                f"{s.get('words_median', 0):g} / {s.get('words_mean', 0):g} | "
                f"{s.get('sentences_mean', 0):.2f} | {s.get('one_sentence', 0):.0%} | "
                f"{fact} | {token} |"
            )
    m = data["machine"]
    lines += ["", f"Machine: {m['cpus']} CPUs, Python {m['python']}, run {m['date']}."]
    return "\n".join(lines)


def run(names: Sequence[str] | None = None) -> dict[str, Any]:
    sets: dict[str, Any] = {}
    clapnq = shared_path("bench", "clapnq")
    references = clapnq_references(clapnq) if clapnq is not None else {}
    for name, (sources, fmt, probes) in {**corpora(), **real_documents()}.items():
        if names and name not in names:
            continue
        print(f"concise: {name} ({len(probes)} questions)", flush=True)
        refs = references if name.startswith("ClapNQ") else None
        sets[name] = measure(name, sources, fmt, probes, refs)
    data = {"sets": sets, "machine": machine()}
    write_result("concise", data, markdown(data))
    return data


if __name__ == "__main__":
    run(sys.argv[1:] or None)
