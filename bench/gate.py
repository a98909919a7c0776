"""The calibrated gate against the fixed cutoffs and the built-in default, three corpora.

- City guides (../shared/corpora/city_guides): the gate is calibrated on our own
  probe file (`bench/city_guides.probes.jsonl`) and then applied, model and
  threshold as fitted, to the seed system's questions (questions.json), which it
  never saw. Our own probes are reported by nested cross-validation.
- The bundled example corpus (`examples/regpack`, its probe file): nested
  cross-validation.
- ClapNQ dev (../shared/bench/clapnq): one index over every listed passage;
  answerable questions against unanswerable ones whose passage is on the same
  Wikipedia article (near misses). Nested cross-validation: ROC AUC, refusals
  at 5% and 10% false refusal, and what the thresholds chosen on the training
  folds did.
- Answerable sets no gate was calibrated on, as a new index without a probe set
  runs: the Natech seed system's probes and every ObliQA dev question. Only the
  built-in defaults and the fixed cutoffs apply, and the figure is false refusal.

The engine reads with the answer model (`--reader model`). Beside its calibrated gate:
`default` (`DEFAULT_READER_GATE`, uncalibrated, fitted on training data only),
`coverage>=0.4` (the old lexical gate) and `cosine>=0.3` (the usual "cosine
distance under 0.7" cut); and the baseline in the same run, the engine without the
answer model (`reader="lexical"`, the default reader): its calibrated gate and its
default (`DEFAULT_GATE`, fitted on the example corpus's probes). End to end, a
question the gate lets through still counts as refused when the extractive
reader declines it. A reliability plot of the out-of-fold confidence goes to
bench/results/gate_reliability.png.

    python bench/gate.py   # (part of `make bench`)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sets
from _common import RESULTS, machine, write_result
from groundqa.engine import Engine
from groundqa.evaluate import load_probes
from groundqa.evaluate.calibrate import (
    BASELINES,
    CalibrationReport,
    ProbeFeatures,
    baselines,
    fit_report,
    gate_probability,
    judged,
    probe_features,
    reliability,
)
from groundqa.gate import DEFAULT_GATE, DEFAULT_READER_GATE, READER_FEATURES, Gate
from groundqa.gate.model import Array, refusal_at, roc_auc
from groundqa.ingestion import ingest
from report import pct

PLOT = "gate_reliability.png"
LEXICAL = "lexical reader"
METHODS = (
    "calibrated",
    "default",
    f"calibrated, {LEXICAL}",
    f"default, {LEXICAL}",
    "coverage>=0.4",
    "cosine>=0.3",
)
Outcome = dict[str, dict[str, int]]


def _default(data: ProbeFeatures) -> Gate:
    """The built-in default for the reader these features came from."""
    return DEFAULT_READER_GATE if set(READER_FEATURES) <= set(data.names) else DEFAULT_GATE


def _default_probability(data: ProbeFeatures) -> Array:
    return gate_probability(_default(data), data)


def _judged_default(data: ProbeFeatures) -> dict[str, Any]:
    default = _default_probability(data)
    return judged(data, default < _default(data).threshold, default)


def _lexical(engine: Engine) -> Engine:
    """The same index read without the answer model: the baseline rows."""
    return Engine.open(engine.location, reader="lexical")


def _with_lexical(
    methods: dict[str, dict[str, Any]], lexical: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """`methods` with the lexical reader's calibrated and default rows, in METHODS order."""
    out = dict(methods)
    for name in ("calibrated", "default"):
        if name in lexical:
            out[f"{name}, {LEXICAL}"] = lexical[name]
    return {m: out[m] for m in METHODS if m in out}


def applied_methods(
    data: ProbeFeatures, report: CalibrationReport | None = None
) -> dict[str, dict[str, Any]]:
    """The fitted gate (when given), the default gate and the fixed cutoffs on `data`."""
    out: dict[str, dict[str, Any]] = {}
    if report is not None:
        p = gate_probability(report.gate, data)
        out["calibrated"] = judged(data, p < report.gate.threshold, p)
    out["default"] = _judged_default(data)
    return {**out, **baselines(data)}


def cross_validated(report: CalibrationReport) -> dict[str, dict[str, Any]]:
    """fit_report's nested-CV figures, with the default gate (not fitted on these) beside them."""
    out = dict(report.results)
    out["default"] = _judged_default(report.data)
    return {m: out[m] for m in METHODS if m in out}


