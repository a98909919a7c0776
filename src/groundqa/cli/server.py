"""`groundqa serve`: the HTTP API and the web page over one index.

A thin shell over `groundqa.serve`: it opens the index, turns the options into
`ServeSettings`, binds the port and hands over to `serve.run_server`. It says
which extra to install when FastAPI or uvicorn is missing, and holds no serving
logic of its own (limits, workers and the supervisor live in `groundqa.serve`).
"""

from __future__ import annotations

import sys

import click
from rich.markup import escape

from groundqa.cli.common import embedder_options, generator_options, index_option, out
from groundqa.errors import UsageError


@click.command()
@index_option
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
    "--cache-mb",
    default=64,
    show_default=True,
    type=click.IntRange(min=1),
    help="Megabytes of answers the in-process cache keeps; the least recently used go first.",
)
@click.option(
    "--cors-origin",
    "cors_origins",
    multiple=True,
    metavar="ORIGIN",
    help="Let pages from ORIGIN call the API from a browser; repeat for more. Off by default.",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="A host name clients reach the server by (the Host header), besides the address it "
    "listens on and, on loopback, localhost; repeat for more, or * for any. Other names get 421.",
)
@click.option("--access-log", is_flag=True, help="Log every request line (never the token).")
@click.option(
    "--generator",
    default="extractive",
    show_default=True,
    help="The generator for requests that name none (a chat front-end cannot): extractive, "
    "extractive:concise, ollama:MODEL, openai:MODEL, anthropic:MODEL, bedrock:MODEL_ID or gguf:PATH. A request "
    "may name only this one and those of --allow-generator.",
)
@click.option(
    "--allow-generator",
    "allowed_generators",
    multiple=True,
    metavar="SPEC",
    help="Another generator a request may name in `generator`; repeat for more. A request "
    "naming any generator but these and --generator gets 400.",
)
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
    help="Seconds a request may take once its body is in, its wait in the queue included; "
    "past that, 504.",
)
@click.option(
    "--header-timeout",
    type=click.FloatRange(min=0.1),
    default=10.0,
    show_default=True,
    help="Seconds a connection has to send a request's head, from when it opens or from the "
    "end of its last response; past that it is closed.",
)
@click.option(
    "--body-timeout",
    type=click.FloatRange(min=0.1),
    default=30.0,
    show_default=True,
    help="Seconds a request has to send its whole body once its head is in; past that, 408 "
    "and the connection is closed. A request takes a slot only once its body is in.",
)
@click.option(
    "--client-connections",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Connections one client address may hold open at once; past that, 429. 0 turns it "
    "off. Default: off on a loopback --host, 32 otherwise.",
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
    cache_mb: int,
    cors_origins: tuple[str, ...],
    allowed_hosts: tuple[str, ...],
    access_log: bool,
    generator: str,
    allowed_generators: tuple[str, ...],
    generator_url: str | None,
    timeout: float | None,
    embedder_url: str | None,
    rate_limit: int | None,
    trusted_proxies: tuple[str, ...],
    max_inflight: int,
    queue_size: int,
    request_timeout: float,
    header_timeout: float,
    body_timeout: float,
    client_connections: int | None,
    shutdown_timeout: int,
    workers: int,
) -> None:
    """Serve the HTTP API and the web page over one index."""
    from groundqa.engine import Engine

    engine = Engine.open(index_dir, embedder_options(embedder_url))
    try:
        from groundqa.serve.cache import redact
        from groundqa.serve.settings import (
            ServeSettings,
            default_client_connections,
            default_rate_limit,
        )
        from groundqa.serve.workers import listen, run_server
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
        cache_mb=cache_mb,
        cors_origins=cors_origins,
        allowed_hosts=allowed_hosts,
        generator_options=generator_options(
            generator_url, request_timeout if timeout is None else timeout
        ),
        generator=generator,
        allowed_generators=allowed_generators,
        rate_limit=default_rate_limit(host) if rate_limit is None else rate_limit,
        max_inflight=max_inflight,
        queue=queue_size,
        request_timeout_s=request_timeout,
        header_timeout_s=header_timeout,
        body_timeout_s=body_timeout,
        client_connections=(
            default_client_connections(host) if client_connections is None else client_connections
        ),
        shutdown_timeout_s=shutdown_timeout,
    )
    # A wrong generator fails now, not at the first question.
    for spec in settings.generators:
        engine.generator(spec, settings.generator_options)
    sock = listen(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    out.print(
        f"serving {escape(index_dir)} on http://{shown}:{bound} "
        f"(cache: {escape(redact(cache_spec))}, auth: {'on' if token else 'off'}"
        + (f", {workers} workers)" if workers > 1 else ")")
    )
    sys.stdout.flush()
    run_server(
        engine,
        settings,
        sock,
        host=host,
        workers=workers,
        reopen=lambda: Engine.open(index_dir, embedder_options(embedder_url)),
        access_log=access_log,
        trusted_proxies=trusted_proxies,
    )
