"""What the `groundqa` commands share: the consoles, option parsers, options and progress bars.

Parsers turn option values into the plain values the library takes, and refuse
a malformed one with a `UsageError` (exit 2); they check nothing the library
checks itself (a filter key the index lacks, a retriever it cannot serve).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from groundqa.errors import UsageError

F = TypeVar("F", bound=Callable[..., Any])

# Characters a terminal acts on rather than shows: C0 and C1 controls (ESC starts colour,
# cursor and title sequences) other than tab and newline, and the bidirectional overrides
# that make a name read other than it is spelt.
_ACTING = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` with every character a terminal would act on written as its escape (`\\x1b`),
    so that a file name, a title or an answer from the corpus prints as what it is."""
    return _ACTING.sub(lambda m: ascii(m.group())[1:-1], text)


class SafeConsole(Console):
    """A rich Console that shows control characters in what it prints instead of sending
    them: corpus text reaches the terminal in file names, titles, findings and answers,
    and the corpus is not trusted to drive the terminal."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        super().print(*(visible(o) if isinstance(o, str) else o for o in objects), **kwargs)


out = SafeConsole(highlight=False, soft_wrap=True)
err = SafeConsole(stderr=True, highlight=False, soft_wrap=True)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def parse_pairs(pairs: Sequence[str], what: str) -> dict[str, str]:
    parsed: dict[str, str] = {}
    for pair in pairs:
        for item in pair.split(",") if what == "--columns" else [pair]:
            key, sep, value = item.partition("=")
            if not sep or not key.strip() or not value.strip():
                raise UsageError(f"{what} takes KEY=VALUE, got {item!r}")
            parsed[key.strip()] = value.strip()
    return parsed


def parse_filters(pairs: Sequence[str], what: str = "--filter") -> dict[str, list[str]]:
    """KEY=VALUE pairs; a key given more than once collects every value."""
    filters: dict[str, list[str]] = {}
    for pair in pairs:
        for key, value in parse_pairs([pair], what).items():
            filters.setdefault(key, []).append(value)
    return filters


def facet_filters(any_of: Sequence[str], all_of: Sequence[str]) -> dict[str, Any]:
    """`--filter` pairs (any of a key's values) and `--filter-all` pairs (every one)."""
    filters: dict[str, Any] = dict(parse_filters(any_of))
    for key, values in parse_filters(all_of, "--filter-all").items():
        if key in filters:
            raise UsageError(f"{key} is given to both --filter and --filter-all; use one")
        filters[key] = {"all": values}
    return filters


def parse_as_of(value: str | None) -> dt.date | None:
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise UsageError(f"--as-of takes a date as YYYY-MM-DD, got {value!r}") from None


class RichReporter:
    """Progress bars on stderr for ingest stages; silent when stderr is not a terminal."""

    def __init__(self, progress: Progress) -> None:
        self.progress_bars = progress
        self._task: Any = None

    def stage(self, name: str, total: int | None = None) -> None:
        if self._task is not None:
            self.progress_bars.update(self._task, completed=self.progress_bars.tasks[-1].total or 1)
        self._task = self.progress_bars.add_task(visible(name), total=total)

    def advance(self, n: int = 1) -> None:
        if self._task is not None:
            self.progress_bars.advance(self._task, n)


@contextmanager
def progress_bars(enabled: bool) -> Iterator[RichReporter | None]:
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


index_option = click.option(
    "--index",
    "--store",
    "index_dir",
    required=True,
    help="Index directory, or a postgresql:// URL of a PostgreSQL store.",
)
format_option = click.option(
    "--format",
    "fmt",
    default="auto",
    show_default=True,
    # loaders.FORMATS, spelled out so that startup does not import the loaders
    # (tests/loaders/test_loaders.py checks the two agree).
    type=click.Choice(["auto", "csv", "markdown", "pdf", "html", "docx", "text", "beir", "obliqa"]),
    help="Corpus format; auto detects it from each path.",
)
columns_option = click.option(
    "--columns",
    multiple=True,
    metavar="ROLE=COLUMN",
    help="CSV column mapping, e.g. --columns id=Chapter,title=Title,text=Content.",
)


GENERATOR_OPTIONS = [
    click.option(
        "--generator",
        default="extractive",
        show_default=True,
        help="extractive, extractive:concise (a further sentence only for a part of the "
        "question the first leaves out), ollama:MODEL, openai:MODEL, anthropic:MODEL, "
        "bedrock:MODEL_ID or gguf:PATH.",
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


def stacked(options: Sequence[Callable[[F], F]]) -> Callable[[F], F]:
    """One decorator that applies `options` in the order they are listed (as --help shows)."""

    def apply(f: F) -> F:
        for option in reversed(options):
            f = option(f)
        return f

    return apply


def with_generator_options(f: F) -> F:
    return stacked(GENERATOR_OPTIONS)(f)


def retriever_option(f: Any) -> Any:
    f = click.option(
        "--embedder-url",
        default=None,
        help="Base URL of the index's ollama: or openai: embedding server, if not the default.",
    )(f)
    return click.option(
        "--retriever",
        default=None,
        help="bm25, dense or hybrid, with options such as hybrid+weighted or bm25+cap=2 "
        "(see docs/pipeline/retrieve.md); default: hybrid+weighted=0.5/0.5+defs where the index has vectors, "
        "else bm25+defs.",
    )(f)


def reranker_option(f: Any) -> Any:
    return click.option(
        "--reranker",
        default=None,
        help="Re-score the best 20 passages: cross-encoder:PATH or llm:GENERATOR (default: none).",
    )(f)


def reader_option(f: Any) -> Any:
    return click.option(
        "--reader",
        type=click.Choice(["lexical", "model"]),
        default="lexical",
        show_default=True,
        help="What reads the retrieved passages: word coverage, or the answer model that "
        "ships with groundqa (docs/pipeline/read.md).",
    )(f)


def embedder_options(url: str | None) -> Any:
    from groundqa.embed import EmbedderOptions

    return EmbedderOptions(base_url=url)


def generator_options(generator_url: str | None, timeout: float) -> Any:
    from groundqa.generate import GeneratorOptions

    return GeneratorOptions(base_url=generator_url, timeout_s=timeout)
