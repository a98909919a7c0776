"""The `groundqa` command: a thin shell over the library.

Every command calls library functions and formats what they return; none holds
pipeline logic. A `GroundqaError` becomes one line on stderr and its exit code
(1 for a problem with the data or index, 2 for a usage mistake, 130 when
interrupted); `--json` prints one JSON object on stdout.

Exit codes: 0 success (an honest refusal is a success), 1 a data or index
problem (and `validate` with a BLOCK finding), 2 a usage error, 130 interrupted.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from groundqa._version import __version__
from groundqa.errors import GroundqaError, Interrupted, UsageError
from groundqa.models import CLOSEST_MATCHES, Answer, Finding

F = TypeVar("F", bound=Callable[..., Any])

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def _parse_pairs(pairs: Sequence[str], what: str) -> dict[str, str]:
    parsed: dict[str, str] = {}
    for pair in pairs:
        for item in pair.split(",") if what == "--columns" else [pair]:
            key, sep, value = item.partition("=")
            if not sep or not key.strip() or not value.strip():
                raise UsageError(f"{what} takes KEY=VALUE, got {item!r}")
            parsed[key.strip()] = value.strip()
    return parsed


def _parse_filters(pairs: Sequence[str], what: str = "--filter") -> dict[str, list[str]]:
    """KEY=VALUE pairs; a key given more than once collects every value."""
    filters: dict[str, list[str]] = {}
    for pair in pairs:
        for key, value in _parse_pairs([pair], what).items():
            filters.setdefault(key, []).append(value)
    return filters


def _facet_filters(any_of: Sequence[str], all_of: Sequence[str]) -> dict[str, Any]:
    """`--filter` pairs (any of a key's values) and `--filter-all` pairs (every one)."""
    filters: dict[str, Any] = dict(_parse_filters(any_of))
    for key, values in _parse_filters(all_of, "--filter-all").items():
        if key in filters:
            raise UsageError(f"{key} is given to both --filter and --filter-all; use one")
        filters[key] = {"all": values}
    return filters


def _as_of(value: str | None) -> dt.date | None:
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise UsageError(f"--as-of takes a date as YYYY-MM-DD, got {value!r}") from None


class RichReporter:
    """Progress bars on stderr for ingest stages; silent when stderr is not a terminal."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task: Any = None

    def stage(self, name: str, total: int | None = None) -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=self._progress.tasks[-1].total or 1)
        self._task = self._progress.add_task(name, total=total)

    def advance(self, n: int = 1) -> None:
        if self._task is not None:
            self._progress.advance(self._task, n)


@contextmanager
def _progress(enabled: bool) -> Iterator[RichReporter | None]:
    if not enabled or not err.is_terminal:
        yield None
        return
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as progress:
        yield RichReporter(progress)


class GroundqaGroup(click.Group):
    """Turns our errors into one line and an exit code, and Ctrl-C into exit 130."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GroundqaError as exc:
            self._fail(exc)
        except KeyboardInterrupt:
            self._fail(Interrupted("interrupted"))

    @staticmethod
    def _fail(exc: GroundqaError) -> None:
        err.print(f"[bold red]error:[/] {escape(exc.message)}")
        sys.exit(exc.exit_code)


@click.group(cls=GroundqaGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="groundqa")
def main() -> None:
    """Answer questions from a document corpus, and only from it, with citations."""


# ---------------------------------------------------------------- validate / ingest

_index_option = click.option(
    "--index",
    "--store",
    "index_dir",
    required=True,
    help="Index directory, or a postgresql:// URL of a PostgreSQL store.",
)
_format_option = click.option(
    "--format",
    "fmt",
    default="auto",
    show_default=True,
    # loaders.FORMATS, spelled out so that startup does not import the loaders
    # (tests/test_loaders.py checks the two agree).
    type=click.Choice(["auto", "csv", "markdown", "pdf", "beir", "obliqa"]),
    help="Corpus format; auto detects it from each path.",
)
_columns_option = click.option(
    "--columns",
    multiple=True,
    metavar="ROLE=COLUMN",
    help="CSV column mapping, e.g. --columns id=Chapter,title=Title,text=Content.",
)


def _print_findings(findings: Sequence[Finding]) -> None:
    for f in findings:
        style = "red" if f.severity == "BLOCK" else "yellow"
        out.print(f"[{style}]{f.severity:<6}[/] [bold]{f.check}[/]  {escape(f.where())}")
        out.print(f"       {escape(f.message)}")
        if f.excerpt:
            out.print(f"       [dim]{escape(f.excerpt)}[/]")


@main.command()
@click.argument("sources", nargs=-1, required=True)
@_format_option
@_columns_option
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
def validate(sources: tuple[str, ...], fmt: str, columns: tuple[str, ...], as_json: bool) -> None:
    """Check a corpus without indexing it. Exit 1 when a BLOCK finding would stop ingest."""
    from groundqa.loaders import load
    from groundqa.validate import has_blocking
    from groundqa.validate import validate as run_validation

    loaded = load(sources, fmt=fmt, columns=_parse_pairs(columns, "--columns") or None)
    findings = run_validation(loaded.documents, load_findings=loaded.findings)
    blocking = has_blocking(findings)
    counts = {s: sum(1 for f in findings if f.severity == s) for s in ("BLOCK", "REVIEW")}
    if as_json:
        _emit_json(
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


@main.command()
@click.argument("sources", nargs=-1, required=True)
@click.option(
    "--index",
    "--store",
    "index_dir",
    required=True,
    help="Index directory to build or update, or a postgresql:// URL.",
)
@_format_option
@_columns_option
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
@click.option("--force", is_flag=True, help="Rebuild even when the corpus is unchanged.")
@click.option("--json", "as_json", is_flag=True, help="Print the build report as JSON.")
def ingest(
    sources: tuple[str, ...],
    index_dir: str,
    fmt: str,
    columns: tuple[str, ...],
    no_dense: bool,
    embedder: str,
    embedder_url: str | None,
    threads: int | None,
    ann_threshold: int,
    max_chars: int,
    no_section_path: bool,
    force: bool,
    as_json: bool,
) -> None:
    """Validate, chunk and index SOURCES into an index directory (atomically)."""
    from groundqa.chunking import ChunkerSettings
    from groundqa.embed import EmbedderOptions
    from groundqa.index.dense import DenseSettings
    from groundqa.ingestion import ingest as run_ingest

    with _progress(not as_json) as reporter:
        report = run_ingest(
            sources,
            index_dir,
            fmt=fmt,
            columns=_parse_pairs(columns, "--columns") or None,
            chunker=ChunkerSettings(max_chars=max_chars, section_path=not no_section_path),
            dense=None if no_dense else DenseSettings(embedder, ann_threshold=ann_threshold),
            embedder_options=EmbedderOptions(base_url=embedder_url, threads=threads),
            force=force,
            reporter=reporter,
        )
    if as_json:
        _emit_json(report.to_dict())
        return
    out.print(report.message)
    reviews = [f for f in report.findings if f.severity == "REVIEW"]
    if reviews:
        out.print(
            f"[yellow]{len(reviews)} REVIEW finding(s)[/] were indexed anyway; "
            f"see `groundqa validate {' '.join(sources)}`"
        )


# ---------------------------------------------------------------- ask / chat


def _print_answer(answer: Answer, *, show_passages: bool = False, explain: bool = False) -> None:
    if answer.error:
        err.print(f"[bold red]generation failed:[/] {escape(answer.error)}")
        out.print("[dim]the retrieved passages are listed below[/]")
        show_passages = True
    elif answer.refused:
        out.print(f"[bold]{escape(answer.answer)}[/]")
        out.print(f"[dim](refused by the {answer.refused_by}: {escape(_reason(answer))})[/]")
    else:
        out.print(escape(answer.answer))
        out.print()
        for c in answer.citations:
            where = "".join(
                f", {part}" for part in (c.clause, f"p. {c.page}" if c.page else None) if part
            )
            out.print(
                f"[bold][{c.n}][/] {escape(c.section)}{escape(where)}  "
                f"[dim]§ {escape(c.section_id)}[/]"
            )
            out.print(f"    [dim]{escape(c.uri)}[/]")
        for note in answer.notes:
            out.print(f"[yellow]note:[/] {escape(note)}")
    if answer.scope:
        places = "; ".join(f"{k}={', '.join(v)}" for k, v in answer.scope.items())
        out.print(f"[dim]scope: {escape(places)}[/]")
    if answer.audit and not answer.refused and not answer.error:
        out.print(f"[dim]{escape(_audit_line(answer.audit))}[/]")
    out.print(f"[dim]{_confidence_line(answer)}[/]")
    if explain:
        _print_explanation(answer)
    if show_passages:
        out.print()
        for h in answer.passages:
            out.print(f"[dim]{h.rank:>2}. {h.score:7.3f}  {escape(h.chunk.section_id)}[/]")


def _confidence_line(answer: Answer) -> str:
    gate = answer.gate
    kind = "calibrated" if gate.calibrated else "default gate, not calibrated for this index"
    return f"confidence {answer.confidence:.2f} ({kind}; answers from {gate.threshold:.2f})"


def _print_explanation(answer: Answer) -> None:
    """The factors behind the confidence and, for a refusal, the sections that came closest."""
    factors = sorted(answer.gate.factors.items(), key=lambda kv: -abs(kv[1]))
    if factors:
        out.print("factors (push on the log-odds of answering):")
        for name, push in factors:
            value = answer.gate.features.get(name, 0.0)
            out.print(f"  {name:<18} {value:7.3f}  {push:+.2f}")
    if answer.refused and answer.passages:
        out.print("closest matches (not cited: they do not answer the question):")
        for h in answer.passages[:CLOSEST_MATCHES]:
            out.print(f"  {escape(h.chunk.breadcrumb)}  [dim]§ {escape(h.chunk.section_id)}[/]")
            out.print(f"    [dim]{escape(h.chunk.uri)}[/]")


def _audit_line(audit: dict[str, Any]) -> str:
    counts = ", ".join(f"{n} {v}" for v, n in audit.get("verdicts", {}).items() if n)
    check = audit.get("citations", {})
    cites = "citations ok" if check.get("ok") else f"citation problems: {check}"
    share = audit.get("checkable_share", 0.0)
    line = f"audit: {counts or 'no claims'}; checkable share {share:.0%}; {cites}"
    injection = audit.get("injection") or {}
    if injection.get("flagged"):
        where = sorted({m["passage"] for m in injection.get("matches", [])})
        line += f"; WARNING: follows an instruction found in passage {', '.join(map(str, where))}"
    return line


def _reason(answer: Answer) -> str:
    return answer.gate.reason if answer.refused_by == "gate" else "no sentence answers it"


_generator_options = [
    click.option(
        "--generator",
        default="extractive",
        show_default=True,
        help="extractive, ollama:MODEL, openai:MODEL, anthropic:MODEL or gguf:PATH.",
    ),
    click.option(
        "--generator-url",
        default=None,
        help="Base URL of the generator's server (else the provider's environment variable).",
    ),
    click.option(
        "--temperature",
        type=click.FloatRange(0, 2),
        default=None,
        help="Sampling temperature (default: the preset for the question's intent).",
    ),
    click.option(
        "--max-tokens",
        type=click.IntRange(1, 8192),
        default=None,
        help="Longest answer in tokens (default: the preset for the intent).",
    ),
    click.option(
        "--timeout",
        type=click.FloatRange(1, 600),
        default=60.0,
        show_default=True,
        help="Seconds to wait for a network or local model generator.",
    ),
]


def _with_generator_options(f: F) -> F:
    for option in reversed(_generator_options):
        f = option(f)
    return f


def _retriever_option(f: Any) -> Any:
    f = click.option(
        "--embedder-url",
        default=None,
        help="Base URL of the index's ollama: or openai: embedding server, if not the default.",
    )(f)
    return click.option(
        "--retriever",
        default=None,
        help="bm25, dense or hybrid, with options such as hybrid+weighted or bm25+cap=2 "
        "(see README); default: hybrid+weighted=0.5/0.5+defs where the index has vectors, "
        "else bm25+defs.",
    )(f)


def _reranker_option(f: Any) -> Any:
    return click.option(
        "--reranker",
        default=None,
        help="Re-score the best 20 passages: cross-encoder:PATH or llm:GENERATOR (default: none).",
    )(f)


def _embedder_options(url: str | None) -> Any:
    from groundqa.embed import EmbedderOptions

    return EmbedderOptions(base_url=url)


def _options(generator_url: str | None, timeout: float) -> Any:
    from groundqa.generate import GeneratorOptions

    return GeneratorOptions(base_url=generator_url, timeout_s=timeout)


@main.command()
@click.argument("question")
@_index_option
@click.option(
    "--k",
    "k",
    default=None,
    type=int,
    help="Passages to retrieve (default: the preset for the question's intent).",
)
@_retriever_option
@_reranker_option
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="KEY=VALUE",
    help="Only passages whose metadata matches; repeat a key for any-of.",
)
@click.option(
    "--filter-all",
    "filters_all",
    multiple=True,
    metavar="KEY=VALUE",
    help="Only passages whose list-valued metadata holds every value given for KEY.",
)
@click.option(
    "--scope",
    "scope",
    multiple=True,
    metavar="KEY=PLACE",
    help="Where the asker is, e.g. area='Fennick City': national documents apply, state "
    "ones only for its state, local ones only for its area. Repeat for several places.",
)
@click.option(
    "--auto-location",
    is_flag=True,
    help="Scope the search to places the question names (national rules still apply).",
)
@click.option(
    "--as-of",
    "as_of",
    default=None,
    metavar="YYYY-MM-DD",
    help="Answer from the versions in force on this day (default: today).",
)
@_with_generator_options
@click.option("--passages", is_flag=True, help="Also list the retrieved passages with scores.")
@click.option(
    "--explain",
    is_flag=True,
    help="Show what the confidence rests on and, for a refusal, the closest sections.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the Answer as one JSON object.")
def ask(
    question: str,
    index_dir: str,
    k: int | None,
    retriever: str | None,
    embedder_url: str | None,
    reranker: str | None,
    filters: tuple[str, ...],
    filters_all: tuple[str, ...],
    scope: tuple[str, ...],
    auto_location: bool,
    as_of: str | None,
    generator: str,
    generator_url: str | None,
    temperature: float | None,
    max_tokens: int | None,
    timeout: float,
    passages: bool,
    explain: bool,
    as_json: bool,
) -> None:
    """Answer QUESTION from the index, with citations, or refuse."""
    from groundqa.engine import Engine

    day = _as_of(as_of)
    engine = Engine.open(index_dir, _embedder_options(embedder_url))
    answer = engine.ask(
        question,
        k=k,
        filters=_facet_filters(filters, filters_all),
        scope=_parse_filters(scope, "--scope"),
        auto_scope=auto_location,
        as_of=day,
        retriever=retriever,
        reranker=reranker,
        generator=generator,
        options=_options(generator_url, timeout),
        temperature=temperature,
        max_tokens=max_tokens,
    )
    if as_json:
        _emit_json(answer.to_dict())
    else:
        _print_answer(answer, show_passages=passages, explain=explain)
    if answer.error:
        sys.exit(1)


CHAT_HELP = """commands: :k N (passages to retrieve)  :filter KEY=VALUE  :scope KEY=PLACE (where you are)
          :filters (show filters and scope)  :clear (filters and scope)
          :passages (toggle listing passages)  :help  :quit"""


@main.command()
@_index_option
@click.option(
    "--k",
    "k",
    default=None,
    type=int,
    help="Passages to retrieve (default: the preset for each question's intent).",
)
@_retriever_option
@_with_generator_options
def chat(
    index_dir: str,
    k: int | None,
    retriever: str | None,
    embedder_url: str | None,
    generator: str,
    generator_url: str | None,
    temperature: float | None,
    max_tokens: int | None,
    timeout: float,
) -> None:
    """Ask questions one after another with the index kept loaded."""
    from groundqa.engine import Engine
    from groundqa.retrieve import check_k, check_retriever

    engine = Engine.open(index_dir, _embedder_options(embedder_url))
    if retriever is not None:
        check_retriever(retriever, engine.retrievers)
    if k is not None:
        check_k(k)
    options = _options(generator_url, timeout)
    filters: dict[str, list[str]] = {}
    scope: dict[str, list[str]] = {}
    show_passages = False
    interactive = sys.stdin.isatty()
    out.print(
        f"groundqa chat over {index_dir} ({engine.manifest.counts['chunks']} chunks). "
        "Type :help for commands, :quit to leave."
    )
    while True:
        try:
            line = input("? " if interactive else "")
        except EOFError:
            break
        line = line.strip()
        if not line:
            continue
        if line.startswith(":"):
            cmd, _, arg = line[1:].partition(" ")
            try:
                if cmd in ("q", "quit", "exit"):
                    break
                if cmd == "k":
                    k = check_k(int(arg))
                    out.print(f"k = {k}")
                elif cmd == "filter":
                    for key, value in _parse_filters([arg]).items():
                        engine.facets.mask(
                            {key: value}
                        )  # reject a typo now, not at the next question
                        filters.setdefault(key, []).extend(value)
                    out.print(f"filters = {filters}")
                elif cmd == "scope":
                    wanted = {**scope, **_parse_filters([arg], ":scope")}
                    scope = engine.facets.resolve_scope(wanted)  # a typo fails now
                    out.print(f"scope = {scope}")
                elif cmd == "filters":
                    out.print(f"filters = {filters}; scope = {scope}")
                elif cmd == "clear":
                    filters.clear()
                    scope = {}
                    out.print("filters and scope cleared")
                elif cmd == "passages":
                    show_passages = not show_passages
                    out.print(f"passages {'on' if show_passages else 'off'}")
                else:
                    out.print(CHAT_HELP)
            except ValueError:
                err.print(f"[bold red]error:[/] {cmd} needs a number, got {arg!r}")
            except GroundqaError as exc:
                err.print(f"[bold red]error:[/] {escape(exc.message)}")
            continue
        try:
            answer = engine.ask(
                line,
                k=k,
                filters=filters,
                scope=scope,
                retriever=retriever,
                generator=generator,
                options=options,
                temperature=temperature,
                max_tokens=max_tokens,
            )
        except GroundqaError as exc:
            err.print(f"[bold red]error:[/] {escape(exc.message)}")
            continue
        _print_answer(answer, show_passages=show_passages)
        out.print()


# ---------------------------------------------------------------- inspect / eval


@main.command()
@_index_option
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
        _emit_json(data)
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
    d = m.dense
    out.print(
        f"vectors: {d['embedder']} ({d['model_id']}, {d['dim']} dimensions, "
        f"{'HNSW above ' + str(d['ann_threshold']) + ' chunks' if 'ann_threshold' in d else 'exact'})"
        if d
        else "vectors: none (built with --no-dense; bm25 only)"
    )
    out.print(f"acronyms defined in the corpus: {report.acronyms}")
    out.print(f"gate: {report.gate}")
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


def _parse_ks(value: str) -> list[int]:
    try:
        ks = sorted({int(v) for v in value.split(",") if v.strip()})
    except ValueError:
        raise UsageError(f"--k takes comma-separated numbers, got {value!r}") from None
    if not ks or ks[0] < 1 or ks[-1] > 100:
        raise UsageError("--k values must be between 1 and 100")
    return ks


@main.command(name="eval")
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
            options=_options(generator_url, 60.0),
            use_scope=not ignore_scope,
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
        _emit_json(result)
        return
    table = Table(title=f"{folder} ({split}, {result['queries']} queries)", header_style="bold")
    table.add_column("metric")
    for name in names:
        table.add_column(name, justify="right")
    for key in ("ndcg@10", "mrr@10", "map@10", "recall@10", "recall@100"):
        table.add_row(key, *(f"{result['retrievers'][n][key]:.4f}" for n in names))
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
) -> None:
    from groundqa.engine import Engine
    from groundqa.evaluate import evaluate_probes, load_probes
    from groundqa.evaluate.calibrate import probes_fingerprint

    probes = load_probes(probes_path)
    engine = Engine.open(index_dir)
    names = names or engine.compared_retrievers
    reports = [
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
    ]
    in_sample = engine.gate.calibrated and engine.gate.info.get(
        "probe_fingerprint"
    ) == probes_fingerprint(probes)
    gate_note = (
        "the gate was calibrated on these probes, so its refusal figures here are in-sample; "
        "`groundqa calibrate` reports cross-validated ones"
        if in_sample
        else ""
    )
    if report_dir:
        from groundqa.evaluate.report import write_probe_report

        write_probe_report(
            reports,
            Path(report_dir),
            title=f"{probes_path} on {index_dir}",
            meta={"index": index_dir, "probes": probes_path},
        )
    if as_json:
        _emit_json(
            {
                "index": index_dir,
                "probes": probes_path,
                "gate": engine.gate.describe(),
                "gate_in_sample": in_sample,
                "metrics": {
                    r.retriever: {k: round(v, 4) for k, v in r.metrics.items()} for r in reports
                },
                "counts": reports[0].counts,
                "sweep": {r.retriever: r.sweep for r in reports},
                "results": {r.retriever: [x.to_dict() for x in r.results] for r in reports},
            }
        )
        return
    table = Table(title=f"{probes_path} on {index_dir}", header_style="bold")
    table.add_column("metric")
    for r in reports:
        table.add_column(r.retriever, justify="right")
    for key in reports[0].metrics:
        table.add_row(key, *(_fmt_metric(key, r.metrics.get(key, 0.0)) for r in reports))
    out.print(table)
    out.print(", ".join(f"{k}: {v}" for k, v in reports[0].counts.items()))
    out.print(f"gate: {engine.gate.describe()}")
    if gate_note:
        out.print(f"[yellow]note:[/] {gate_note}")
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


