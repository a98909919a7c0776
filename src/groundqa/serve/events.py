"""Server-Sent Events for /query/stream: `passages`, the answer in pieces, then `done`
(or `error`, when the answer could not be generated or took too long).

Each event's data is one line of JSON. This module only frames what it is
given; it neither retrieves nor generates, and a cached answer is cut into
pieces here so a client sees the same events whether the answer was cached or not.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from fastapi.responses import StreamingResponse

from groundqa.lexicon import MARKER


def answer_pieces(text: str) -> list[str]:
    """The answer cut after each `[n]` marker: one piece per cited sentence.

    Joined, the pieces give the text back exactly; a refusal (no marker) is one piece.
    """
    pieces: list[str] = []
    start = 0
    for marker in MARKER.finditer(text):
        pieces.append(text[start : marker.end()])
        start = marker.end()
    rest = text[start:]
    if rest.strip() or not pieces:
        pieces.append(rest)
    else:
        pieces[-1] += rest
    return pieces


def sse(event: str, data: Any) -> str:
    # json.dumps escapes newlines, so each event's data is exactly one `data:` line.
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def answer_events(
    passages: list[dict[str, Any]],
    pieces: Iterable[str],
    last: Callable[[], tuple[str, dict[str, Any]]],
) -> Iterator[str]:
    """`passages`, then one `answer` event per piece of text, then the last event: `done`
    with the whole answer, or `error` when there is none.

    The extractive generator has its answer whole, so its pieces are `answer_pieces`;
    a generator that streams natively passes its text deltas as `pieces` and builds
    the final answer in `last` once they are spent.
    """
    yield sse("passages", passages)
    for piece in pieces:
        yield sse("answer", {"text": piece})
    yield sse(*last())


class EventStreamResponse(StreamingResponse):
    media_type = "text/event-stream"
