"""The HTTP embedders against local servers that speak Ollama's and OpenAI's embedding APIs.

No provider is reachable from here, so the real client code (httpx through
`groundqa.providers`) runs against small servers on 127.0.0.1 that answer as
Ollama's `POST /api/embed` and OpenAI's `POST /v1/embeddings` do. Each server
records every request, so the tests check what is sent (body, headers, how
texts are batched) as well as how each reply and each failure is read.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from groundqa.embed import EmbedderOptions, get_embedder
from groundqa.embed.remote import OllamaEmbedder, OpenAIEmbedder
from groundqa.errors import EmbeddingError, UsageError
from tests.fakes import FakeServer, Out, Seen, closed_port_url
from tests.fakes import Reply as WireReply

SECRET = "sk-test-DO-NOT-LEAK-4242"
TEXTS = ["alpha", "bravo", "charlie", "delta", "echo"]


def vector(text: str) -> list[float]:
    """A distinct, deliberately not unit-length vector for each text."""
    return [float(len(text)), float(ord(text[0]) - 96), 2.0]


def unit(text: str) -> list[float]:
    v = vector(text)
    norm = math.sqrt(sum(x * x for x in v))
    return [x / norm for x in v]


# --- a fake provider -----------------------------------------------------------------------


@dataclass
class Response:
    body: bytes
    status: int = 200
    delay_s: float = 0.0


def as_json(obj: object, status: int = 200) -> Response:
    return Response(json.dumps(obj).encode(), status)


Reply = Callable[[Seen], Response]


def answering(reply: Reply) -> WireReply:
    """The shared fake server's reply for one that returns a whole `Response`."""

    def answer(seen: Seen, out: Out) -> None:
        response = reply(seen)
        out.wait(response.delay_s)
        out.raw(response.body, response.status)

    return answer


@pytest.fixture
def serve(serve: Callable[[WireReply], FakeServer]) -> Callable[[Reply], FakeServer]:
    return lambda reply: serve(answering(reply))


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_API_KEY", "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)


def ollama_reply(seen: Seen) -> Response:
    """Ollama's /api/embed: one row per input, in order."""
    return as_json(
        {
            "model": seen.body["model"],
            "embeddings": [vector(t) for t in seen.body["input"]],
            "total_duration": 1000,
            "load_duration": 10,
            "prompt_eval_count": len(seen.body["input"]),
        }
    )


def openai_reply(seen: Seen) -> Response:
    """OpenAI's /v1/embeddings, with the rows shuffled: only `index` says which is which."""
    data = [
        {"object": "embedding", "index": i, "embedding": vector(t)}
        for i, t in enumerate(seen.body["input"])
    ]
    data = data[1::2] + data[0::2]  # five rows come back as 1, 3, 0, 2, 4
    return as_json(
        {
            "object": "list",
            "data": data,
            "model": seen.body["model"],
            "usage": {"prompt_tokens": 5, "total_tokens": 5},
        }
    )


def ollama(server_url: str, **kw: Any) -> OllamaEmbedder:
    return OllamaEmbedder.from_spec("m", EmbedderOptions(base_url=server_url, **kw))


def openai(server_url: str, **kw: Any) -> OpenAIEmbedder:
    return OpenAIEmbedder.from_spec("m", EmbedderOptions(base_url=server_url + "/v1", **kw))


# --- what is sent, and what comes back -----------------------------------------------------


