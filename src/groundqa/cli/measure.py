"""`groundqa eval`, `calibrate` and `tune`: retrieval, refusals and answers measured, the
gate and the retrieval plan fitted.

Thin shells over `evaluate` (probe sets, BEIR), `evaluate.calibrate` and
`evaluate.planfit`: they parse the options, run the harness, and print a table or
emit its JSON. The figures are computed by the library; this module only formats them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from groundqa.cli.common import (
    emit_json,
    generator_options,
    index_option,
    out,
    progress_bars,
    reader_option,
)
from groundqa.errors import UsageError


def _parse_ks(value: str) -> list[int]:
    try:
        ks = sorted({int(v) for v in value.split(",") if v.strip()})
    except ValueError:
        raise UsageError(f"--k takes comma-separated numbers, got {value!r}") from None
    if not ks or ks[0] < 1 or ks[-1] > 100:
        raise UsageError("--k values must be between 1 and 100")
    return ks


@click.command(name="eval")
@click.option(
    "--index",
    "--store",
    "index_dir",
    help="Index to evaluate (with --probes), or to build/reuse for --beir: a directory, or a "
    "postgresql:// URL.",
)
@click.option(
    "--probes",
    "probes_path",
    type=click.Path(dir_okay=False),
    help="Probe file (JSONL): questions with expected sections and kinds.",
)
@click.option(
    "--beir",
    "beir_dir",
    type=click.Path(file_okay=False),
    help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.",
)
@click.option("--split", default="test", show_default=True, help="BEIR qrels split.")
@click.option(
    "--retrievers",
    default=None,
    help="Comma-separated retrievers to compare, e.g. bm25,dense,hybrid,hybrid+weighted "
    "(default: each method the index serves and its default plan; bm25,dense,hybrid for --beir).",
)
@click.option(
    "--k",
    "k_values",
    default="1,2,3,5,8,10,20",
    show_default=True,
    help="Cut-offs for recall@k and hit@k (probe sets).",
)
@click.option(
    "--run-file",
    type=click.Path(dir_okay=False),
    help="With --beir: write the first retriever's run in TREC format.",
)
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False),
    help="Write report.md, report.json and PNG plots to this folder.",
)
@click.option(
    "--generator",
    default="extractive",
    show_default=True,
    help="Generator that answers the probes the gate lets through (its refusals are counted apart).",
)
@click.option("--generator-url", default=None, help="Base URL of the generator's server.")
@reader_option
@click.option(
    "--ignore-scope",
    is_flag=True,
    help="Ask every probe without its `scope` (answers citing outside it are still counted).",
)
@click.option("--json", "as_json", is_flag=True)
def evaluate(
    index_dir: str | None,
    probes_path: str | None,
    beir_dir: str | None,
    split: str,
    retrievers: str | None,
    k_values: str,
    run_file: str | None,
    report_dir: str | None,
    generator: str,
    generator_url: str | None,
    reader: str,
    ignore_scope: bool,
    as_json: bool,
) -> None:
    """Measure retrieval, refusals and answers on a probe set or a BEIR benchmark."""
    from groundqa.retrieve import parse_plan

    names = [parse_plan(r).spec for r in (retrievers or "").split(",") if r.strip()]
    if beir_dir and probes_path:
        raise UsageError("give --probes (with --index) or --beir, not both")
    if beir_dir:
        names = names or ["bm25", "dense", "hybrid"]
        _eval_beir(beir_dir, split, index_dir, names, run_file, report_dir, as_json)
    elif probes_path and index_dir:
        _eval_probes(
            index_dir,
            probes_path,
            names,
            _parse_ks(k_values),
            report_dir,
            as_json,
            generator=generator,
            options=generator_options(generator_url, 60.0),
            use_scope=not ignore_scope,
            reader=reader,
        )
    else:
        raise UsageError("eval needs --index DIR --probes FILE, or --beir DIR")


def _eval_beir(
    folder: str,
    split: str,
    index_dir: str | None,
    names: list[str],
    run_file: str | None,
    report_dir: str | None,
    as_json: bool,
) -> None:
    from groundqa.evaluate.beir import evaluate_beir

    result = evaluate_beir(
        folder, split=split, index_dir=index_dir, retrievers=names, run_file=run_file
    )
    if report_dir:
        from groundqa.evaluate.report import write_beir_report

        write_beir_report(result, Path(report_dir), title=f"BEIR {folder} ({split})")
    if as_json:
        emit_json(result)
        return
    table = Table(title=f"{folder} ({split}, {result['queries']} queries)", header_style="bold")
    table.add_column("metric")
    for name in names:
        table.add_column(name, justify="right")
    for key in ("ndcg@10", "mrr@10", "map@10", "recall@10", "recall@100"):
        table.add_row(key, *(f"{result['metrics'][n][key]:.4f}" for n in names))
    out.print(table)
    reused = "reused" if result["index_reused"] else "built"
    out.print(f"index {reused}: {result['index'] or 'temporary'} ({result['chunks']} chunks)")


def _eval_probes(
    index_dir: str,
    probes_path: str,
    names: list[str],
    ks: list[int],
    report_dir: str | None,
    as_json: bool,
    *,
    generator: str,
    options: Any,
    use_scope: bool = True,
    reader: str = "lexical",
) -> None:
    from groundqa.engine import Engine
    from groundqa.evaluate import compare_retrievers, load_probes

    probes = load_probes(probes_path)
    engine = Engine.open(index_dir, reader=reader)
    comparison = compare_retrievers(
        engine,
        probes,
        names,
        ks=ks,
        generator=generator,
        options=options,
        use_scope=use_scope,
    )
    reports = comparison.reports
    if report_dir:
        from groundqa.evaluate.report import write_probe_report

        write_probe_report(
            reports,
            Path(report_dir),
            title=f"{probes_path} on {index_dir}",
            meta={"index": index_dir, "probes": probes_path},
        )
    if as_json:
        emit_json({"index": index_dir, "probes": probes_path, **comparison.to_dict()})
        return
    table = Table(title=f"{probes_path} on {index_dir}", header_style="bold")
    table.add_column("metric")
    for r in reports:
        table.add_column(r.retriever, justify="right")
    for key in reports[0].metrics:
        table.add_row(key, *(_fmt_metric(key, r.metrics.get(key, 0.0)) for r in reports))
    out.print(table)
    out.print(", ".join(f"{k}: {v}" for k, v in reports[0].counts.items()))
    out.print(f"gate: {comparison.gate}")
    for note in comparison.notes:
        out.print(f"[yellow]note:[/] {escape(note)}")
    for r in reports:
        out.print(f"{r.retriever}: {r.sweep.get('note', '')}")
        misses = [x for x in r.results if x.probe.expected and (x.rank is None or x.rank > 3)]
        for x in misses:
            rank = "not in top" if x.rank is None else f"rank {x.rank}"
            out.print(f"  [yellow]miss[/] {x.probe.id} ({rank}): {escape(x.probe.question)}")


def _fmt_metric(key: str, value: float) -> str:
    if key.startswith("latency"):
        return f"{value:.1f} ms"
    return f"{value:.3f}"


@click.command()
@index_option
@click.option(
    "--probes",
    "probes_path",
    type=click.Path(dir_okay=False),
    help="Probe file (JSONL) with answerable and out_of_scope or near_miss questions.",
)
@click.option(
    "--target",
    type=click.FloatRange(0.0, 0.5),
    default=0.05,
    show_default=True,
    help="False-refusal rate on answerable questions to set the threshold for.",
)
@click.option(
    "--folds",
    type=click.IntRange(2, 20),
    default=5,
    show_default=True,
    help="Cross-validation folds for the threshold and the reported figures.",
)
@click.option(
    "--retriever", default=None, help="Retrieval plan to calibrate for (default: the index's)."
)
@click.option(
    "--generator",
    default="extractive",
    show_default=True,
    help="Generator whose own refusals count end to end.",
)
@click.option("--generator-url", default=None, help="Base URL of the generator's server.")
@click.option(
    "--export",
    "export_path",
    type=click.Path(dir_okay=False),
    help="Also write the calibration to this JSON file.",
)
@click.option(
    "--apply",
    "apply_path",
    type=click.Path(dir_okay=False),
    help="Store a calibration written by --export (it must be for this index).",
)
@click.option(
    "--synthetic",
    is_flag=True,
    help="Fit on probes made from the index's own corpus (read again from its sources) "
    "instead of a probe file.",
)
@reader_option
@click.option(
    "--reset",
    is_flag=True,
    help="Go back to the built-in default gate, with its floor and band fitted to this index.",
)
@click.option("--dry-run", is_flag=True, help="Fit and report, but store nothing.")
@click.option("--json", "as_json", is_flag=True)
def calibrate(
    index_dir: str,
    probes_path: str | None,
    target: float,
    folds: int,
    retriever: str | None,
    generator: str,
    generator_url: str | None,
    export_path: str | None,
    apply_path: str | None,
    synthetic: bool,
    reader: str,
    reset: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Fit the answer-or-refuse gate for an index on a probe set (or on probes made from
    its own corpus), and store it there."""
    from groundqa.evaluate import calibrate as cal
    from groundqa.evaluate import selffit

    chosen = [bool(probes_path), bool(apply_path), reset, synthetic]
    if sum(chosen) != 1:
        raise UsageError(
            "calibrate needs exactly one of --probes FILE, --synthetic, --apply FILE or --reset"
        )
    if apply_path:
        stored = _read_calibration(Path(apply_path))
        manifest = cal.install(index_dir, stored)
        out.print(f"calibration from {apply_path} stored in build {manifest.build_id}")
        return
    if reset:
        manifest = selffit.reset(index_dir)
        out.print(f"build {manifest.build_id} uses the built-in default gate again")
        return
    from groundqa.engine import Engine
    from groundqa.evaluate import load_probes

    engine = Engine.open(index_dir, reader=reader)
    if synthetic:
        with progress_bars(not as_json) as reporter:
            if reporter is not None:
                reporter.stage("screening probes made from the corpus", total=cal.SYNTHETIC_PROBES)
            report = cal.calibrate_synthetic(
                engine,
                target=target,
                folds=folds,
                progress=reporter.advance if reporter is not None else None,
            )
        _store_calibration(report, index_dir, engine, export_path, dry_run, as_json, target)
        return
    assert probes_path is not None
    probes = load_probes(probes_path)
    with progress_bars(not as_json) as reporter:
        if reporter is not None:
            reporter.stage("screening probes", total=len(probes))
        report = cal.calibrate(
            engine,
            probes,
            target=target,
            folds=folds,
            retriever=retriever,
            generator=generator,
            options=generator_options(generator_url, 60.0),
            progress=reporter.advance if reporter is not None else None,
        )
    _store_calibration(report, index_dir, engine, export_path, dry_run, as_json, target)


