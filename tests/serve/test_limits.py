"""Service limits of `groundqa serve`, against the real command on 127.0.0.1.

Each server is `groundqa serve` started as a subprocess, as an operator would run
it. A slow generation is a real `openai:` generator talking to a local model
server that holds its reply until the test lets it go: it sends its headers at
once and then whitespace (or SSE comments) every 0.2 s, so the generator's own
read timeout never fires and only the server's limits can end the request.
A slow client is a raw socket that sends a request's head or body a little at a
time; clients of other addresses connect from 127.0.0.2 and 127.0.0.3 (all of
127/8 is this machine), so per-address limits are tested with real addresses.
Timing bounds are generous: the tests check what happens, not how fast.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "fastapi", reason="the API tests need the serve extra: pip install -e '.[serve]'"
)
pytest.importorskip(
    "uvicorn", reason="the API tests need the serve extra: pip install -e '.[serve]'"
)

import httpx

from groundqa.errors import UsageError
from groundqa.ingestion import ingest
from groundqa.serve import DEFAULT_RATE_LIMIT, RATE_BURST, RateLimiter, default_rate_limit
from groundqa.serve.settings import DEFAULT_CLIENT_CONNECTIONS, default_client_connections
from tests.conftest import REGPACK
from tests.fakes import FakeServer, Out, Reply, Seen
from tests.pgserver import free_port
from tests.serve.test_api import NEER, SERVE, _events, _wait_for_health

ANSWER = "Failing to lodge a NEER report by the due date attracts a civil penalty. [1]"
CLAIM = "attracts a civil penalty"
SLOW = {"question": NEER, "generator": "openai:m"}
# The server must be told that requests may ask for that generator.
MODEL = ("--allow-generator", "openai:m")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("limits") / "idx"
    ingest([REGPACK], path, dense=None)
    return path


def held_reply(release: threading.Event) -> Reply:
    """An OpenAI-compatible reply that takes as long as the test wants: whitespace before
    a whole JSON body (JSON allows it), or SSE comments before a streamed one."""

    def trickle(keep_alive: str, rest: list[str]) -> Iterator[str]:
        while not release.wait(0.2):
            yield keep_alive
        yield from rest

    def reply(seen: Seen, out: Out) -> None:
        if seen.body.get("stream"):
            events = [
                {"choices": [{"index": 0, "delta": {"content": ANSWER}, "finish_reason": None}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            ]
            rest = [f"data: {json.dumps(e)}\n\n" for e in events] + ["data: [DONE]\n\n"]
            out.stream(trickle(": keep-alive\n\n", rest), "text/event-stream")
        else:
            message = {"role": "assistant", "content": ANSWER}
            whole = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
            out.stream(trickle(" ", [json.dumps(whole)]), "application/json")

    return reply


@pytest.fixture
def held_model(
    serve: Callable[[Reply], FakeServer],
) -> Iterator[tuple[FakeServer, threading.Event]]:
    """A model server whose replies wait for the event; it is let go before the server
    under test is stopped, so no generation outlives the test."""
    release = threading.Event()
    model = serve(held_reply(release))
    yield model, release
    release.set()


def _sigint_at_default() -> None:
    # A shell's background job ignores SIGINT and its children inherit that; a server
    # started by hand in a terminal has it at its default, as this one does.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def groundqa_serve(
    index: Path, tmp_path: Path, *args: str
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`groundqa serve` on a free port (cache off); yields its URL and process. Its output
    goes to files, so a chatty server cannot fill a pipe and stall."""
    port = free_port()
    log = tmp_path / f"serve-{port}.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [*SERVE, "--index", str(index), "--port", str(port), "--cache", "off", *args],
            stdout=sink,
            stderr=subprocess.STDOUT,
            preexec_fn=_sigint_at_default,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for_health(base, alive=lambda: proc.poll() is None, seconds=60)
        yield base, proc
    finally:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()  # a failed test left a generation held: do not leave the server behind
            proc.wait()
    text = log.read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in text, text


def in_background(call: Callable[[], httpx.Response]) -> tuple[threading.Thread, list[Any]]:
    """Run `call` in a thread; the list gets its response (or the exception it raised)."""
    result: list[Any] = []

    def run() -> None:
        try:
            result.append(call())
        except Exception as exc:  # the test inspects it
            result.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, result


