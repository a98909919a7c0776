"""The acceptance figure: ClapNQ's reserved half, measured once, with everything fixed.

The answer model, its `MIN_ANSWER` and the gate's recipe were all fixed before this
ran. The gate is calibrated on the shared half (../shared/bench/clapnq: 143 answerable,
132 unanswerable questions; the answer model trained on it too) exactly as `groundqa
calibrate` does, then applied unchanged (model and threshold) to the reserved half
(../shared/bench/reserved/clapnq), indexed the same way in an index of its own: the
default build (BM25 and MiniLM vectors) over every passage its questions list. It
reports the AUC of the gate's confidence on the reserved half, the share of its
unanswerable questions refused at the threshold set on the shared half for 5% false
refusal, the false refusals that threshold gives there, and the share refused where
the reserved half's own curve reaches 5% false refusal (read off that curve: not a
threshold anyone could have set in advance). Beside it, the same recipe without the
answer model (the engine's lexical reader), run in the same process.

    python bench/clapnq_acceptance.py    # not part of `make bench`: the reserved half is
                                         # measured once, not tuned against
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import WORK, machine, shared_path, write_result
from groundqa.engine import Engine
from groundqa.evaluate.calibrate import fit_report, probe_features
from groundqa.gate.model import refusal_at, roc_auc
from groundqa.ingestion import ingest
from sets import clapnq_corpus

ACCEPT_WORK = WORK / "clapnq_acceptance"


def _engine(folder: Path, name: str, reader: str) -> tuple[Engine, list[Any]]:
    corpus, probes = clapnq_corpus(folder)
    index = ACCEPT_WORK / name
    # clapnq_corpus writes under bench/.work/gate/clapnq; keep each half's own copy.
    own = ACCEPT_WORK / f"{name}.jsonl"
    own.parent.mkdir(parents=True, exist_ok=True)
    own.write_text(corpus.read_text(encoding="utf-8"), encoding="utf-8")
    ingest([own], index, fmt="beir")
    return Engine.open(index, reader=reader), probes


def measure(reader: str, shared: Path, reserved: Path) -> dict[str, Any]:
    engine_a, probes_a = _engine(shared, "half_a", reader)
    report = fit_report(probe_features(engine_a, probes_a))
    gate = report.gate
    engine_b, probes_b = _engine(reserved, "half_b", reader)
    data_b = probe_features(engine_b, probes_b)
    p = np.where(data_b.empty, 0.0, gate.model.predict(data_b.x))
    y = data_b.y
    refused_gate = p < gate.threshold
    refused = refused_gate | data_b.generator_refused
    answerable = y == 1
    return {
        "half_a": {"answerable": int(report.data.y.sum()), "questions": len(report.data.y)},
        "half_b": {"answerable": int(answerable.sum()), "questions": len(y)},
        "threshold_from_half_a": round(gate.threshold, 4),
        "half_a_cv_auc": report.results["calibrated"]["auc"],
        "auc": round(roc_auc(y, p), 4),
        "at_half_a_threshold": {
            "false_refusal_gate": round(float(refused_gate[answerable].mean()), 4),
            "unanswerable_refused_gate": round(float(refused_gate[~answerable].mean()), 4),
            "false_refusal_end_to_end": round(float(refused[answerable].mean()), 4),
            "unanswerable_refused_end_to_end": round(float(refused[~answerable].mean()), 4),
        },
        "own_curve_5pct": refusal_at(y, p, 0.05),
    }


def markdown(data: dict[str, Any]) -> str:
    rows = [
        "## ClapNQ reserved half: the acceptance figure",
        "",
        "`python bench/clapnq_acceptance.py`, run once with the answer model, its cut and "
        "the gate's recipe fixed beforehand. The gate is calibrated on ClapNQ's shared half "
        "(5% false-refusal target) and applied unchanged to the reserved half. Target: AUC "
        "≥ 0.95 and ≥ 80% of unanswerable questions refused at ≤ 5% false refusal.",
        "",
        "| reader | AUC (reserved) | unanswerable refused at the shared half's threshold "
        "(gate / end to end) | false refusal there (gate / end to end) | unanswerable "
        "refused at 5% FR on the reserved half's own curve |",
        "|---|---:|---:|---:|---:|",
    ]
    for reader, m in data["readers"].items():
        t = m["at_half_a_threshold"]
        rows.append(
            f"| {reader} | {m['auc']:.3f} | {t['unanswerable_refused_gate']:.1%} / "
            f"{t['unanswerable_refused_end_to_end']:.1%} | {t['false_refusal_gate']:.1%} / "
            f"{t['false_refusal_end_to_end']:.1%} "
            f"| {m['own_curve_5pct']['refused_unanswerable']:.1%} |"
        )
    m = next(iter(data["readers"].values()))
    rows += [
        "",
        f"Shared half: {m['half_a']['questions']} questions ({m['half_a']['answerable']} "
        f"answerable); reserved half: {m['half_b']['questions']} "
        f"({m['half_b']['answerable']} answerable).",
    ]
    return "\n".join(rows)


def run() -> dict[str, Any] | None:
    shared = shared_path("bench", "clapnq")
    reserved = shared_path("bench", "reserved", "clapnq")
    if shared is None or reserved is None:
        return None
    readers = {"answer model": "model", "word coverage (no model)": "lexical"}
    data = {
        "machine": machine(),
        "readers": {label: measure(r, shared, reserved) for label, r in readers.items()},
    }
    write_result("clapnq_acceptance", data, markdown(data))
    return data


if __name__ == "__main__":
    run()
