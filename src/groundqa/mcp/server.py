"""The MCP server over one index: the tools `ask`, `search` and `source`.

A thin shell, like the CLI and the HTTP API: each tool builds what the library
takes (a `Query`, a question and k, an id), calls the Engine in a worker thread
so the event loop keeps serving, and hands back what it returned as text and as
structured content (see `results`). A `GroundqaError` becomes a tool error that
carries its one-line message, the same line the CLI prints; anything else is a
generic one-line tool error, and only the server's log (stderr) has the traceback.

Over HTTP it answers only to its own address, localhost names on loopback and the
names it is given (`exposure.host_allowed`, as `serve` does), on any bind address:
the SDK's own check covers three loopback spellings only, so it is replaced, not
added to. A request's head has a deadline (`exposure.http_protocol`). It refuses to
let a caller choose the generator: `ask` takes none, and the server's is used.
"""

from __future__ import annotations

import datetime as dt
import logging
import socket
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import anyio
import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from groundqa._version import __version__
from groundqa.embed import EmbedderOptions
from groundqa.engine import Engine
from groundqa.errors import GroundqaError, UsageError
from groundqa.exposure import host_allowed, http_protocol, misdirected, origin_allowed
from groundqa.mcp.results import (
    AskResult,
    SearchResult,
    SourceResult,
    ask_result,
    passage_out,
    search_text,
    shown,
    source_result,
    source_text,
)
from groundqa.providers import GeneratorOptions
from groundqa.query import MAX_HISTORY_TURNS, MAX_K, Query, Turn
from groundqa.retrieve import check_retriever

logger = logging.getLogger(__name__)

REFUSAL_CONTRACT = (
    'A refusal ("refused": true, no citations) means the corpus does not cover the question: '
    "do not ask again in other words expecting a different source, and do not answer it from "
    "general knowledge as if the corpus said so; tell the user the documents do not cover it."
)

INSTRUCTIONS = (
    "These tools answer from one indexed document corpus, and only from it. `ask` answers a "
    "question with numbered citations to the corpus; `search` lists the passages that match "
    "a question without answering; `source` reads a document or section by the id a citation "
    "or passage gives. Quote answers with their citations. " + REFUSAL_CONTRACT
)

ASK_DESCRIPTION = (
    "Answer a question from the indexed corpus, with citations, or refuse. The answer comes "
    "only from the corpus: its text carries [n] markers followed by a Sources list, and the "
    "structured result gives each citation's document, section, clause, page and link. "
    + REFUSAL_CONTRACT
    + " For a follow-up, pass the conversation so far as `history`; `standalone_question` "
    "says how the follow-up was read."
)

SEARCH_DESCRIPTION = (
    "List the passages of the indexed corpus that best match a question, best first, with "
    "their document, section id, section path, page, link and text. It does not answer: a "
    "passage that matches some words is not evidence that the corpus answers the question. "
    "Use `ask` for an answer; it refuses when the corpus does not cover the question, and a "
    "refusal means the question should not be answered from general knowledge either."
)

SOURCE_DESCRIPTION = (
    "Read part of the indexed corpus by id: a doc_id (the whole document), a section_id "
    "(form 'doc_id#Section', one section) or a chunk_id (one passage), as `ask` citations "
    "and `search` passages give them. Returns the text under its section path, with links."
)

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

