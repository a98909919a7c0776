"""The probe harness: rank, gate, answer and score every probe with one retriever.

Retrieval is scored at section level (chunks of one section count once) on the
answerable probes that name expected sections; refusals are counted at the
gate and end to end on every probe that has a kind; answers are checked
against `answer_contains`, and a right answer only counts as grounded when a
passage it cites belongs to an expected section and holds the expected strings.

An expected section id the index lacks does not stop a run: the ids are listed
(`missing_expected`) and the probes naming them score as misses. Only a probe
file none of whose ids the index knows is refused, as written for another index.
`compare_retrievers` runs several retrievers over one probe set under the one
gate the index has, and says where that gate was calibrated on another plan.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from groundqa.engine import Engine
from groundqa.errors import GroundqaError, ProbeError
from groundqa.evaluate.calibrate import probes_fingerprint
from groundqa.evaluate.metrics import (
    crowding,
    dedupe,
    first_rank,
    gate_sweep,
    hit_at_k,
    mean,
    ndcg_at_k,
    paraphrase_stability,
    recall_at_k,
    reciprocal_rank,
    same_document_crowding,
)
from groundqa.evaluate.probes import Probe
from groundqa.gate.model import roc_auc
from groundqa.generate import GeneratorOptions
from groundqa.models import Citation, Hit
from groundqa.query import Query
from groundqa.retrieve import Plan, parse_plan

DEFAULT_KS = (1, 2, 3, 5, 8, 10, 20)


@dataclass(frozen=True)
class ProbeResult:
    probe: Probe
    ranked_sections: tuple[str, ...]
    chunk_sections: tuple[str, ...]
    chunk_docs: tuple[str, ...]
    rank: int | None
    refused: bool
    refused_by: str | None
    answer: str
    contains: bool | None
    # The answer holds answer_contains, and so does a cited passage of an expected section
    # (None: the probe names no answer_contains or no expected section).
    grounded: bool | None
    gate_score: float
    latency_ms: float
    # The answer holds answer_contains AND cites an expected section (None: not checkable).
    cited_right: bool | None = None
    # For a scoped probe that was answered: whether a citation lies outside the scope.
    outside_scope: bool | None = None
    # "confident", "cautious" or "refused" (see `Answer.outcome`).
    outcome: str = ""

    def __post_init__(self) -> None:
        if not self.outcome:
            object.__setattr__(self, "outcome", "refused" if self.refused else "confident")

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.probe.id,
            "kind": self.probe.kind,
            "group": self.probe.group,
            "question": self.probe.question,
            "expected": list(self.probe.expected),
            "rank": self.rank,
            "top": list(self.ranked_sections[:5]),
            "outcome": self.outcome,
            "refused": self.refused,
            "refused_by": self.refused_by,
            "gate_score": round(self.gate_score, 4),
            "answer": self.answer,
            "answer_contains_ok": self.contains,
            "grounded": self.grounded,
            "latency_ms": round(self.latency_ms, 3),
            "cited_right": self.cited_right,
            "outside_scope": self.outside_scope,
        }


@dataclass
class EvalReport:
    """One retriever's run over a probe set: summary metrics plus every probe's outcome."""

    retriever: str
    metrics: dict[str, float]
    results: list[ProbeResult] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    sweep: dict[str, Any] = field(default_factory=dict)
    gate_threshold: float = 0.0
    gate_sweep: list[dict[str, float]] = field(default_factory=list)
    # Expected section ids the index lacks; the probes naming them were scored as misses.
    missing_expected: tuple[str, ...] = ()
    # The plan the index's gate was calibrated with (None: the gate is not calibrated).
    gate_calibrated_for: str | None = None
    # The gate was calibrated on these very probes, so its refusal figures are in-sample.
    gate_in_sample: bool = False

    @property
    def gate_off_plan(self) -> bool:
        """The gate was calibrated with another plan than the one this report ran."""
        return self.gate_calibrated_for is not None and not same_plan(
            self.gate_calibrated_for, self.retriever
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "retriever": self.retriever,
            "metrics": {k: round(v, 4) for k, v in self.metrics.items()},
            "counts": self.counts,
            "sweep": self.sweep,
            "gate_threshold": self.gate_threshold,
            "gate_calibrated_for": self.gate_calibrated_for,
            "gate_in_sample": self.gate_in_sample,
            "gate_sweep": self.gate_sweep,
            "missing_expected": list(self.missing_expected),
            "results": [r.to_dict() for r in self.results],
        }


def same_plan(a: str, b: str) -> bool:
    """Whether two retriever specs name one plan (`bm25+acr+defs` is `bm25+defs+acr`)."""

    def plan(name: str) -> Plan | str:
        try:
            return replace(parse_plan(name), spec="")
        except GroundqaError:  # a spec this version cannot read is compared as written
            return name.strip()

    return plan(a) == plan(b)


def plateau(recall: Sequence[tuple[int, float]], tolerance: float = 0.005) -> dict[str, Any]:
    """Where recall stops rising over a k sweep, or that it is still climbing at the edge.

    The plateau is the smallest k whose recall is within `tolerance` of every larger
    k's recall. If recall still rises between the last two points, the edge of the
    sweep is not a plateau and the answer says so.
    """
    if not recall:
        return {"levels_off_at": None, "still_climbing": False}
    ks = [k for k, _ in recall]
    values = [v for _, v in recall]
    if len(values) >= 2 and values[-1] - values[-2] > tolerance:
        return {
            "levels_off_at": None,
            "still_climbing": True,
            "note": f"still climbing at k={ks[-1]}",
        }
    for i, v in enumerate(values):
        if all(later - v <= tolerance for later in values[i:]):
            return {
                "levels_off_at": ks[i],
                "still_climbing": False,
                "note": f"levels off at k={ks[i]} (recall {v:.3f})",
            }
    return {"levels_off_at": ks[-1], "still_climbing": False}


def holds_all(text: str, needles: Sequence[str]) -> bool:
    """Whether `text` holds every one of `needles` (a probe's `answer_contains`), case aside."""
    low = text.casefold()
    return all(n.casefold() in low for n in needles)


def _listed(ids: Sequence[str], shown: int = 8) -> str:
    more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
    return ", ".join(repr(i) for i in ids[:shown]) + more


def expected_documents(engine: Engine, probes: Sequence[Probe]) -> dict[str, str]:
    """The document of each expected section id the index holds."""
    named = sorted({e for p in probes for e in p.expected})
    found = ((e, engine.catalog.section(e)) for e in named)
    return {e: chunks[0].doc_id for e, chunks in found if chunks}


def check_expected(
    engine: Engine, probes: Sequence[Probe], documents: Mapping[str, str] | None = None
) -> list[str]:
    """The expected section ids the index lacks, sorted. When it lacks every one, the
    probe file was written for another index (or with other ids) and is refused.
    `documents` is `expected_documents` when the caller has it already."""
    named = {e for p in probes for e in p.expected}
    known = set(expected_documents(engine, probes) if documents is None else documents)
    missing = sorted(named - known)
    if missing and len(missing) == len(named):
        raise ProbeError(
            f"none of the {len(missing)} expected section id(s) is in the index: "
            f"{_listed(missing)}; check the ids against `groundqa inspect --sections`"
        )
    return missing


def evaluate_probes(
    engine: Engine,
    probes: Sequence[Probe],
    *,
    ks: Sequence[int] = DEFAULT_KS,
    retriever: str | None = None,
    answer_k: int = 5,
    generator: str = "extractive",
    options: GeneratorOptions | None = None,
    use_scope: bool = True,
) -> EvalReport:
    """Rank, gate, answer and score every probe with one retriever (default: the index's).

    `generator` answers what the gate lets through; when it declines (the extractive
    reader finding no sentence, an LLM replying with the refusal sentence) the probe
    counts as refused by the generator, apart from the gate's refusals. A probe's
    `scope` is applied unless `use_scope` is False; either way an answer to a scoped
    probe that cites a document outside its scope is counted (`cited_outside_scope`).
    Expected ids the index lacks are listed in `missing_expected` (see `check_expected`).
    """
    retriever = retriever or engine.default_retriever
    expected_docs = expected_documents(engine, probes)
    missing = check_expected(engine, probes, expected_docs)
    ks = sorted(set(ks))
    # Deep enough that k sections survive collapsing several chunks of one section.
    depth = min(engine.store.num_docs, max(max(ks) * 3, 30))
    results: list[ProbeResult] = []
    for probe in probes:
        t0 = time.perf_counter()
        scope = probe.scope if use_scope else None
        query = Query(
            probe.question,
            k=answer_k,
            retriever=retriever,
            generator=generator,
            options=options or GeneratorOptions(),
            scope=scope or {},
        )
        # One retrieval per probe: ranked deep for the metrics, and answered from its top k.
        retrieval = engine.retrieval(query, max(depth, answer_k))
        hits = retrieval.hits
        answer = engine.ask(query, retrieval=retrieval)
        latency = (time.perf_counter() - t0) * 1000
        expected = set(probe.expected)
        ranked = tuple(dedupe(h.chunk.section_id for h in hits))
        contains = grounded = cited_right = None
        if probe.answer_contains:
            contains = not answer.refused and holds_all(answer.answer, probe.answer_contains)
        if probe.answer_contains and probe.expected:
            cited_sections = {c.section_id for c in answer.citations}
            cited_right = bool(contains) and bool(cited_sections & expected)
            # Not the answer's text but the evidence for it: an extractive answer quotes its
            # cited passages, so "a cited passage holds the fact" alone would always hold.
            grounded = bool(contains) and holds_all(
                _cited_text(answer.passages, answer.citations, expected), probe.answer_contains
            )
        outside = None
        if probe.scope and not answer.refused:
            inside = engine.facets.scope_mask(engine.facets.resolve_scope(probe.scope))
            rows = engine.catalog.rows_of(c.chunk_id for c in answer.citations)
            outside = inside is not None and not all(inside[r] for r in rows.values())
        results.append(
            ProbeResult(
                probe=probe,
                ranked_sections=ranked,
                chunk_sections=tuple(h.chunk.section_id for h in hits[:20]),
                chunk_docs=tuple(h.chunk.doc_id for h in hits[:20]),
                rank=first_rank(ranked, expected) if expected else None,
                refused=answer.refused,
                refused_by=answer.refused_by,
                answer=answer.answer,
                contains=contains,
                grounded=grounded,
                gate_score=answer.gate.score,
                latency_ms=latency,
                cited_right=cited_right,
                outside_scope=outside,
                outcome=answer.outcome,
            )
        )
    report = summarise(results, ks, retriever, expected_docs, engine.gate.threshold)
    return replace(
        report,
        missing_expected=tuple(missing),
        gate_calibrated_for=gate_plan(engine),
        gate_in_sample=gate_in_sample(engine, probes),
    )


def _cited_text(passages: Sequence[Hit], citations: Iterable[Citation], sections: set[str]) -> str:
    """The text of the cited passages that belong to one of `sections`."""
    cited = {c.chunk_id for c in citations}
    return " ".join(
        h.chunk.text
        for h in passages
        if h.chunk.chunk_id in cited and h.chunk.section_id in sections
    )


def gate_plan(engine: Engine) -> str | None:
    """The retriever the index's gate was calibrated with; None for an uncalibrated gate."""
    if not engine.gate.calibrated:
        return None
    plan = engine.gate.info.get("retriever")
    return str(plan) if plan else None


def gate_in_sample(engine: Engine, probes: Sequence[Probe]) -> bool:
    """Whether the index's gate was calibrated on exactly these probes."""
    return engine.gate.calibrated and engine.gate.info.get(
        "probe_fingerprint"
    ) == probes_fingerprint(probes)


def summarise(
    results: Sequence[ProbeResult],
    ks: Sequence[int],
    retriever: str,
    section_docs: dict[str, str] | None = None,
    gate_threshold: float = 0.0,
) -> EvalReport:
    """Aggregate per-probe outcomes into the metrics map `eval --json` prints."""
    scored = [r for r in results if r.probe.answerable and r.probe.expected]
    metrics: dict[str, float] = {}
    curve: list[tuple[int, float]] = []
    for k in ks:
        rec = mean(recall_at_k(r.ranked_sections, set(r.probe.expected), k) for r in scored)
        metrics[f"recall@{k}"] = rec
        metrics[f"hit@{k}"] = mean(
            hit_at_k(r.ranked_sections, set(r.probe.expected), k) for r in scored
        )
        curve.append((k, rec))
    metrics["mrr"] = mean(reciprocal_rank(r.ranked_sections, set(r.probe.expected)) for r in scored)
    metrics["ndcg@10"] = mean(
        ndcg_at_k(r.ranked_sections, dict.fromkeys(r.probe.expected, 1.0), 10) for r in scored
    )
    docs = section_docs or {}
    metrics["crowding@5"] = mean(
        crowding(r.chunk_sections, set(r.probe.expected), 5) for r in scored
    )
    metrics["same_doc_crowding@5"] = mean(
        same_document_crowding(
            r.chunk_sections,
            r.chunk_docs,
            set(r.probe.expected),
            {docs[e] for e in r.probe.expected if e in docs},
            5,
        )
        for r in scored
    )
    groups: dict[str, list[int | None]] = {}
    for r in scored:
        if r.probe.group:
            groups.setdefault(r.probe.group, []).append(r.rank)
    stability = paraphrase_stability(groups)
    if stability["groups"]:
        metrics["paraphrase_rank1_all"] = stability["rank1_all"]
        metrics["paraphrase_rank1_any"] = stability["rank1_any"]
    by_kind = {
        kind: [r for r in results if r.probe.kind == kind]
        for kind in ("answerable", "out_of_scope", "near_miss")
    }
    counts = {kind: len(rs) for kind, rs in by_kind.items()}
    counts["scored"] = len(scored)
    counts["paraphrase_groups"] = int(stability["groups"])
    for kind, key in (("out_of_scope", "refused_out_of_scope"), ("near_miss", "refused_near_miss")):
        if by_kind[kind]:
            metrics[key] = mean(float(r.refused) for r in by_kind[kind])
            for check in ("gate", "generator"):
                metrics[f"{check}_{key}"] = mean(
                    float(r.refused_by == check) for r in by_kind[kind]
                )
    if by_kind["answerable"]:
        metrics["false_refusal"] = mean(float(r.refused) for r in by_kind["answerable"])
        for check in ("gate", "generator"):
            metrics[f"{check}_false_refusal"] = mean(
                float(r.refused_by == check) for r in by_kind["answerable"]
            )
    for kind, rs in by_kind.items():
        if rs:
            for shown in ("confident", "cautious"):
                metrics[f"{shown}_{kind}"] = mean(float(r.outcome == shown) for r in rs)
    labelled = [r for r in results if r.probe.kind in by_kind]
    if by_kind["answerable"] and len(by_kind["answerable"]) < len(labelled):
        metrics["confidence_auc"] = roc_auc(
            np.asarray([float(r.probe.answerable) for r in labelled]),
            np.asarray([r.gate_score for r in labelled]),
        )
    checked = [r for r in results if r.contains is not None]
    if checked:
        metrics["answer_contains"] = mean(float(bool(r.contains)) for r in checked)
        counts["answer_checked"] = len(checked)
    grounded = [r for r in results if r.grounded is not None]
    if grounded:
        metrics["answer_grounded"] = mean(float(bool(r.grounded)) for r in grounded)
    right = [r for r in results if r.cited_right is not None]
    if right:
        metrics["answer_cited_right"] = mean(float(bool(r.cited_right)) for r in right)
    scoped = [r for r in results if r.outside_scope is not None]
    if scoped:
        metrics["cited_outside_scope"] = mean(float(bool(r.outside_scope)) for r in scoped)
        counts["scoped_answered"] = len(scoped)
    latencies = [r.latency_ms for r in results]
    metrics["latency_ms_p50"] = _percentile(latencies, 50)
    metrics["latency_ms_p95"] = _percentile(latencies, 95)
    thresholds = [round(0.1 * i, 1) for i in range(1, 10)]
    sweep_rows = gate_sweep([(r.probe.kind, r.gate_score) for r in results], thresholds)
    return EvalReport(
        retriever, metrics, list(results), counts, plateau(curve), gate_threshold, sweep_rows
    )


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[idx]


@dataclass(frozen=True)
class Comparison:
    """`groundqa eval --probes`: one probe set through several retrievers of one index.

    Every report's refusals come from the index's one gate, whichever plan it was
    calibrated with: that is the gate `ask --retriever NAME` would use, so the rows
    are what each plan does as deployed. `notes` says where that gate is off its plan.
    """

    reports: tuple[EvalReport, ...]
    default_retriever: str
    gate: str  # the gate as it describes itself (`Gate.describe`)

    @property
    def notes(self) -> list[str]:
        return report_notes(self.reports)

    def to_dict(self) -> dict[str, Any]:
        """What `eval --probes --json` prints, after the index and probe file names."""
        first = self.reports[0]
        return {
            "default_retriever": self.default_retriever,
            "gate": self.gate,
            "gate_in_sample": first.gate_in_sample,
            "gate_calibrated_for": first.gate_calibrated_for,
            "missing_expected": list(first.missing_expected),
            "notes": self.notes,
            "metrics": {
                r.retriever: {k: round(v, 4) for k, v in r.metrics.items()} for r in self.reports
            },
            "counts": first.counts,
            "sweep": {r.retriever: r.sweep for r in self.reports},
            "results": {r.retriever: [x.to_dict() for x in r.results] for r in self.reports},
        }


def compared_retrievers(engine: Engine) -> list[str]:
    """What `eval` compares when not told: each method alone, and the default plan."""
    return list(dict.fromkeys([*engine.retrievers, engine.default_retriever]))


def compare_retrievers(
    engine: Engine,
    probes: Sequence[Probe],
    retrievers: Sequence[str] = (),
    *,
    ks: Sequence[int] = DEFAULT_KS,
    generator: str = "extractive",
    options: GeneratorOptions | None = None,
    use_scope: bool = True,
) -> Comparison:
    """`evaluate_probes` for each of `retrievers` (default: each method the index serves,
    and its default plan)."""
    names = list(retrievers) or compared_retrievers(engine)
    reports = tuple(
        evaluate_probes(
            engine,
            probes,
            ks=ks,
            retriever=name,
            generator=generator,
            options=options,
            use_scope=use_scope,
        )
        for name in names
    )
    return Comparison(reports, engine.default_retriever, engine.gate.describe())


def report_notes(reports: Sequence[EvalReport]) -> list[str]:
    """What a reader of these reports' figures must know: missing expected ids, a gate
    calibrated on these probes, and a gate applied to plans it was not calibrated with."""
    if not reports:
        return []
    first = reports[0]
    out: list[str] = []
    if first.missing_expected:
        missing = first.missing_expected
        out.append(
            f"{len(missing)} expected section id(s) are not in the index, so the probes naming "
            f"them score as misses: {_listed(missing)}; check the ids against "
            "`groundqa inspect --sections`"
        )
    if first.gate_in_sample:
        out.append(
            "the gate was calibrated on these probes, so its refusal figures here are in-sample; "
            "`groundqa calibrate` reports cross-validated ones"
        )
    off = [r.retriever for r in reports if r.gate_off_plan]
    if off:
        out.append(
            f"the gate was calibrated with the {first.gate_calibrated_for} retriever; the "
            f"refusals of {', '.join(off)} come from that gate as it is, on scores it was not "
            "fitted to"
        )
    return out