def _store_calibration(
    report: Any,
    index_dir: str,
    engine: Any,
    export_path: str | None,
    dry_run: bool,
    as_json: bool,
    target: float,
) -> None:
    """Export, store and print a fitted calibration, as `calibrate` does for each source."""
    from groundqa.evaluate import calibrate as cal

    gate = report.gate.to_dict()
    if export_path:
        try:
            Path(export_path).write_text(json.dumps(gate, indent=1) + "\n", encoding="utf-8")
        except OSError as exc:
            raise UsageError(
                f"cannot write {export_path} ({exc.strerror}); choose another --export path"
            ) from None
    if not dry_run:
        cal.install(index_dir, gate)
    if as_json:
        emit_json({**report.to_dict(), "stored": not dry_run})
        return
    _print_calibration(report, target)
    if dry_run:
        out.print("[dim]dry run: nothing stored[/]")
    else:
        out.print(f"stored in {index_dir} (build {engine.manifest.build_id})")


def _read_calibration(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise UsageError(f"no calibration file at {path}") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{path} is not a calibration JSON file ({exc})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} is not a calibration JSON file (expected an object)")
    return data


def _print_calibration(report: Any, target: float) -> None:
    n = report.gate.info["probes"]
    folds = report.gate.info["folds"]
    table = Table(
        title=f"{folds}-fold cross-validated: each question judged by a model fitted without it",
        header_style="bold",
    )
    for column in (
        "gate",
        "AUC",
        "answerable refused",
        "out-of-scope refused",
        "near-miss refused",
    ):
        table.add_column(column, justify="left" if column == "gate" else "right")
    for name, result in report.results.items():
        row = [name, f"{result['auc']:.3f}"]
        for kind in ("answerable", "out_of_scope", "near_miss"):
            o = result["outcome"].get(kind)
            row.append(
                f"{o['refused']}/{o['n']} (gate {o['gate']}, generator {o['generator']})"
                if o
                else "-"
            )
        table.add_row(*row)
    out.print(table)
    for rate, point in report.operating.items():
        out.print(
            f"at {rate} false refusal: refuses {point['refused_unanswerable']:.0%} of unanswerable"
        )
    model = report.gate.model
    made = report.gate.info.get("synthetic")
    source = f" made from the corpus ({made['method']})" if made else ""
    out.print(
        f"model: logistic over {len(model.names)} features, fitted on {n['answerable']} answerable "
        f"and {n['unanswerable']} unanswerable probes{source}; threshold "
        f"{report.gate.threshold:.3f} (target {target:.0%} false refusal), cautious from "
        f"{report.gate.floor:.3f}"
    )
    if made:
        out.print(
            "[dim]the figures above are on the probes made from the corpus, not on real "
            "questions; a probe set of real questions (--probes) measures the gate as users "
            "will meet it[/]"
        )
    for name, coef in sorted(zip(model.names, model.coef, strict=True), key=lambda r: -abs(r[1])):
        out.print(f"  {name:<18} {coef:+.3f} per standard deviation")