def slow_query(base: str, path: str = "/query") -> Callable[[], httpx.Response]:
    return lambda: httpx.post(f"{base}{path}", json=SLOW, timeout=120)


def wait_until(check: Callable[[], bool], what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.05)


def limits(base: str) -> dict[str, Any]:
    data: dict[str, Any] = httpx.get(f"{base}/health", timeout=30).json()["limits"]
    return data


def load(base: str) -> tuple[int, int]:
    """Requests in progress and waiting, as /health reports them."""
    now = limits(base)
    return now["in_flight"], now["waiting"]


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"status", "code", "message", "type", "param"}
    assert error["status"] == status and error["code"] == code and error["message"]
    return error


# ---------------------------------------------------------------- rate limit


def test_rate_limiter_refills_and_keeps_its_table_bounded() -> None:
    now = [0.0]
    limiter = RateLimiter(60, 2, max_clients=3, clock=lambda: now[0])
    assert limiter.take("a") == 0 and limiter.take("a") == 0
    assert limiter.take("a") == pytest.approx(1.0)  # one a second: the next in a second
    now[0] += 1.0
    assert limiter.take("a") == 0 and limiter.take("a") > 0
    for client in ("b", "c", "d", "e"):
        assert limiter.take(client) == 0  # each new client has its own burst
    assert len(limiter) <= 3  # the longest idle went, however many clients came
    now[0] += 10.0  # long enough for every bucket to fill up again
    assert limiter.take("f") == 0 and len(limiter) == 1  # full buckets are dropped


def test_the_default_rate_limit_is_off_on_a_loopback_host_only() -> None:
    for host in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost", "LOCALHOST"):
        assert default_rate_limit(host) == 0, host
    for host in ("0.0.0.0", "::", "192.168.1.20", "api.example.org"):
        assert default_rate_limit(host) == DEFAULT_RATE_LIMIT, host


def test_the_default_connection_limit_is_off_on_a_loopback_host_only() -> None:
    # Every client of a loopback server has the same address: a cap there caps the server.
    assert default_client_connections("127.0.0.1") == 0 == default_client_connections("::1")
    assert default_client_connections("0.0.0.0") == DEFAULT_CLIENT_CONNECTIONS


def test_a_client_over_its_rate_gets_429_and_cannot_dodge_it(index: Path, tmp_path: Path) -> None:
    with groundqa_serve(index, tmp_path, "--rate-limit", "3") as (base, _):
        assert limits(base)["rate_limit_per_minute"] == 3
        with httpx.Client(base_url=base, timeout=30) as client:
            for _ in range(3):  # the burst: min(3, RATE_BURST)
                assert client.get("/sources/nothing").status_code == 404
            limited = client.get("/sources/nothing")
            error = assert_error(limited, 429, "rate_limited")
            assert "3 a minute" in error["message"]
            assert 1 <= int(limited.headers["retry-after"]) <= 20  # one request every 20 s
            # X-Forwarded-For from an untrusted peer is not the client's address.
            dodge = client.get("/sources/nothing", headers={"X-Forwarded-For": "10.9.8.7"})
            assert_error(dodge, 429, "rate_limited")
            # /health and the page are never limited.
            assert client.get("/health").status_code == 200
            assert client.get("/").status_code == 200


def test_a_trusted_proxy_names_the_client(index: Path, tmp_path: Path) -> None:
    args = ("--rate-limit", "1", "--trusted-proxy", "127.0.0.1")
    with (
        groundqa_serve(index, tmp_path, *args) as (base, _),
        httpx.Client(base_url=base, timeout=30) as client,
    ):

        def ask(client_address: str) -> int:
            headers = {"X-Forwarded-For": client_address}
            return client.get("/sources/nothing", headers=headers).status_code

        assert ask("10.0.0.1") == 404
        assert ask("10.0.0.1") == 429
        assert ask("10.0.0.2") == 404  # another client behind the same proxy


def test_no_rate_limit_by_default_on_loopback(index: Path, tmp_path: Path) -> None:
    with (
        groundqa_serve(index, tmp_path) as (base, _),
        httpx.Client(base_url=base, timeout=30) as client,
    ):
        assert limits(base)["rate_limit_per_minute"] is None
        statuses = {client.get("/sources/nothing").status_code for _ in range(RATE_BURST + 10)}
        assert statuses == {404}