def _misjudged(report: CalibrationReport) -> dict[str, list[str]]:
    """Probes the cross-validated gate is confidently wrong about (out-of-fold P below 0.3
    for an answerable one, above 0.7 for an unanswerable one): candidates for a relabel."""
    wrong: dict[str, list[str]] = {"answerable_low": [], "unanswerable_high": []}
    for probe, p in zip(report.data.probes, report.probability, strict=True):
        if probe.answerable and p < 0.3:
            wrong["answerable_low"].append(f"{probe.id} ({p:.2f}): {probe.question}")
        elif not probe.answerable and p > 0.7:
            wrong["unanswerable_high"].append(f"{probe.id} ({p:.2f}): {probe.question}")
    return wrong


def _gate_summary(report: CalibrationReport) -> dict[str, Any]:
    d = report.to_dict()
    return {
        "gate": d["gate"],
        "operating_points": d["operating_points"],
        "reliability": d["reliability"],
        "cv_thresholds": report.results["calibrated"]["thresholds"],
    }


def city_guides() -> dict[str, Any] | None:
    if (city := sets.city_guides()) is None:
        return None
    guides, own, seed_probes = city
    engine = sets.build([guides], "city_guides")
    ours = probe_features(engine, own)
    seeds = probe_features(engine, seed_probes)
    report = fit_report(ours, info={"index_fingerprint": engine.manifest.fingerprint})
    lexical = _lexical(engine)
    ours_lex = fit_report(probe_features(lexical, own))
    seeds_lex = applied_methods(probe_features(lexical, seed_probes), ours_lex)
    held_out = _with_lexical(applied_methods(seeds, report), seeds_lex)
    p = gate_probability(report.gate, seeds)
    return {
        "seeds": {
            "methods": held_out,
            "probes": [
                {
                    "id": probe.id,
                    "kind": probe.kind,
                    "confidence": round(float(p[i]), 4),
                    "gate_refused": bool(p[i] < report.gate.threshold or seeds.empty[i]),
                    "generator_refused": bool(seeds.generator_refused[i]),
                }
                for i, probe in enumerate(seeds.probes)
            ],
        },
        "ours_cv": {
            "methods": _with_lexical(cross_validated(report), cross_validated(ours_lex)),
            "curves": {**curves(report), **_lexical_curves(ours_lex)},
            "misjudged": _misjudged(report),
        },
        **_gate_summary(report),
        "_report": report,
    }


def regpack() -> dict[str, Any]:
    engine = sets.build([sets.REGPACK], "regpack")
    probes = load_probes(sets.REGPACK_PROBES)
    data = probe_features(engine, probes)
    report = fit_report(data, info={"index_fingerprint": engine.manifest.fingerprint})
    lexical = fit_report(probe_features(_lexical(engine), probes))
    return {
        "cv": {
            "methods": _with_lexical(cross_validated(report), cross_validated(lexical)),
            "curves": {**curves(report), **_lexical_curves(lexical)},
            "misjudged": _misjudged(report),
        },
        **_gate_summary(report),
        "_report": report,
    }


def uncalibrated() -> dict[str, Any] | None:
    """False refusals of the built-in defaults (and the fixed cutoffs) on answerable sets
    nobody calibrated a gate for: what a new index without a probe set gives."""
    natech, obliqa = sets.natech(), sets.obliqa()
    if natech is None or obliqa is None:
        return None

    csv, natech_probes = natech
    answerable = {
        "natech": (sets.GATE_BUILDS / "natech", [csv], "auto", natech_probes),
        # The dense benchmark's index of the same build: its vectors are reused, not re-embedded.
        "obliqa_dev": (sets.BUILDS / "obliqa", [obliqa.documents], "obliqa", obliqa.probes()),
    }
    out: dict[str, Any] = {}
    for name, (index, sources, fmt, probes) in answerable.items():
        started = time.perf_counter()
        ingest(sources, index, fmt=fmt)
        data = probe_features(Engine.open(index, reader="model"), probes)
        lexical = probe_features(Engine.open(index, reader="lexical"), probes)
        methods = {
            "default": _judged_default(data),
            f"default, {LEXICAL}": _judged_default(lexical),
            **baselines(data),
        }
        out[name] = {
            "questions": len(probes),
            "false_refusals": {k: m["outcome"]["answerable"] for k, m in methods.items()},
            "seconds": round(time.perf_counter() - started, 1),
        }
    return out


