"""Running the API: the listening socket, uvicorn, and the pre-fork worker supervisor.

The socket is bound here rather than in uvicorn, so a busy port is one line of
error, not a server log. uvicorn speaks HTTP through `exposure.http_protocol`, which
gives each request's head a deadline and caps the connections one address holds. With several workers, each is a forked process that
opens the index after the fork (a connection pool or a model runtime must not be
shared between processes) and is restarted if it dies; a worker that cannot
open the index stops them all instead of being restarted forever. The
supervisor only starts, restarts and stops processes: it never sees a request.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import signal
import socket
import sys
from collections.abc import Callable, Sequence

import uvicorn

from groundqa.engine import Engine
from groundqa.errors import GroundqaError, UsageError
from groundqa.exposure import http_protocol
from groundqa.serve.api import create_app
from groundqa.serve.limits import too_many_connections
from groundqa.serve.settings import ServeSettings

# glibc gives each thread that allocates its own malloc arena, up to 8 per core; a server's
# thread pool then keeps memory freed by one request in an arena another cannot reuse, and
# its resident size creeps up (bench/soak.py: +5% in 10 minutes with the default, +2% with
# two arenas, at the same throughput).
SERVER_MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # mallopt's parameter number, from glibc's malloc.h


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to `host`:`port` (0 picks a free port), or a one-line error."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise UsageError(f"cannot listen on --host {host!r}: {exc.strerror}") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise GroundqaError(
                f"port {port} on {host} is already in use; stop what holds it or pick another --port"
            ) from None
        raise GroundqaError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    return sock


def run_server(
    engine: Engine,
    settings: ServeSettings,
    sock: socket.socket,
    *,
    host: str,
    workers: int,
    reopen: Callable[[], Engine],
    access_log: bool,
    trusted_proxies: Sequence[str],
) -> None:
    """Serve the API on `sock` until SIGTERM or Ctrl-C, in this process or in `workers`
    forked ones (each over its own `reopen()`); closes the socket when done."""
    bound = sock.getsockname()[1]

    def run(engine: Engine) -> None:
        few_malloc_arenas()
        config = uvicorn.Config(
            create_app(engine, settings),
            host=host,
            port=bound,
            log_level="warning",
            access_log=access_log,
            ws="none",
            # A trusted proxy carries many clients over its connections: its own address
            # is not capped (the rate limit still counts each client it names).
            http=http_protocol(
                head_timeout_s=settings.header_timeout_s,
                per_client=settings.client_connections,
                exempt=trusted_proxies,
                refuse=too_many_connections(settings.client_connections),
            ),
            # Without a trusted proxy, X-Forwarded-For is ignored: the rate limit counts
            # the connection's own address, which a client cannot choose.
            proxy_headers=bool(trusted_proxies),
            forwarded_allow_ips=list(trusted_proxies) or None,
            timeout_graceful_shutdown=settings.shutdown_timeout_s,
        )
        # uvicorn stops gracefully on SIGTERM or SIGINT, then raises the signal again:
        # as KeyboardInterrupt, both end the process with status 0.
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        uvicorn.Server(config).run(sockets=[sock])

    try:
        if workers == 1:
            run(engine)
        else:
            # Each worker opens the index after the fork: a connection pool or a model
            # runtime must not be shared between processes.
            engine.store.close()
            prefork(workers, lambda: run(reopen()), stop_listening=sock.close)
    except KeyboardInterrupt:
        pass  # Ctrl-C or SIGTERM is how a server is stopped: not an error
    finally:
        sock.close()


def few_malloc_arenas() -> bool:
    """Cap glibc's malloc arenas for this server process, unless MALLOC_ARENA_MAX says
    otherwise; True when the cap was set. Call before the server starts its threads."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False  # the operator chose; glibc read it at start-up
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = getattr(libc, "mallopt", None)
    except OSError:
        return False
    if mallopt is None:
        return False  # not glibc (musl, macOS): nothing to cap
    return bool(mallopt(_M_ARENA_MAX, SERVER_MALLOC_ARENAS))


def prefork(workers: int, run: Callable[[], None], *, stop_listening: Callable[[], None]) -> None:
    """Run `run` in `workers` child processes; restart one that dies. On SIGTERM or
    SIGINT, stop listening, pass SIGTERM on to every worker (each finishes the requests
    it has in progress) and return once all have exited."""

    def spawn() -> int:
        pid = os.fork()
        if pid == 0:  # the worker
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, signal.default_int_handler)
            code = 0
            try:
                run()
            except KeyboardInterrupt:
                pass
            except GroundqaError as exc:
                print(f"error: worker {os.getpid()}: {exc.message}", file=sys.stderr)
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)
        return pid

    children = {spawn() for _ in range(workers)}
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True
        stop_listening()  # the workers hold their own copies of the socket until they finish
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        children.discard(pid)
        if not stopping:
            if os.waitstatus_to_exitcode(status) == 1:  # could not open the index: give up
                stop(signal.SIGTERM, None)
                raise GroundqaError("a server worker could not start; see its error above")
            print(f"worker {pid} stopped ({status}); starting another", file=sys.stderr)
            children.add(spawn())
