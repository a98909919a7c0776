"""Refit the built-in default gate (`groundqa.gate.DEFAULT_MODEL`) and print it.

The default is what an index uses until `groundqa calibrate` runs on it. It is
fitted on the bundled example corpus and its probes (both written for the
project), over a BM25-only build so that it uses only the features that read
the same on any corpus, with its threshold set for 5% false refusals from
out-of-fold probabilities.

    python bench/default_gate.py          # print the literal to paste into gate.py
    python bench/default_gate.py --check  # exit 1 if gate.py holds something else
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from groundqa.engine import Engine
from groundqa.evaluate import load_probes
from groundqa.evaluate.calibrate import fit_report, probe_features
from groundqa.gate import DEFAULT_MODEL, DEFAULT_THRESHOLD
from groundqa.gate.model import Logistic
from groundqa.ingestion import ingest

ROOT = Path(__file__).resolve().parents[1]


def fit_default() -> tuple[Logistic, float]:
    """The default model and threshold, fitted afresh on the example corpus."""
    with tempfile.TemporaryDirectory() as tmp:
        ingest([ROOT / "examples" / "regpack"], Path(tmp) / "index", dense=None)
        engine = Engine.open(Path(tmp) / "index")
        data = probe_features(engine, load_probes(ROOT / "examples" / "regpack.probes.jsonl"))
        report = fit_report(data)
    return report.gate.model, report.gate.threshold


def literal(model: Logistic, threshold: float) -> str:
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
        f"DEFAULT_THRESHOLD = {threshold:.6f}\n"
    )


def matches(model: Logistic, threshold: float, tolerance: float = 1e-4) -> bool:
    """Whether a fitted default equals the one gate.py holds, to the printed precision."""
    stored = (*DEFAULT_MODEL.mean, *DEFAULT_MODEL.scale, *DEFAULT_MODEL.coef)
    fitted = (*model.mean, *model.scale, *model.coef)
    return (
        model.names == DEFAULT_MODEL.names
        and all(abs(a - b) <= tolerance for a, b in zip(stored, fitted, strict=True))
        and abs(model.intercept - DEFAULT_MODEL.intercept) <= tolerance
        and abs(threshold - DEFAULT_THRESHOLD) <= tolerance
    )


def main() -> int:
    model, threshold = fit_default()
    if "--check" in sys.argv:
        if matches(model, threshold):
            print("gate.DEFAULT_MODEL matches a fresh fit")
            return 0
        print("gate.DEFAULT_MODEL differs from a fresh fit; paste this into gate.py:")
        print(literal(model, threshold))
        return 1
    print(literal(model, threshold))
    return 0


if __name__ == "__main__":
    sys.exit(main())
