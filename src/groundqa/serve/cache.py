"""The result cache behind `groundqa serve`: answers kept by request key for a while.

One small protocol (`get`, `set`, `status`) with three backends chosen by a
config string: `memory` (an in-process LRU with a TTL, the default), `off`, and
a `redis://` URL so several API workers share one cache.

A cache is an optimisation and nothing more. It refuses to fail a query: every
backend error becomes a miss (or a skipped write), and a Redis that is down is
left alone for a few seconds instead of being asked again on every request.
It does not build keys: the caller decides what makes two requests the same
(the API keys on the normalised request plus the index fingerprint).
Values are JSON objects; they go in and come out as copies, so no caller can
change what another one reads.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from groundqa.errors import UsageError

Clock = Callable[[], float]

KEY_PREFIX = "groundqa:"
MB = 1 << 20
REDIS_SCHEMES = ("redis://", "rediss://")


class Cache(Protocol):
    """What the API needs from a cache. `get` and `set` never raise."""

    backend: str  # "memory", "redis" or "off"

    def get(self, key: str) -> dict[str, Any] | None: ...

    def set(self, key: str, value: dict[str, Any], ttl: int) -> None: ...

    def status(self) -> dict[str, Any]:
        """`{"backend": ..., "ok": bool, "detail": str}` for /health."""
        ...

    def close(self) -> None:
        """Let go of connections; the server calls it once, at shutdown."""
        ...


class NoCache:
    """`--cache off`: every lookup misses and nothing is stored."""

    backend = "off"

    def get(self, key: str) -> dict[str, Any] | None:
        return None

    def set(self, key: str, value: dict[str, Any], ttl: int) -> None:
        return None

    def status(self) -> dict[str, Any]:
        return {"backend": self.backend, "ok": True, "detail": "caching is off"}

    def close(self) -> None:
        return None


class MemoryCache:
    """An in-process LRU with a per-entry TTL, bounded in entries and in bytes; safe to
    share between request threads.

    Entries are stored as JSON text, which copies them and fails early on a
    value Redis could not hold either, so both backends behave the same. Its size is
    what the cache holds: past `max_bytes` the least recently used entries go, and an
    entry larger than a sixteenth of it is not stored at all (one huge answer must not
    push out everything else, to be pushed out itself by the next).
    """

    backend = "memory"

    def __init__(
        self,
        max_entries: int = 1024,
        clock: Clock = time.monotonic,
        *,
        max_bytes: int = 64 << 20,
    ) -> None:
        if max_entries < 1:
            raise UsageError(f"the memory cache needs room for at least 1 entry, got {max_entries}")
        if max_bytes < 1:
            raise UsageError(f"the memory cache needs room for at least 1 byte, got {max_bytes}")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_entry_bytes = max(1, max_bytes // 16)
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[float, str]] = OrderedDict()
        self._bytes = 0  # the JSON text of every entry (ASCII: one byte a character)

    @property
    def size_bytes(self) -> int:
        with self._lock:
            return self._bytes

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            expires_at, text = entry
            if self._clock() >= expires_at:
                self._drop(key)
                return None
            self._entries.move_to_end(key)
        value: dict[str, Any] = json.loads(text)
        return value

    def set(self, key: str, value: dict[str, Any], ttl: int) -> None:
        if ttl <= 0:
            return  # an entry that is already stale would only evict a live one
        text = json.dumps(value)  # ASCII: non-ASCII characters are escaped
        with self._lock:
            self._drop(key)  # a new value for a key replaces the old, whatever its size
            if len(text) > self.max_entry_bytes:
                return
            self._entries[key] = (self._clock() + ttl, text)
            self._bytes += len(text)
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= len(dropped)

    def _drop(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= len(entry[1])

    def status(self) -> dict[str, Any]:
        with self._lock:
            entries, size = len(self._entries), self._bytes
        return {
            "backend": self.backend,
            "ok": True,
            "detail": (
                f"in-process, {entries} of {self.max_entries} entries, "
                f"{size / MB:.1f} of {self.max_bytes / MB:.0f} MB"
            ),
        }

    def close(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


def redact(url: str) -> str:
    """The URL without its password, fit for a log line or /health."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{parts.username or ''}:***@{host}"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