def _curve(y: Array, score: Array) -> dict[str, Any]:
    return {
        "auc": round(roc_auc(y, score), 4),
        **{f"{r:.0%}": refusal_at(y, score, r) for r in (0.05, 0.10)},
    }


def curves(report: CalibrationReport) -> dict[str, dict[str, Any]]:
    """Each score's ROC AUC and its curve read at 5% and 10% false refusal: the calibrated
    out-of-fold confidence (`report.operating`), the default gate's, and the raw scores."""
    data = report.data
    out = {"calibrated": {"auc": report.results["calibrated"]["auc"], **report.operating}}
    out["default"] = _curve(data.y, _default_probability(data))
    for name, feature, _ in BASELINES:
        if feature in data.names:
            out[name] = _curve(data.y, data.x[:, data.names.index(feature)])
    return out


def _lexical_curves(report: CalibrationReport) -> dict[str, dict[str, Any]]:
    """The lexical reader's calibrated and default curves, under their row names."""
    c = curves(report)
    return {f"{name}, {LEXICAL}": c[name] for name in ("calibrated", "default")}


def clapnq() -> dict[str, Any] | None:
    if (cq := sets.clapnq()) is None:
        return None
    corpus, probes = cq
    engine = sets.build([corpus], "clapnq/index", fmt="beir")
    data = probe_features(engine, probes)
    report = fit_report(data, info={"index_fingerprint": engine.manifest.fingerprint})
    lexical = fit_report(probe_features(_lexical(engine), probes))
    methods = _with_lexical(cross_validated(report), cross_validated(lexical))
    # Where the question's own passage ranks, so weak gate figures can be read against retrieval.
    top1 = [
        any(h.chunk.section_id in p.expected for h in engine.search(p.question, depth=1))
        for p in probes
        if p.answerable
    ]
    return {
        "passages": len(corpus.read_text(encoding="utf-8").splitlines()),
        "curves": {**curves(report), **_lexical_curves(lexical)},
        "methods": methods,
        "own_passage_at_rank1": round(float(np.mean(top1)), 4),
        **_gate_summary(report),
        "_report": report,
    }


# ---------------------------------------------------------------- markdown


def _cell(o: dict[str, int] | None, refused: bool = True) -> str:
    if o is None:
        return "—"
    if not refused:
        return f"{o['n'] - o['refused']}/{o['n']}"
    return f"{o['refused']}/{o['n']} ({o['gate']} + {o['generator']})"


