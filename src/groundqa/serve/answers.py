"""What the routes return: answers through the result cache, documents, chunks, probes.

The cache key is the request's `Query` (every field of it, normalised) plus the
index fingerprint, so a rebuilt index never serves an answer computed on the old
one and a new field cannot be left out of the key. A failed generation is
never cached, and an error raises before anything is cached or streamed. No
function here reads a file: documents and chunks come from the loaded index.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from groundqa.engine import Engine
from groundqa.errors import ProbeError
from groundqa.evaluate import Probe
from groundqa.generate import GeneratorOptions
from groundqa.models import CLOSEST_MATCHES, Answer, Chunk, Hit, uri_for
from groundqa.serve.cache import Cache
from groundqa.serve.events import answer_events, answer_pieces
from groundqa.serve.requests import QueryRequest


def _explained(request: QueryRequest, result: dict[str, Any]) -> dict[str, Any]:
    """The result with `closest_matches` when a refusal was asked to explain itself."""
    if not (request.explain and result.get("refused")):
        return result
    closest = [
        {k: p.get(k) for k in ("title", "section", "section_id", "page", "uri", "score")}
        for p in result.get("passages", [])[:CLOSEST_MATCHES]
    ]
    return {**result, "closest_matches": closest}


def _finish(cache: Cache, key: str, ttl: int, result: dict[str, Any]) -> dict[str, Any]:
    """Cache a finished answer (never a failed generation) and say whether the cache is on."""
    if not result.get("error"):
        cache.set(key, result, ttl)
    return {**result, "cache": "off" if cache.backend == "off" else "miss"}


def _cached(cache: Cache, key: str, request: QueryRequest) -> dict[str, Any] | None:
    cached = cache.get(key)
    if cached is None:
        return None
    # The key folds case and spacing; the answer echoes the question as this asker wrote it.
    return {**cached, "question": request.question, "cache": "hit"}


def answer(
    engine: Engine, cache: Cache, ttl: int, request: QueryRequest, options: GeneratorOptions
) -> dict[str, Any]:
    """The Answer as a dict plus `cache`: hit, miss, or off. Errors raise and are never cached."""
    query = request.query(options)
    key = query.cache_key(engine.fingerprint)
    cached = _cached(cache, key, request)
    if cached is not None:
        return _explained(request, cached)
    result = engine.ask(query).to_dict()
    return _explained(request, _finish(cache, key, ttl, result))


def answer_stream(
    engine: Engine, cache: Cache, ttl: int, request: QueryRequest, options: GeneratorOptions
) -> tuple[list[dict[str, Any]], Iterator[str | dict[str, Any]]]:
    """The passages, and an iterator of the answer's text pieces as the generator makes them
    ending with the whole answer as `answer` returns it. A usage error raises here, before
    anything is iterated, so the caller can still answer with the error shape. A cached
    answer is cut into `answer_pieces`, so a client sees the same either way."""
    query = request.query(options)
    key = query.cache_key(engine.fingerprint)
    cached = _cached(cache, key, request)
    if cached is not None:
        done = _explained(request, cached)
        return cached["passages"], iter([*answer_pieces(cached["answer"]), done])
    events = engine.ask_stream(query)
    hits = next(events)  # validation, generator lookup and retrieval happen here
    assert isinstance(hits, list)

    def rest() -> Iterator[str | dict[str, Any]]:
        for event in events:
            if isinstance(event, str):
                yield event
            elif isinstance(event, Answer):
                yield _explained(request, _finish(cache, key, ttl, event.to_dict()))

    return [h.to_dict() for h in hits], rest()


def stream_events(
    engine: Engine, cache: Cache, ttl: int, request: QueryRequest, options: GeneratorOptions
) -> Iterator[str]:
    """SSE for one question: `passages`, `answer` text pieces as the generator makes them,
    then `done` with the whole answer. A usage error raises before the first event is
    produced, so the caller can still answer with the error shape."""
    passages, rest = answer_stream(engine, cache, ttl, request, options)
    done: list[dict[str, Any]] = []

    def pieces() -> Iterator[str]:
        for item in rest:
            if isinstance(item, str):
                yield item
            else:
                done.append(item)

    return answer_events(passages, pieces(), lambda: done[-1])


# ---------------------------------------------------------------- documents and chunks


def document_view(chunks: Sequence[Chunk]) -> dict[str, Any]:
    """A document as the index holds it: its sections in reading order, each with its chunks."""
    first = chunks[0]
    sections: dict[str, dict[str, Any]] = {}
    for c in chunks:
        section = sections.get(c.section_id)
        if section is None:
            section = sections[c.section_id] = {
                "section_id": c.section_id,
                "section": c.breadcrumb,
                "page": c.page,
                "uri": c.uri,
                "chunks": [],
            }
        section["chunks"].append(
            {"chunk_id": c.chunk_id, "part": c.part, "parts": c.parts, "text": c.text}
        )
    return {
        "doc_id": first.doc_id,
        "title": first.title,
        "uri": uri_for(first.source, None),
        "metadata": dict(first.metadata),
        "sections": list(sections.values()),
    }


def chunk_view(chunk: Chunk) -> dict[str, Any]:
    """A chunk as a passage is shown, without what only a ranking has (score, rank, retriever)."""
    data = Hit(chunk, 0.0, 0).to_dict()
    for key in ("score", "rank", "retriever"):
        del data[key]
    return data


def parse_probes(raw: Sequence[dict[str, Any]]) -> list[Probe]:
    probes: list[Probe] = []
    for i, item in enumerate(raw):
        try:
            probes.append(Probe.from_dict(item, default_id=f"probe{i}"))
        except ValueError as exc:
            raise ProbeError(f"probes[{i}]: {exc}; fix or remove that probe") from None
    return probes
