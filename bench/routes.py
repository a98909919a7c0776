"""What each way in adds over `POST /query`: the same question, one client, p50.

The routes measured, each asked the same answerable question from the example corpus
with the result cache off (so every request runs the pipeline):

- `POST /query` (the baseline) and `POST /query/stream` (read to its `done` event);
- `POST /v1/chat/completions`, whole and with `stream: true` (read to `[DONE]`);
- the MCP `ask` tool over stdio (`groundqa mcp`, one session kept open) and over
  streamable HTTP (`groundqa mcp --http`).

Rounds interleave the routes in a new order each time, with a pause before each request
(a server may still be finishing the previous one: its process shares the two cores), so
a slow moment of the machine, or a place in the round, falls on all of them alike. Added latency is a route's p50 less the baseline's p50 in the same run.
"""

from __future__ import annotations

import contextlib
import random
import statistics
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import serving
from _common import WORK, latency_summary, machine, write_result

QUESTION = "What is the turbine setback from a dwelling in Northmere?"
WARMUP = 3
ROUNDS = 100
PAUSE_S = 0.05
EXE = serving.EXE


def _http_routes(url: str) -> dict[str, Callable[[], None]]:
    """The HTTP routes, each a blocking call through one kept-alive httpx client, as a
    plain client makes them (an async client added its own milliseconds here, more to
    the larger /query body)."""
    import httpx

    client = httpx.Client(base_url=url, timeout=60)
    chat = {"model": "groundqa", "messages": [{"role": "user", "content": QUESTION}]}

    def query() -> None:
        client.post("/query", json={"question": QUESTION}).raise_for_status()

    def query_stream() -> None:
        with client.stream("POST", "/query/stream", json={"question": QUESTION}) as r:
            r.raise_for_status()
            for _ in r.iter_lines():
                pass

    def chat_whole() -> None:
        client.post("/v1/chat/completions", json=chat).raise_for_status()

    def chat_stream() -> None:
        with client.stream("POST", "/v1/chat/completions", json={**chat, "stream": True}) as r:
            r.raise_for_status()
            for line in r.iter_lines():
                if line == "data: [DONE]":
                    break

    return {
        "POST /query (baseline)": query,
        "POST /query/stream": query_stream,
        "POST /v1/chat/completions": chat_whole,
        "POST /v1/chat/completions, stream": chat_stream,
    }


@contextlib.asynccontextmanager
async def _mcp_stdio(index: Path) -> AsyncIterator[Any]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    server = StdioServerParameters(command=str(EXE), args=["mcp", "--index", str(index)])
    with open(WORK / "routes" / "mcp_stdio.log", "w") as errlog:
        async with (
            stdio_client(server, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


@contextlib.asynccontextmanager
async def _mcp_http(index: Path) -> AsyncIterator[Any]:
    import httpx
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    port = serving.free_port()
    log = (WORK / "routes" / "mcp_http.log").open("wb")
    proc = subprocess.Popen(
        [str(EXE), "mcp", "--index", str(index), "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("groundqa mcp --http did not start; see mcp_http.log")
            time.sleep(0.1)
        async with (
            streamable_http_client(f"http://127.0.0.1:{port}/mcp") as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            yield session
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def _awaitable(call: Callable[[], None]) -> Callable[[], Awaitable[None]]:
    """A blocking HTTP call run in place: the MCP sessions sit idle meanwhile."""

    async def run() -> None:
        call()

    return run


def _tool_call(session: Any) -> Callable[[], Awaitable[None]]:
    async def call() -> None:
        result = await session.call_tool("ask", {"question": QUESTION})
        if result.is_error:
            raise RuntimeError(f"MCP ask failed: {result.content}")

    return call


async def _measure(index: Path, url: str) -> dict[str, list[float]]:
    import anyio

    http_routes = _http_routes(url)
    async with _mcp_stdio(index) as stdio, _mcp_http(index) as http:
        routes: dict[str, Callable[[], Awaitable[None]]] = {}
        for name, call in http_routes.items():
            routes[name] = _awaitable(call)
        routes["MCP ask (stdio)"] = _tool_call(stdio)
        routes["MCP ask (streamable HTTP)"] = _tool_call(http)
        times: dict[str, list[float]] = {name: [] for name in routes}
        names = list(routes)
        order = random.Random(7)
        for round_ in range(WARMUP + ROUNDS):
            # A new order each round, so no route always follows the same one; and a pause
            # before each request, so none runs while a server still finishes the last.
            order.shuffle(names)
            for name in names:
                await anyio.sleep(PAUSE_S)
                started = time.perf_counter()
                await routes[name]()
                if round_ >= WARMUP:
                    times[name].append((time.perf_counter() - started) * 1000)
    return times


def run() -> dict[str, Any]:
    import anyio

    started = time.perf_counter()
    work = WORK / "routes"
    work.mkdir(parents=True, exist_ok=True)
    index = serving.example_index(work / "regpack")
    with serving.server(index, log=work / "serve.log") as serve:
        times = anyio.run(_measure, index, serve.url)
    summary = {name: latency_summary(ms) for name, ms in times.items()}
    base = summary["POST /query (baseline)"]["p50_ms"]
    for s in summary.values():
        s["added_p50_ms"] = round(s["p50_ms"] - base, 2)
    data = {
        "machine": machine(),
        "question": QUESTION,
        "rounds": ROUNDS,
        "routes": summary,
        "spread_ms": {n: round(statistics.pstdev(ms), 2) for n, ms in times.items()},
        "seconds": round(time.perf_counter() - started, 1),
    }
    lines = [
        "## Routes: what each way in adds over POST /query",
        "",
        f"`python bench/routes.py` (part of `make bench`; {data['seconds']} s): one client "
        f"asks the same question ({QUESTION!r}) {ROUNDS} times on each route, after "
        f"{WARMUP} rounds of warm-up, the routes interleaved in a new order each round, "
        f"{PAUSE_S * 1000:.0f} ms apart; `groundqa serve --cache off` "
        "and `groundqa mcp` over the example corpus, extractive answers. Added = the "
        "route's p50 less the baseline's p50 in the same run.",
        "",
        "| route | p50 ms | p95 ms | added p50 ms |",
        "|---|---:|---:|---:|",
    ]
    for name, s in summary.items():
        lines.append(
            f"| {name} | {s['p50_ms']:.1f} | {s['p95_ms']:.1f} | {s['added_p50_ms']:+.1f} |"
        )
    write_result("routes", data, "\n".join(lines))
    return data


if __name__ == "__main__":
    run()
