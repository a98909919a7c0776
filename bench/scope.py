"""Location-scoped questions over the example corpus, with and without the asker's scope.

`examples/regpack.scoped.probes.jsonl` holds questions that do not name a place;
each probe's `scope` says where the asker is, and several questions are asked
from two or three places whose rules differ. The baseline is the same engine
without the scope (the question alone, as a user who gives no location gets).
A right answer holds the expected fact AND cites the section expected for that
place; `cited outside scope` is the share of answers that cite a document that
does not apply where the asker is (target 0 with the scope on).
"""

from __future__ import annotations

import time
from typing import Any

from _common import ROOT, WORK, machine, write_result

PROBES = ROOT / "examples" / "regpack.scoped.probes.jsonl"
GENERAL_PROBES = ROOT / "examples" / "regpack.probes.jsonl"
RETRIEVERS = ("bm25", "hybrid+weighted=0.5/0.5+defs")
KEYS = (
    ("answer_cited_right", "right answer, right clause cited"),
    ("answer_contains", "answer contains the expected fact"),
    ("recall@1", "recall@1"),
    ("recall@3", "recall@3"),
    ("cited_outside_scope", "answers citing a document outside the asker's jurisdiction"),
    ("false_refusal", "refused"),
)


def _row(report: Any) -> dict[str, Any]:
    row: dict[str, Any] = {key: round(report.metrics.get(key, 0.0), 4) for key, _ in KEYS}
    answered = [r for r in report.results if not r.refused]
    row["answered"] = len(answered)
    row["right_of_answered"] = round(
        sum(bool(r.cited_right) for r in answered) / max(1, len(answered)), 4
    )
    return row


def run() -> dict[str, Any]:
    from groundqa.engine import Engine
    from groundqa.evaluate import load_probes
    from groundqa.evaluate.calibrate import calibrate, install
    from groundqa.evaluate.harness import evaluate_probes
    from groundqa.evaluate.selffit import reset
    from groundqa.ingestion import ingest

    started = time.perf_counter()
    probes = load_probes(PROBES)
    index = WORK / "scope" / "regpack"
    ingest([ROOT / "examples" / "regpack"], index)
    engine = Engine.open(index)
    runs: dict[str, dict[str, float]] = {}
    for retriever in RETRIEVERS:
        for use_scope in (False, True):
            report = evaluate_probes(
                engine, probes, ks=(1, 3, 5), retriever=retriever, use_scope=use_scope
            )
            label = f"{retriever}, {'scope on' if use_scope else 'no scope (baseline)'}"
            runs[label] = _row(report)
    # The same questions with the gate calibrated for this index on the corpus's general
    # probe set (none of these questions is in it), as `groundqa calibrate` would store it.
    fitted = calibrate(engine, load_probes(GENERAL_PROBES))
    install(index, fitted.gate.to_dict())
    calibrated = Engine.open(index)
    report = evaluate_probes(calibrated, probes, ks=(1, 3, 5), use_scope=True)
    label = f"{calibrated.default_retriever}, scope on, calibrated gate"
    runs[label] = _row(report)
    reset(index)
    places = sorted({f"{k}={v}" for p in probes for k, vs in p.scope.items() for v in vs})
    data = {
        "machine": machine(),
        "probes": len(probes),
        "places": places,
        "runs": runs,
        "seconds": round(time.perf_counter() - started, 1),
    }
    header = "| metric | " + " | ".join(runs) + " |"
    lines = [
        "## Location-scoped questions (example corpus)",
        "",
        f"`python bench/scope.py` (part of `make bench`; {data['seconds']} s): "
        f"{len(probes)} questions from `examples/regpack.scoped.probes.jsonl` that do not name "
        f"a place, each asked from a place given as scope ({', '.join(places)}); "
        "extractive answers; the built-in default gate, and in the last column the gate "
        "calibrated for this index on `examples/regpack.probes.jsonl` (which holds none of "
        "these questions).",
        "",
        header,
        "|---|" + "---:|" * len(runs),
    ]
    for key, label in KEYS:
        lines.append(f"| {label} | " + " | ".join(f"{r[key]:.3f}" for r in runs.values()) + " |")
    lines.append(
        "| right answer, right clause, of those answered | "
        + " | ".join(f"{r['right_of_answered']:.3f}" for r in runs.values())
        + " |"
    )
    lines.append(
        "| answered (of the scoped probes) | "
        + " | ".join(str(r["answered"]) for r in runs.values())
        + " |"
    )
    write_result("scope", data, "\n".join(lines))
    return data


if __name__ == "__main__":
    run()
