"""Reports: an evaluation run written out as Markdown, JSON and PNG plots.

One report compares retrievers side by side over the same probe set (or BEIR
split): retrievers are columns, metrics are rows. The Markdown renders on
GitHub, the JSON holds every number the Markdown shows and more, and the plots
show what a table hides (where recall levels off, how well the gate separates
answerable questions from the rest).

This module computes nothing: every number comes from `EvalReport` or the BEIR
result as given. Output is deterministic (no timestamps unless the caller puts
one in `meta`). matplotlib is optional (`pip install 'groundqa[plots]'`) and is
imported only when a plot is drawn, after the Markdown and JSON are on disk.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundqa.errors import UsageError
from groundqa.evaluate.harness import EvalReport, ProbeResult, report_notes

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["render_markdown", "write_beir_report", "write_probe_report"]

DASH = "—"
MISS_RANK = 3  # an answerable probe whose expected section is below this rank is a miss
PROBE_KINDS = ("answerable", "near_miss", "out_of_scope")
_RANKED_METRIC = re.compile(r"^(recall|hit)@(\d+)$")
_PLOT_SIZE = (6.0, 4.0)
_PLOT_DPI = 110


# ---------------------------------------------------------------- entry points


def write_probe_report(
    reports: Sequence[EvalReport],
    directory: Path,
    *,
    title: str,
    meta: Mapping[str, Any] | None = None,
) -> list[Path]:
    """Write report.md, report.json, recall_at_k.png and (with mixed kinds) gate_scores.png.

    `reports` holds one EvalReport per retriever, all over the same probes. The
    Markdown and JSON are written before any plot, so they exist even when
    matplotlib is missing and the plot step raises UsageError.
    """
    _check_reports(reports)
    directory.mkdir(parents=True, exist_ok=True)
    written = [
        _write_text(directory / "report.md", render_markdown(reports, title=title, meta=meta)),
        _write_json(
            directory / "report.json",
            {
                "title": title,
                "meta": dict(meta or {}),
                "notes": report_notes(reports),
                "retrievers": {r.retriever: r.to_dict() for r in reports},
            },
        ),
    ]
    curves = [(r.retriever, _recall_curve(r.metrics), r.sweep.get("note")) for r in reports]
    if any(points for _, points, _ in curves):
        written.append(_plot_recall(curves, directory / "recall_at_k.png", title=title))
    first = reports[0]
    if len({r.probe.kind for r in first.results}) > 1:
        written.append(_plot_gate_scores(first, directory / "gate_scores.png", title=title))
    return written


def write_beir_report(result: Mapping[str, Any], directory: Path, *, title: str) -> list[Path]:
    """Write report.md, report.json (the result as given) and recall_at_k.png if there is a curve.

    `result` is `{"dataset": ..., "metrics": {name: {"ndcg@10": ..., "recall@k":
    {"1": ..., "10": ...}, ...}}, ...}` (or the same under `retrievers`, its old
    name); other top-level scalars are listed as context at the top of the Markdown.
    """
    retrievers = result.get("metrics", result.get("retrievers"))
    if not isinstance(retrievers, Mapping) or not retrievers:
        raise UsageError("a BEIR result needs a non-empty `metrics` mapping of name -> metrics")
    directory.mkdir(parents=True, exist_ok=True)
    written = [
        _write_text(directory / "report.md", _render_beir_markdown(result, retrievers, title)),
        _write_json(directory / "report.json", result),
    ]
    curves = [
        (str(name), _beir_curve(metrics), None)
        for name, metrics in retrievers.items()
        if isinstance(metrics, Mapping)
    ]
    if any(points for _, points, _ in curves):
        written.append(_plot_recall(curves, directory / "recall_at_k.png", title=title))
    return written


def render_markdown(
    reports: Sequence[EvalReport], *, title: str, meta: Mapping[str, Any] | None = None
) -> str:
    """The probe report as GitHub-flavoured Markdown: retrievers in columns, metrics in rows."""
    _check_reports(reports)
    first = reports[0]
    names = [r.retriever for r in reports]
    out: list[str] = [f"# {_inline(title)}", ""]
    if meta:
        out += [f"- {_inline(str(k))}: {_code(str(v))}" for k, v in meta.items()]
        out.append("")
    notes = report_notes(reports)
    if notes:
        out += ["## Notes", ""]
        out += [f"- {_inline(note)}" for note in notes]
        out.append("")

    out += ["## Metrics", ""]
    rows = [
        [_code(key), *(_fmt_metric(key, r.metrics.get(key)) for r in reports)]
        for key in _metric_order(r.metrics for r in reports)
    ]
    out += _table(["metric", *names], rows, align=["l", *["r"] * len(names)])
    out.append("")
    thresholds = {r.gate_threshold for r in reports}
    if len(thresholds) == 1:
        out += [f"Gate threshold (a confident answer from): {first.gate_threshold:.3f}", ""]
    else:
        out += [
            "Gate thresholds: "
            + ", ".join(f"{_inline(r.retriever)} {r.gate_threshold:.3f}" for r in reports),
            "",
        ]
    if first.gate_sweep:
        keys = [
            k
            for k in ("false_refusal", "refused_out_of_scope", "refused_near_miss")
            if any(k in row for row in first.gate_sweep)
        ]
        out += [
            f"Gate refusals at other confidence thresholds ({_inline(first.retriever)}, at the gate only):",
            "",
        ]
        out += _table(
            ["threshold", *keys],
            [
                [f"{row['threshold']:.1f}", *(f"{row[k]:.3f}" if k in row else "—" for k in keys)]
                for row in first.gate_sweep
            ],
            align=["r", *["r"] * len(keys)],
        )
        out.append("")

    out += ["## Probes", ""]
    out += _table(
        ["probes", "n"],
        [[_inline(k), str(v)] for k, v in first.counts.items()],
        align=["l", "r"],
    )
    out.append("")

    out += ["## Recall sweep", ""]
    out += [f"- **{_inline(r.retriever)}**: {_inline(_sweep_note(r.sweep))}" for r in reports]
    out.append("")

    out += [f"## Per question ({_inline(first.retriever)})", ""]
    out += _table(
        ["id", "kind", "rank", "outcome", "confidence", "answer check"],
        [
            [
                _code(x.probe.id),
                _inline(x.probe.kind),
                str(x.rank) if x.rank is not None else DASH,
                _inline(f"refused ({x.refused_by})" if x.refused_by else x.outcome),
                f"{x.gate_score:.3f}",
                _answer_check(x),
            ]
            for x in first.results
        ],
        align=["l", "l", "r", "l", "r", "l"],
    )
    out.append("")

    out += [f"## Misses (expected section not in the top {MISS_RANK})", ""]
    for r in reports:
        if len(reports) > 1:
            out += [f"### {_inline(r.retriever)}", ""]
        misses = [x for x in r.results if _is_miss(x)]
        if not misses:
            out += ["None.", ""]
            continue
        absent = set(r.missing_expected)
        for x in misses:
            if set(x.probe.expected) <= absent:
                where = "expected id not in the index"
            else:
                where = "not retrieved" if x.rank is None else f"rank {x.rank}"
            top = _code(x.ranked_sections[0]) if x.ranked_sections else "nothing retrieved"
            out.append(f"- {_code(x.probe.id)} ({where}): {_inline(x.probe.question)}")
            out.append(f"  expected {_codes(x.probe.expected)}; top-1 {top}")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


# ---------------------------------------------------------------- Markdown helpers


def _check_reports(reports: Sequence[EvalReport]) -> None:
    if not reports:
        raise UsageError("a report needs at least one retriever's EvalReport")
    names = [r.retriever for r in reports]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise UsageError(f"retriever names must be unique in one report, repeated: {dupes}")
    ids = [x.probe.id for x in reports[0].results]
    for r in reports[1:]:
        if [x.probe.id for x in r.results] != ids:
            raise UsageError(
                f"{r.retriever!r} was run on a different probe set from {reports[0].retriever!r}; "
                "compare retrievers over the same probe file"
            )


def _metric_order(metric_maps: Iterable[Mapping[str, float]]) -> list[str]:
    """recall@k by k, then hit@k by k, then every other metric in first-seen order."""
    seen: dict[str, None] = {}
    for metrics in metric_maps:
        for key in metrics:
            seen.setdefault(key, None)

    def ranked(prefix: str) -> list[str]:
        keys = [(int(m[2]), k) for k in seen if (m := _RANKED_METRIC.match(k)) and m[1] == prefix]
        return [k for _, k in sorted(keys)]

    head = ranked("recall") + ranked("hit")
    return head + [k for k in seen if k not in head]


def _fmt_metric(key: str, value: float | None) -> str:
    if value is None:
        return DASH
    if "latency" in key:
        return f"{value:.1f} ms"
    return f"{value:.3f}"


def _sweep_note(sweep: Mapping[str, Any]) -> str:
    note = sweep.get("note")
    if note:
        return str(note)
    if sweep.get("levels_off_at") is not None:
        return f"levels off at k={sweep['levels_off_at']}"
    return "no recall sweep"


def _answer_check(x: ProbeResult) -> str:
    if x.contains is None:
        return DASH
    if not x.contains:
        return "missing"
    if x.grounded is None:  # no expected section to hold the fact
        return "found"
    return "grounded" if x.grounded else "not grounded"


def _is_miss(x: ProbeResult) -> bool:
    return x.probe.answerable and bool(x.probe.expected) and (x.rank is None or x.rank > MISS_RANK)


def _inline(text: str) -> str:
    """One line of text safe in a table cell: no newlines, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _code(text: str) -> str:
    """A code span; GFM table cells split on unescaped pipes even inside code spans."""
    text = _inline(text)
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _codes(items: Iterable[str]) -> str:
    return ", ".join(_code(i) for i in items) or DASH


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], align: Sequence[str]) -> list[str]:
    rule = {"l": ":---", "r": "---:"}
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule[a] for a in align) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _render_beir_markdown(
    result: Mapping[str, Any], retrievers: Mapping[str, Any], title: str
) -> str:
    names = [str(n) for n in retrievers]
    metric_maps = [m if isinstance(m, Mapping) else {} for m in retrievers.values()]
    out: list[str] = [f"# {_inline(title)}", ""]
    context = [
        (k, v)
        for k, v in result.items()
        if k not in ("metrics", "retrievers") and isinstance(v, str | int | float | bool)
    ]
    if context:
        out += [f"- {_inline(str(k))}: {_code(str(v))}" for k, v in context]
        out.append("")
    keys: dict[str, None] = {}
    for m in metric_maps:
        for k, v in m.items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                keys.setdefault(k, None)
    out += ["## Metrics", ""]
    out += _table(
        ["metric", *[_inline(n) for n in names]],
        [[_code(k), *(_fmt_beir(m.get(k)) for m in metric_maps)] for k in keys],
        align=["l", *["r"] * len(names)],
    )
    out.append("")
    curves = [_beir_curve(m) for m in metric_maps]
    ks = sorted({k for curve in curves for k, _ in curve})
    # Shown only when the curve holds cut-offs the metrics table does not already have.
    if any(f"recall@{k}" not in keys for k in ks):
        out += ["## Recall by k", ""]
        out += _table(
            ["k", *[_inline(n) for n in names]],
            [[str(k), *(_fmt_beir(dict(curve).get(k)) for curve in curves)] for k in ks],
            align=["r", *["r"] * len(names)],
        )
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _fmt_beir(value: Any) -> str:
    # Four decimals, as BEIR tables and `groundqa eval --beir` print them.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return DASH
    return str(value) if isinstance(value, int) else f"{value:.4f}"


