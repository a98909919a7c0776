"""`groundqa validate`, `ingest` and `inspect`: a corpus checked, indexed, and an index described.

Thin shells over `validate`, `ingestion.ingest` and `inspection.inspect_index`:
each parses its options, calls the library and prints or emits what it returns.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click
from rich.markup import escape

from groundqa.cli.common import (
    columns_option,
    emit_json,
    format_option,
    index_option,
    out,
    parse_pairs,
    progress_bars,
    stacked,
)
from groundqa.loaders.ocr import BUILD_BUDGET_S, FILE_BUDGET_S, OcrBudget
from groundqa.models import Finding

no_ocr_option = click.option(
    "--no-ocr",
    is_flag=True,
    help="Do not read PDF pages without a text layer by OCR: report them instead.",
)
ocr_budget_options = (
    click.option(
        "--ocr-budget",
        type=click.FloatRange(min=0),
        default=FILE_BUDGET_S,
        show_default=True,
        help="Seconds of OCR one PDF may take (0: no limit); pages past it are named, not read.",
    ),
    click.option(
        "--ocr-build-budget",
        type=click.FloatRange(min=0),
        default=BUILD_BUDGET_S,
        show_default=True,
        help="Seconds of OCR all the PDFs of one run may take together (0: no limit).",
    ),
)

ocr_budget_option = stacked(ocr_budget_options)


follow_links_option = click.option(
    "--follow-links",
    is_flag=True,
    help="Read symbolic links in a corpus folder wherever they point. By default a link "
    "whose target lies outside the folder named (or nowhere) is skipped and reported.",
)


def _print_findings(findings: Sequence[Finding]) -> None:
    for f in findings:
        style = "red" if f.severity == "BLOCK" else "yellow"
        out.print(f"[{style}]{f.severity:<6}[/] [bold]{f.check}[/]  {escape(f.where())}")
        out.print(f"       {escape(f.message)}")
        if f.excerpt:
            out.print(f"       [dim]{escape(f.excerpt)}[/]")


@click.command()
@click.argument("sources", nargs=-1, required=True)
@format_option
@columns_option
@no_ocr_option
@ocr_budget_option
@follow_links_option
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
def validate(
    sources: tuple[str, ...],
    fmt: str,
    columns: tuple[str, ...],
    no_ocr: bool,
    ocr_budget: float,
    ocr_build_budget: float,
    follow_links: bool,
    as_json: bool,
) -> None:
    """Check a corpus without indexing it. Exit 1 when a BLOCK finding would stop ingest."""
    from groundqa.ingestion import ocr_progress
    from groundqa.loaders import load
    from groundqa.validate import has_blocking
    from groundqa.validate import validate as run_validation

    budget = OcrBudget(ocr_budget, ocr_build_budget)
    with progress_bars(not as_json) as reporter:
        if reporter is not None:
            budget.progress = ocr_progress(reporter, after="reading")
        loaded = load(
            sources,
            fmt=fmt,
            columns=parse_pairs(columns, "--columns") or None,
            ocr=not no_ocr,
            follow_links=follow_links,
            ocr_budget=budget,
        )
    findings = run_validation(loaded.documents, load_findings=loaded.findings)
    blocking = has_blocking(findings)
    counts = {s: sum(1 for f in findings if f.severity == s) for s in ("BLOCK", "REVIEW")}
    if as_json:
        emit_json(
            {
                "ok": not blocking,
                "documents": len(loaded.documents),
                "sections": sum(len(d.sections) for d in loaded.documents),
                "counts": counts,
                "findings": [f.to_dict() for f in findings],
            }
        )
    else:
        if findings:
            _print_findings(findings)
        n_sections = sum(len(d.sections) for d in loaded.documents)
        verdict = "[red]blocked: ingest would refuse this corpus[/]" if blocking else "[green]ok[/]"
        out.print(
            f"{len(loaded.documents)} documents, {n_sections} sections: "
            f"{counts['BLOCK']} BLOCK, {counts['REVIEW']} REVIEW — {verdict}"
        )
    if blocking:
        sys.exit(1)


@click.command()
@click.argument("sources", nargs=-1, required=True)
@click.option(
    "--index",
    "--store",
    "index_dir",
    required=True,
    help="Index directory to build or update, or a postgresql:// URL.",
)
@format_option
@columns_option
@no_ocr_option
@ocr_budget_option
@follow_links_option
@click.option(
    "--no-dense",
    is_flag=True,
    help="Build the lexical (BM25) index only: no embedding model, bm25 retrieval.",
)
@click.option(
    "--embedder",
    default="minilm",
    show_default=True,
    help="Embedding model: minilm[:onnx-int8|:fp32] (offline), ollama:MODEL, openai:MODEL.",
)
@click.option(
    "--embedder-url", default=None, help="Base URL of an ollama: or openai: embedding server."
)
@click.option(
    "--threads",
    default=None,
    type=click.IntRange(1, 64),
    help="Threads for the local embedding model (default: the CPU count, at most 4).",
)
@click.option(
    "--ann-threshold",
    default=100_000,
    show_default=True,
    type=click.IntRange(1),
    help="From this many chunks on, also build an HNSW graph (needs groundqa[ann]).",
)
@click.option(
    "--max-chars",
    type=click.IntRange(200, 20000),
    default=1500,
    show_default=True,
    help="Split sections longer than this at paragraph, then sentence, boundaries.",
)
@click.option(
    "--no-section-path",
    is_flag=True,
    help="Index chunk text without its section path (the breadcrumb still cites it).",
)
@click.option(
    "--no-self-fit",
    is_flag=True,
    help="Keep the built-in gate as it is instead of fitting a floor on out-of-scope "
    "questions made for the new build and a band on questions made from its text.",
)
@click.option(
    "--no-tune",
    is_flag=True,
    help="Keep the built-in retrieval plan instead of fitting one on questions made from "
    "the corpus (`groundqa tune` fits it later).",
)
@click.option("--force", is_flag=True, help="Rebuild even when the corpus is unchanged.")
@click.option("--json", "as_json", is_flag=True, help="Print the build report as JSON.")
def ingest(
    sources: tuple[str, ...],
    index_dir: str,
    fmt: str,
    columns: tuple[str, ...],
    no_ocr: bool,
    ocr_budget: float,
    ocr_build_budget: float,
    follow_links: bool,
    no_dense: bool,
    embedder: str,
    embedder_url: str | None,
    threads: int | None,
    ann_threshold: int,
    max_chars: int,
    no_section_path: bool,
    no_self_fit: bool,
    no_tune: bool,
    force: bool,
    as_json: bool,
) -> None:
    """Validate, chunk and index SOURCES into an index directory (atomically)."""
    from groundqa.chunking import ChunkerSettings
    from groundqa.embed import EmbedderOptions
    from groundqa.evaluate.planfit import tune_plan
    from groundqa.evaluate.selffit import self_fit
    from groundqa.index.dense import DenseSettings
    from groundqa.ingestion import ingest as run_ingest

    with progress_bars(not as_json) as reporter:
        report = run_ingest(
            sources,
            index_dir,
            fmt=fmt,
            columns=parse_pairs(columns, "--columns") or None,
            chunker=ChunkerSettings(max_chars=max_chars, section_path=not no_section_path),
            dense=None if no_dense else DenseSettings(embedder, ann_threshold=ann_threshold),
            embedder_options=EmbedderOptions(base_url=embedder_url, threads=threads),
            force=force,
            reporter=reporter,
            ocr=not no_ocr,
            ocr_budget=OcrBudget(ocr_budget, ocr_build_budget),
            follow_links=follow_links,
            fit_gate=None if no_self_fit else self_fit,
            fit_plan=None if no_tune else tune_plan,
        )
    if as_json:
        emit_json(report.to_dict())
        return
    out.print(report.message)
    reviews = [f for f in report.findings if f.severity == "REVIEW"]
    if reviews:
        out.print(
            f"[yellow]{len(reviews)} REVIEW finding(s)[/] were indexed anyway; "
            f"see `groundqa validate {' '.join(sources)}{' --no-ocr' if no_ocr else ''}"
            f"{' --follow-links' if follow_links else ''}`"
        )


@click.command()
@index_option
@click.option("--sections", is_flag=True, help="List every section id in the index.")
@click.option("--json", "as_json", is_flag=True)
def inspect(index_dir: str, sections: bool, as_json: bool) -> None:
    """Show what an index holds: counts, chunk sizes, boundary checks, staleness."""
    from groundqa.inspection import inspect_index

    report = inspect_index(index_dir)
    if as_json:
        data = report.to_dict()
        if sections:
            data["section_ids"] = report.section_ids
        emit_json(data)
        return
    m = report.manifest
    out.print(
        f"[bold]{index_dir}[/]  build {m.build_id}  ({m.created_at}, groundqa {m.groundqa_version})"
    )
    c = m.counts
    out.print(
        f"{c['documents']} documents, {c['sections']} sections, {c['chunks']} chunks "
        f"({report.split_sections} sections split into parts)"
    )
    s = report.sizes
    out.print(
        f"chunk chars: min {s['min']}  p50 {s['p50']}  p90 {s['p90']}  max {s['max']}  "
        f"mean {s['mean']}"
    )
    out.print(f"chunker: {m.chunker}")
    out.print(f"lexical: {m.lexical}")
    if report.lexical is not None:
        out.print(f"BM25 search: {escape(report.lexical['note'])}")
    d = m.dense
    out.print(
        f"vectors: {d['embedder']} ({d['model_id']}, {d['dim']} dimensions, "
        f"{'HNSW above ' + str(d['ann_threshold']) + ' chunks' if 'ann_threshold' in d else 'exact'})"
        if d
        else "vectors: none (built with --no-dense; bm25 only)"
    )
    if report.vectors is not None:
        out.print(f"vector search: {escape(report.vectors['note'])}")
    out.print(f"acronyms defined in the corpus: {report.acronyms}")
    out.print(f"gate: {report.gate}")
    out.print(f"retrieval: {escape(report.retrieval)}")
    out.print(f"corpus: {report.staleness}")
    if report.boundary_issues:
        out.print(f"[yellow]{len(report.boundary_issues)} chunk boundary exception(s):[/]")
        for issue in report.boundary_issues[:20]:
            out.print(
                f"  {issue.problem:<22} {escape(issue.section_id)} part {issue.part}: "
                f"[dim]{escape(issue.excerpt)}[/]"
            )
    else:
        out.print(
            "[green]every chunk starts at a heading or paragraph and ends at a sentence end[/]"
        )
    if sections:
        for sid in report.section_ids:
            out.print(escape(sid))