class RedisCache:
    """A shared cache in Redis. While Redis is unreachable it is a cache that always misses.

    Socket timeouts are short (a slow cache is worse than none) and redis-py's
    own retries are off; after an error the server is not tried again for
    `retry_interval` seconds, so a dead Redis costs each request nothing.
    """

    backend = "redis"

    def __init__(
        self,
        url: str,
        *,
        socket_timeout: float = 0.2,
        retry_interval: float = 5.0,
        clock: Clock = time.monotonic,
    ) -> None:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self._errors: tuple[type[Exception], ...] = (redis.RedisError, OSError)
        self.url = redact(url)
        self.retry_interval = retry_interval
        self._clock = clock
        self._lock = threading.Lock()
        self._retry_at: float | None = None  # set while down: when the next attempt may happen
        self._error = ""
        try:
            self._client: redis.Redis = redis.Redis.from_url(
                url,
                socket_timeout=socket_timeout,
                socket_connect_timeout=socket_timeout,
                retry=Retry(NoBackoff(), 0),
            )
        except ValueError as exc:
            raise UsageError(f"cannot use --cache {self.url}: {exc}") from None

    def _usable(self) -> bool:
        with self._lock:
            return self._retry_at is None or self._clock() >= self._retry_at

    def _failed(self, exc: Exception) -> None:
        with self._lock:
            self._retry_at = self._clock() + self.retry_interval
            self._error = f"{type(exc).__name__}: {exc}"

    def _worked(self) -> None:
        with self._lock:
            self._retry_at = None
            self._error = ""

    def get(self, key: str) -> dict[str, Any] | None:
        if not self._usable():
            return None
        try:
            raw = self._client.get(KEY_PREFIX + key)
        except self._errors as exc:
            self._failed(exc)
            return None
        self._worked()
        if raw is None:
            return None
        try:
            value = json.loads(raw)
        except ValueError:
            return None  # not an entry this code wrote: a miss, and no reason to call Redis down
        return value if isinstance(value, dict) else None

    def set(self, key: str, value: dict[str, Any], ttl: int) -> None:
        if ttl <= 0 or not self._usable():
            return
        try:
            self._client.set(KEY_PREFIX + key, json.dumps(value), ex=ttl)
        except self._errors as exc:
            self._failed(exc)
            return
        self._worked()

    def status(self) -> dict[str, Any]:
        # /health asks Redis itself (within the retry window) so it reports the
        # cache as it is now, not as the last query happened to find it.
        if self._usable():
            try:
                self._client.ping()
            except self._errors as exc:
                self._failed(exc)
            else:
                self._worked()
        with self._lock:
            if self._retry_at is None:
                return {"backend": self.backend, "ok": True, "detail": f"connected to {self.url}"}
            return {
                "backend": self.backend,
                "ok": False,
                "detail": (
                    f"redis at {self.url} is unreachable ({self._error}); "
                    "answers are served without the cache"
                ),
            }

    def close(self) -> None:
        self._client.close()


def make_cache(spec: str, *, max_bytes: int = 64 * MB) -> Cache:
    """`memory` (holding at most `max_bytes`), `off`, or a `redis://` URL (`rediss://` for TLS)."""
    if spec == "memory":
        return MemoryCache(max_bytes=max_bytes)
    if spec == "off":
        return NoCache()
    if spec.startswith(REDIS_SCHEMES):
        try:
            import redis  # noqa: F401
        except ImportError:
            raise UsageError(
                "--cache redis:// needs the redis package: pip install 'groundqa[redis]'"
            ) from None
        return RedisCache(spec)
    raise UsageError(f"unknown cache {spec!r}; use memory, off, or a redis://HOST:PORT/DB URL")
