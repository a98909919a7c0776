"""Three outcomes, not two: the share of each kind of question answered with confidence,
with caution, or refused, on every visible set, as a new user runs it.

Every set is asked end to end (`evaluate_probes`: retrieve, read, gate, quote, audit)
with the default configuration and no probe set: the lexical reader, the built-in
default gate with the floor and the band its index fitted for itself at ingest
(`evaluate.selffit`), over a BM25-only build. Beside it, in the same run: the same gate
with the fitted floor and no band (the default before the band), with the built-in
floor (fitted on the example corpus), and the baseline, the two-outcome gate (the same
model and threshold without the cautious band: each question it would refuse at the
gate is one the built-in floor's gate answers with caution, so that row comes from the
built-in floor's pass).

The cost of fitting the floor and the band is measured on ingest: SciFact (5,183 abstracts) BM25-only,
where the fit weighs most against the build, and the example corpus with vectors, where
each question the fit asks is embedded; each with and without it.

The sets: the example corpus (its probes; the default gate was fitted on them, so this
row is in-sample), the city guides (the seed questions and
`bench/city_guides.probes.jsonl`), the Natech seed probes, ObliQA dev and ClapNQ's
shared half (in-sample for the answer-model default gate, not for this one). Beside
each, the reliability of the confidence: questions binned by P(answerable), against
the share of them the corpus answers.

    python bench/outcomes.py   # (part of `make bench`)
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sets
from _common import ROOT, WORK, machine, write_result
from groundqa.engine import Engine
from groundqa.evaluate.calibrate import reliability as calibrate_reliability
from groundqa.evaluate.harness import ProbeResult, evaluate_probes
from groundqa.evaluate.probes import KINDS, Probe
from groundqa.evaluate.selffit import self_fit
from groundqa.gate import DEFAULT_GATE
from groundqa.index.dense import DenseSettings
from groundqa.ingestion import ingest

OUT_WORK = WORK / "outcomes"
BINS = 5
BASELINE = "two outcomes (before: refused under the threshold)"
BUILT_IN = "three outcomes, the built-in floor"
FLOOR = "three outcomes, the floor fitted to the index"
THREE = "three outcomes, the floor and band fitted to the index (default)"
REPEATS = 3


def counts(results: Sequence[ProbeResult], banded: bool) -> dict[str, dict[str, int]]:
    """kind -> n, confident, cautious, refused and fact (an answer, confident or
    cautious, that holds the expected fact) for the gate with or without its band."""
    out: dict[str, dict[str, int]] = {}
    for kind in KINDS:
        rows = [r for r in results if r.probe.kind == kind]
        if not rows:
            continue
        cautious = [r for r in rows if r.outcome == "cautious"]
        c = {
            "n": len(rows),
            "confident": sum(r.outcome == "confident" for r in rows),
            "cautious": len(cautious) if banded else 0,
            "refused": sum(r.outcome == "refused" for r in rows) + (0 if banded else len(cautious)),
            "checked": sum(r.contains is not None for r in rows),
            "fact": sum(bool(r.contains) for r in rows if banded or r.outcome != "cautious"),
        }
        out[kind] = c
    return out


def reliability(results: Sequence[ProbeResult], bins: int = BINS) -> list[dict[str, Any]]:
    """Equal-width bins of the gate's confidence against the share of answerable questions
    (`calibrate.reliability`, over the questions as `eval` asked them)."""
    y = np.asarray([float(r.probe.answerable) for r in results])
    return calibrate_reliability(y, np.asarray([r.gate_score for r in results]), bins)


def measure(
    name: str, sources: Sequence[Path], fmt: str, probes: Sequence[Probe]
) -> dict[str, Any]:
    started = time.perf_counter()
    index = OUT_WORK / name.lower().replace(" ", "_")
    ingest(list(sources), index, fmt=fmt, dense=None, fit_gate=self_fit)  # as `groundqa ingest`
    engine = Engine.open(index, reader="lexical")
    fitted = engine.gate
    assert not fitted.calibrated and fitted.model is DEFAULT_GATE.model, "asked as a new user"
    report = evaluate_probes(engine, probes)
    engine.gate = replace(fitted, band=None)
    floor_only = evaluate_probes(engine, probes).results
    engine.gate = DEFAULT_GATE
    built_in = evaluate_probes(engine, probes).results
    results = report.results
    return {
        "questions": len(probes),
        "floor": fitted.floor,
        "fit": fitted.info.get("self_fit") or {"skipped": fitted.note},
        "rows": {
            BASELINE: counts(built_in, banded=False),
            BUILT_IN: counts(built_in, banded=True),
            FLOOR: counts(floor_only, banded=True),
            THREE: counts(results, banded=True),
        },
        "reliability": reliability(results)
        if len({r.probe.answerable for r in results}) == 2
        else [],
        "latency_ms_p50": round(report.metrics["latency_ms_p50"], 2),
        "seconds": round(time.perf_counter() - started, 1),
    }


def ingest_cost() -> dict[str, Any]:
    """Seconds to ingest, with and without fitting the floor and the band (median of
    REPEATS, each a fresh build into an empty directory)."""
    cases: list[tuple[str, list[Path], str, DenseSettings | None]] = [
        ("example corpus, with vectors", [ROOT / "examples" / "regpack"], "auto", DenseSettings())
    ]
    if (scifact := sets.scifact()) is not None:
        cases.insert(0, ("SciFact, BM25-only", [scifact.corpus], "beir", None))
    out: dict[str, Any] = {}
    for name, sources, fmt, dense in cases:
        row: dict[str, Any] = {}
        for fit in (False, True):
            times, fits = [], []
            for r in range(REPEATS):
                index = OUT_WORK / "cost" / f"{name.split(',')[0]}-{fit}-{r}"
                shutil.rmtree(index, ignore_errors=True)  # nothing reused: every vector made
                t = time.perf_counter()
                report = ingest(
                    sources, index, fmt=fmt, dense=dense, fit_gate=self_fit if fit else None
                )
                times.append(time.perf_counter() - t)
                fits.append(report.timings_s.get("self_fit", 0.0))
            row["with" if fit else "without"] = round(statistics.median(times), 3)
            if fit:
                row["fit_seconds"] = round(statistics.median(fits), 3)
                fit_entry = Engine.open(index).gate.info.get("self_fit", {})
                row["questions"] = fit_entry.get("questions", 0)
                row["band_probes"] = sum(fit_entry.get("band", {}).get("probes", {}).values())
        row["added"] = round(row["with"] / row["without"] - 1, 4)
        out[name] = row
    return out


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.0%})" if whole else "—"


def markdown(data: dict[str, Any]) -> str:
    g = data["gate"]
    lines = [
        "## Three outcomes on the visible sets",
        "",
        f"`python bench/outcomes.py`: each set asked end to end as a new user asks it "
        "(lexical reader, the built-in default gate with the floor and the band fitted to "
        "the index at ingest, no probe set; BM25-only builds). "
        f"Confident from {g['threshold']:.3f}; cautious from the floor (fitted, or the "
        f"built-in {g['floor']:.3f}), or where the band (a gate fitted on probes made from "
        "the index) is at or over its own floor; refused below both, or when the reader "
        "finds no sentence that answers. The baseline row is the same gate without the "
        "cautious band (two outcomes). `fact`: the answer, confident or cautious, holds the "
        "expected fact, over the questions that name one. "
        f"{data['machine']['cpus']} CPUs, {data['seconds']:.0f} s in all.",
        "",
    ]
    for name, c in data["sets"].items():
        fit = c["fit"]
        how = (
            f"the floor fitted at ingest: {c['floor']:.3f}, from {fit['questions']} "
            "out-of-scope questions made for the index"
            if "floor" in fit
            else f"no floor fitted ({fit.get('skipped', '')}): the built-in {c['floor']:.3f}"
        )
        band = fit.get("band", {})
        if "probes" in band:
            made = band["probes"]
            how += (
                f"; the band fitted on {sum(made.values())} probes made from the index "
                f"({made.get('answerable', 0)} answerable, {made.get('near_miss', 0)} near "
                f"misses, {made.get('out_of_scope', 0)} out of scope): its floor "
                f"{band['floor']:.3f}, cross-validated AUC on those probes {band['cv_auc']:.3f}"
            )
        elif "skipped" in band:
            how += f"; no band ({band['skipped']})"
        lines += [
            f"### {name}",
            "",
            f"{c['questions']} questions; {how}.",
            "",
            "| gate | kind | confident | cautious | refused | answer holds the fact |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for row, kinds in c["rows"].items():
            for kind, o in kinds.items():
                fact = _share(o["fact"], o["checked"]) if o["checked"] else "—"
                lines.append(
                    f"| {row} | {kind.replace('_', ' ')} | {_share(o['confident'], o['n'])} "
                    f"| {_share(o['cautious'], o['n'])} | {_share(o['refused'], o['n'])} "
                    f"| {fact} |"
                )
        if c["reliability"]:
            lines += [
                "",
                "Reliability of the confidence (all questions of the set):",
                "",
                "| confidence | questions | mean confidence | share answerable |",
                "|---|---:|---:|---:|",
            ]
            for b in c["reliability"]:
                lines.append(
                    f"| {b['lo']:.1f}–{b['hi']:.1f} | {b['n']} | {b['mean_confidence']:.2f} "
                    f"| {b['answerable_share']:.2f} |"
                )
        lines += [
            "",
            f"`eval` p50 per question {c['latency_ms_p50']:.1f} ms; {c['seconds']} s.",
            "",
        ]
    lines += [
        "### What fitting the floor and the band adds to ingest",
        "",
        f"Median of {REPEATS} fresh builds each. The band's probes are asked of a scratch "
        "BM25-only build of the corpus without the near misses' sentences.",
        "",
        "| corpus | ingest without | with | added | the fit itself | floor questions "
        "| band probes |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in data["ingest_cost"].items():
        lines.append(
            f"| {name} | {r['without']:.2f} s | {r['with']:.2f} s | {r['added']:+.1%} "
            f"| {r['fit_seconds']:.2f} s | {r['questions']} | {r.get('band_probes', 0)} |"
        )
    lines.append("")
    return "\n".join(lines)


def run() -> dict[str, Any]:
    started = time.perf_counter()
    data: dict[str, Any] = {
        "machine": machine(),
        "gate": {"threshold": DEFAULT_GATE.threshold, "floor": DEFAULT_GATE.floor},
        "sets": {},
    }
    for name, (sources, fmt, probes) in sets.corpora().items():
        data["sets"][name] = measure(name, sources, fmt, probes)
        print(f"{name}: {data['sets'][name]['seconds']} s", flush=True)
    data["ingest_cost"] = ingest_cost()
    data["seconds"] = round(time.perf_counter() - started, 1)
    write_result("outcomes", data, markdown(data))
    return data


if __name__ == "__main__":
    run()
