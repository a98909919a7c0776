"""Refit a built-in default gate and print it.

The default is what an index uses until `groundqa calibrate` runs on it, with its
threshold for a confident answer set for 5% of answerable questions short of it, and
its floor (refused below) at the lowest cut that refuses every out-of-scope question,
both from out-of-fold probabilities, over a BM25-only build so that it uses only the
features that read the same on any corpus.

- `DEFAULT_READER_MODEL` (`--reader`; engines that read with the answer model, the
  default): fitted on training data only. The index holds every passage of ClapNQ's
  shared half (Apache-2.0); its answerable questions are the answerable probes, its
  unanswerable ones the near misses, and questions of PolicyQA dev and SelQA dev (the
  answer model's own training questions) asked of it are the out-of-scope ones. No
  probe set the documentation reports on is used.
- `DEFAULT_MODEL` (engines without the model): fitted on the bundled example corpus
  and its probes (both written for the project).

    python bench/default_gate.py [--reader]          # print the literal for decision.py
    python bench/default_gate.py [--reader] --check  # exit 1 if decision.py differs
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from groundqa.engine import Engine
from groundqa.evaluate import load_probes
from groundqa.evaluate.calibrate import ProbeFeatures, fit_report, probe_features
from groundqa.evaluate.probes import Probe
from groundqa.gate import DEFAULT_GATE, DEFAULT_READER_GATE, Gate
from groundqa.ingestion import ingest

ROOT = Path(__file__).resolve().parents[1]
OUT_OF_SCOPE = 150  # questions from each of two other training sets


def fit_default() -> Gate:
    """The default gate, fitted afresh on the example corpus."""
    with tempfile.TemporaryDirectory() as tmp:
        ingest([ROOT / "examples" / "regpack"], Path(tmp) / "index", dense=None)
        engine = Engine.open(Path(tmp) / "index", reader="lexical")
        data = probe_features(engine, load_probes(ROOT / "examples" / "regpack.probes.jsonl"))
        return fit_report(data).gate


def _foreign_questions() -> list[Probe]:
    """Questions of two other training sets: out of scope for ClapNQ's Wikipedia passages."""
    import random

    sys.path.insert(0, str(ROOT / "train"))
    import reader_data

    rng = random.Random(reader_data.SEED)
    probes: list[Probe] = []
    for name, rows in (
        ("policyqa", reader_data.policyqa("dev", rng)),
        ("selqa", reader_data.selqa("dev", rng)),
    ):
        questions = sorted({r["q"] for r in rows})
        for n, q in enumerate(random.Random(7).sample(questions, OUT_OF_SCOPE)):
            probes.append(Probe(id=f"{name}-{n}", question=q, expected=(), kind="out_of_scope"))
    return probes


def clapnq_training_features(index: Path, reader: str) -> ProbeFeatures:
    """ClapNQ's shared half over a BM25-only build at `index`, read with `reader`: its
    answerable questions, its unanswerable ones (near misses), and `_foreign_questions`."""
    sys.path.insert(0, str(ROOT / "bench"))
    from sets import clapnq_corpus

    folder = ROOT.parent / "shared" / "bench" / "clapnq"
    if not folder.is_dir():
        raise SystemExit(f"{folder} is missing: the default gates are fitted on it")
    corpus, probes = clapnq_corpus(folder)
    ingest([corpus], index, dense=None, fmt="beir")
    return probe_features(Engine.open(index, reader=reader), [*probes, *_foreign_questions()])


def fit_reader_default() -> Gate:
    """The answer-model default, fitted afresh on training data (see the module doc)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = fit_report(clapnq_training_features(Path(tmp) / "index", "model"))
        print(f"cross-validated on training data: {report.operating}", file=sys.stderr)
    return report.gate


def literal(gate: Gate) -> str:
    model = gate.model

    def row(values: tuple[float, ...]) -> str:
        return "(" + ", ".join(f"{v:.6f}" for v in values) + ")"

    return (
        "DEFAULT_MODEL = Logistic(\n"
        "    names=LEXICAL_FEATURES,\n"
        f"    mean={row(model.mean)},\n"
        f"    scale={row(model.scale)},\n"
        f"    coef={row(model.coef)},\n"
        f"    intercept={model.intercept:.6f},\n"
        ")\n"
        f"DEFAULT_THRESHOLD = {gate.threshold:.6f}\n"
        f"DEFAULT_FLOOR = {gate.floor:.6f}\n"
    )


def matches(fitted: Gate, stored: Gate = DEFAULT_GATE, tolerance: float = 1e-4) -> bool:
    """Whether a fitted default equals the one decision.py holds, to the printed precision."""
    a, b = fitted.model, stored.model
    return a.names == b.names and all(
        abs(x - y) <= tolerance
        for x, y in zip(
            (*a.mean, *a.scale, *a.coef, a.intercept, fitted.threshold, fitted.floor),
            (*b.mean, *b.scale, *b.coef, b.intercept, stored.threshold, stored.floor),
            strict=True,
        )
    )


def main() -> int:
    if "--reader" in sys.argv:
        fitted, stored = fit_reader_default(), DEFAULT_READER_GATE
        text = literal(fitted).replace("DEFAULT_", "DEFAULT_READER_")
        text = text.replace("names=LEXICAL_FEATURES", "names=LEXICAL_FEATURES + READER_FEATURES")
    else:
        fitted, stored = fit_default(), DEFAULT_GATE
        text = literal(fitted)
    if "--check" in sys.argv:
        if matches(fitted, stored):
            print("the default gate matches a fresh fit")
            return 0
        print("the default gate differs from a fresh fit; paste this into decision.py:")
        print(text)
        return 1
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
