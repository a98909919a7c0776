"""`groundqa ask` and `chat`: questions answered from an index, with citations, or refused.

Thin shells over `Engine.ask`: they parse the options, ask, and print the Answer
(its citations, notes, audit line and confidence). They decide nothing about an
answer themselves; `chat` keeps the filters, the scope and the last turns between
questions, so the engine can read a follow-up ("and in winter?") against them.
"""

from __future__ import annotations

import sys

import click
from rich.markup import escape

from groundqa.cli.common import (
    embedder_options,
    emit_json,
    err,
    facet_filters,
    generator_options,
    index_option,
    out,
    parse_as_of,
    parse_filters,
    reader_option,
    reranker_option,
    retriever_option,
    with_generator_options,
)
from groundqa.errors import GroundqaError
from groundqa.models import CAUTION, CLOSEST_MATCHES, Answer
from groundqa.verdicts import AuditReport


def _print_answer(answer: Answer, *, show_passages: bool = False, explain: bool = False) -> None:
    if answer.error:
        err.print(f"[bold red]generation failed:[/] {escape(answer.error)}")
        out.print("[dim]the retrieved passages are listed below[/]")
        show_passages = True
    elif answer.refused:
        out.print(f"[bold]{escape(answer.answer)}[/]")
        out.print(f"[dim](refused by the {answer.refused_by}: {escape(_reason(answer))})[/]")
    else:
        if answer.cautious:
            out.print(f"[bold yellow]{escape(CAUTION)}:[/]")
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
    if not answer.error:
        for note in answer.notes:
            out.print(f"[yellow]note:[/] {escape(note)}")
    if answer.scope:
        places = "; ".join(f"{k}={', '.join(v)}" for k, v in answer.scope.items())
        out.print(f"[dim]scope: {escape(places)}[/]")
    if answer.audit is not None and not answer.refused and not answer.error:
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
    if gate.calibrated:
        kind = "calibrated"
    elif gate.band_floor is not None:
        kind = "default gate, its floor and band fitted to this index"
    elif gate.self_fit:
        kind = "default gate, its floor fitted to this index"
    else:
        kind = "default gate, not calibrated for this index"
    if gate.floor is not None and gate.floor < gate.threshold:
        cuts = f"confident from {gate.threshold:.2f}, cautious from {gate.floor:.2f}"
    else:
        cuts = f"answers from {gate.threshold:.2f}"
    if gate.band_floor is not None:
        cuts += f", or from {gate.band_floor:.2f} on the band"
    if gate.band is not None:
        cuts += f"; the band gives {gate.band:.2f}"
    return f"{answer.outcome}: confidence {answer.confidence:.2f} ({kind}; {cuts})"


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


def _audit_line(audit: AuditReport) -> str:
    counts = ", ".join(f"{n} {v}" for v, n in audit.verdicts.items() if n)
    check = audit.citations
    cites = "citations ok" if check.ok else f"citation problems: {check.to_dict()}"
    line = f"audit: {counts or 'no claims'}; checkable share {audit.checkable_share:.0%}; {cites}"
    if audit.injection.flagged:
        where = sorted({m.passage for m in audit.injection.matches})
        line += f"; WARNING: follows an instruction found in passage {', '.join(map(str, where))}"
    return line


def _reason(answer: Answer) -> str:
    return answer.gate.reason if answer.refused_by == "gate" else "no sentence answers it"


@click.command()
@click.argument("question")
@index_option
@click.option(
    "--k",
    "k",
    default=None,
    type=int,
    help="Passages to retrieve (default: the preset for the question's intent).",
)
@retriever_option
@reranker_option
@reader_option
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
@with_generator_options
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
    reader: str,
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
    from groundqa.query import Query

    day = parse_as_of(as_of)
    engine = Engine.open(index_dir, embedder_options(embedder_url), reader=reader)
    query = Query(
        question,
        k=k,
        filters=facet_filters(filters, filters_all),
        scope=parse_filters(scope, "--scope"),
        auto_scope=auto_location,
        as_of=day,
        retriever=retriever,
        reranker=reranker,
        generator=generator,
        options=generator_options(generator_url, timeout),
        temperature=temperature,
        max_tokens=max_tokens,
    )
    answer = engine.ask(query)
    if as_json:
        emit_json(answer.to_dict())
    else:
        _print_answer(answer, show_passages=passages, explain=explain)
    if answer.error:
        sys.exit(1)


CHAT_HELP = """commands: :k N (passages to retrieve)  :filter KEY=VALUE  :scope KEY=PLACE (where you are)
          :filters (show filters and scope)  :clear (filters and scope)
          :new (a new conversation: later questions are not read as follow-ups)
          :passages (toggle listing passages)  :help  :quit
A question that leans on the last ones ("and in winter?") is read as a follow-up."""


@click.command()
@index_option
@click.option(
    "--k",
    "k",
    default=None,
    type=int,
    help="Passages to retrieve (default: the preset for each question's intent).",
)
@retriever_option
@with_generator_options
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
    from groundqa.query import MAX_HISTORY_TURNS, Query, Turn, check_k
    from groundqa.retrieve import check_retriever

    engine = Engine.open(index_dir, embedder_options(embedder_url))
    if retriever is not None:
        check_retriever(retriever, engine.retrievers)
    if k is not None:
        check_k(k)
    options = generator_options(generator_url, timeout)
    filters: dict[str, list[str]] = {}
    scope: dict[str, list[str]] = {}
    history: list[Turn] = []
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
                    for key, value in parse_filters([arg]).items():
                        engine.facets.mask(
                            {key: value}
                        )  # reject a typo now, not at the next question
                        filters.setdefault(key, []).extend(value)
                    out.print(f"filters = {filters}")
                elif cmd == "scope":
                    wanted = {**scope, **parse_filters([arg], ":scope")}
                    scope = engine.facets.resolve_scope(wanted)  # a typo fails now
                    out.print(f"scope = {scope}")
                elif cmd == "filters":
                    out.print(f"filters = {filters}; scope = {scope}")
                elif cmd == "clear":
                    filters.clear()
                    scope = {}
                    out.print("filters and scope cleared")
                elif cmd == "new":
                    history.clear()
                    out.print("a new conversation: earlier questions are forgotten")
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
                Query(
                    line,
                    k=k,
                    filters=filters,
                    scope=scope,
                    retriever=retriever,
                    generator=generator,
                    options=options,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    history=history,
                )
            )
        except GroundqaError as exc:
            err.print(f"[bold red]error:[/] {escape(exc.message)}")
            continue
        # The turns a later follow-up is read against; Query keeps only the last few.
        history[:] = [*history, Turn("user", line), Turn("assistant", answer.answer)][
            -MAX_HISTORY_TURNS:
        ]
        _print_answer(answer, show_passages=show_passages)
        out.print()
