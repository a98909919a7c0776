"""Evaluation: retrieval, refusals and answers measured, not read.

`evaluate_probes` runs a probe set (see `probes`) through an Engine, and
`compare_retrievers` through each retriever of one;
`evaluate_beir` scores a BEIR corpus with its qrels; `metrics` holds the pure
metric functions both use; `report` writes Markdown, JSON and plots; `synthetic`
makes probes from a corpus's own text, labelled by how they were made.
"""

from groundqa.evaluate.harness import (
    DEFAULT_KS,
    Comparison,
    EvalReport,
    ProbeResult,
    check_expected,
    compare_retrievers,
    evaluate_probes,
    plateau,
    report_notes,
    summarise,
)
from groundqa.evaluate.probes import Probe, load_probes
from groundqa.evaluate.synthetic import SyntheticProbes, make_probes

__all__ = [
    "DEFAULT_KS",
    "Comparison",
    "EvalReport",
    "Probe",
    "ProbeResult",
    "SyntheticProbes",
    "check_expected",
    "compare_retrievers",
    "evaluate_probes",
    "load_probes",
    "make_probes",
    "plateau",
    "report_notes",
    "summarise",
]
