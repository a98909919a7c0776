"""The retrieval plan fitted to each index by itself, from questions made of its own text.

One fixed plan cannot be best on every corpus: the built-in one was chosen on
SciFact *train* and Natech. An index has its corpus, and `synthetic.make_probes`
turns that into answerable questions whose section is known. `fit_plan` asks each
of them of every plan in a small declared grid (`DENSE_GRID`), scores recall@10 over
sections (nDCG@10 breaks ties), and keeps the best plan only when it beats the
built-in one by more than its noise: the lower end of a paired bootstrap interval
(`CONFIDENCE`, resampled by the section a probe was made from, so the questions of
one section move together) must lie above zero. Otherwise the built-in plan stays,
and the entry says so.

Made questions are built from a passage's own words, so they favour BM25 more than
real questions do. Measured (`bench/planfit.py` runs both grids): free to choose
BM25-leaning plans, the fit moved to BM25 on ObliQA dev and SciFact test and lost
recall@10 on their real questions, by more than the noise. A win for a BM25-leaning
plan is therefore no evidence, and the grid holds only the built-in plan and plans
that give the vectors at least as much say: one that beats the built-in plan on made
questions despite that bias has won against the grain. The definition lift stays on in every plan: a
made question rarely asks "What is X?", so the probes cannot judge it.

The entry goes into the manifest's `retrieval` part (`plan_fit`), which the
retriever reads as the index's default plan (`retrieve.plan.fitted_plan`); a plan
named on the command line still overrides it. `groundqa ingest` fits it after each
new build unless told not to (`--no-tune`), and `groundqa tune` fits it again.

What goes wrong leaves the built-in plan, with a note, and never fails the build: an
index under `MIN_CHUNKS`, too few questions made (`MIN_PROBES`), or an error while
asking.
"""

from __future__ import annotations

import math
import random
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from groundqa.engine import Engine
from groundqa.evaluate.metrics import dedupe, hit_at_k, ndcg_at_k
from groundqa.evaluate.probes import Probe
from groundqa.evaluate.synthetic import make_probes
from groundqa.index.open import set_part
from groundqa.models import Chunk, Document, Section
from groundqa.retrieve import DEFAULT_DENSE_PLAN, DEFAULT_LEXICAL_PLAN, describe_fit

# The plans a fit chooses among, the built-in one first: none leans further towards BM25
# than it does (see the module doc). Fusion weights are BM25 then dense over
# min-max-normalised scores; `rrf` is reciprocal-rank fusion, which gives the dense
# ranking an equal say whatever its scores.
DENSE_GRID = (
    DEFAULT_DENSE_PLAN,
    "hybrid+weighted=0.4/0.6+defs",
    "hybrid+weighted=0.3/0.7+defs",
    "hybrid+rrf=60+defs",
)
# Without vectors there is no balance to misjudge; the choice is the definition lift.
LEXICAL_GRID = (DEFAULT_LEXICAL_PLAN, "bm25")
ANSWERABLE = 200  # answerable probes asked of every plan
MIN_CHUNKS = 100
MIN_PROBES = 50
K = 10
DEPTH = 30  # chunks asked for, so K sections survive several chunks of one section
METHOD = "mixed"
SEED = 0
RESAMPLES = 1000
# The most text a fit makes its questions from, in characters. A larger corpus gives a
# sample of its chunks, drawn under SEED: a few hundred questions need no more, and the
# fit's time and memory stop growing with the corpus (SciFact's 7.6 MB and ObliQA's
# 5.3 MB are read whole).
MAX_TEXT = 8_000_000
CONFIDENCE = 0.95


def documents_of(chunks: Sequence[Chunk]) -> list[Document]:
    """The indexed corpus as Documents again, one Section per section id, its parts
    joined in order: what probes are made from when the sources are not at hand."""
    docs: dict[str, dict[str, list[Chunk]]] = {}
    for chunk in chunks:
        docs.setdefault(chunk.doc_id, {}).setdefault(chunk.section_id, []).append(chunk)
    out = []
    for doc_id, sections in docs.items():
        first = next(iter(sections.values()))[0]
        out.append(
            Document(
                doc_id=doc_id,
                title=first.title,
                source=first.source,
                format="index",
                sections=tuple(
                    Section(
                        section_id=section_id,
                        heading=parts[0].section_path[-1] if parts[0].section_path else "",
                        text="\n\n".join(c.text for c in sorted(parts, key=lambda c: c.part)),
                        path=parts[0].section_path,
                    )
                    for section_id, parts in sections.items()
                ),
            )
        )
    return out


def sample_chunks(chunks: Sequence[Chunk], max_text: int) -> list[Chunk]:
    """`chunks`, or where their text is over `max_text` characters, chunks drawn at random
    (under SEED) until the next would pass it, in their index order."""
    if sum(len(c.text) for c in chunks) <= max_text:
        return list(chunks)
    order = list(range(len(chunks)))
    random.Random(SEED).shuffle(order)
    kept, size = [], 0
    for row in order:
        size += len(chunks[row].text)
        if size > max_text:
            break
        kept.append(row)
    return [chunks[row] for row in sorted(kept)]


def grid(has_vectors: bool) -> tuple[str, ...]:
    """The plans a fit compares on an index with (or without) vectors."""
    return DENSE_GRID if has_vectors else LEXICAL_GRID