def test_ollama_posts_batches_to_api_embed_and_returns_unit_rows_in_order(
    serve: Callable[[Reply], FakeServer],
) -> None:
    server = serve(ollama_reply)
    embedder = OllamaEmbedder.from_spec(
        "mxbai-embed-large", EmbedderOptions(base_url=server.url + "/", batch_size=2)
    )
    progress: list[int] = []
    vectors = embedder.embed(TEXTS, progress.append)
    assert [s.path for s in server.seen] == ["/api/embed"] * 3
    assert [s.body for s in server.seen] == [
        {"model": "mxbai-embed-large", "input": ["alpha", "bravo"]},
        {"model": "mxbai-embed-large", "input": ["charlie", "delta"]},
        {"model": "mxbai-embed-large", "input": ["echo"]},
    ]
    assert "authorization" not in server.seen[0].headers
    assert progress == [2, 2, 1]
    assert vectors.dtype == np.float32 and vectors.shape == (5, 3)
    np.testing.assert_allclose(vectors, [unit(t) for t in TEXTS], rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    assert embedder.model_id == embedder.name == "ollama:mxbai-embed-large"


def test_openai_puts_shuffled_rows_back_in_input_order(
    serve: Callable[[Reply], FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    server = serve(openai_reply)
    embedder = OpenAIEmbedder.from_spec(
        "text-embedding-3-small", EmbedderOptions(base_url=server.url + "/v1", batch_size=2)
    )
    progress: list[int] = []
    vectors = embedder.embed(TEXTS, progress.append)
    assert [s.path for s in server.seen] == ["/v1/embeddings"] * 3
    assert [s.body["input"] for s in server.seen] == [TEXTS[0:2], TEXTS[2:4], TEXTS[4:]]
    assert all(s.body["model"] == "text-embedding-3-small" for s in server.seen)
    assert server.seen[0].headers["authorization"] == f"Bearer {SECRET}"
    assert "api-key" not in server.seen[0].headers
    assert progress == [2, 2, 1]
    np.testing.assert_allclose(vectors, [unit(t) for t in TEXTS], rtol=1e-6)
    assert embedder.model_id == "openai:text-embedding-3-small"
    assert SECRET not in repr(embedder)


def test_openai_reorders_one_whole_shuffled_batch(serve: Callable[[Reply], FakeServer]) -> None:
    server = serve(openai_reply)
    progress: list[int] = []
    vectors = openai(server.url).embed(TEXTS, progress.append)
    assert len(server.seen) == 1 and progress == [5]
    np.testing.assert_allclose(vectors, [unit(t) for t in TEXTS], rtol=1e-6)


def test_azure_key_goes_in_the_api_key_header_and_the_query_string_stays_last(
    serve: Callable[[Reply], FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-azure")
    server = serve(openai_reply)
    base = f"{server.url}/openai/v1?api-version=preview"
    OpenAIEmbedder.from_spec("my-deployment", EmbedderOptions(base_url=base)).embed(["x"])
    (seen,) = server.seen
    assert seen.path == "/openai/v1/embeddings?api-version=preview"
    assert seen.headers["api-key"] == SECRET
    assert "authorization" not in seen.headers


def test_base_urls_come_from_the_environment_as_for_the_generators(
    serve: Callable[[Reply], FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    ollama_server = serve(ollama_reply)
    monkeypatch.setenv("OLLAMA_HOST", ollama_server.url.removeprefix("http://"))
    assert OllamaEmbedder.from_spec("m", EmbedderOptions()).base_url == ollama_server.url
    OllamaEmbedder.from_spec("m", EmbedderOptions()).embed(["x"])
    assert [s.path for s in ollama_server.seen] == ["/api/embed"]

    openai_server = serve(openai_reply)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.url + "/v1/")
    OpenAIEmbedder.from_spec("m", EmbedderOptions()).embed(["x"])
    assert [s.path for s in openai_server.seen] == ["/v1/embeddings"]


def test_the_defaults_without_options_or_environment() -> None:
    assert OllamaEmbedder.from_spec("m", EmbedderOptions()).base_url == "http://127.0.0.1:11434"
    default = OpenAIEmbedder.from_spec("m", EmbedderOptions())
    assert default.base_url == "https://api.openai.com/v1"
    assert default.batch_size == 64 and default.timeout_s == 60.0


def test_embedding_nothing_asks_no_server(serve: Callable[[Reply], FakeServer]) -> None:
    server = serve(ollama_reply)
    progress: list[int] = []
    for embedder in (ollama(server.url), openai(server.url)):
        empty = embedder.embed([], progress.append)
        assert empty.shape == (0, 0) and empty.dtype == np.float32
    assert server.seen == [] and progress == []


def test_the_registry_builds_both(serve: Callable[[Reply], FakeServer]) -> None:
    server = serve(ollama_reply)
    embedder = get_embedder("ollama:m", EmbedderOptions(base_url=server.url))
    assert isinstance(embedder, OllamaEmbedder) and embedder.model_id == "ollama:m"
    np.testing.assert_allclose(embedder.embed(["alpha"]), [unit("alpha")], rtol=1e-6)
    other = get_embedder("openai:text-embedding-3-large", EmbedderOptions(base_url=server.url))
    assert isinstance(other, OpenAIEmbedder)
    assert other.model_id == "openai:text-embedding-3-large"


def test_an_unknown_embedder_lists_the_available_ones() -> None:
    with pytest.raises(UsageError) as exc:
        get_embedder("cohere:embed-v3")
    assert exc.value.message.startswith("unknown embedder 'cohere:embed-v3'; available: ")
    assert all(name in exc.value.message for name in ("minilm", "ollama", "openai"))


def test_the_remote_embedders_load_no_generation_code() -> None:
    # Embedding comes before generation: the embedders share `groundqa.providers` with the
    # generators (endpoint, keys, errors) instead of importing them.
    code = (
        "import sys; from groundqa.embed import get_embedder; "
        "get_embedder('ollama:m'); get_embedder('openai:m'); "
        "print(sorted(m for m in sys.modules if m.startswith('groundqa.generate')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- configuration mistakes ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "example"), [("ollama", "mxbai-embed-large"), ("openai", "text-embedding-3-small")]
)
def test_an_empty_model_is_a_usage_error_with_an_example(name: str, example: str) -> None:
    with pytest.raises(UsageError) as exc:
        get_embedder(f"{name}: ")
    assert exc.value.message == f"{name}: name an embedding model, e.g. {name}:{example}"


def test_a_batch_size_below_one_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="batch size must be at least 1, not 0"):
        OllamaEmbedder.from_spec("m", EmbedderOptions(batch_size=0))


def test_a_base_url_without_a_scheme_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="must be an http:// or https:// URL"):
        OpenAIEmbedder.from_spec("m", EmbedderOptions(base_url="localhost:8000/v1"))


# --- failures ------------------------------------------------------------------------------


def one_line(exc: pytest.ExceptionInfo[EmbeddingError]) -> str:
    message = exc.value.message
    assert "\n" not in message and SECRET not in message and SECRET not in str(exc.value)
    return message


MAKERS = [
    pytest.param(ollama, "/api/embed", id="ollama"),
    pytest.param(openai, "/v1/embeddings", id="openai"),
]


@pytest.mark.parametrize(("make", "path"), MAKERS)
def test_a_closed_port_is_unreachable(
    make: Callable[..., OllamaEmbedder | OpenAIEmbedder], path: str
) -> None:
    url = closed_port_url()
    embedder = make(url, timeout_s=2)
    with pytest.raises(EmbeddingError) as exc:
        embedder.embed(["x"])
    name = embedder.name.split(":")[0]
    assert one_line(exc) == f"cannot reach {name} at {url}{path}; is it running?"


def test_a_server_slower_than_the_timeout(serve: Callable[[Reply], FakeServer]) -> None:
    server = serve(lambda seen: Response(b"{}", delay_s=3.0))
    with pytest.raises(EmbeddingError) as exc:
        ollama(server.url, timeout_s=0.5).embed(["x"])
    assert one_line(exc) == f"ollama timed out after 0.5 s at {server.url}/api/embed"


def test_a_model_ollama_does_not_have_surfaces_its_message(
    serve: Callable[[Reply], FakeServer],
) -> None:
    missing = 'model "nomic-embed-text" not found, try pulling it first'
    server = serve(lambda seen: as_json({"error": missing}, 404))
    with pytest.raises(EmbeddingError) as exc:
        ollama(server.url).embed(["x"])
    message = one_line(exc)
    assert message == f"ollama at {server.url}/api/embed answered HTTP 404: {missing}"


@pytest.mark.parametrize(
    ("make", "body", "expected"),
    [
        (ollama, {"error": "input length exceeds context"}, "ollama reported an error: input"),
        (
            openai,
            {"error": {"message": "bad input", "type": "invalid_request_error"}},
            "openai reported an error: bad input",
        ),
    ],
    ids=["ollama", "openai"],
)
def test_an_error_object_in_a_200_reply(
    make: Callable[..., OllamaEmbedder | OpenAIEmbedder],
    body: object,
    expected: str,
    serve: Callable[[Reply], FakeServer],
) -> None:
    server = serve(lambda seen: as_json(body))
    with pytest.raises(EmbeddingError) as exc:
        make(server.url).embed(["x"])
    assert one_line(exc).startswith(expected)


def test_a_401_names_the_key_variable_and_never_the_key(
    serve: Callable[[Reply], FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    # Providers echo (part of) a rejected key; the message must not carry it on.
    echo = {"error": {"message": f"Incorrect API key provided: {SECRET}", "type": "auth"}}
    server = serve(lambda seen: as_json(echo, 401))
    with pytest.raises(EmbeddingError) as exc:
        openai(server.url).embed(["x"])
    message = one_line(exc)
    assert "HTTP 401" in message and "Incorrect API key provided: ***" in message
    assert message.endswith("check OPENAI_API_KEY")


@pytest.mark.parametrize(("make", "path"), MAKERS)
def test_a_body_that_is_not_json_is_malformed(
    make: Callable[..., OllamaEmbedder | OpenAIEmbedder],
    path: str,
    serve: Callable[[Reply], FakeServer],
) -> None:
    server = serve(lambda seen: Response(b"<html>502 upstream hiccup{"))
    embedder = make(server.url)
    with pytest.raises(EmbeddingError) as exc:
        embedder.embed(["x"])
    name = embedder.name.split(":")[0]
    assert (
        one_line(exc)
        == f"{name} sent a malformed reply: expected JSON, got '<html>502 upstream hiccup{{'"
    )
    assert [s.path for s in server.seen] == [path]


BAD_OLLAMA = [
    ({"model": "m"}, "malformed reply: the reply has no embeddings list"),
    ({"embeddings": [[1.0, 0.0]]}, "returned 1 vectors for 2 texts"),
    ({"embeddings": [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]}, "returned 3 vectors for 2 texts"),
    ({"embeddings": [[1.0, 0.0], [1.0, 0.0, 0.0]]}, "vectors of different lengths (2, 3)"),
    ({"embeddings": [[1.0, 0.0], []]}, "embeddings[1] is not a list of numbers"),
    ({"embeddings": [[1.0, 0.0], [None, 1.0]]}, "embeddings[1] holds None, not a number"),
    ({"embeddings": [[1.0, 0.0], [True, 1.0]]}, "embeddings[1] holds True, not a number"),
    ({"embeddings": [[1.0, 0.0], [math.nan, 1.0]]}, "a vector with NaN or infinite values"),
    ({"embeddings": [[1.0, 0.0], [0.0, 0.0]]}, "returned an all-zero vector"),
]


@pytest.mark.parametrize(("body", "expected"), BAD_OLLAMA)
def test_ollama_vectors_that_cannot_be_trusted_are_refused(
    body: object, expected: str, serve: Callable[[Reply], FakeServer]
) -> None:
    server = serve(lambda seen: as_json(body))
    with pytest.raises(EmbeddingError) as exc:
        ollama(server.url).embed(["a", "b"])
    assert expected in one_line(exc)


def _data(*rows: tuple[object, object]) -> dict[str, object]:
    return {"data": [{"index": i, "embedding": e} for i, e in rows]}


BAD_OPENAI = [
    ({"object": "list"}, "malformed reply: the reply has no data list"),
    (_data((0, [1.0, 0.0])), "returned 1 vectors for 2 texts"),
    (_data((0, [1.0, 0.0]), (0, [0.0, 1.0])), "index 0 appears twice in data"),
    (_data((0, [1.0, 0.0]), (5, [0.0, 1.0])), "data indexes [0, 5] are not 0..1"),
    (_data((0, [1.0, 0.0]), ("1", [0.0, 1.0])), "data[1] has no integer index"),
    (_data((0, [1.0, 0.0]), (1, "AAAA")), "data[1].embedding is not a list of numbers"),
]


@pytest.mark.parametrize(("body", "expected"), BAD_OPENAI)
def test_openai_vectors_that_cannot_be_trusted_are_refused(
    body: object, expected: str, serve: Callable[[Reply], FakeServer]
) -> None:
    server = serve(lambda seen: as_json(body))
    with pytest.raises(EmbeddingError) as exc:
        openai(server.url).embed(["a", "b"])
    assert expected in one_line(exc)


def test_a_dimension_that_changes_between_batches_is_refused(
    serve: Callable[[Reply], FakeServer],
) -> None:
    def growing(seen: Seen) -> Response:
        dim = 3 + len(seen.body["input"])  # 5 for a batch of two, 4 for the last one
        return as_json({"embeddings": [[1.0] * dim for _ in seen.body["input"]]})

    server = serve(growing)
    progress: list[int] = []
    with pytest.raises(EmbeddingError) as exc:
        ollama(server.url, batch_size=2).embed(["a", "b", "c"], progress.append)
    assert "ollama:m changed dimension from 5 to 4 at text 3" in one_line(exc)
    assert progress == [2]