# ---------------------------------------------------------------- files


def _write_text(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _write_json(path: Path, data: Any) -> Path:
    # default=str: meta may carry Paths or dates; the report should not fail on them.
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    return _write_text(path, text + "\n")


# ---------------------------------------------------------------- plots

Curve = list[tuple[int, float]]


def _recall_curve(metrics: Mapping[str, float]) -> Curve:
    points = [
        (int(m[2]), v)
        for k, v in metrics.items()
        if (m := _RANKED_METRIC.match(k)) and m[1] == "recall"
    ]
    return sorted(points)


def _beir_curve(metrics: Mapping[str, Any]) -> Curve:
    raw = metrics.get("recall@k")
    if not isinstance(raw, Mapping):
        return []
    points: Curve = []
    for k, v in raw.items():
        try:
            points.append((int(k), float(v)))
        except (TypeError, ValueError):
            continue
    return sorted(points)


def _new_figure() -> Figure:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise UsageError("plots need matplotlib: pip install 'groundqa[plots]'") from None
    # A bare Figure with its own Agg canvas: no pyplot, no global figure registry to close.
    fig = Figure(figsize=_PLOT_SIZE, dpi=_PLOT_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, format="png", dpi=_PLOT_DPI)
    return path


def _plot_recall(
    curves: Sequence[tuple[str, Curve, str | None]], path: Path, *, title: str
) -> Path:
    """One line per retriever: recall@k over the k values that were measured."""
    fig = _new_figure()
    ax = fig.add_subplot()
    ks = sorted({k for _, points, _ in curves for k, _ in points})
    for name, points, note in curves:
        if not points:
            continue
        label = f"{name}: {note}" if note else name
        ax.plot([k for k, _ in points], [v for _, v in points], marker="o", label=label)
    if ks and ks[-1] / ks[0] > 20:
        # 1, 10, 100 (BEIR) would crowd the low end on a linear axis.
        ax.set_xscale("log")
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.minorticks_off()
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("k (results considered)")
    ax.set_ylabel("recall@k")
    ax.set_title(f"Recall@k: {title}", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    return _save(fig, path)


def _plot_gate_scores(report: EvalReport, path: Path, *, title: str) -> Path:
    """Gate score per probe, one row per kind, with the threshold the gate refuses below."""
    fig = _new_figure()
    ax = fig.add_subplot()
    present = {x.probe.kind for x in report.results}
    kinds = [k for k in PROBE_KINDS if k in present] + sorted(present - set(PROBE_KINDS))
    seen: set[str] = set()
    for row, kind in enumerate(kinds):
        group = [x for x in report.results if x.probe.kind == kind]
        # Deterministic jitter (golden-ratio sequence) so equal scores stay visible.
        ys = [row + (((i * 0.618034) % 1.0) - 0.5) * 0.4 for i in range(len(group))]
        for refused, marker, color, label in (
            (False, "o", "tab:blue", "answered"),
            (True, "x", "tab:red", "refused"),
        ):
            pts = [
                (x.gate_score, y) for x, y in zip(group, ys, strict=True) if x.refused is refused
            ]
            if pts:
                ax.scatter(
                    [p[0] for p in pts],
                    [p[1] for p in pts],
                    marker=marker,
                    color=color,
                    alpha=0.7,
                    label=label if label not in seen else None,
                )
                seen.add(label)
    ax.axvline(
        report.gate_threshold,
        color="black",
        linestyle="--",
        label=f"gate threshold ({report.gate_threshold:.2f})",
    )
    counts = [sum(1 for x in report.results if x.probe.kind == k) for k in kinds]
    ax.set_yticks(range(len(kinds)), [f"{k}\n(n={n})" for k, n in zip(kinds, counts, strict=True)])
    ax.set_ylim(-0.6, len(kinds) - 0.4)
    top = max([1.0, report.gate_threshold, *(x.gate_score for x in report.results)])
    ax.set_xlim(-0.02, top * 1.02)
    ax.set_xlabel("confidence: P(answerable) from the gate")
    ax.set_title(f"Gate scores by probe kind ({report.retriever}): {title}", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    # Outside the axes: "best" placement is slow on large probe sets and may cover points.
    fig.legend(loc="outside lower center", ncols=3, fontsize=8)
    return _save(fig, path)
