"""The HTTP API as a client sees it: a real uvicorn server on 127.0.0.1, talked to with httpx.

Each server is `create_app` over an index of the bundled example corpus, run by
uvicorn in a background thread; `groundqa serve` itself is started once as a
subprocess. Nothing is mocked: a server that fails unexpectedly is a real Engine
subclass whose `ask` raises.
"""

from __future__ import annotations

import json
import os
import re
import shutil
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
import uvicorn
from openapi_spec_validator import validate

from groundqa._version import __version__
from groundqa.embed import EmbedderOptions
from groundqa.engine import Engine
from groundqa.exposure import MAX_ANSWER_CHARS, MAX_PASSAGE_CHARS
from groundqa.generate import GeneratorOptions
from groundqa.generate import available as available_generators
from groundqa.index.dense import DenseSettings
from groundqa.ingestion import ingest
from groundqa.models import REFUSAL, Answer, Chunk, Hit
from groundqa.serve import FACET_KEYS, ServeSettings, create_app
from tests.conftest import REGPACK, REGPACK_PROBES, copy_index
from tests.fakes import FakeServer, Out, Reply, Seen, closed_port_url
from tests.pgserver import free_port

TOKEN = "test-token-7f3a"
ORIGIN = "http://localhost:5173"
NEER = "When is a NEER report due?"
OFF_TOPIC = "Who won the 1994 World Cup?"
VEGETATION = "What permit is needed to clear native vegetation?"
FENNICK = "Which trees are protected in Fennick?"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@contextmanager
def live_server(engine: Engine, settings: ServeSettings) -> Iterator[str]:
    """`create_app` under uvicorn on a free 127.0.0.1 port in a background thread; yields its URL.

    The socket is bound here and handed to uvicorn, so there is no race for the
    port; uvicorn installs no signal handlers outside the main thread.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = uvicorn.Config(
        create_app(engine, settings), log_level="warning", ws="none", lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        _wait_for_health(base, alive=thread.is_alive)
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def _wait_for_health(base: str, alive: Any, seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or not alive():
            raise RuntimeError(f"the test server at {base} did not come up")
        time.sleep(0.05)


class ExplodingEngine(Engine):
    """A real Engine whose `ask` fails the way a bug would: the API must answer 500, opaquely."""

    def ask(self, question: str, **kwargs: Any) -> Answer:
        raise RuntimeError("secret internal detail /srv/index/boom")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, regpack_build: Path) -> Path:
    path = tmp_path_factory.mktemp("api") / "idx"
    copy_index(regpack_build, path)
    return path


@pytest.fixture(scope="module")
def engine(index: Path) -> Engine:
    return Engine.open(index)


@pytest.fixture(scope="module")
def open_url(engine: Engine) -> Iterator[str]:
    """No token, no CORS: the defaults."""
    with live_server(engine, ServeSettings()) as base:
        yield base


@pytest.fixture(scope="module")
def secured_url(engine: Engine) -> Iterator[str]:
    """A token, one CORS origin and a small probe limit."""
    settings = ServeSettings(token=TOKEN, cors_origins=(ORIGIN,), max_probes=5)
    with live_server(engine, settings) as base:
        yield base


@pytest.fixture(scope="module")
def broken_url(index: Path) -> Iterator[str]:
    with live_server(ExplodingEngine.open(index), ServeSettings(cache="off")) as base:
        yield base


@pytest.fixture(scope="module")
def nested_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A corpus with a document in a subfolder, so its id contains a `/`."""
    root = tmp_path_factory.mktemp("nested")
    (root / "corpus" / "harbour").mkdir(parents=True)
    (root / "corpus" / "harbour" / "ferry.md").write_text(
        "# Harbour ferry\n\nThe harbour ferry crosses to the island.\n\n"
        "## Times\n\nThe first ferry leaves the stone pier at 7am and the last at 6pm.\n\n"
        "## Fares\n\nA return ticket costs 6 pounds and children travel free.\n",
        encoding="utf-8",
    )
    ingest([root / "corpus"], root / "idx")
    with live_server(Engine.open(root / "idx"), ServeSettings()) as base:
        yield base


def _ollama_embeddings(seen: Seen, out: Out) -> None:
    """Ollama's /api/embed with a small, distinct vector per text: enough to build an index."""
    texts = seen.body["input"]
    out.json({"embeddings": [[1.0 + len(t) % 7, 1.0 + sum(map(ord, t)) % 11, 1.0] for t in texts]})


