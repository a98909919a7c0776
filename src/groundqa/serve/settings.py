"""How `groundqa serve` runs: who may ask, how much, and where answers are cached.

`ServeSettings` is checked once, when it is made, so a server never starts with
a limit it cannot keep (an empty token, a generator timeout longer than the
request timeout). It holds settings only; `limits` and `api` act on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from groundqa.errors import UsageError
from groundqa.exposure import is_loopback
from groundqa.generate import GeneratorOptions

# Requests per minute per client when serving on a host other machines can reach.
DEFAULT_RATE_LIMIT = 120
# The most requests a client may send at once before its rate applies (a page load, a
# retry); `serve --help` says so.
RATE_BURST = 10
# Connections one client address may hold when serving on a host other machines can reach:
# above a browser's six, and below the 40 requests a worker takes on at once by default
# (--max-inflight 8, --queue 32), so no one address can fill them all.
DEFAULT_CLIENT_CONNECTIONS = 32


@dataclass(frozen=True)
class ServeSettings:
    """How `groundqa serve` runs: who may ask, how much, and where answers are cached."""

    token: str | None = None
    cache: str = "memory"  # "memory", "off", or a redis:// URL
    cache_ttl: int = 3600
    # Megabytes of answers the in-process cache (`memory`) may hold.
    cache_mb: int = 64
    cors_origins: tuple[str, ...] = ()
    max_body_bytes: int = 65_536
    max_probes: int = 500
    generator_options: GeneratorOptions = field(default_factory=GeneratorOptions)
    # The generator a request gets when it names none (chat front-ends cannot name one).
    generator: str = "extractive"
    # The other generators a request may name; any other is refused (see `generators`).
    allowed_generators: tuple[str, ...] = ()
    # The body limit of the routes that carry a conversation (/query, /query/stream,
    # /v1/chat/completions): a chat client sends the whole conversation each time, and
    # only its last turns are read, so a long one is cut rather than refused.
    max_conversation_bytes: int = 1_048_576
    # How often (seconds) a request may check whether the index has a new current build.
    reload_s: float = 2.0
    # Requests per minute per client address, up to RATE_BURST at once; 0 is no limit.
    rate_limit: int = 0
    # Requests worked on at once, and how many more may wait for one of them to finish.
    max_inflight: int = 8
    queue: int = 32
    # Seconds a request may take once its body is in, its wait in the queue included.
    request_timeout_s: float = 60.0
    # Seconds a connection has to send a request's head (from when it opens, or from the
    # end of its last response), and then its whole body; else it is closed, or gets 408.
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    # Connections one client address may hold open at once; 0 is no limit.
    client_connections: int = 0
    # Host names the server answers to besides the address a connection arrived at (and
    # localhost names on a loopback connection); "*" is any. See `exposure.host_allowed`.
    allowed_hosts: tuple[str, ...] = ()
    # Seconds a stopping server gives requests in progress before it cuts them off.
    shutdown_timeout_s: int = 30

    def __post_init__(self) -> None:
        if self.token is not None and not self.token.strip():
            raise UsageError("--token must not be empty; omit it to serve without a token")
        if self.cache_ttl < 1:
            raise UsageError(f"--cache-ttl must be at least 1 second, got {self.cache_ttl}")
        if self.max_body_bytes < 1024:
            raise UsageError(
                f"the body limit must be at least 1024 bytes, got {self.max_body_bytes}"
            )
        if self.max_conversation_bytes < self.max_body_bytes:
            raise UsageError("the conversation body limit must not be below the body limit")
        if self.max_probes < 1:
            raise UsageError(f"the probe limit must be at least 1, got {self.max_probes}")
        if self.rate_limit < 0:
            raise UsageError(
                f"--rate-limit must be requests per minute, or 0 for none, got {self.rate_limit}"
            )
        if not 1 <= self.max_inflight <= 1024:
            raise UsageError(f"--max-inflight must be from 1 to 1024, got {self.max_inflight}")
        if self.queue < 0:
            raise UsageError(f"--queue must be 0 or more, got {self.queue}")
        if not self.request_timeout_s > 0:
            raise UsageError(
                f"--request-timeout must be more than 0 seconds, got {self.request_timeout_s:g}"
            )
        if self.generator_options.timeout_s > self.request_timeout_s:
            raise UsageError(
                f"--timeout ({self.generator_options.timeout_s:g} s) must not be longer than "
                f"--request-timeout ({self.request_timeout_s:g} s): the request would end first"
            )
        for option, seconds in (
            ("--header-timeout", self.header_timeout_s),
            ("--body-timeout", self.body_timeout_s),
        ):
            if not seconds > 0:
                raise UsageError(f"{option} must be more than 0 seconds, got {seconds:g}")
        if self.client_connections < 0:
            raise UsageError(
                f"--client-connections must be 1 or more, or 0 for no limit, "
                f"got {self.client_connections}"
            )
        if self.cache_mb < 1:
            raise UsageError(f"--cache-mb must be at least 1, got {self.cache_mb}")
        if any(not spec.strip() for spec in self.allowed_generators):
            raise UsageError("--allow-generator must name a generator, e.g. ollama:llama3.1")
        if any(not host.strip() for host in self.allowed_hosts):
            raise UsageError("--allowed-host must name a host, e.g. qa.example.org")
        if self.shutdown_timeout_s < 0:
            raise UsageError(
                f"--shutdown-timeout must be 0 seconds or more, got {self.shutdown_timeout_s}"
            )

    @property
    def generators(self) -> tuple[str, ...]:
        """The generators this server answers with: its default, then the allowed ones."""
        return tuple(dict.fromkeys(s.strip() for s in (self.generator, *self.allowed_generators)))


def default_rate_limit(host: str) -> int:
    """The rate limit when none is given: none on a loopback host, whose only clients
    are this machine's, else DEFAULT_RATE_LIMIT requests per minute per client."""
    return 0 if is_loopback(host) else DEFAULT_RATE_LIMIT


def default_client_connections(host: str) -> int:
    """The connections per client address when no limit is given: none on a loopback
    host (every client there has the same address), else DEFAULT_CLIENT_CONNECTIONS."""
    return 0 if is_loopback(host) else DEFAULT_CLIENT_CONNECTIONS