# ---------------------------------------------------------------- slots and queue


def test_a_full_server_answers_503_at_once_and_serves_its_queue(
    index: Path, tmp_path: Path, held_model: tuple[FakeServer, threading.Event]
) -> None:
    model, release = held_model
    args = (*MODEL, "--generator-url", f"{model.url}/v1", "--max-inflight", "1", "--queue", "1")
    with groundqa_serve(index, tmp_path, *args) as (base, _):
        first, first_result = in_background(slow_query(base))
        wait_until(lambda: len(model.seen) == 1, "the first request is generating")
        second, second_result = in_background(slow_query(base))
        wait_until(lambda: load(base) == (1, 1), "the second request is queued")

        refused = httpx.get(f"{base}/sources/nothing", timeout=30)
        error = assert_error(refused, 503, "overloaded")
        assert refused.headers["retry-after"] == "5"
        assert "1 requests in progress, 1 waiting" in error["message"]
        assert len(model.seen) == 1  # the queued request has not started its generation

        release.set()
        for thread in (first, second):
            thread.join(60)
        for result in (first_result, second_result):
            response = result[0]
            assert isinstance(response, httpx.Response) and response.status_code == 200
            assert CLAIM in response.json()["answer"]
        assert len(model.seen) == 2
        assert httpx.get(f"{base}/sources/nothing", timeout=30).status_code == 404
        assert load(base) == (0, 0)


# ---------------------------------------------------------------- timeouts


def test_a_slow_generation_does_not_hold_up_other_requests(
    index: Path, tmp_path: Path, held_model: tuple[FakeServer, threading.Event]
) -> None:
    model, release = held_model
    with groundqa_serve(index, tmp_path, *MODEL, "--generator-url", f"{model.url}/v1") as (base, _):
        slow, slow_result = in_background(slow_query(base))
        wait_until(lambda: len(model.seen) == 1, "the slow request is generating")
        with httpx.Client(base_url=base, timeout=30) as client:
            assert load(base) == (1, 0)
            extractive = client.post("/query", json={"question": NEER})
            assert extractive.status_code == 200 and extractive.json()["citations"]
            assert client.get("/sources/nothing").status_code == 404
        assert slow.is_alive() and not slow_result  # all of that while it was still held
        release.set()
        slow.join(60)
        response = slow_result[0]
        assert isinstance(response, httpx.Response) and response.status_code == 200
        assert response.json()["generator"] == "openai:m" and not response.json()["error"]


def test_a_request_past_its_timeout_gets_504(
    index: Path, tmp_path: Path, held_model: tuple[FakeServer, threading.Event]
) -> None:
    model, release = held_model
    args = (
        *MODEL,
        "--generator-url",
        f"{model.url}/v1",
        "--request-timeout",
        "1.5",
        "--max-inflight",
        "2",
    )
    with groundqa_serve(index, tmp_path, *args) as (base, _):
        assert limits(base)["request_timeout_s"] == 1.5
        started = time.monotonic()
        response = slow_query(base)()
        took = time.monotonic() - started
        error = assert_error(response, 504, "timeout")
        assert "1.5 s limit" in error["message"]
        assert 1.5 <= took < 30  # the model still holds its reply: the server's limit ended it

        # A stream has sent its status already: it gets an `error` event, and no `done`.
        stream = slow_query(base, "/query/stream")()
        assert stream.status_code == 200
        events = _events(stream.text)
        assert [name for name, _ in events] == ["passages", "error"]
        assert events[-1][1]["error"]["code"] == "timeout"

        # The abandoned generations still hold their slots until they end: the limit on
        # requests at once counts the threads really busy.
        assert load(base) == (2, 0)
        # So the next request waits in the queue, and its time runs out there.
        queued = httpx.get(f"{base}/sources/nothing", timeout=30)
        assert_error(queued, 504, "timeout")
        assert load(base) == (2, 0) and len(model.seen) == 2
        release.set()
        wait_until(lambda: load(base) == (0, 0), "the generations have ended")