def _table(methods: dict[str, dict[str, Any]], label: str = "") -> list[str]:
    rows = [
        "| gate | AUC | answerable answered | out-of-scope refused | near-miss refused "
        "| false refusals |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, m in methods.items():
        o = m["outcome"]
        title = f"{name}{label}" if name == "calibrated" else name
        rows.append(
            f"| {title} | {m['auc']:.3f} | {_cell(o.get('answerable'), refused=False)} "
            f"| {_cell(o.get('out_of_scope'))} | {_cell(o.get('near_miss'))} "
            f"| {_cell(o.get('answerable'))} |"
        )
    return rows


def _counts(o: Outcome) -> str:
    return ", ".join(f"{v['n']} {k.replace('_', '-')}" for k, v in o.items())


def _share(o: dict[str, int]) -> float:
    return o["refused"] / o["n"]


def _reading(c: dict[str, dict[str, Any]]) -> str:
    """One sentence: what each score refuses of the unanswerable at 5% false refusal."""
    parts = [f"{name} {pct(v['5%']['refused_unanswerable'])}" for name, v in c.items()]
    return (
        "Read off each score's curve at 5% false refusal instead (the cut set on these same "
        "questions, so a best case for every row), the share of unanswerable questions "
        "refused at the gate: " + ", ".join(parts) + "."
    )


def _clapnq_table(cq: dict[str, Any]) -> list[str]:
    rows = [
        "| score | AUC | unanswerable refused at 5% false refusal | at 10% | own cut: false "
        "refusals | unanswerable refused (gate) | unanswerable refused (end to end) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, m in cq["methods"].items():
        c = cq["curves"][name]
        o = m["outcome"]
        a, n = o["answerable"], o["near_miss"]
        rows.append(
            f"| {name} | {c['auc']:.3f} | {pct(c['5%']['refused_unanswerable'])} "
            f"| {pct(c['10%']['refused_unanswerable'])} "
            f"| {a['refused']}/{a['n']} ({pct(a['refused'] / a['n'])}; gate {a['gate']}) "
            f"| {n['gate']}/{n['n']} ({pct(n['gate'] / n['n'])}) "
            f"| {n['refused']}/{n['n']} ({pct(n['refused'] / n['n'])}) |"
        )
    return rows


def markdown(data: dict[str, Any]) -> str:
    seconds = data["seconds"]
    md = [
        "## The calibrated gate: answer or refuse",
        "",
        "`python bench/gate.py` (part of `make bench`); default builds (BM25 and MiniLM vectors), "
        "the default retriever, the extractive reader. Seconds per part: "
        + ", ".join(f"{k} {v}" for k, v in seconds.items())
        + ".",
        "",
        "Cells read refused/n (at the gate + by the reader after the gate let it through); "
        "false refusals are answerable questions refused end to end. AUC is the ROC area of "
        "each gate's score (P(answerable), or the raw coverage or cosine) between answerable "
        "and unanswerable questions. The engine reads with the answer model (`--reader model`): "
        "`calibrated` is its gate fitted on the probes, `default` is `DEFAULT_READER_GATE`, "
        "the uncalibrated built-in model (lexical and answer-model features, fitted on "
        "training data only: ClapNQ's shared half and other training sets' questions). "
        f"The `{LEXICAL}` rows are the baseline in the same run: the same index read "
        "without the answer model (the default reader), its own calibrated gate, and "
        "`DEFAULT_GATE` (lexical "
        "features, fitted on the example corpus's probes). `coverage>=0.4` is the old "
        "lexical gate; `cosine>=0.3` a fixed cosine-distance < 0.7 cut.",
        "",
    ]
    cg = data["city_guides"]
    if cg:
        seeds = cg["seeds"]["methods"]
        n = {k: v["n"] for k, v in seeds["calibrated"]["outcome"].items()}
        ours = cg["ours_cv"]["methods"]["calibrated"]["outcome"]
        md += [
            f"**City guides, the seed questions** ({n.get('answerable', 0)} answerable, "
            f"{n.get('out_of_scope', 0)} out of scope, {n.get('near_miss', 0)} near miss), "
            "held out: the gate is calibrated on our own probe file "
            f"(`bench/city_guides.probes.jsonl`, {sum(v['n'] for v in ours.values())} probes; "
            f"threshold {cg['gate']['threshold']:.3f}) and applied to them unchanged. "
            "Targets: out of scope 5/5, near miss at least 4/5, no false refusals.",
            "",
            *_table(seeds),
            "",
            "Our own city-guide probes "
            f"({_counts(ours)}), "
            "nested 5-fold cross-validation (model and threshold from the other folds):",
            "",
            *_table(cg["ours_cv"]["methods"], " (CV)"),
            "",
            _reading(cg["ours_cv"]["curves"]),
            "",
        ]
    rp = data["regpack"]
    o = rp["cv"]["methods"]["calibrated"]["outcome"]
    md += [
        "**Bundled example corpus** (`examples/regpack.probes.jsonl`: "
        f"{_counts(o)}), "
        f"nested 5-fold cross-validation. `default, {LEXICAL}` was fitted on these very "
        "probes (over a BM25-only build), so its row is not a held-out figure:",
        "",
        *_table(rp["cv"]["methods"], " (CV)"),
        "",
        _reading(rp["cv"]["curves"]),
        "",
    ]
    cq = data["clapnq"]
    if cq:
        a = cq["methods"]["calibrated"]["outcome"]["answerable"]["n"]
        u = cq["methods"]["calibrated"]["outcome"]["near_miss"]["n"]
        md += [
            f"**ClapNQ dev** ({a} answerable, {u} unanswerable questions; one index over their "
            f"{cq['passages']} distinct Wikipedia passages; an unanswerable question's passage "
            "comes from the article it asks about, so every negative is a near miss). "
            "Nested 5-fold cross-validation for `calibrated` (the 5%/10% columns read its "
            "out-of-fold curve; its own cut is the threshold each training part chose for 5% "
            "false refusals); each fixed score is read the same way on its own curve, and at its own "
            "cutoff:",
            "",
            *_clapnq_table(cq),
            "",
            f"The question's own passage is retrieved first for "
            f"{pct(cq['own_passage_at_rank1'])} of the answerable questions. The corpus "
            "holds only the listed passages, and an unanswerable question's passage was picked "
            "at random from the article it asks about, so it is usually a looser match than "
            "an answerable question's own passage: that looseness is most of what the cosine "
            f"and the calibrated model pick up (AUC {cq['curves']['cosine>=0.3']['auc']:.2f} "
            f"and {cq['curves']['calibrated']['auc']:.2f}); over whole articles the near "
            "misses would be nearer and these figures lower. Even so, at 5% false refusal "
            f"{pct(1 - cq['curves']['calibrated']['5%']['refused_unanswerable'])} of the "
            "unanswerable questions get through. Retrieval scores, term coverage and a cosine "
            "measure whether a passage is *about* the question, not whether it *answers* it; "
            "the answer model's rows add a reader that judges that, but it was trained on "
            "this very half of ClapNQ (and `default` fitted on it), so those rows are "
            "in-sample: the held-out figure is the reserved half's, measured once at "
            "940426d (AUC 0.859 with the answer model, 0.854 without; see Read in the "
            "documentation).",
            "",
        ]
    un = data.get("uncalibrated")
    if un:
        names = list(un["natech"]["false_refusals"])
        md += [
            "**Answerable sets nobody calibrated** (as a new index without a probe set runs: "
            "no calibration, only the built-in defaults and the fixed cutoffs; every question "
            "has an answer in the corpus, so every refusal is a false one). Natech: the seed "
            f"system's {un['natech']['questions']} probes over its guidance; ObliQA dev: all "
            f"{un['obliqa_dev']['questions']} questions over the regulatory documents. Default "
            f"builds; `default, {LEXICAL}` is what `ask` does out of the box. Neither default "
            "was fitted on these corpora. Target for the defaults: at most 10% false refusal. "
            "Cells read refused/n (at the gate + by the reader after the gate let it through):",
            "",
            "| gate | Natech | ObliQA dev |",
            "|---|---:|---:|",
            *(
                f"| {n} | {_cell(un['natech']['false_refusals'][n])} "
                f"({pct(_share(un['natech']['false_refusals'][n]))}) "
                f"| {_cell(un['obliqa_dev']['false_refusals'][n])} "
                f"({pct(_share(un['obliqa_dev']['false_refusals'][n]))}) |"
                for n in names
            ),
            "",
        ]
    md += [
        f"![Reliability of the out-of-fold confidence](/bench/results/{PLOT})",
        "",
        f"Reliability (`bench/results/{PLOT}`): each corpus's nested out-of-fold confidence "
        "in five equal bins (the number by each point is how many questions fall in it) "
        "against the share of answerable questions in the bin; on the diagonal, a "
        "confidence of 0.7 means 7 in 10 such questions are answerable.",
    ]
    return "\n".join(md)


def plot(reports: dict[str, CalibrationReport]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.2, 5.0), dpi=110)
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="perfect")
    for label, report in reports.items():
        rows = reliability(report.data.y, report.probability)
        xs = [r["mean_confidence"] for r in rows]
        ys = [r["answerable_share"] for r in rows]
        line = ax.plot(xs, ys, marker="o", label=f"{label} (n={len(report.data.y)})")[0]
        for r in rows:
            ax.annotate(
                str(r["n"]),
                (r["mean_confidence"], r["answerable_share"]),
                textcoords="offset points",
                xytext=(4, -10),
                fontsize=7,
                color=line.get_color(),
            )
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("out-of-fold confidence P(answerable), bin mean")
    ax.set_ylabel("share answerable in bin")
    ax.set_title("Calibrated gate: reliability (nested CV)")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    RESULTS.mkdir(parents=True, exist_ok=True)
    fig.savefig(RESULTS / PLOT)
    plt.close(fig)


def run() -> dict[str, Any]:
    sets.GATE_BUILDS.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {"machine": machine()}
    seconds: dict[str, float] = {}
    reports: dict[str, CalibrationReport] = {}
    labels = {
        "city_guides": "city guides, our probes",
        "regpack": "example corpus",
        "clapnq": "ClapNQ dev",
    }
    for name, fn in (("city_guides", city_guides), ("regpack", regpack), ("clapnq", clapnq)):
        t = time.perf_counter()
        part = fn()
        seconds[name] = round(time.perf_counter() - t, 1)
        if part is not None:
            reports[labels[name]] = part.pop("_report")
        data[name] = part
    t = time.perf_counter()
    data["uncalibrated"] = uncalibrated()
    seconds["uncalibrated"] = round(time.perf_counter() - t, 1)
    data["seconds"] = seconds
    plot(reports)
    write_result("gate", data, markdown(data))
    return data


if __name__ == "__main__":
    run()