Question = Annotated[str, Field(description="The question, in the user's words.")]
PassageCount = Annotated[
    int | None,
    Field(
        description=f"Passages to retrieve, 1 to {MAX_K} (default: chosen for the kind of question)."
    ),
]
ScopeArg = Annotated[
    dict[str, str | list[str]] | None,
    Field(
        description="Where the asker is, metadata key -> place(s), e.g. "
        '{"area": "Fennick City"}: national documents apply, state ones only for its state, '
        "local ones only for its area."
    ),
]
FiltersArg = Annotated[
    dict[str, str | list[str] | dict[str, list[str]]] | None,
    Field(
        description="Only passages whose metadata matches: key -> a value, a list (any of "
        'them) or {"all": [...]} (every one).'
    ),
]
AsOfArg = Annotated[
    str | None,
    Field(
        description="Answer from the versions in force on this day, YYYY-MM-DD (default: today)."
    ),
]
HistoryArg = Annotated[
    list[dict[str, str]] | None,
    Field(
        description='The conversation so far, oldest first, each turn {"role": "user" or '
        '"assistant", "content": "..."}; the question is read as a follow-up to it. Only the '
        f"last {MAX_HISTORY_TURNS} turns are used."
    ),
]
SourceId = Annotated[
    str, Field(description="A doc_id, a section_id or a chunk_id from `ask` or `search`.")
]


def parse_day(value: str | None) -> dt.date | None:
    if value is None or not value.strip():
        return None
    try:
        return dt.date.fromisoformat(value.strip())
    except ValueError:
        raise UsageError(f"as_of takes a date as YYYY-MM-DD, got {value!r}") from None


def text_result(text: str, structured: BaseModel) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=structured.model_dump(mode="json"),
    )