def plan_scores(engine: Engine, probes: Sequence[Probe], plan: str) -> tuple[list[float], ...]:
    """Per probe, recall@K and nDCG@K of its expected section under `plan`."""
    recall, ndcg = [], []
    for probe in probes:
        hits = engine.search(probe.question, DEPTH, retriever=plan)
        ranked = dedupe(h.chunk.section_id for h in hits)
        expected = set(probe.expected)
        recall.append(hit_at_k(ranked, expected, K))
        ndcg.append(ndcg_at_k(ranked, dict.fromkeys(expected, 1.0), K))
    return recall, ndcg


def paired_interval(
    a: Sequence[float],
    b: Sequence[float],
    groups: Sequence[str],
    *,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> tuple[float, float]:
    """A bootstrap interval for mean(a) - mean(b) over paired per-probe scores, resampling
    whole groups (the probes of one section), so correlated questions move together."""
    by_group: defaultdict[str, list[int]] = defaultdict(list)
    for i, group in enumerate(groups):
        by_group[group].append(i)
    members = list(by_group.values())
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    rng = random.Random(seed)
    means = []
    for _ in range(resamples):
        picked = [i for _ in members for i in rng.choice(members)]
        means.append(sum(diffs[i] for i in picked) / len(picked))
    means.sort()
    tail = (1.0 - confidence) / 2
    # The outer order statistics on both sides, so the interval errs wide, not narrow.
    low = means[math.floor(tail * (resamples - 1))]
    high = means[math.ceil((1.0 - tail) * (resamples - 1))]
    return low, high


def fit_plan(
    engine: Engine, answerable: int = ANSWERABLE, plans: Sequence[str] | None = None
) -> dict[str, Any]:
    """The plan-fit entry for `engine`'s index: each plan's figures on probes made from
    its corpus and the plan chosen (`plan`, absent where the built-in plan stays), or
    `skipped` with the reason. The same build gives the same entry (no clock in it).
    `plans` replaces the grid (the built-in plan first), for measuring other grids."""
    chunks = engine.store.num_docs
    builtin = engine.retriever.builtin_plan
    base: dict[str, Any] = {
        "method": METHOD,
        "seed": SEED,
        "builtin": builtin,
        "index_fingerprint": engine.manifest.fingerprint,
    }
    if chunks < MIN_CHUNKS:
        return {
            **base,
            "skipped": f"the index has {chunks} chunks, under {MIN_CHUNKS}: too few to tell "
            "plans apart",
        }
    sample = sample_chunks(engine.store.chunks, MAX_TEXT)
    if len(sample) < chunks:
        base["sample"] = {"chunks": len(sample), "of": chunks}
    made = make_probes(
        documents_of(sample),
        n=2 * answerable,
        method=METHOD,
        seed=SEED,
        analyzer=engine.manifest.analyzer,
    )
    probes = [p for p in made.probes if p.answerable][:answerable]
    if len(probes) < MIN_PROBES:
        return {
            **base,
            "skipped": f"only {len(probes)} questions could be made from the corpus "
            f"(needs {MIN_PROBES})",
        }
    plans = tuple(plans or grid(engine.store.has_vectors))
    scores = {plan: plan_scores(engine, probes, plan) for plan in plans}
    figures = {
        plan: {
            f"recall@{K}": round(sum(r) / len(r), 4),
            f"ndcg@{K}": round(sum(n) / len(n), 4),
        }
        for plan, (r, n) in scores.items()
    }
    best = max(plans, key=lambda p: (figures[p][f"recall@{K}"], figures[p][f"ndcg@{K}"]))
    entry = {**base, "probes": len(probes), "metric": f"recall@{K}", "grid": figures, "best": best}
    if best == builtin:
        return {**entry, "kept": "no plan in the grid beat the built-in plan"}
    groups = [p.group or p.id for p in probes]
    low, high = paired_interval(scores[best][0], scores[builtin][0], groups)
    entry["interval"] = [round(low, 4), round(high, 4)]
    if low <= 0.0:
        return {
            **entry,
            "kept": f"{best} was not better than the built-in plan by more than its noise "
            f"(recall@{K} difference {low:+.3f} to {high:+.3f})",
        }
    return {**entry, "plan": best}


def tune(location: str | Path, *, dry_run: bool = False) -> dict[str, Any]:
    """Fit the plan of the index at `location` (a directory or a store URL) and, unless
    `dry_run`, store it in the manifest of the build it was fitted on (refused when a
    rebuild switched builds meanwhile). Returns the plan-fit entry."""
    engine = Engine.open(location, reader="lexical")
    try:
        entry = fit_plan(engine)
    finally:
        engine.store.close()
    if not dry_run:
        set_part(location, "retrieval", {"plan_fit": entry}, entry["index_fingerprint"])
    return entry


def reset(location: str | Path) -> None:
    """Forget the plan fitted to the index at `location`: the built-in plan answers again."""
    set_part(location, "retrieval", {})


def tune_plan(location: str | Path) -> str:
    """`tune` as a build step: a one-line note for the build report. Never raises: a
    failure keeps the built-in plan."""
    started = time.perf_counter()
    try:
        entry = tune(location)
    except Exception as exc:
        return f"the retrieval plan could not be fitted ({exc}); the built-in plan is kept"
    summary = describe_fit({"plan_fit": entry}, str(entry["builtin"]))
    return f"retrieval: {summary} ({time.perf_counter() - started:.1f}s)"
