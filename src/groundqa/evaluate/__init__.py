"""Evaluation: run a probe set through the engine and measure every stage.

Retrieval is scored at section level (chunks of one section count once) on the
answerable probes that name expected sections; refusals are counted at the
gate and end to end on every probe that has a kind; answers are checked
against `answer_contains`, and a right answer only counts as grounded when the
passage it cites contains the expected string too.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from groundqa.engine import Engine
from groundqa.errors import ProbeError
from groundqa.evaluate.metrics import (
    dedupe,
    first_rank,
    hit_at_k,
    mean,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
)
from groundqa.evaluate.probes import Probe, load_probes

DEFAULT_KS = (1, 2, 3, 5, 8, 10, 20)

__all__ = ["DEFAULT_KS", "Probe", "ProbeResult", "evaluate_probes", "load_probes", "plateau"]


@dataclass(frozen=True)
class ProbeResult:
    probe: Probe
    ranked_sections: tuple[str, ...]
    rank: int | None
    refused: bool
    refused_by: str | None
    answer: str
    contains: bool | None
    grounded: bool | None
    latency_ms: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.probe.id,
            "kind": self.probe.kind,
            "question": self.probe.question,
            "expected": list(self.probe.expected),
            "rank": self.rank,
            "top": list(self.ranked_sections[:5]),
            "refused": self.refused,
            "refused_by": self.refused_by,
            "answer_contains_ok": self.contains,
            "grounded": self.grounded,
            "latency_ms": round(self.latency_ms, 3),
        }


@dataclass
class EvalReport:
    retriever: str
    metrics: dict[str, float]
    results: list[ProbeResult] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    sweep: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "retriever": self.retriever,
            "metrics": {k: round(v, 4) for k, v in self.metrics.items()},
            "counts": self.counts,
            "sweep": self.sweep,
            "results": [r.to_dict() for r in self.results],
        }


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


def _contains(text: str, needles: Sequence[str]) -> bool:
    low = text.casefold()
    return all(n.casefold() in low for n in needles)


def check_expected(engine: Engine, probes: Sequence[Probe]) -> None:
    known = {c.section_id for c in engine.chunks}
    missing = sorted({e for p in probes for e in p.expected if e not in known})
    if missing:
        shown = ", ".join(repr(m) for m in missing[:8])
        more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
        raise ProbeError(
            f"{len(missing)} expected section id(s) are not in the index: {shown}{more}; "
            "check the ids against `groundqa inspect --sections`"
        )


def evaluate_probes(
    engine: Engine,
    probes: Sequence[Probe],
    *,
    ks: Sequence[int] = DEFAULT_KS,
    retriever: str = "bm25",
    answer_k: int = 5,
) -> EvalReport:
    """Rank, gate, answer and score every probe with one retriever."""
    check_expected(engine, probes)
    ks = sorted(set(ks))
    depth = min(100, max(max(ks) * 3, 20))
    results: list[ProbeResult] = []
    for probe in probes:
        t0 = time.perf_counter()
        hits = engine.retrieve(probe.question, k=depth, retriever=retriever)
        answer = engine.ask(probe.question, k=answer_k, retriever=retriever)
        latency = (time.perf_counter() - t0) * 1000
        ranked = tuple(dedupe(h.chunk.section_id for h in hits))
        expected = set(probe.expected)
        contains = grounded = None
        if probe.answer_contains:
            contains = not answer.refused and _contains(answer.answer, probe.answer_contains)
            cited = " ".join(
                h.chunk.text
                for h in answer.passages
                if h.chunk.chunk_id in {c.chunk_id for c in answer.citations}
            )
            grounded = bool(contains) and _contains(cited, probe.answer_contains)
        results.append(
            ProbeResult(
                probe=probe,
                ranked_sections=ranked,
                rank=first_rank(ranked, expected) if expected else None,
                refused=answer.refused,
                refused_by=answer.refused_by,
                answer=answer.answer,
                contains=contains,
                grounded=grounded,
                latency_ms=latency,
            )
        )
    return summarise(results, ks, retriever)


def summarise(results: Sequence[ProbeResult], ks: Sequence[int], retriever: str) -> EvalReport:
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
    by_kind = {
        kind: [r for r in results if r.probe.kind == kind]
        for kind in ("answerable", "out_of_scope", "near_miss")
    }
    counts = {f"{kind}": len(rs) for kind, rs in by_kind.items()}
    counts["scored"] = len(scored)
    if by_kind["out_of_scope"]:
        metrics["refused_out_of_scope"] = mean(float(r.refused) for r in by_kind["out_of_scope"])
        metrics["gate_refused_out_of_scope"] = mean(
            float(r.refused_by == "gate") for r in by_kind["out_of_scope"]
        )
    if by_kind["near_miss"]:
        metrics["refused_near_miss"] = mean(float(r.refused) for r in by_kind["near_miss"])
        metrics["gate_refused_near_miss"] = mean(
            float(r.refused_by == "gate") for r in by_kind["near_miss"]
        )
    if by_kind["answerable"]:
        metrics["false_refusal"] = mean(float(r.refused) for r in by_kind["answerable"])
        metrics["gate_false_refusal"] = mean(
            float(r.refused_by == "gate") for r in by_kind["answerable"]
        )
    checked = [r for r in results if r.contains is not None]
    if checked:
        metrics["answer_contains"] = mean(float(bool(r.contains)) for r in checked)
        metrics["answer_grounded"] = mean(float(bool(r.grounded)) for r in checked)
        counts["answer_checked"] = len(checked)
    metrics["latency_ms_p50"] = _percentile([r.latency_ms for r in results], 50)
    return EvalReport(retriever, metrics, list(results), counts, plateau(curve))


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[idx]