@pytest.fixture(scope="module")
def embedder_down_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An index embedded by a remote model whose server is gone by the time questions come:
    the query embedder cannot be reached, which is the server's problem, not the client's."""
    model = FakeServer(_ollama_embeddings)
    try:
        index = tmp_path_factory.mktemp("embedder-down") / "idx"
        options = EmbedderOptions(base_url=model.url)
        ingest([REGPACK], index, dense=DenseSettings("ollama:m"), embedder_options=options)
    finally:
        model.close()
    with live_server(Engine.open(index, options), ServeSettings(cache="off")) as base:
        yield base


@pytest.fixture(scope="module")
def urls(
    open_url: str, secured_url: str, broken_url: str, embedder_down_url: str
) -> dict[str, str]:
    return {
        "open": open_url,
        "secured": secured_url,
        "broken": broken_url,
        "embedder down": embedder_down_url,
    }


def post(base: str, path: str, body: Any, **kwargs: Any) -> httpx.Response:
    return httpx.post(f"{base}{path}", json=body, timeout=30, **kwargs)


# ---------------------------------------------------------------- /health and the page


def test_health_describes_the_index_cache_auth_and_facets(open_url: str, engine: Engine) -> None:
    response = httpx.get(f"{open_url}/health")
    assert response.status_code == 200
    data = response.json()
    assert data["status"] == "ok" and data["version"] == __version__
    m = engine.manifest
    assert data["index"] == {
        "dir": engine.location,
        "build_id": m.build_id,
        "fingerprint": m.fingerprint,
        "created_at": m.created_at,
        "counts": m.counts,
    }
    assert data["lexical"] == {"engine": "bm25s", "version": None, "note": "bm25s in memory"}
    # The example corpus is below the HNSW threshold: its vectors are compared exactly.
    assert data["vectors"] == {
        "search": "exact",
        "engine": "numpy",
        "note": "exact search (numpy): every chunk is compared",
    }
    assert data["retrievers"] == ["bm25", "dense", "hybrid"]
    assert data["default_retriever"] == "hybrid+weighted=0.5/0.5+defs"
    assert data["retrieval"] == {
        "plan": "hybrid+weighted=0.5/0.5+defs",
        "fitted": False,
        "summary": "the built-in plan hybrid+weighted=0.5/0.5+defs (never fitted; "
        "`groundqa tune` fits one)",
    }
    assert data["embedder"] == {
        "embedder": "minilm",
        "model_id": "all-MiniLM-L6-v2/onnx-int8",
        "dim": 384,
    }
    assert data["generators"] == available_generators()
    assert {"extractive", "ollama", "openai", "anthropic"} <= set(data["generators"])
    assert data["gate"]["kind"] and data["gate"]["calibrated"] is False
    assert 0 < data["gate"]["threshold"] < 1
    assert data["gate"]["summary"].startswith("not calibrated: the built-in default")
    assert set(data["cache"]) == {"backend", "ok", "detail"}
    assert data["cache"]["backend"] == "memory" and data["cache"]["ok"] is True
    assert data["auth"] == {"required": False}
    assert set(data["facets"]) == set(FACET_KEYS)
    assert "Fennick City" in data["facets"]["area"]
    assert data["facets"]["jurisdiction"] == ["federal", "local", "state"]


def test_health_and_the_page_need_no_token(secured_url: str) -> None:
    health = httpx.get(f"{secured_url}/health")
    assert health.status_code == 200 and health.json()["auth"] == {"required": True}
    types = {"/": "text/html", "/app.js": "text/javascript", "/style.css": "text/css"}
    for path, media_type in types.items():
        response = httpx.get(f"{secured_url}{path}")
        assert response.status_code == 200, path
        assert response.headers["content-type"].startswith(media_type)
        assert response.content
    assert "<html" in httpx.get(f"{secured_url}/").text.lower()


# ---------------------------------------------------------------- /query


def test_query_answers_with_citations_then_serves_the_cache(open_url: str) -> None:
    first = post(open_url, "/query", {"question": NEER, "k": 5})
    assert first.status_code == 200
    data = first.json()
    assert data["cache"] == "miss"
    assert data["refused"] is False and data["citations"]
    markers = {int(n) for n in re.findall(r"\[(\d+)\]", data["answer"])}
    assert markers == {c["n"] for c in data["citations"]}
    passages = {p["chunk_id"] for p in data["passages"]}
    assert {c["chunk_id"] for c in data["citations"]} <= passages
    assert len(data["passages"]) == 5
    # the same request, re-spaced and re-cased, is the same cache entry
    again = post(open_url, "/query", {"question": "  when IS a   NEER\treport due?  ", "k": 5})
    hit = again.json()
    assert again.status_code == 200 and hit["cache"] == "hit"
    assert hit["answer"] == data["answer"] and hit["citations"] == data["citations"]
    assert hit["question"] == "when IS a   NEER\treport due?"
    # another k is another request
    assert post(open_url, "/query", {"question": NEER, "k": 3}).json()["cache"] == "miss"


@pytest.mark.parametrize("field", [{"temperature": 0.7}, {"max_tokens": 50}])
def test_sampling_settings_are_part_of_the_cache_key(open_url: str, field: dict[str, Any]) -> None:
    """An LLM answers differently at another temperature or length: these requests must not
    share a cached answer (the key is the request's whole Query, see groundqa.query)."""
    question = "What must a NEER report contain?"
    assert post(open_url, "/query", {"question": question}).json()["cache"] in ("miss", "hit")
    assert post(open_url, "/query", {"question": question, **field}).json()["cache"] == "miss"
    assert post(open_url, "/query", {"question": question, **field}).json()["cache"] == "hit"


def test_an_off_topic_question_is_refused_without_citations(open_url: str) -> None:
    data = post(open_url, "/query", {"question": OFF_TOPIC}).json()
    assert data["refused"] is True
    assert data["answer"] == REFUSAL
    assert data["citations"] == []
    assert data["refused_by"] == "gate"


def test_filters_keep_only_matching_passages(open_url: str) -> None:
    one = post(open_url, "/query", {"question": VEGETATION, "filters": {"state": "Westhaven"}})
    assert one.status_code == 200
    assert one.json()["passages"]
    assert {p["metadata"]["state"] for p in one.json()["passages"]} == {"Westhaven"}
    either = {"state": ["Westhaven", "Drayland"], "jurisdiction": "state"}
    two = post(open_url, "/query", {"question": VEGETATION, "filters": either, "k": 10})
    assert {p["metadata"]["state"] for p in two.json()["passages"]} <= {"Westhaven", "Drayland"}
    assert {p["metadata"]["jurisdiction"] for p in two.json()["passages"]} == {"state"}


def test_auto_location_scopes_to_the_place_the_question_names(open_url: str) -> None:
    plain = post(open_url, "/query", {"question": FENNICK}).json()
    assert plain["scope"] == {}
    data = post(open_url, "/query", {"question": FENNICK, "auto_location": True}).json()
    assert data["scope"] == {"area": ["Fennick City"], "state": ["Northmere"]}
    assert data["refused"] is False
    areas = {p["metadata"].get("area") for p in data["passages"]}
    assert areas <= {"Fennick City", None}
    assert data["citations"][0]["doc_id"] == "local_fennick_tree_protection.md"


def test_a_scope_an_all_of_filter_and_as_of_reach_the_engine(open_url: str) -> None:
    question = "What trunk circumference makes a tree protected?"
    data = post(open_url, "/query", {"question": question, "scope": {"area": "Ashcombe"}}).json()
    assert data["scope"] == {"area": ["Ashcombe Shire"], "state": ["Westhaven"]}
    assert {c["doc_id"] for c in data["citations"]} == {"local_ashcombe_regulated_trees.md"}
    assert data["citations"][0]["clause"] == "cl.1.1" and data["notes"] == []
    earlier = {"question": question, "scope": {"area": "Ashcombe"}, "as_of": "2020-01-01"}
    old = post(open_url, "/query", earlier).json()
    assert old["cache"] == "miss"  # another day is another answer
    assert old["notes"] and "not yet in force on 2020-01-01" in old["notes"][0]
    both = {"jurisdiction": {"all": ["local"]}, "state": {"any": ["Westhaven"]}}
    scoped = post(open_url, "/query", {"question": question, "filters": both}).json()
    assert {p["metadata"]["area"] for p in scoped["passages"]} == {"Ashcombe Shire"}


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"scope": {"area": "Ashcombe Shyre"}}, 400, "did you mean Ashcombe Shire?"),
        ({"filters": {"state": {"some": ["Westhaven"]}}}, 422, ""),
        ({"as_of": "30/06/2021"}, 422, ""),
    ],
)
def test_bad_scope_filter_or_date_is_a_clear_4xx(
    open_url: str, body: dict[str, Any], status: int, message: str
) -> None:
    response = post(open_url, "/query", {"question": "trees", **body})
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["status"] == status and message in error["message"]


