"""A model server on 127.0.0.1 for the tests: it records every request and answers as told.

The backends we cannot reach here (Ollama, OpenAI-compatible servers, Anthropic,
Bedrock, the embedding and reranking endpoints) are tested by running the real
client code against a `FakeServer` whose `reply(seen, out)` speaks the
provider's wire protocol: a whole body (with the provider's headers), or a
stream of text or bytes written piece by piece.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from groundqa.text import split_sentences
from tests.pgserver import free_port


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


class Out:
    """How a fake answers: a whole body, or a body written piece by piece, flushed."""

    def __init__(self, handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
        self._h = handler
        self._stop = stop

    def raw(
        self,
        body: bytes,
        status: int = 200,
        ctype: str = "application/json",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._h.send_response(status)
        self._h.send_header("Content-Type", ctype)
        self._h.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self._h.send_header(name, value)
        self._h.end_headers()
        self._h.wfile.write(body)

    def json(self, obj: object, status: int = 200) -> None:
        self.raw(json.dumps(obj).encode(), status)

    def stream(
        self,
        chunks: Sequence[str | bytes],
        ctype: str,
        *,
        stall_after: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        # HTTP/1.0 without Content-Length: the body runs until the server closes, unless
        # `headers` promise a length or chunks (then a body cut short reads as broken).
        self._h.send_response(200)
        self._h.send_header("Content-Type", ctype)
        for name, value in (headers or {}).items():
            self._h.send_header(name, value)
        self._h.end_headers()
        for i, chunk in enumerate(chunks):
            if stall_after is not None and i == stall_after:
                self.wait(3.0)
            self._h.wfile.write(chunk.encode() if isinstance(chunk, str) else chunk)
            self._h.wfile.flush()

    def wait(self, seconds: float) -> None:
        self._stop.wait(seconds)


Reply = Callable[[Seen, Out], None]


class FakeServer:
    def __init__(self, reply: Reply) -> None:
        self.seen: list[Seen] = []
        self.stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw.decode()
                seen = Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                server.seen.append(seen)
                # A client that gave up (the timeout tests) leaves nothing to answer.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    reply(seen, Out(self, server.stop))

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


def closed_port_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


def quote_source_1(user: str) -> list[str]:
    """What a well-behaved model says to the grounded prompt `user`: a sentence of source 1,
    cited, in three pieces as a stream would bring them."""
    m = re.search(r"<<<SOURCE 1\n(.*?)\nSOURCE 1>>>", user, re.S)
    assert m, "the prompt has no source 1"
    sentence = next(
        " ".join(s.split())
        for s in split_sentences(m.group(1))
        if len(s) > 30 and not s.startswith("#")
    )
    words = sentence.split()
    half = len(words) // 2
    return [" ".join(words[:half]) + " ", " ".join(words[half:]), " [1]"]
