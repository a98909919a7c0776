"""`groundqa mcp`: the index as MCP tools (ask, search, source) for an assistant.

A thin shell over `groundqa.mcp`: it opens the index, checks the options, and
serves over stdio (what a desktop assistant starts) or over streamable HTTP. Over
stdio, stdout belongs to the protocol, so everything it says goes to stderr. It
says which extra to install when the MCP SDK is missing.
"""

from __future__ import annotations

import click
from rich.markup import escape

from groundqa.cli.common import (
    embedder_options,
    err,
    generator_options,
    index_option,
    retriever_option,
    with_generator_options,
)
from groundqa.errors import UsageError

# What the MCP SDK brings; one of them missing means the `mcp` extra is not installed.
SDK_MODULES = {"mcp", "mcp_types", "pydantic", "starlette", "uvicorn", "anyio"}


def parse_address(value: str) -> tuple[str, int]:
    """HOST:PORT (an IPv6 host in brackets, [::1]:8765) as a host and a port."""
    host, sep, port = value.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--http takes HOST:PORT, e.g. 127.0.0.1:8765, got {value!r}")
    return host, int(port)


@click.command("mcp")
@index_option
@click.option(
    "--http",
    "http",
    default=None,
    metavar="HOST:PORT",
    help="Serve over streamable HTTP at http://HOST:PORT/mcp instead of stdio "
    "(port 0 picks a free one).",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="With --http: a host name clients reach the server by (the Host header), besides "
    "the address it listens on and, on loopback, localhost; repeat for more, or * for any. "
    "Other names get 421.",
)
@retriever_option
@with_generator_options
def mcp_command(
    index_dir: str,
    http: str | None,
    allowed_hosts: tuple[str, ...],
    retriever: str | None,
    embedder_url: str | None,
    generator: str,
    generator_url: str | None,
    temperature: float | None,
    max_tokens: int | None,
    timeout: float,
) -> None:
    """Serve the index to an assistant as MCP tools: ask, search and source.

    Over stdio by default, as a desktop assistant starts it; logs go to stderr.
    """
    address = parse_address(http) if http is not None else None
    if allowed_hosts and address is None:
        raise UsageError("--allowed-host applies to --http only; over stdio there is no Host")
    try:
        from groundqa.mcp import create_server, listen, run
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in SDK_MODULES:
            raise
        raise UsageError(
            f"groundqa mcp needs the MCP SDK ({exc.name} is missing): pip install 'groundqa[mcp]'"
        ) from None
    from groundqa.engine import Engine

    engine = Engine.open(index_dir, embedder_options(embedder_url))
    server = create_server(
        engine,
        generator=generator,
        options=generator_options(generator_url, timeout),
        temperature=temperature,
        max_tokens=max_tokens,
        retriever=retriever,
    )
    sock = listen(*address) if address is not None else None
    where = "stdio"
    if sock is not None:
        host, port = sock.getsockname()[:2]
        where = f"http://{f'[{host}]' if ':' in host else host}:{port}/mcp"
    err.print(
        f"groundqa MCP server over {escape(engine.location)} "
        f"({engine.manifest.counts['chunks']} chunks, generator {escape(generator)}) on {where}"
    )
    run(server, sock, allowed_hosts)