# ---------------------------------------------------------------- calibrate


@main.command()
@_index_option
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
@click.option("--reset", is_flag=True, help="Go back to the built-in default gate.")
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
    reset: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Fit the answer-or-refuse gate for an index on a probe set, and store it there."""
    from groundqa.evaluate import calibrate as cal

    chosen = [bool(probes_path), bool(apply_path), reset]
    if sum(chosen) != 1:
        raise UsageError("calibrate needs exactly one of --probes FILE, --apply FILE or --reset")
    if apply_path:
        stored = _read_calibration(Path(apply_path))
        manifest = cal.install(index_dir, stored)
        out.print(f"calibration from {apply_path} stored in build {manifest.build_id}")
        return
    if reset:
        manifest = cal.reset(index_dir)
        out.print(f"build {manifest.build_id} uses the built-in default gate again")
        return
    from groundqa.engine import Engine
    from groundqa.evaluate import load_probes

    assert probes_path is not None
    probes = load_probes(probes_path)
    engine = Engine.open(index_dir)
    with _progress(not as_json) as reporter:
        if reporter is not None:
            reporter.stage("screening probes", total=len(probes))
        report = cal.calibrate(
            engine,
            probes,
            target=target,
            folds=folds,
            retriever=retriever,
            generator=generator,
            options=_options(generator_url, 60.0),
            progress=reporter.advance if reporter is not None else None,
        )
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
        _emit_json({**report.to_dict(), "stored": not dry_run})
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
    out.print(
        f"model: logistic over {len(model.names)} features, fitted on {n['answerable']} answerable "
        f"and {n['unanswerable']} unanswerable probes; threshold {report.gate.threshold:.3f} "
        f"(target {target:.0%} false refusal)"
    )
    for name, coef in sorted(zip(model.names, model.coef, strict=True), key=lambda r: -abs(r[1])):
        out.print(f"  {name:<18} {coef:+.3f} per standard deviation")


# ---------------------------------------------------------------- serve


@main.command()
@_index_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--token",
    envvar="GROUNDQA_TOKEN",
    show_envvar=True,
    help="Require `Authorization: Bearer TOKEN` on data endpoints; also enables POST /eval.",
)
@click.option(
    "--cache",
    "cache_spec",
    default="memory",
    show_default=True,
    metavar="memory|off|redis://...",
    help="Where answers are cached: in-process, nowhere, or a Redis URL.",
)
@click.option(
    "--cache-ttl",
    default=3600,
    show_default=True,
    type=click.IntRange(min=1),
    help="Seconds a cached answer is kept.",
)
@click.option(
    "--cors-origin",
    "cors_origins",
    multiple=True,
    metavar="ORIGIN",
    help="Let pages from ORIGIN call the API from a browser; repeat for more. Off by default.",
)
@click.option("--access-log", is_flag=True, help="Log every request line (never the token).")
@click.option(
    "--generator-url",
    default=None,
    help="Base URL for network generators asked for in /query (else their environment variable).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(1, 600),
    default=None,
    help="Seconds to wait for a network or local model generator; at most, and by default, "
    "the request timeout.",
)
@click.option(
    "--embedder-url",
    default=None,
    help="Base URL of the index's ollama: or openai: embedding server, if not the default.",
)
@click.option(
    "--rate-limit",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Requests per minute from each client address (up to 10 at once), else 429 with "
    "Retry-After; 0 turns it off. Default: off on a loopback --host, 120 otherwise.",
)
@click.option(
    "--trusted-proxy",
    "trusted_proxies",
    multiple=True,
    metavar="ADDR",
    help="Take the client address from X-Forwarded-For on connections from ADDR (a reverse "
    "proxy); repeat for more. Off by default: a client cannot choose its own address.",
)
@click.option(
    "--max-inflight",
    type=click.IntRange(1, 1024),
    default=8,
    show_default=True,
    help="Requests each worker works on at once; more wait in the queue.",
)
@click.option(
    "--queue",
    "queue_size",
    type=click.IntRange(min=0),
    default=32,
    show_default=True,
    help="Requests each worker lets wait for a free slot; past that, 503 with Retry-After at once.",
)
@click.option(
    "--request-timeout",
    type=click.FloatRange(min=1),
    default=60.0,
    show_default=True,
    help="Seconds a request may take, its wait in the queue included; past that, 504.",
)
@click.option(
    "--shutdown-timeout",
    type=click.IntRange(min=0),
    default=30,
    show_default=True,
    help="On SIGTERM or Ctrl-C, seconds requests in progress have to finish before they are "
    "cut off; no new connection is accepted meanwhile.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Server processes sharing the port, each with its own copy of the index (or its own "
    "connection pool to a PostgreSQL store). Use --cache redis://... so they share answers.",
)
def serve(
    index_dir: str,
    host: str,
    port: int,
    token: str | None,
    cache_spec: str,
    cache_ttl: int,
    cors_origins: tuple[str, ...],
    access_log: bool,
    generator_url: str | None,
    timeout: float | None,
    embedder_url: str | None,
    rate_limit: int | None,
    trusted_proxies: tuple[str, ...],
    max_inflight: int,
    queue_size: int,
    request_timeout: float,
    shutdown_timeout: int,
    workers: int,
) -> None:
    """Serve the HTTP API and the web page over one index."""
    import errno
    import signal
    import socket

    from groundqa.engine import Engine

    engine = Engine.open(index_dir, _embedder_options(embedder_url))
    try:
        import uvicorn

        from groundqa.api import ServeSettings, create_app, default_rate_limit
        from groundqa.cache import redact
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in {
            "fastapi",
            "starlette",
            "pydantic",
            "uvicorn",
        }:
            raise
        raise UsageError(
            f"serve needs FastAPI and uvicorn ({exc.name} is missing): pip install 'groundqa[serve]'"
        ) from None
    settings = ServeSettings(
        token=token,
        cache=cache_spec,
        cache_ttl=cache_ttl,
        cors_origins=cors_origins,
        generator_options=_options(generator_url, request_timeout if timeout is None else timeout),
        rate_limit=default_rate_limit(host) if rate_limit is None else rate_limit,
        max_inflight=max_inflight,
        queue=queue_size,
        request_timeout_s=request_timeout,
        shutdown_timeout_s=shutdown_timeout,
    )
    # Bind here rather than in uvicorn, so a busy port is our one-line error, not its log.
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise UsageError(f"cannot listen on --host {host!r}: {exc.strerror}") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise GroundqaError(
                f"port {port} on {host} is already in use; stop what holds it or pick another --port"
            ) from None
        raise GroundqaError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    out.print(
        f"serving {escape(index_dir)} on http://{shown}:{bound} "
        f"(cache: {escape(redact(cache_spec))}, auth: {'on' if token else 'off'}"
        + (f", {workers} workers)" if workers > 1 else ")")
    )
    sys.stdout.flush()

    def run(engine: Engine) -> None:
        _few_malloc_arenas()
        config = uvicorn.Config(
            create_app(engine, settings),
            host=host,
            port=bound,
            log_level="warning",
            access_log=access_log,
            ws="none",
            # Without a trusted proxy, X-Forwarded-For is ignored: the rate limit counts
            # the connection's own address, which a client cannot choose.
            proxy_headers=bool(trusted_proxies),
            forwarded_allow_ips=list(trusted_proxies) or None,
            timeout_graceful_shutdown=shutdown_timeout,
        )
        # uvicorn stops gracefully on SIGTERM or SIGINT, then raises the signal again:
        # as KeyboardInterrupt, both end the process with status 0.
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        uvicorn.Server(config).run(sockets=[sock])

    try:
        if workers == 1:
            run(engine)
        else:
            # Each worker opens the index after the fork: a connection pool or a model
            # runtime must not be shared between processes.
            engine.store.close()
            _prefork(
                workers,
                lambda: run(Engine.open(index_dir, _embedder_options(embedder_url))),
                stop_listening=sock.close,
            )
    except KeyboardInterrupt:
        pass  # Ctrl-C or SIGTERM is how a server is stopped: not an error
    finally:
        sock.close()


# glibc gives each thread that allocates its own malloc arena, up to 8 per core; a server's
# thread pool then keeps memory freed by one request in an arena another cannot reuse, and
# its resident size creeps up (bench/soak.py: +5% in 10 minutes with the default, +2% with
# two arenas, at the same throughput).
SERVER_MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # mallopt's parameter number, from glibc's malloc.h


def _few_malloc_arenas() -> bool:
    """Cap glibc's malloc arenas for this server process, unless MALLOC_ARENA_MAX says
    otherwise; True when the cap was set. Call before the server starts its threads."""
    import ctypes
    import ctypes.util
    import os

    if "MALLOC_ARENA_MAX" in os.environ:
        return False  # the operator chose; glibc read it at start-up
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = getattr(libc, "mallopt", None)
    except OSError:
        return False
    if mallopt is None:
        return False  # not glibc (musl, macOS): nothing to cap
    return bool(mallopt(_M_ARENA_MAX, SERVER_MALLOC_ARENAS))


def _prefork(workers: int, run: Callable[[], None], *, stop_listening: Callable[[], None]) -> None:
    """Run `run` in `workers` child processes; restart one that dies. On SIGTERM or
    SIGINT, stop listening, pass SIGTERM on to every worker (each finishes the requests
    it has in progress) and return once all have exited."""
    import os
    import signal

    def spawn() -> int:
        pid = os.fork()
        if pid == 0:  # the worker
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, signal.default_int_handler)
            code = 0
            try:
                run()
            except KeyboardInterrupt:
                pass
            except GroundqaError as exc:
                print(f"error: worker {os.getpid()}: {exc.message}", file=sys.stderr)
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)
        return pid

    children = {spawn() for _ in range(workers)}
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True
        stop_listening()  # the workers hold their own copies of the socket until they finish
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        children.discard(pid)
        if not stopping:
            if os.waitstatus_to_exitcode(status) == 1:  # could not open the index: give up
                stop(signal.SIGTERM, None)
                raise GroundqaError("a server worker could not start; see its error above")
            print(f"worker {pid} stopped ({status}); starting another", file=sys.stderr)
            children.add(spawn())


if __name__ == "__main__":  # pragma: no cover
    main()