def test_the_generator_timeout_cannot_outlast_the_request(index: Path) -> None:
    proc = subprocess.run(
        [*SERVE, "--index", str(index), "--request-timeout", "5", "--timeout", "10"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert "--timeout (10 s) must not be longer than --request-timeout (5 s)" in proc.stderr


# ---------------------------------------------------------------- graceful shutdown


@pytest.mark.parametrize(
    ("stop", "workers"),
    [(signal.SIGTERM, 1), (signal.SIGINT, 1), (signal.SIGTERM, 2)],
    ids=["sigterm", "sigint", "sigterm-2-workers"],
)
def test_a_stopped_server_finishes_requests_in_progress(
    index: Path,
    tmp_path: Path,
    held_model: tuple[FakeServer, threading.Event],
    stop: signal.Signals,
    workers: int,
) -> None:
    model, release = held_model
    args = (*MODEL, "--generator-url", f"{model.url}/v1", "--workers", str(workers))
    with groundqa_serve(index, tmp_path, *args) as (base, proc):
        slow, slow_result = in_background(slow_query(base))
        wait_until(lambda: len(model.seen) == 1, "the slow request is generating")
        proc.send_signal(stop)

        def refused() -> bool:
            try:
                httpx.get(f"{base}/health", timeout=2)
            except httpx.ConnectError:
                return True
            except httpx.HTTPError:
                return False
            return False

        wait_until(refused, "the server stops accepting connections")
        assert proc.poll() is None and slow.is_alive()  # still finishing the slow one
        release.set()
        slow.join(60)
        response = slow_result[0]
        assert isinstance(response, httpx.Response) and response.status_code == 200
        assert response.json()["generator"] == "openai:m" and not response.json()["error"]
        assert proc.wait(timeout=60) == 0


def test_serve_settings_refuse_bad_limits() -> None:
    from groundqa.generate import GeneratorOptions
    from groundqa.serve import ServeSettings

    bad: list[dict[str, Any]] = [
        {"rate_limit": -1},
        {"max_inflight": 0},
        {"queue": -1},
        {"request_timeout_s": 0},
        {"shutdown_timeout_s": -1},
        {"request_timeout_s": 5, "generator_options": GeneratorOptions(timeout_s=6)},
        {"header_timeout_s": 0},
        {"body_timeout_s": -1},
        {"client_connections": -1},
        {"cache_mb": 0},
        {"allowed_generators": (" ",)},
        {"allowed_hosts": ("",)},
    ]
    for fields in bad:
        with pytest.raises(UsageError) as raised:
            ServeSettings(**fields)
        assert "\n" not in str(raised.value), fields


def test_a_server_that_swapped_in_a_rebuilt_index_still_stops_at_once(tmp_path: Path) -> None:
    """The build a server swapped out closes a minute later, on a timer that must not keep a
    stopping server alive for that minute."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "ferry.md").write_text("# Ferries\n\n## Timetable\n\nThe ferry leaves at dawn.\n")
    index = tmp_path / "idx"
    ingest([corpus], index, dense=None)
    with groundqa_serve(index, tmp_path) as (base, proc):
        first = httpx.get(f"{base}/health").json()["index"]["build_id"]
        (corpus / "bus.md").write_text("# Buses\n\n## Timetable\n\nThe bus leaves at noon.\n")
        rebuilt = ingest([corpus], index, dense=None).build_id
        assert rebuilt != first

        def swapped() -> bool:
            health = httpx.post(f"{base}/query", json={"question": "When does the bus leave?"})
            assert health.status_code == 200
            return bool(httpx.get(f"{base}/health").json()["index"]["build_id"] == rebuilt)

        wait_until(swapped, "the server serves the rebuilt index")
        proc.terminate()
        # Well inside the minute the old build waits before it is closed.
        assert proc.wait(timeout=20) == 0


def test_the_server_caps_malloc_arenas_unless_told_otherwise() -> None:
    code = "from groundqa.serve.workers import few_malloc_arenas as f; print(f())"
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    capped = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    told = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**env, "MALLOC_ARENA_MAX": "4"},
        check=True,
    )
    assert capped.stdout.strip() == "True"  # glibc here: the cap is set
    assert told.stdout.strip() == "False"  # the operator's own setting stands


# ---------------------------------------------------------------- slow clients


def _port(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


def connect(base: str, source: str = "127.0.0.1") -> socket.socket:
    """A raw connection to the server from the address `source` (any of 127/8)."""
    sock = socket.create_connection(
        ("127.0.0.1", _port(base)), timeout=30, source_address=(source, 0)
    )
    return sock


def post_head(base: str, path: str = "/query", length: int = 1000) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{_port(base)}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


@contextmanager
def slow_bodies(
    base: str, count: int, source: str = "127.0.0.1", every_s: float = 0.5
) -> Iterator[list[socket.socket]]:
    """`count` connections that each send a /query head promising a 1,000-byte body, then
    one byte of it every `every_s` seconds: none of them ever finishes."""
    socks = [connect(base, source) for _ in range(count)]
    for sock in socks:
        sock.sendall(post_head(base) + b'{"question": "')
    stop = threading.Event()

    def trickle() -> None:
        while not stop.wait(every_s):
            for sock in socks:
                with contextlib.suppress(OSError):  # the server has closed it
                    sock.send(b"x")

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    try:
        yield socks
    finally:
        stop.set()
        thread.join(5)
        for sock in socks:
            sock.close()


def read_response(sock: socket.socket, seconds: float = 30) -> tuple[int, dict[str, Any], bool]:
    """The status and JSON body of the response on `sock`, and whether the server then
    closed the connection."""
    sock.settimeout(seconds)
    data = b""
    while b"\r\n\r\n" not in data:
        part = sock.recv(65536)
        assert part, f"the connection closed before a response: {data!r}"
        data += part
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {
        k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])
    }
    while len(body) < int(headers["content-length"]):
        part = sock.recv(65536)
        assert part, "the connection closed in the middle of the body"
        body += part
    try:
        closed = sock.recv(1) == b""
    except ConnectionResetError:  # closed while this side was still sending: a reset
        closed = True
    except TimeoutError:
        closed = False
    return int(lines[0].split()[1]), json.loads(body), closed


def closed_within(sock: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closed `sock` (reading and dropping anything it sent), or
    None if it was still open after `seconds`."""
    started = time.monotonic()
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return time.monotonic() - started


def test_slow_bodies_hold_no_slot_and_a_normal_client_is_still_served(
    index: Path, tmp_path: Path
) -> None:
    """Fifty connections sending a byte every half second used to take every slot and the
    whole queue (the slot was taken before the body was read), so everyone got 503."""
    with (
        groundqa_serve(index, tmp_path, "--body-timeout", "3") as (base, _),
        slow_bodies(base, 50) as slow,
    ):
        time.sleep(1)  # every head is in: each slow request is reading its body
        answered = httpx.post(f"{base}/query", json={"question": NEER}, timeout=30)
        assert answered.status_code == 200 and answered.json()["citations"]
        assert load(base) == (0, 0)  # the slow ones hold connections, not slots
        # Past --body-timeout each gets 408 in the one error shape, and is closed.
        for sock in slow[:5]:
            status, body, closed = read_response(sock)
            assert status == 408 and closed
            assert body["error"]["code"] == "body_timeout" and body["error"]["status"] == 408
            assert "did not arrive within 3 s" in body["error"]["message"]


def test_with_a_rate_limit_one_address_s_slow_bodies_do_not_hold_up_another(
    index: Path, tmp_path: Path
) -> None:
    """With --rate-limit, slow bodies from one address (each within its rate) used to take
    the slots another address's requests needed; those timed out."""
    args = ("--rate-limit", "600", "--max-inflight", "1", "--queue", "0")
    with (
        groundqa_serve(index, tmp_path, *args) as (base, _),
        slow_bodies(base, RATE_BURST, source="127.0.0.2"),
    ):
        time.sleep(1)
        transport = httpx.HTTPTransport(local_address="127.0.0.3")
        with httpx.Client(transport=transport, timeout=30) as other:
            answered = other.post(f"{base}/query", json={"question": NEER})
        assert answered.status_code == 200 and answered.json()["citations"]


def test_a_slow_or_silent_head_is_closed(index: Path, tmp_path: Path) -> None:
    """uvicorn waits for a request's head for ever; --header-timeout bounds it, from when the
    connection opens and again from the end of each response."""
    with groundqa_serve(index, tmp_path, "--header-timeout", "1") as (base, _):
        silent = connect(base)
        slow = connect(base)
        slow.sendall(b"GET /health HTTP/1.1\r\n")
        stop = threading.Event()

        def one_header_a_while() -> None:
            while not stop.wait(0.3):
                try:
                    slow.sendall(b"X-Padding: 1\r\n")
                except OSError:
                    return

        threading.Thread(target=one_header_a_while, daemon=True).start()
        try:
            for sock in (silent, slow):
                took = closed_within(sock, 15)
                assert took is not None and took < 10, "the connection was held"
        finally:
            stop.set()
            silent.close()
            slow.close()
        # A kept-alive connection gets the same time for its next head, and no more.
        kept = connect(base)
        kept.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{_port(base)}\r\n\r\n".encode())
        kept.settimeout(30)
        assert kept.recv(12) == b"HTTP/1.1 200"
        kept.sendall(b"GET /health HTTP/1.1\r\n")  # and then nothing more
        took = closed_within(kept, 15)
        kept.close()
        assert took is not None and took < 10
        assert httpx.get(f"{base}/health", timeout=30).status_code == 200


def test_one_address_holds_at_most_its_connections(index: Path, tmp_path: Path) -> None:
    with groundqa_serve(index, tmp_path, "--client-connections", "3") as (base, _):
        assert limits(base)["client_connections"] == 3
        held = [connect(base, "127.0.0.2") for _ in range(3)]
        for sock in held:
            sock.sendall(b"GET /health HTTP/1.1\r\n")  # a head that is not finished yet
        try:
            time.sleep(0.5)
            extra = connect(base, "127.0.0.2")
            extra.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{_port(base)}\r\n\r\n".encode())
            status, body, closed = read_response(extra)
            extra.close()
            assert status == 429 and closed
            error = body["error"]
            assert error["code"] == "too_many_connections" and "3 at once" in error["message"]
            # Another address is not held up by this one.
            transport = httpx.HTTPTransport(local_address="127.0.0.3")
            with httpx.Client(transport=transport, timeout=30) as other:
                assert other.post(f"{base}/query", json={"question": NEER}).status_code == 200
        finally:
            for sock in held:
                sock.close()
        # Closed connections count no more.
        transport = httpx.HTTPTransport(local_address="127.0.0.2")
        with httpx.Client(transport=transport, timeout=30) as again:
            wait_until(
                lambda: again.get(f"{base}/health").status_code == 200, "the address is let in"
            )


# ---------------------------------------------------------------- the Host


def test_a_host_name_the_server_does_not_answer_to_gets_421(index: Path, tmp_path: Path) -> None:
    """DNS rebinding: a page on attacker.example, its name pointed at 127.0.0.1, would read the
    API through the visitor's browser; that request comes with `Host: attacker.example`."""
    with groundqa_serve(index, tmp_path, "--allowed-host", "qa.example.org") as (base, _):
        port = _port(base)
        for path in ("/health", "/", "/sources/nothing"):
            refused = httpx.get(f"{base}{path}", headers={"Host": f"attacker.example:{port}"})
            error = assert_error(refused, 421, "misdirected")
            assert "'attacker.example'" in error["message"] and "--allowed-host" in error["message"]
        refused = httpx.post(
            f"{base}/query", json={"question": NEER}, headers={"Host": "attacker.example"}
        )
        assert_error(refused, 421, "misdirected")
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "qa.example.org", "QA.Example.org"):
            assert httpx.get(f"{base}/health", headers={"Host": host}).status_code == 200, host


def test_on_every_address_the_host_is_an_address_it_arrived_at_or_a_listed_name(
    index: Path, tmp_path: Path
) -> None:
    """Bound to 0.0.0.0 the server takes a Host that is the address the connection came in
    on (and localhost names over loopback); any name must be listed."""
    args = ("--host", "0.0.0.0", "--token", "t0ken", "--allowed-host", "qa.example.org")
    with groundqa_serve(index, tmp_path, *args) as (base, _):
        port = _port(base)
        for host, status in (
            (f"127.0.0.1:{port}", 200),
            (f"localhost:{port}", 200),
            ("qa.example.org", 200),
            ("attacker.example", 421),
        ):
            response = httpx.get(f"{base}/health", headers={"Host": host}, timeout=30)
            assert response.status_code == status, host
