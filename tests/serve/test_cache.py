"""The result cache: an LRU with a TTL in process, and a real redis-server that dies and comes back.

Redis runs as Debian's `redis-server` on a free 127.0.0.1 port with persistence
off, started and stopped by a fixture; the tests skip where it is not installed.
Time in the TTL and retry-window tests is an injected clock, not sleep.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groundqa.errors import UsageError
from groundqa.serve.cache import MemoryCache, NoCache, RedisCache, make_cache, redact
from tests.pgserver import free_port

REDIS_SERVER = Path("/usr/bin/redis-server")


class Clock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# ---------------------------------------------------------------- memory


def test_memory_entries_expire_after_their_ttl() -> None:
    clock = Clock()
    cache = MemoryCache(clock=clock)
    cache.set("a", {"answer": 1}, ttl=10)
    cache.set("b", {"answer": 2}, ttl=60)
    clock.advance(9.9)
    assert cache.get("a") == {"answer": 1}
    clock.advance(0.1)
    assert cache.get("a") is None
    assert cache.get("b") == {"answer": 2}
    assert len(cache) == 1  # the expired entry is gone, not just hidden
    cache.set("c", {"answer": 3}, ttl=0)
    assert cache.get("c") is None


def test_memory_evicts_the_least_recently_used_entry() -> None:
    cache = MemoryCache(max_entries=3, clock=Clock())
    for key in "abc":
        cache.set(key, {"key": key}, ttl=60)
    assert cache.get("a") == {"key": "a"}  # a is now the most recently used
    cache.set("d", {"key": "d"}, ttl=60)
    assert cache.get("b") is None
    assert [k for k in "acd" if cache.get(k)] == ["a", "c", "d"]
    cache.set("c", {"key": "c2"}, ttl=60)  # rewriting refreshes too
    cache.set("e", {"key": "e"}, ttl=60)
    assert cache.get("a") is None and cache.get("c") == {"key": "c2"}
    assert len(cache) == 3
    assert MemoryCache().max_entries == 1024


def test_memory_hands_out_copies() -> None:
    cache = MemoryCache()
    value = {"answer": "x", "citations": [{"n": 1}]}
    cache.set("k", value, ttl=60)
    value["answer"] = "changed after set"
    got = cache.get("k")
    assert got is not None
    got["citations"].append({"n": 2})
    assert cache.get("k") == {"answer": "x", "citations": [{"n": 1}]}


def test_memory_status_and_no_cache() -> None:
    cache = MemoryCache()
    cache.set("k", {}, ttl=60)
    assert cache.status() == {
        "backend": "memory",
        "ok": True,
        "detail": "in-process, 1 of 1024 entries, 0.0 of 64 MB",
    }
    off = NoCache()
    off.set("k", {"a": 1}, ttl=60)
    assert off.get("k") is None
    assert off.status()["backend"] == "off" and off.status()["ok"] is True


def _entry(size: int) -> dict[str, str]:
    """A value whose JSON text is exactly `size` bytes."""
    value = {"t": ""}
    value["t"] = "x" * (size - len(json.dumps(value)))
    assert len(json.dumps(value)) == size
    return value


def test_memory_is_bounded_in_bytes_and_evicts_the_least_recently_used() -> None:
    cache = MemoryCache(clock=Clock(), max_bytes=16_000)  # entries up to 1,000 bytes
    for key in "abcdefghijklmnop":
        cache.set(key, _entry(1000), ttl=60)
    assert len(cache) == 16 and cache.size_bytes == 16_000
    assert cache.get("a") is not None  # now the most recently used
    cache.set("q", _entry(1000), ttl=60)
    assert cache.size_bytes == 16_000
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("q") is not None
    cache.set("a", _entry(100), ttl=60)  # a new value replaces the old one's bytes
    assert cache.size_bytes == 15_100


def test_memory_does_not_store_an_entry_too_big_for_it() -> None:
    """Five 210 MB answers took a server from 0.09 to 1.6 GB: an entry over a sixteenth of
    the cache is not kept, and does not push out the entries that are."""
    cache = MemoryCache(clock=Clock(), max_bytes=16_000)
    cache.set("small", _entry(500), ttl=60)
    cache.set("huge", _entry(1001), ttl=60)
    assert cache.get("huge") is None and cache.get("small") is not None
    assert len(cache) == 1 and cache.size_bytes == 500
    cache.set("small", _entry(5000), ttl=60)  # too big now: the old value goes too
    assert cache.get("small") is None and cache.size_bytes == 0


def test_make_cache_reads_the_spec() -> None:
    assert isinstance(make_cache("memory"), MemoryCache)
    assert isinstance(make_cache("off"), NoCache)
    redis_cache = make_cache("redis://127.0.0.1:1/0")
    assert isinstance(redis_cache, RedisCache)
    redis_cache.close()
    for bad in ("disk", "Memory", "http://127.0.0.1:6379", ""):
        with pytest.raises(UsageError, match=r"use memory, off, or a redis://"):
            make_cache(bad)


def test_redis_url_without_the_redis_package_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # what an environment without it looks like
    with pytest.raises(UsageError, match=r"pip install 'groundqa\[redis\]'"):
        make_cache("redis://127.0.0.1:6379")


def test_redact_hides_the_password() -> None:
    assert redact("redis://:hunter2@cache.local:6380/1") == "redis://:***@cache.local:6380/1"
    assert redact("redis://user:pw@[::1]:6379") == "redis://user:***@[::1]:6379"
    assert redact("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


# ---------------------------------------------------------------- a real redis-server


def _pong(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """`redis-server` on one port, with persistence off; can be stopped and started again."""

    def __init__(self, port: int, workdir: Path) -> None:
        self.port = port
        self.workdir = workdir
        self.url = f"redis://127.0.0.1:{port}/0"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self._proc = subprocess.Popen(
            [
                str(REDIS_SERVER),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not _pong(self.port):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not answer PING on port {self.port}")
            time.sleep(0.02)

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=10)
            self._proc = None


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    if not REDIS_SERVER.exists():
        pytest.skip(f"needs {REDIS_SERVER} (apt-get install redis-server)")
    server = RedisServer(free_port(), tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def raw(redis_server: RedisServer) -> Iterator[Any]:
    """A plain redis-py client, to look at what the cache wrote."""
    import redis

    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    try:
        yield client
    finally:
        client.close()


def test_redis_stores_json_under_the_prefix_with_a_ttl(redis_server: RedisServer, raw: Any) -> None:
    cache = RedisCache(redis_server.url)
    try:
        assert cache.get("k") is None
        cache.set("k", {"answer": "31 October [1]", "citations": [{"n": 1}]}, ttl=120)
        assert cache.get("k") == {"answer": "31 October [1]", "citations": [{"n": 1}]}
        assert raw.get("groundqa:k") == '{"answer": "31 October [1]", "citations": [{"n": 1}]}'
        assert 110 < raw.ttl("groundqa:k") <= 120
        cache.set("short", {"a": 1}, ttl=1)
        assert raw.pttl("groundqa:short") <= 1000
        time.sleep(1.1)  # Redis expires keys on its own clock
        assert cache.get("short") is None
        raw.set("groundqa:junk", "not json")
        assert cache.get("junk") is None
        status = cache.status()
        assert status["backend"] == "redis" and status["ok"] is True
        assert redis_server.url in status["detail"]
    finally:
        cache.close()


def test_redis_down_is_a_miss_and_it_recovers(redis_server: RedisServer) -> None:
    clock = Clock()
    cache = RedisCache(redis_server.url, clock=clock, retry_interval=5.0)
    try:
        cache.set("k", {"v": 1}, ttl=60)
        assert cache.get("k") == {"v": 1}

        redis_server.stop()
        started = time.monotonic()
        assert cache.get("k") is None
        cache.set("k", {"v": 2}, ttl=60)  # no exception: the write is skipped
        status = cache.status()
        assert status["ok"] is False and status["backend"] == "redis"
        assert "unreachable" in status["detail"]
        assert "answers are served without the cache" in status["detail"]
        assert time.monotonic() - started < 2

        # Back on the same port, but the cache waits out its retry window first.
        redis_server.start()
        cache.set("k", {"v": 3}, ttl=60)
        assert cache.get("k") is None
        assert cache.status()["ok"] is False
        clock.advance(5.0)
        cache.set("k", {"v": 4}, ttl=60)
        assert cache.get("k") == {"v": 4}
        assert cache.status()["ok"] is True
    finally:
        cache.close()


def test_redis_that_never_answers_costs_one_attempt_per_window() -> None:
    clock = Clock()
    cache = RedisCache(f"redis://127.0.0.1:{free_port()}/0", clock=clock, retry_interval=5.0)
    try:
        assert cache.get("k") is None
        assert cache.status()["ok"] is False
        started = time.monotonic()
        for _ in range(200):
            assert cache.get("k") is None  # inside the window: no connection is tried
        assert time.monotonic() - started < 0.5
    finally:
        cache.close()


# ---------------------------------------------------------------- the API over Redis


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, regpack_build: Path) -> Any:
    pytest.importorskip("fastapi", reason="needs the serve extra: pip install -e '.[serve]'")
    from groundqa.engine import Engine
    from tests.conftest import copy_index

    index = tmp_path_factory.mktemp("cache-api") / "idx"
    copy_index(regpack_build, index)
    return Engine.open(index)


QUESTION = {"question": "When is a NEER report due?"}


def test_api_answers_while_redis_is_down(engine: Any) -> None:
    import httpx

    from groundqa.serve import ServeSettings
    from tests.serve.test_api import live_server

    dead = f"redis://127.0.0.1:{free_port()}/0"
    with live_server(engine, ServeSettings(cache=dead)) as base:
        for _ in range(2):
            response = httpx.post(f"{base}/query", json=QUESTION, timeout=30)
            assert response.status_code == 200
            assert response.json()["cache"] == "miss" and response.json()["citations"]
        health = httpx.get(f"{base}/health").json()
        assert health["status"] == "ok"
        assert health["cache"]["backend"] == "redis" and health["cache"]["ok"] is False
        assert "answers are served without the cache" in health["cache"]["detail"]


def test_two_servers_share_one_redis_cache(engine: Any, redis_server: RedisServer) -> None:
    import httpx

    from groundqa.serve import ServeSettings
    from tests.serve.test_api import live_server

    settings = ServeSettings(cache=redis_server.url)
    with live_server(engine, settings) as first, live_server(engine, settings) as second:
        assert httpx.get(f"{first}/health").json()["cache"]["ok"] is True
        miss = httpx.post(f"{first}/query", json=QUESTION, timeout=30).json()
        hit = httpx.post(f"{second}/query", json=QUESTION, timeout=30).json()
        assert miss["cache"] == "miss" and hit["cache"] == "hit"
        assert hit["answer"] == miss["answer"]