def _events(text: str) -> list[tuple[str, Any]]:
    events = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


def test_query_stream_sends_passages_answer_pieces_then_done(open_url: str) -> None:
    body = {"question": NEER, "k": 4}
    with httpx.stream("POST", f"{open_url}/query/stream", json=body, timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = _events(response.read().decode("utf-8"))
    names = [name for name, _ in events]
    assert names[0] == "passages" and names[-1] == "done"
    assert set(names[1:-1]) == {"answer"}
    done = events[-1][1]
    assert events[0][1] == done["passages"] and len(done["passages"]) == 4
    pieces = [data["text"] for name, data in events if name == "answer"]
    assert "".join(pieces) == done["answer"]
    assert len(pieces) == len(re.findall(r"\[\d+\]", done["answer"])) >= 1
    assert all(re.search(r"\[\d+\]$", piece) for piece in pieces)
    assert done["cache"] in ("miss", "hit") and done["refused"] is False


def test_a_refusal_streams_as_one_piece(open_url: str) -> None:
    with httpx.stream("POST", f"{open_url}/query/stream", json={"question": OFF_TOPIC}) as r:
        events = _events(r.read().decode("utf-8"))
    assert [name for name, _ in events] == ["passages", "answer", "done"]
    assert events[1][1] == {"text": REFUSAL}


# ---------------------------------------------------------------- /sources and /chunks


def test_sources_returns_a_document_from_the_index(open_url: str, engine: Engine) -> None:
    doc_id = "local_fennick_tree_protection.md"
    response = httpx.get(f"{open_url}/sources/{doc_id}")
    assert response.status_code == 200
    data = response.json()
    chunks = engine.catalog.document(doc_id)
    assert data["doc_id"] == doc_id and data["title"] == chunks[0].title
    assert data["uri"].startswith("file://") and "#" not in data["uri"]
    assert data["metadata"]["area"] == "Fennick City"
    assert [c["chunk_id"] for s in data["sections"] for c in s["chunks"]] == [
        c.chunk_id for c in chunks
    ]
    first = data["sections"][0]
    assert set(first) == {"section_id", "section", "page", "uri", "chunks"}
    assert first["section"].startswith(chunks[0].title + " > ")
    assert set(first["chunks"][0]) == {"chunk_id", "part", "parts", "text"}


def test_a_document_id_with_a_slash_is_one_path_parameter(nested_url: str) -> None:
    data = httpx.get(f"{nested_url}/sources/harbour/ferry.md").json()
    assert data["doc_id"] == "harbour/ferry.md"
    assert [s["section_id"] for s in data["sections"]] == [
        "harbour/ferry.md#Times",
        "harbour/ferry.md#Fares",
    ]
    missing = httpx.get(f"{nested_url}/sources/harbour%23ferry.md")
    assert missing.status_code == 404
    assert "'harbour#ferry.md'" in missing.json()["error"]["message"]


def test_chunks_returns_a_passage_without_ranking_fields(open_url: str, engine: Engine) -> None:
    passage = post(open_url, "/query", {"question": NEER}).json()["passages"][0]
    response = httpx.get(f"{open_url}/chunks/{passage['chunk_id']}")
    assert response.status_code == 200
    data = response.json()
    chunk = engine.catalog.chunk(passage["chunk_id"])
    assert isinstance(chunk, Chunk)
    expected = Hit(chunk, 0.0, 0).to_dict()
    for key in ("score", "rank", "retriever"):
        del expected[key]
    assert data == expected
    assert data["text"] == passage["text"] and data["section"] == passage["section"]


# ---------------------------------------------------------------- /eval


def _probes(n: int) -> list[dict[str, Any]]:
    lines = REGPACK_PROBES.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()][:n]