def error_result(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


class CorpusTools:
    """The tools over one Engine. What the server was started with (generator, its options,
    a retriever) applies to every call; the caller says the rest."""

    def __init__(
        self,
        engine: Engine,
        *,
        generator: str = "extractive",
        options: GeneratorOptions | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        retriever: str | None = None,
    ) -> None:
        self.engine = engine
        self.retriever = retriever
        self.defaults: dict[str, Any] = {
            "generator": generator,
            "options": options or GeneratorOptions(),
            "temperature": temperature,
            "max_tokens": max_tokens,
            "retriever": retriever,
        }

    async def ask(
        self,
        question: Question,
        k: PassageCount = None,
        scope: ScopeArg = None,
        filters: FiltersArg = None,
        as_of: AsOfArg = None,
        history: HistoryArg = None,
    ) -> Annotated[CallToolResult, AskResult]:
        work = partial(self._ask, question, k, scope or {}, filters or {}, as_of, history or [])
        return await guarded("ask", work)

    def _ask(
        self,
        question: str,
        k: int | None,
        scope: dict[str, Any],
        filters: dict[str, Any],
        as_of: str | None,
        history: list[dict[str, str]],
    ) -> CallToolResult:
        query = Query(
            question,
            k=k,
            scope=scope,
            filters=filters,
            as_of=parse_day(as_of),
            history=[Turn.of(t) for t in history],
            **self.defaults,
        )
        answer = shown(self.engine.ask(query))
        if answer.error:
            return error_result(answer.error)
        return text_result(answer.with_sources(), ask_result(answer))

    async def search(
        self,
        question: Question,
        k: Annotated[int, Field(description=f"Passages to list, 1 to {MAX_K}.")] = 5,
    ) -> Annotated[CallToolResult, SearchResult]:
        return await guarded("search", partial(self._search, question, k))

    def _search(self, question: str, k: int) -> CallToolResult:
        hits = self.engine.retrieve(question, k, retriever=self.retriever)
        result = SearchResult(passages=[passage_out(h) for h in hits])
        return text_result(search_text(hits), result)

    async def source(self, id: SourceId) -> Annotated[CallToolResult, SourceResult]:
        return await guarded("source", partial(self._source, id))

    def _source(self, id_: str) -> CallToolResult:
        key = id_.strip()
        chunk = self.engine.catalog.chunk(key)
        if chunk is not None:
            result = source_result(key, "chunk", [chunk])
        elif chunks := self.engine.catalog.document(key):
            result = source_result(key, "document", chunks)
        elif chunks := self.engine.catalog.section(key):
            result = source_result(key, "section", chunks)
        else:
            raise UsageError(
                f"no document, section or chunk {key!r} in this index; use search to find "
                "ids, or take them from the citations of ask"
            )
        return text_result(source_text(result), result)


async def guarded(tool: str, work: Callable[[], CallToolResult]) -> CallToolResult:
    """`work` in a worker thread; a failure as a tool error of one line."""
    try:
        return await anyio.to_thread.run_sync(work)
    except GroundqaError as exc:
        return error_result(exc.message)
    except Exception:
        logger.exception("the %s tool failed", tool)
        return error_result(f"{tool} failed on an unexpected error; the server's log says why")


def create_server(
    engine_or_location: Engine | str | Path,
    *,
    generator: str = "extractive",
    options: GeneratorOptions | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    retriever: str | None = None,
    embedder_options: EmbedderOptions | None = None,
) -> MCPServer[Any]:
    """An MCP server with the tools `ask`, `search` and `source` over one index.

    `engine_or_location` is an opened Engine, or an index directory or `postgresql://`
    URL to open (with `embedder_options` for a remote query embedder). The generator
    and the retriever are checked now, so a mistake fails before anything is served.
    """
    engine = (
        engine_or_location
        if isinstance(engine_or_location, Engine)
        else Engine.open(engine_or_location, embedder_options)
    )
    if retriever is not None:
        check_retriever(retriever, engine.retrievers)
    engine.generator(generator, options or GeneratorOptions())
    tools = CorpusTools(
        engine,
        generator=generator,
        options=options,
        temperature=temperature,
        max_tokens=max_tokens,
        retriever=retriever,
    )
    server: MCPServer[Any] = MCPServer(
        "groundqa",
        title="groundqa",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )
    for name, fn, description in (
        ("ask", tools.ask, ASK_DESCRIPTION),
        ("search", tools.search, SEARCH_DESCRIPTION),
        ("source", tools.source, SOURCE_DESCRIPTION),
    ):
        server.add_tool(fn, name=name, description=description, annotations=READ_ONLY)
    return server


def listen(host: str, port: int) -> socket.socket:
    """A socket bound and listening on host:port (0 picks a free port), or a UsageError."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}); choose another --http address"
        ) from None


# Seconds an HTTP connection has to send a request's head (see `exposure.http_protocol`).
HEAD_TIMEOUT_S = 10.0


def run(
    server: MCPServer[Any], sock: socket.socket | None = None, allowed_hosts: Sequence[str] = ()
) -> None:
    """Serve until the client hangs up (stdio) or until interrupted: over stdio, or over
    streamable HTTP at /mcp on `sock` (see `listen`), answering to `allowed_hosts` besides
    its own address."""
    if sock is None:
        anyio.run(server.run_stdio_async)
        return
    anyio.run(partial(serve_http, server, sock, tuple(allowed_hosts)))


class HostCheck:
    """421 for a Host name, and 403 for a browser page's Origin, that this server does not
    answer to: a page on a name the attacker owns, pointed here by DNS rebinding, must not
    call the tools through the visitor's browser."""

    def __init__(self, app: ASGIApp, allowed: tuple[str, ...]) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            server = scope.get("server")
            local = server[0] if server else None
            host, origin = headers.get("host"), headers.get("origin")
            refused = None
            if not host_allowed(host, local, self.allowed):
                refused = PlainTextResponse(misdirected(host or "", self.allowed), 421)
            elif not origin_allowed(origin, local, self.allowed):
                message = f"a page at {origin} may not call this server; it serves its own host"
                refused = PlainTextResponse(message, 403)
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def serve_http(
    server: MCPServer[Any], sock: socket.socket, allowed_hosts: tuple[str, ...] = ()
) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    host = sock.getsockname()[0]
    off = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # HostCheck's job
    app = HostCheck(server.streamable_http_app(host=host, transport_security=off), allowed_hosts)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        http=http_protocol(head_timeout_s=HEAD_TIMEOUT_S),
    )
    await uvicorn.Server(config).serve(sockets=[sock])
