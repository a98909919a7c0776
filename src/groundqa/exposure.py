"""What a listening server lets whoever opens a socket to it do: which Host names it
answers to, how long a connection may take to say what it wants, how many connections
one address may hold, and how much text one response carries.

Shared by the two shells that listen on a port, `serve` and `mcp` (neither may import
the other): this module decides, and each shell answers in its own shape. It does not
authenticate (the token is `serve`'s), and it does not guess a machine's names: a Host
is allowed when it is the address the connection arrived at, a localhost name on a
loopback connection, or a name the operator listed, and nothing else.

uvicorn is imported only by `http_protocol`, so the rest works without the extras.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections import Counter
from collections.abc import Collection
from typing import Any
from urllib.parse import urlsplit

# The longest passage text (a chunk, a citation's snippet) one response carries: the
# chunker's default is 1,500 characters, so only a section that was never split (a 52 MB
# Markdown section became one chunk) comes near it.
MAX_PASSAGE_CHARS = 20_000
# The longest answer one response carries: above any language model's answer at the
# largest max_tokens a request may ask for (8,192 tokens, about 33,000 characters).
MAX_ANSWER_CHARS = 40_000

ANY_HOST = "*"


# ---------------------------------------------------------------- Host names


def host_name(value: str) -> str:
    """The name in a Host header or an address, without port, brackets, case or final dot:
    `Example.org:8000` -> `example.org`, `[::1]:80` -> `::1`."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    if value.count(":") == 1:  # name:port; more than one colon is a bare IPv6 address
        value = value.partition(":")[0]
    return value.rstrip(".")


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address, as `--host` takes it) is this machine only."""
    name = host_name(host)
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_allowed(host: str | None, local: str | None, allowed: Collection[str] = ()) -> bool:
    """Whether a request whose Host header is `host`, on a connection that arrived at the
    address `local`, is for this server.

    DNS rebinding points a name the attacker owns at this server, so a browser sends that
    name as the Host: only names that cannot be the attacker's pass. A request without a
    Host passes (HTTP/1.0, a load balancer's health check): a browser always sends one.
    """
    if host is None or ANY_HOST in allowed:
        return True
    name = host_name(host)
    if not name:
        return False
    if name in {host_name(a) for a in allowed}:
        return True
    if local is None:
        return False
    here = host_name(local)
    return name == here or (is_loopback(here) and is_loopback(name))


def origin_allowed(origin: str | None, local: str | None, allowed: Collection[str] = ()) -> bool:
    """Whether a browser page at `origin` (the Origin header) may call this server: its
    host passes `host_allowed`. A request without an Origin is not a browser's cross-site
    one, so it passes."""
    if origin is None:
        return True
    try:
        netloc = urlsplit(origin).netloc
    except ValueError:
        return False
    return bool(netloc) and host_allowed(netloc, local, allowed)


def misdirected(host: str, allowed: Collection[str]) -> str:
    """The one-line message for a refused Host: what to connect to, or what to start with."""
    listed = f" or one of {', '.join(sorted(allowed))}" if allowed else ""
    return (
        f"this server does not answer to the host name {host_name(host)!r}; connect to the "
        f"address it listens on{listed}, or start it with --allowed-host naming it"
    )


# ---------------------------------------------------------------- response size


def clip(text: str, limit: int) -> tuple[str, bool]:
    """`text` cut to its first `limit` characters, and whether it was cut."""
    if len(text) <= limit:
        return text, False
    return text[:limit], True


# Strings this short (ids, verdicts, labels) are never cut by `bounded`.
SHORT_CHARS = 200


def bounded(value: Any, budget: int) -> tuple[Any, bool]:
    """A JSON value with at most `budget` characters in its long strings, and whether
    anything was cut: each long string is cut to what is left, and a list stops once
    nothing is. For a structure whose size follows the text it was made from (an audit
    lists a claim for each sentence of the answer), not for fields a client reads by name."""
    left = [budget]

    def walk(node: Any) -> tuple[Any, bool]:
        if isinstance(node, str):
            if len(node) <= SHORT_CHARS:
                return node, False
            text, cut = clip(node, max(left[0], SHORT_CHARS))
            left[0] -= len(text)
            return text, cut
        if isinstance(node, dict):
            pairs = {k: walk(v) for k, v in node.items()}
            return {k: v for k, (v, _) in pairs.items()}, any(c for _, c in pairs.values())
        if isinstance(node, list):
            items: list[Any] = []
            cut = False
            for item in node:
                if left[0] <= 0:
                    return items, True
                kept, was_cut = walk(item)
                items.append(kept)
                cut = cut or was_cut
            return items, cut
        return node, False

    return walk(value)


def cut_note(what: str, shown: int, whole: int) -> str:
    return f"{what} is cut to its first {shown:,} of {whole:,} characters"


# ---------------------------------------------------------------- connections


def http_protocol(
    *,
    head_timeout_s: float,
    per_client: int = 0,
    exempt: Collection[str] = (),
    refuse: Any = None,
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol (h11), with a deadline for each request's head and at
    most `per_client` connections from one address (0: no limit).

    uvicorn times out nothing before a request's head is complete: a connection that
    sends a header line now and then, or nothing at all, is held for ever (checked
    against uvicorn 0.54's h11 and httptools protocols; `timeout_keep_alive` runs only
    between requests, and any byte stops it). Here a connection has `head_timeout_s`
    from when it opens, or from the end of its last response, until the head of its
    next request is in; else it is closed. A connection past `per_client` from its
    address (not counting addresses in `exempt`: IP addresses or networks, or `*`, such
    as a reverse proxy carrying many clients) is answered by the ASGI app `refuse`
    once its head is in, and closed.
    """
    from uvicorn.protocols.http.h11_impl import H11Protocol

    networks = _networks(exempt)
    held: Counter[str] = Counter()

    class GuardedH11Protocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _counted: str | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]
            address = self.client[0] if self.client else ""
            if per_client and not _exempt(address, networks):
                self._counted = address
                held[address] += 1
                if held[address] > per_client and refuse is not None:
                    self.app = refuse  # read when the head is in, for each request
            self._await_head()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_waiting()
            if self._counted is not None:
                held[self._counted] -= 1
                if held[self._counted] <= 0:
                    del held[self._counted]
                self._counted = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if not self._idle():
                self._stop_waiting()  # a head is in: the request's own limits apply now

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self._idle() and not self.transport.is_closing():
                self._await_head()

        def _idle(self) -> bool:
            """No request in progress: before the first head, between requests, or after a
            response that did not wait for the rest of its request's body."""
            return self.cycle is None or self.cycle.response_complete

        def _await_head(self) -> None:
            self._stop_waiting()
            self._deadline = self.loop.call_later(head_timeout_s, self._expired)

        def _stop_waiting(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expired(self) -> None:
            self._deadline = None
            if self._idle() and not self.transport.is_closing():
                self.transport.close()

    return GuardedH11Protocol


def _networks(
    exempt: Collection[str],
) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network] | None:
    """The networks in `exempt`, or None for all (`*`); names that are not addresses
    (a Unix socket path) exempt nothing."""
    if ANY_HOST in exempt:
        return None
    networks = []
    for value in exempt:
        try:
            networks.append(ipaddress.ip_network(value.strip(), strict=False))
        except ValueError:
            continue
    return networks


def _exempt(
    address: str, networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] | None
) -> bool:
    if networks is None:
        return True
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in n for n in networks)