def test_eval_runs_probes_with_the_token(secured_url: str) -> None:
    response = post(secured_url, "/eval", {"probes": _probes(5), "k": [1, 5]}, headers=AUTH)
    assert response.status_code == 200, response.text
    data = response.json()
    assert {"metrics", "counts", "sweep"} <= set(data)
    assert {"recall@1", "recall@5", "mrr"} <= set(data["metrics"])
    assert data["counts"]["answerable"] == 5
    assert len(data["results"]) == 5


def test_eval_needs_the_token_and_a_server_that_has_one(secured_url: str, open_url: str) -> None:
    body = {"probes": _probes(1)}
    assert post(secured_url, "/eval", body).status_code == 401
    disabled = post(open_url, "/eval", body)
    assert disabled.status_code == 403
    assert "--token" in disabled.json()["error"]["message"]


# ---------------------------------------------------------------- OpenAPI and CORS


def test_openapi_spec_validates(open_url: str, secured_url: str) -> None:
    spec = httpx.get(f"{open_url}/openapi.json").json()
    validate(spec)
    assert spec["info"]["title"] == "groundqa" and spec["info"]["version"] == __version__
    assert {"/health", "/query", "/query/stream", "/eval", "/sources/{doc_id}"} <= set(
        spec["paths"]
    )
    assert "/chunks/{chunk_id}" in spec["paths"]
    assert "security" not in spec["paths"]["/query"]["post"]
    errors = spec["paths"]["/query"]["post"]["responses"]["422"]
    assert errors["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorBody"
    }
    secured = httpx.get(f"{secured_url}/openapi.json").json()
    validate(secured)
    assert secured["paths"]["/query"]["post"]["security"] == [{"bearer": []}]
    assert "security" not in secured["paths"]["/health"]["get"]


