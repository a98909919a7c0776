"""Plans: how one query is retrieved, written as `METHOD[+OPTION...]` and parsed here.

Every variant can be named on the command line and measured side by side by the
evaluation harness. A plan that names an unknown method or option, or needs
vectors the index lacks, is a UsageError that lists what is accepted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from groundqa.errors import UsageError
from groundqa.fusion import FUSION_FORMS, PRESETS, Fusion, parse_fusion

RETRIEVERS = ("bm25", "dense", "hybrid")
PLACE_MODES = ("off", "filter", "boost")
# A chunk that names a place the question names, or defines the term a definition question
# asks about, scores this much more (before diversity).
PLACE_BOOST = 0.5
DEFINITION_BOOST = 1.0
# Hybrid fuses each retriever's best POOL (or more when a deeper list is asked for).
POOL = 100
# What an index answers with when no retriever is named. Plain `hybrid` is reciprocal-rank
# fusion; the default weighs min-max-normalised BM25 and cosine scores equally (the fusion
# chosen on SciFact *train*) and lifts passages that define the term a definition question
# asks about. `bench/dense.py` measures each part on and off.
DEFAULT_DENSE_PLAN = "hybrid+weighted=0.5/0.5+defs"
DEFAULT_LEXICAL_PLAN = "bm25+defs"


@dataclass(frozen=True)
class Plan:
    """How one query is retrieved: the method and each query-understanding step.

    Written as `METHOD[+OPTION...]`, so every variant can be named on the command
    line and measured side by side in the harness:

        bm25 | dense | hybrid          the retriever (hybrid fuses bm25 and dense)
        +rrf=K | +weighted[=A/B]       fusion rule (default rrf, k=60; weighted 0.3/0.7)
        +acr                           expand acronyms the corpus defines (off by default:
                                       measured, it costs nDCG on SciFact and the example corpus)
        +defs                          a definition question ("What is a X?") lifts passages
                                       that define X (see `definitions`)
        +places=filter | +places=boost gazetteer: places named in the question (with boost,
                                       a given scope too) filter, or rank first
        +cap=N                         at most N chunks from one document
        +mmr=L                         maximal marginal relevance, L in [0, 1] (needs vectors)
    """

    method: str
    spec: str
    fusion: Fusion = field(default_factory=lambda: PRESETS["rrf"])
    acronyms: bool = False
    definitions: bool = False
    places: str = "off"
    cap: int | None = None
    mmr: float | None = None

    @property
    def needs_vectors(self) -> bool:
        return self.method in ("dense", "hybrid") or self.mmr is not None


PLAN_FORMS = (
    "METHOD in bm25, dense, hybrid; options: +rrf=K, +weighted[=A/B], +acr, +defs, "
    "+places=filter|boost, +cap=N, +mmr=L"
)


def parse_plan(spec: str) -> Plan:
    """A `Plan` from `hybrid+weighted+cap=2` and the like; a wrong part is a UsageError."""
    method, *options = [p.strip() for p in spec.strip().split("+")]
    if method not in RETRIEVERS:
        raise UsageError(f"unknown retriever {method!r} in {spec!r}; {PLAN_FORMS}")
    plan: dict[str, Any] = {}
    for option in options:
        key, _, value = option.partition("=")
        try:
            if key == "rrf":
                plan["fusion"] = parse_fusion(f"rrf:k={value}" if value else "rrf")
            elif key == "weighted":
                weights = value.replace("/", ",")
                fusion = parse_fusion(f"weighted:{weights}" if value else "weighted")
                if fusion.weights is not None and len(fusion.weights) != 2:
                    raise ValueError("weighted takes two weights, bm25 then dense")
                plan["fusion"] = fusion
            elif key == "acr" and not value:
                plan["acronyms"] = True
            elif key == "defs" and not value:
                plan["definitions"] = True
            elif key == "places" and value in PLACE_MODES:
                plan["places"] = value
            elif key == "cap":
                plan["cap"] = int(value)
                if plan["cap"] < 1:
                    raise ValueError("cap must be at least 1")
            elif key == "mmr":
                plan["mmr"] = float(value)
                if not 0.0 <= plan["mmr"] <= 1.0:
                    raise ValueError("mmr takes a weight between 0 and 1")
            else:
                raise ValueError(f"unknown option {option!r}")
        except (ValueError, UsageError) as exc:
            detail = exc.message if isinstance(exc, UsageError) else str(exc)
            raise UsageError(
                f"retriever {spec!r}: {detail}; {PLAN_FORMS} (fusion: {', '.join(FUSION_FORMS)})"
            ) from None
    return Plan(method=method, spec=spec.strip(), **plan)


def fitted_plan(retrieval: Mapping[str, Any]) -> str | None:
    """The plan a manifest's `retrieval` part chose for its build (`evaluate.planfit`),
    or None where the built-in plan stays (no fit, or it found nothing better)."""
    fit = retrieval.get("plan_fit")
    plan = fit.get("plan") if isinstance(fit, Mapping) else None
    return str(plan) if plan else None


def describe_fit(retrieval: Mapping[str, Any], builtin: str) -> str:
    """One line on the plan an index answers with and why, for `inspect`, `/health`
    and the build report: the fitted plan with the figures it was chosen on, or the
    built-in plan with the reason it stayed."""
    fit = retrieval.get("plan_fit")
    if not isinstance(fit, Mapping) or not fit:
        return f"the built-in plan {builtin} (never fitted; `groundqa tune` fits one)"
    if "skipped" in fit:
        return f"the built-in plan {builtin}: {fit['skipped']}"
    grid = fit.get("grid", {})
    metric = str(fit.get("metric", "recall@10"))  # what the plans were ranked by
    builtin_figure = grid.get(builtin, {}).get(metric, 0.0)
    questions = f"{fit['probes']} questions made from {_made_from(fit)}"
    plan = fitted_plan(retrieval)
    if plan:
        low, high = fit["interval"]
        return (
            f"{plan}, fitted on {questions} ({metric} {grid[plan][metric]:.3f} against "
            f"{builtin_figure:.3f} for the built-in {builtin}; difference {low:+.3f} to {high:+.3f})"
        )
    return (
        f"the built-in plan {builtin} ({metric} {builtin_figure:.3f} on {questions}): {fit['kept']}"
    )


def _made_from(fit: Mapping[str, Any]) -> str:
    """The text a fit made its questions from: the whole corpus, or the sample of its
    chunks that a large corpus gives (`evaluate.planfit.MAX_TEXT`)."""
    sample = fit.get("sample")
    if not isinstance(sample, Mapping):
        return "this corpus"
    return f"a sample of {sample['chunks']:,} of this corpus's {sample['of']:,} chunks"


def check_retriever(name: str, available: Sequence[str] = RETRIEVERS) -> Plan:
    """The plan `name` spells, if it parses and an index serving `available` can run it."""
    plan = parse_plan(name)
    if plan.needs_vectors and "dense" not in available:
        raise UsageError(
            f"retriever {name!r} needs vectors and this index has none; "
            f"available: {', '.join(available)} (rebuild without --no-dense for dense and hybrid)"
        )
    return plan
