"""Evaluation: retrieval, refusals and answers measured, not read.

`evaluate_probes` runs a probe set (see `probes`) through an Engine;
`evaluate_beir` scores a BEIR corpus with its qrels; `metrics` holds the pure
metric functions both use; `report` writes Markdown, JSON and plots.
"""

from groundqa.evaluate.harness import (
    DEFAULT_KS,
    EvalReport,
    ProbeResult,
    check_expected,
    evaluate_probes,
    plateau,
    summarise,
)
from groundqa.evaluate.probes import Probe, load_probes

__all__ = [
    "DEFAULT_KS",
    "EvalReport",
    "Probe",
    "ProbeResult",
    "check_expected",
    "evaluate_probes",
    "load_probes",
    "plateau",
    "summarise",
]