def test_cors_is_off_by_default_and_on_for_a_configured_origin(
    open_url: str, secured_url: str
) -> None:
    plain = httpx.get(f"{open_url}/health", headers={"Origin": ORIGIN})
    assert "access-control-allow-origin" not in plain.headers
    allowed = httpx.get(f"{secured_url}/health", headers={"Origin": ORIGIN})
    assert allowed.headers["access-control-allow-origin"] == ORIGIN
    other = httpx.get(f"{secured_url}/health", headers={"Origin": "http://evil.example"})
    assert "access-control-allow-origin" not in other.headers
    preflight = httpx.options(
        f"{secured_url}/query",
        headers={
            "Origin": ORIGIN,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == ORIGIN
    # A chat front-end in the browser, with the headers the OpenAI SDK adds.
    chat_preflight = httpx.options(
        f"{secured_url}/v1/chat/completions",
        headers={
            "Origin": ORIGIN,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, x-stainless-lang",
        },
    )
    assert chat_preflight.status_code == 200
    assert "x-stainless-lang" in chat_preflight.headers["access-control-allow-headers"].lower()
    # a refusal for a missing token still carries the header, so the page can read it
    refused = post(secured_url, "/query", {"question": NEER}, headers={"Origin": ORIGIN})
    assert refused.status_code == 401
    assert refused.headers["access-control-allow-origin"] == ORIGIN


# ---------------------------------------------------------------- one error shape


def _chunked_body() -> Iterator[bytes]:
    yield b'{"question": "'
    for _ in range(1100):
        yield b"x" * 1024
    yield b'"}'


Q = {"question": NEER}
JSON_TYPE = {"Content-Type": "application/json"}
BIG = {"question": "x" * 2_000_000}
BAD_PROBE = {"question": "x", "kind": "maybe"}
# name: (server, method, path, request kwargs, status, code, a phrase the message must contain)
# fmt: off
ERROR_CASES: dict[str, tuple[str, str, str, dict[str, Any], int, str, str]] = {
    "malformed JSON": ("open", "POST", "/query", {"content": b'{"question": ', "headers": JSON_TYPE}, 422, "invalid_request", "not valid JSON"),
    "no body": ("open", "POST", "/query", {}, 422, "invalid_request", "body is required"),
    "k of the wrong type": ("open", "POST", "/query", {"json": {**Q, "k": "five"}}, 422, "invalid_request", "k: "),
    "unknown field": ("open", "POST", "/query", {"json": {**Q, "colour": "red"}}, 422, "invalid_request", "unknown field 'colour'"),
    "k too large": ("open", "POST", "/query", {"json": {**Q, "k": 10000}}, 422, "invalid_request", "k: "),
    "empty question": ("open", "POST", "/query", {"json": {"question": "   "}}, 422, "invalid_request", "question: "),
    "missing question": ("open", "POST", "/query", {"json": {"k": 3}}, 422, "invalid_request", "question: "),
    "question too long": ("open", "POST", "/query", {"json": {"question": "x" * 2001}}, 422, "invalid_request", "question: "),
    "filter value of the wrong type": ("open", "POST", "/query", {"json": {**Q, "filters": {"state": 5}}}, 422, "invalid_request", "filters.state: "),
    "too many filter keys": ("open", "POST", "/query", {"json": {**Q, "filters": {f"k{i}": "x" for i in range(21)}}}, 422, "invalid_request", "filters: "),
    "unknown filter key": ("open", "POST", "/query", {"json": {**Q, "filters": {"colour": "red"}}}, 400, "usage", "unknown filter key 'colour'; this index has: area"),
    "unknown filter value": ("open", "POST", "/query", {"json": {**Q, "filters": {"state": "Westhavn"}}}, 400, "usage", "did you mean Westhaven?"),
    "unknown retriever": ("open", "POST", "/query", {"json": {**Q, "retriever": "dense9"}}, 400, "usage", "retriever 'dense9'"),
    "a generator the server does not serve": ("open", "POST", "/query", {"json": {**Q, "generator": "gpt-9"}}, 400, "generator_not_served", "only with the generators it was started with (extractive)"),
    "bad stream request": ("open", "POST", "/query/stream", {"json": {**Q, "filters": {"colour": "red"}}}, 400, "usage", "unknown filter key"),
    "a 2 MB question": ("open", "POST", "/query", {"json": BIG}, 413, "too_large", "the limit is 1048576 bytes"),
    "a chunked body past the limit": ("open", "POST", "/query", {"content": "chunked", "headers": JSON_TYPE}, 413, "too_large", "grew past the limit"),
    "missing token": ("secured", "POST", "/query", {"json": Q}, 401, "unauthorized", "Authorization: Bearer"),
    "wrong token": ("secured", "POST", "/query", {"json": Q, "headers": {"Authorization": "Bearer nope"}}, 401, "unauthorized", "not valid"),
    "not a bearer token": ("secured", "GET", "/chunks/x", {"headers": {"Authorization": f"Basic {TOKEN}"}}, 401, "unauthorized", "not valid"),
    "token checked before the body": ("secured", "POST", "/query", {"json": BIG}, 401, "unauthorized", "Authorization"),
    "eval without a configured token": ("open", "POST", "/eval", {"json": {"probes": [Q]}}, 403, "forbidden", "--token"),
    "a bad probe": ("secured", "POST", "/eval", {"json": {"probes": [Q, BAD_PROBE]}, "headers": AUTH}, 400, "probe", "probes[1]: `kind`"),
    "a probe naming no section": ("secured", "POST", "/eval", {"json": {"probes": [{**Q, "expected": ["nowhere.md#x"]}]}, "headers": AUTH}, 400, "probe", "'nowhere.md#x'"),
    "an eval body past its limit": ("secured", "POST", "/eval", {"json": {"probes": [{"question": "x" * 100_000}]}, "headers": AUTH}, 413, "too_large", "the limit is 65536 bytes"),
    "too many probes": ("secured", "POST", "/eval", {"json": {"probes": [Q] * 6}, "headers": AUTH}, 413, "too_large", "the limit is 5"),
    "unknown route": ("open", "GET", "/answers", {}, 404, "not_found", "GET /answers"),
    "unknown document": ("open", "GET", "/sources/no-such-doc.md", {}, 404, "not_found", "'no-such-doc.md'"),
    "unknown chunk": ("open", "GET", "/chunks/0000", {}, 404, "not_found", "'0000'"),
    "wrong method": ("open", "GET", "/query", {}, 405, "method_not_allowed", "allowed: POST"),
    "wrong method on a page": ("open", "DELETE", "/health", {}, 405, "method_not_allowed", "DELETE /health"),
    "an unexpected failure": ("broken", "POST", "/query", {"json": Q}, 500, "internal", "internal error"),
    "an unreachable query embedder": ("embedder down", "POST", "/query", {"json": Q}, 503, "embedding", "cannot reach ollama"),
    "an unreachable query embedder, streamed": ("embedder down", "POST", "/query/stream", {"json": Q}, 503, "embedding", "cannot reach ollama"),
}
# fmt: on


@pytest.mark.parametrize(
    ("server", "method", "path", "kwargs", "status", "code", "phrase"),
    list(ERROR_CASES.values()),
    ids=list(ERROR_CASES),
)
def test_every_failure_has_the_one_error_shape(
    urls: dict[str, str],
    server: str,
    method: str,
    path: str,
    kwargs: dict[str, Any],
    status: int,
    code: str,
    phrase: str,
) -> None:
    if kwargs.get("content") == "chunked":  # a generator body goes out chunked, with no length
        kwargs = {**kwargs, "content": _chunked_body()}
    response = httpx.request(method, f"{urls[server]}{path}", timeout=30, **kwargs)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"status", "code", "message", "type", "param"}
    assert body["error"]["status"] == status and body["error"]["code"] == code
    message = body["error"]["message"]
    assert isinstance(message, str) and "\n" not in message and phrase in message
    assert "Traceback" not in response.text and "secret internal detail" not in response.text
    assert TOKEN not in response.text
    if status == 401:
        assert response.headers["www-authenticate"] == "Bearer"
    if status == 503:  # a backend that is down: the same request may succeed later
        assert response.headers["retry-after"] == "5"


def test_a_cached_question_still_needs_the_token(secured_url: str) -> None:
    assert post(secured_url, "/query", Q, headers=AUTH).status_code == 200
    assert post(secured_url, "/query", Q, headers=AUTH).json()["cache"] == "hit"
    assert post(secured_url, "/query", Q).status_code == 401


# ---------------------------------------------------------------- groundqa serve


SERVE = [sys.executable, "-m", "groundqa.cli", "serve"]


def test_groundqa_serve_runs_until_terminated(index: Path) -> None:
    port = free_port()
    env = {**os.environ, "GROUNDQA_TOKEN": TOKEN, "COLUMNS": "200"}
    proc = subprocess.Popen(
        [*SERVE, "--index", str(index), "--port", str(port), "--cache", "off"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for_health(base, alive=lambda: proc.poll() is None, seconds=30)
        health = httpx.get(f"{base}/health").json()
        assert health["auth"] == {"required": True}
        assert health["cache"]["backend"] == "off"
        data = post(base, "/query", {"question": NEER}, headers=AUTH).json()
        assert data["cache"] == "off" and data["citations"]
    finally:
        proc.terminate()
        stdout, stderr = proc.communicate(timeout=15)
    assert stdout.strip() == f"serving {index} on {base} (cache: off, auth: on)"
    assert "Traceback" not in stderr and TOKEN not in stderr + stdout


def test_groundqa_serve_refuses_a_busy_port_in_one_line(index: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run(
            [*SERVE, "--index", str(index), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines == [
        f"error: port {port} on 127.0.0.1 is already in use; stop what holds it or pick another --port"
    ]


def test_a_generator_that_cannot_be_reached_is_a_502_that_is_never_cached(
    engine: Engine,
) -> None:
    """A network generator that is down: 502 in the error shape, not a 200 whose empty answer
    reads as one; a stream ends with an `error` event instead of `done`."""
    dead = f"{closed_port_url()}/v1"
    settings = ServeSettings(
        generator_options=GeneratorOptions(base_url=dead, timeout_s=2),
        allowed_generators=("openai:m",),
    )
    with live_server(engine, settings) as base:
        body = {"question": "What is the turbine setback from a dwelling?", "generator": "openai:m"}
        for _ in range(2):  # the second is not a cached answer either
            response = post(base, "/query", body)
            assert response.status_code == 502, response.text
            error = response.json()["error"]
            assert error["code"] == "generation" and error["type"] == "server_error"
            assert "could not be generated by openai:m: cannot reach openai" in error["message"]
            assert "try again later" in error["message"] and "\n" not in error["message"]
        streamed = post(base, "/query/stream", body)
        assert streamed.status_code == 200  # the passages went out before the generator failed
        events = _events(streamed.text)
        assert events[0][0] == "passages"
        assert events[-1][0] == "error" and "done" not in [name for name, _ in events]
        assert events[-1][1]["error"]["code"] == "generation"
        assert httpx.get(f"{base}/health").status_code == 200


def test_a_request_may_name_only_the_generators_the_server_was_started_with(
    engine: Engine, tmp_path: Path, serve: Callable[[Reply], FakeServer]
) -> None:
    """A generator spec is a file to open or a host to call: a client that could choose it
    could learn which files exist (`gguf:PATH`) or make the server connect out."""
    model = serve(lambda seen, out: out.json({"error": "never asked"}, 500))
    settings = ServeSettings(generator_options=GeneratorOptions(base_url=f"{model.url}/v1"))
    exists = tmp_path / "model.gguf"
    exists.write_bytes(b"not a model")
    specs = [f"gguf:{exists}", f"gguf:{tmp_path / 'missing.gguf'}", "openai:x", "ollama:m"]
    with live_server(engine, settings) as base:
        replies = {
            (path, spec): post(base, path, {"question": NEER, "generator": spec})
            for path in ("/query", "/query/stream")
            for spec in specs
        }
        chat = {"model": "groundqa", "messages": [{"role": "user", "content": NEER}]}
        for spec in specs:
            replies["/v1/chat/completions", spec] = post(
                base, "/v1/chat/completions", {**chat, "generator": spec}
            )
        for (path, spec), reply in replies.items():
            assert reply.status_code == 400, (path, spec, reply.text)
            error = reply.json()["error"]
            assert error["code"] == "generator_not_served" and error["param"] == "generator"
            assert "(extractive)" in error["message"]
        # The same words whatever was named: nothing says whether a file is there.
        assert len({reply.text for reply in replies.values()}) == 1
        assert str(tmp_path) not in next(iter(replies.values())).text
        assert model.seen == []  # and nothing was asked of a model server
        assert (
            post(base, "/query", {"question": NEER, "generator": "extractive"}).status_code == 200
        )


def test_an_allowed_generator_may_be_named(engine: Engine) -> None:
    settings = ServeSettings(allowed_generators=("openai:m",))
    assert settings.generators == ("extractive", "openai:m")
    with live_server(engine, settings) as base:
        refused = post(base, "/query", {"question": NEER, "generator": "anthropic:m"})
        assert refused.status_code == 400
        assert "(extractive, openai:m)" in refused.json()["error"]["message"]


def test_docs_are_served_only_by_a_server_without_a_token(open_url: str, secured_url: str) -> None:
    """FastAPI's /docs runs Swagger UI from a CDN on this origin; where the origin holds a
    token, no outside script may run there."""
    assert httpx.get(f"{open_url}/docs").status_code == 200
    hidden = httpx.get(f"{secured_url}/docs")
    assert hidden.status_code == 404 and hidden.json()["error"]["code"] == "not_found"
    assert "/openapi.json" in hidden.json()["error"]["message"]
    assert httpx.get(f"{secured_url}/openapi.json").status_code == 200


# ---------------------------------------------------------------- response size


LONG_QUESTION = "When does the harbour ferry leave the stone pier?"


def test_an_over_long_passage_and_answer_are_cut_and_say_so(long_index: Path) -> None:
    """A 52 MB section made /query return 210 MB of JSON; every text a response carries is
    cut, and says how long it was."""
    engine = Engine.open(long_index)
    whole = len(engine.catalog.document("ferry.md")[0].text)
    with live_server(engine, ServeSettings()) as base:
        response = post(base, "/query", {"question": LONG_QUESTION, "k": 2})
        assert response.status_code == 200
        assert len(response.content) < 200_000
        data = response.json()
        first = data["passages"][0]
        assert first["truncated"] is True and first["chars"] == whole
        assert len(first["text"]) == MAX_PASSAGE_CHARS
        assert "truncated" not in data["passages"][1]  # a short passage is as it was
        assert data["answer_truncated"] is True and len(data["answer"]) == MAX_ANSWER_CHARS
        assert data["answer_chars"] > MAX_ANSWER_CHARS
        assert any("The answer is cut to its first 40,000" in n for n in data["notes"])
        snippet = data["citations"][0]
        assert snippet["truncated"] is True and len(snippet["snippet"]) == MAX_PASSAGE_CHARS
        # Cut before it is cached: the entry fits, and a hit is the same answer.
        again = post(base, "/query", {"question": LONG_QUESTION, "k": 2}).json()
        assert again["cache"] == "hit" and again["answer"] == data["answer"]

        stream = post(base, "/query/stream", {"question": LONG_QUESTION, "k": 2, "explain": True})
        assert len(stream.content) < 400_000
        events = _events(stream.text)
        assert events[0][1][0]["truncated"] is True
        pieces = "".join(e["text"] for name, e in events if name == "answer")
        assert pieces == events[-1][1]["answer"] == data["answer"]

        chunk = httpx.get(f"{base}/chunks/{first['chunk_id']}").json()
        assert chunk["truncated"] is True and len(chunk["text"]) == MAX_PASSAGE_CHARS
        source = httpx.get(f"{base}/sources/ferry.md").json()
        part = source["sections"][0]["chunks"][0]
        assert part["truncated"] is True and part["chars"] == whole

        chat = {"model": "groundqa", "messages": [{"role": "user", "content": LONG_QUESTION}]}
        reply = post(base, "/v1/chat/completions", chat)
        assert reply.status_code == 200 and len(reply.content) < 200_000
        assert "cut to its first 40,000" in reply.json()["choices"][0]["message"]["content"]


def keep_asking_through(base: str, rebuild: Callable[[], str], seconds: float = 30) -> list[str]:
    """Ask questions without pause while `rebuild()` makes a new build current, until the
    server reports that build; every answer must be a 200. Returns the build ids seen."""
    seen: list[str] = []
    failures: list[str] = []
    stop = threading.Event()

    def ask() -> None:
        with httpx.Client(timeout=30) as client:
            while not stop.is_set():
                reply = client.post(f"{base}/query", json={"question": NEER})
                if reply.status_code != 200:
                    failures.append(reply.text)

    asker = threading.Thread(target=ask, daemon=True)
    asker.start()
    try:
        new_build = rebuild()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            build = httpx.get(f"{base}/health").json()["index"]["build_id"]
            if not seen or seen[-1] != build:
                seen.append(build)
            if build == new_build:
                break
            time.sleep(0.1)
    finally:
        stop.set()
        asker.join(timeout=30)
    assert not failures, failures[:3]
    assert seen[-1] == new_build, seen
    return seen


def test_a_running_server_picks_up_a_rebuilt_index(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(REGPACK, corpus)
    index = tmp_path / "idx"
    first = ingest([corpus], index, dense=None)
    engine = Engine.open(index)
    with live_server(engine, ServeSettings(cache="off", reload_s=0.2)) as base:
        assert httpx.get(f"{base}/health").json()["index"]["build_id"] == first.build_id

        def rebuild() -> str:
            with (corpus / "extra.md").open("w", encoding="utf-8") as f:
                f.write("# Ferries\n\n## Timetable\n\nThe ferry leaves at dawn.\n")
            return ingest([corpus], index, dense=None).build_id

        seen = keep_asking_through(base, rebuild)
        assert first.build_id not in seen[1:] and len(seen) <= 2  # never back to the old one
        hits = post(base, "/query", {"question": "When does the ferry leave?"}).json()
        assert any(p["doc_id"] == "extra.md" for p in hits["passages"])


def test_a_stream_cuts_after_a_grouped_citation_marker() -> None:
    # `[1, 2]` is one marker, as the generators write it: the piece ends there, not at `[3]`.
    from groundqa.serve.events import answer_pieces

    text = "Bins go out by 8pm. [1, 2] Collection is weekly. [3]"
    assert answer_pieces(text) == ["Bins go out by 8pm. [1, 2]", " Collection is weekly. [3]"]