@click.command()
@index_option
@click.option("--reset", is_flag=True, help="Forget the fitted plan: the built-in plan again.")
@click.option("--dry-run", is_flag=True, help="Fit and report, but store nothing.")
@click.option("--json", "as_json", is_flag=True)
def tune(index_dir: str, reset: bool, dry_run: bool, as_json: bool) -> None:
    """Fit the retrieval plan of an index on questions made from its own corpus, and
    store it there (the built-in plan stays unless another beats it by more than its
    noise). A plan named with --retriever still overrides it."""
    from groundqa.evaluate import planfit
    from groundqa.retrieve import describe_fit

    if reset:
        if dry_run:
            raise UsageError("tune takes --reset or --dry-run, not both")
        planfit.reset(index_dir)
        out.print(f"{index_dir} answers with the built-in plan again")
        return
    entry = planfit.tune(index_dir, dry_run=dry_run)
    if as_json:
        emit_json({"plan_fit": entry, "stored": not dry_run})
        return
    grid = entry.get("grid", {})
    if grid:
        table = Table("plan", *next(iter(grid.values())), title="questions made from the corpus")
        for plan, figures in grid.items():
            table.add_row(escape(plan), *(f"{v:.3f}" for v in figures.values()))
        out.print(table)
    summary = describe_fit({"plan_fit": entry}, str(entry["builtin"]))
    out.print(f"retrieval: {escape(summary)}")
    if dry_run:
        out.print("(--dry-run: nothing stored)")
