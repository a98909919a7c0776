"""Rerankers: the registry, the pure reordering, and both backends run for real.

`llm:` runs its real client code against small HTTP servers on 127.0.0.1 that
answer as Ollama's `/api/chat` and OpenAI's `/v1/chat/completions` do, rating
each passage by a rule the test controls. `cross-encoder:` runs a tiny randomly
initialised BERT cross-encoder built in a temp dir, only where
sentence-transformers and torch are installed (not in the default dev
environment). Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from groundqa.errors import GenerationError, UsageError
from groundqa.generate import GeneratorOptions
from groundqa.models import Chunk, Hit
from groundqa.retrieve.rerank import (
    CrossEncoderReranker,
    LLMReranker,
    available,
    get_reranker,
    parse_rating,
    reorder,
)
from tests.fakes import FakeServer, Out, Seen, closed_port_url
from tests.fakes import Reply as WireReply

SECRET = "sk-test-DO-NOT-LEAK-4242"
QUESTION = "When do the bins go out to the kerb?"

# (chunk id, section, text); the fake model rates them by RULES below.
PASSAGES = (
    ("offices", "Council offices", "The customer service centre opens at 9am on weekdays."),
    ("rubbish", "Hard rubbish", "Each household may book two hard rubbish collections a year."),
    ("bins", "Collection days", "Bins must be placed at the kerb after 5pm the day before."),
    ("garden", "Garden waste", "Green bins go to the kerb every second Monday."),
    ("library", "Library", "The library lends books for three weeks."),
)

# The first rule whose keyword the passage holds gives the reply; else "2".
RULES = (
    ("Green bins", "Rating: 9/10"),
    ("kerb", "9"),
    ("hard rubbish", "I cannot tell from this passage."),
)
EXPECTED_ORDER = ["bins", "garden", "offices", "library", "rubbish"]
EXPECTED_SCORES = [9.0, 9.0, 2.0, 2.0, 0.0]


def _hits() -> list[Hit]:
    hits = []
    for n, (cid, section, text) in enumerate(PASSAGES, 1):
        chunk = Chunk(cid, f"d-{cid}", f"d-{cid}#s", "Fennick Council", (section,), text, "")
        hits.append(Hit(chunk, 10.0 - n, n, "bm25"))
    return hits


# --- the registry ---------------------------------------------------------------------------


@pytest.mark.parametrize("spec", ["none", "", "  ", " none "])
def test_none_or_empty_means_no_reranker(spec: str) -> None:
    assert get_reranker(spec) is None


def test_available_lists_every_spec_form() -> None:
    assert available() == ["none", "cross-encoder:PATH", "llm:GENERATOR_SPEC", "reader"]


@pytest.mark.parametrize("spec", ["colbert:x", "none:x"])
def test_an_unknown_reranker_lists_the_available_ones(spec: str) -> None:
    with pytest.raises(UsageError) as exc:
        get_reranker(spec)
    assert exc.value.message == (
        f"unknown reranker {spec!r}; available: none, cross-encoder:PATH, llm:GENERATOR_SPEC, reader"
    )


def test_cross_encoder_needs_an_existing_directory(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(UsageError, match=re.escape(f"{missing} does not exist")):
        get_reranker(f"cross-encoder:{missing}")
    afile = tmp_path / "model.bin"
    afile.write_bytes(b"")
    with pytest.raises(UsageError, match=re.escape(f"{afile} is not a directory")):
        get_reranker(f"cross-encoder:{afile}")
    with pytest.raises(UsageError, match="name a local model directory"):
        get_reranker("cross-encoder:")


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is not None,
    reason="sentence-transformers is installed here",
)
def test_cross_encoder_without_sentence_transformers_names_the_install(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as exc:
        get_reranker(f"cross-encoder:{tmp_path}")
    assert exc.value.message == (
        "install sentence-transformers (and torch==2.13.0 CPU) to use cross-encoder reranking"
    )


@pytest.mark.parametrize(
    "spec", ["llm:extractive", "llm:anthropic:claude-3-5-haiku", "llm:gguf:/m.gguf", "llm:"]
)
def test_llm_with_an_unsupported_generator_says_which_are_supported(spec: str) -> None:
    with pytest.raises(UsageError, match="llm:ollama:MODEL, llm:openai:MODEL"):
        get_reranker(spec)


def test_llm_without_a_model_gives_an_example() -> None:
    with pytest.raises(UsageError, match=re.escape("name a model, e.g. llm:ollama:llama3.1:8b")):
        get_reranker("llm:ollama:")


def test_backends_load_lazily_and_generation_not_at_all() -> None:
    # Retrieval comes before generation: the reranker shares `groundqa.providers` with the
    # generators instead of importing them.
    code = (
        "import sys, groundqa.retrieve.rerank as r; "
        "r.get_reranker('llm:ollama:m'); r.get_reranker('llm:openai:m'); "
        "print(sorted(m for m in ('sentence_transformers', 'torch', 'groundqa.generate') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- reorder: the pure part -----------------------------------------------------------------


def test_reorder_sorts_best_first_keeping_ties_in_input_order() -> None:
    hits = _hits()
    out = reorder(hits, [2.0, 0.0, 9.0, 9.0, 2.0])
    assert [h.chunk.chunk_id for h in out] == EXPECTED_ORDER
    assert [h.score for h in out] == EXPECTED_SCORES
    assert [h.rank for h in out] == [1, 2, 3, 4, 5]
    assert {h.retriever for h in out} == {"bm25+rerank"}
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]  # the input is left as it was


def test_reorder_cuts_to_top_n() -> None:
    scores = [2.0, 0.0, 9.0, 9.0, 2.0]
    assert [h.chunk.chunk_id for h in reorder(_hits(), scores, 2)] == ["bins", "garden"]
    assert reorder(_hits(), scores, 0) == []
    assert len(reorder(_hits(), scores, 50)) == 5
    with pytest.raises(UsageError, match="top_n must be 0 or more"):
        reorder(_hits(), scores, -1)
    with pytest.raises(ValueError, match="4 scores for 5 hits"):
        reorder(_hits(), scores[:4])


@pytest.mark.parametrize(
    ("reply", "rating"),
    [
        ("9", 9),
        (" 10\n", 10),
        ("0", 0),
        ("Rating: 7/10", 7),
        ("12, no: 4", 4),
        ("3.5", None),
        ("eleven", None),
        ("", None),
    ],
)
def test_parse_rating_takes_the_first_whole_number_from_0_to_10(
    reply: str, rating: int | None
) -> None:
    assert parse_rating(reply) == rating


# --- llm: against fake Ollama and OpenAI servers --------------------------------------------


Reply = Callable[[Seen], tuple[int, Any]]


def answering(reply: Reply) -> WireReply:
    """The shared fake server's reply for one that returns (status, JSON object)."""

    def answer(seen: Seen, out: Out) -> None:
        status, obj = reply(seen)
        out.json(obj, status)

    return answer


@pytest.fixture
def serve(serve: Callable[[WireReply], FakeServer]) -> Callable[[Reply], FakeServer]:
    return lambda reply: serve(answering(reply))


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_API_KEY", "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)


def rate_by_rule(seen: Seen) -> str:
    """The reply RULES give the passage fenced in the prompt (the question is not read)."""
    user = seen.body["messages"][-1]["content"]
    fenced = re.search(r"<<<SOURCE 1\n(.*)\nSOURCE 1>>>", user, re.S)
    assert fenced, user
    return next((reply for keyword, reply in RULES if keyword in fenced.group(1)), "2")


def ollama_reply(seen: Seen) -> tuple[int, Any]:
    message = {"role": "assistant", "content": rate_by_rule(seen)}
    return 200, {
        "model": seen.body["model"],
        "created_at": "2025-01-01T00:00:00Z",
        "message": message,
        "done": True,
        "done_reason": "stop",
    }


def openai_reply(seen: Seen) -> tuple[int, Any]:
    message = {"role": "assistant", "content": rate_by_rule(seen)}
    return 200, {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": seen.body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }


@dataclass(frozen=True)
class Backend:
    spec: str
    path: str  # what the base URL is, beyond the server's root
    reply: Reply

    def options(self, url: str) -> GeneratorOptions:
        return GeneratorOptions(base_url=url + self.path, timeout_s=5)


OLLAMA = Backend("llm:ollama:llama3.1:8b", "", ollama_reply)
OPENAI = Backend("llm:openai:gpt-4o-mini", "/v1", openai_reply)
BACKENDS = [pytest.param(OLLAMA, id="ollama"), pytest.param(OPENAI, id="openai")]


def _llm(backend: Backend, url: str) -> LLMReranker:
    reranker = get_reranker(backend.spec, backend.options(url))
    assert isinstance(reranker, LLMReranker)
    return reranker


@pytest.mark.parametrize("backend", BACKENDS)
def test_llm_reranks_by_the_models_ratings(
    backend: Backend, serve: Callable[[Reply], FakeServer]
) -> None:
    server = serve(backend.reply)
    reranker = _llm(backend, server.url)
    assert reranker.name == backend.spec
    out = reranker.rerank(QUESTION, _hits())
    # 9, 9 (a tie: input order), 2, 2 (a tie), then the unreadable reply scored 0
    assert [h.chunk.chunk_id for h in out] == EXPECTED_ORDER
    assert [h.score for h in out] == EXPECTED_SCORES
    assert [h.rank for h in out] == [1, 2, 3, 4, 5]
    assert {h.retriever for h in out} == {"bm25+rerank"}
    assert (reranker.calls, reranker.unparsed) == (5, 1)
    assert len(server.seen) == 5


@pytest.mark.parametrize("backend", BACKENDS)
def test_llm_cuts_to_top_n_after_rating_every_passage(
    backend: Backend, serve: Callable[[Reply], FakeServer]
) -> None:
    server = serve(backend.reply)
    out = _llm(backend, server.url).rerank(QUESTION, _hits(), top_n=2)
    assert [(h.chunk.chunk_id, h.rank) for h in out] == [("bins", 1), ("garden", 2)]
    assert len(server.seen) == 5


@pytest.mark.parametrize("backend", BACKENDS)
def test_llm_with_no_hits_calls_no_model(
    backend: Backend, serve: Callable[[Reply], FakeServer]
) -> None:
    server = serve(backend.reply)
    reranker = _llm(backend, server.url)
    assert reranker.rerank(QUESTION, []) == []
    assert (server.seen, reranker.calls) == ([], 0)


def _check_prompt(seen: Seen, hit: Hit) -> None:
    system, user = seen.body["messages"]
    assert system["role"] == "system" and "from 0 to 10" in system["content"]
    assert "number only" in system["content"]
    assert user["role"] == "user"
    fence = f"<<<SOURCE 1\n{hit.chunk.text}\nSOURCE 1>>>"
    assert fence in user["content"]
    assert "[Source 1: Fennick Council > " in user["content"]
    assert f"Question: {QUESTION}" in user["content"]


def test_ollama_request_shape(serve: Callable[[Reply], FakeServer]) -> None:
    server = serve(ollama_reply)
    hits = _hits()
    _llm(OLLAMA, server.url).rerank(QUESTION, hits)
    for seen, hit in zip(server.seen, hits, strict=True):
        assert seen.path == "/api/chat"
        body = seen.body
        assert body["model"] == "llama3.1:8b" and body["stream"] is False
        assert body["options"]["temperature"] == 0
        assert 0 < body["options"]["num_predict"] <= 16
        _check_prompt(seen, hit)


def test_openai_request_shape_and_bearer_key(
    serve: Callable[[Reply], FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    server = serve(openai_reply)
    hits = _hits()
    _llm(OPENAI, server.url).rerank(QUESTION, hits)
    for seen, hit in zip(server.seen, hits, strict=True):
        assert seen.path == "/v1/chat/completions"
        assert seen.headers["authorization"] == f"Bearer {SECRET}"
        body = seen.body
        assert body["model"] == "gpt-4o-mini" and body["stream"] is False
        assert body["temperature"] == 0
        assert 0 < body["max_tokens"] <= 16
        _check_prompt(seen, hit)


def test_ollama_host_is_read_as_the_generator_reads_it(
    serve: Callable[[Reply], FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = serve(ollama_reply)
    monkeypatch.setenv("OLLAMA_HOST", server.url.removeprefix("http://"))
    reranker = get_reranker("llm:ollama:llama3.1:8b")
    assert reranker is not None
    assert [h.chunk.chunk_id for h in reranker.rerank(QUESTION, _hits())] == EXPECTED_ORDER


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_unreachable_server_is_a_generation_error_naming_the_url(backend: Backend) -> None:
    url = closed_port_url()
    reranker = _llm(backend, url)
    with pytest.raises(GenerationError) as exc:
        reranker.rerank(QUESTION, _hits())
    endpoint = "/api/chat" if backend is OLLAMA else "/v1/chat/completions"
    assert exc.value.message == (
        f"cannot reach reranker {backend.spec} at {url}{endpoint}; is it running?"
    )


def test_a_401_names_the_key_variable_and_never_the_key(
    serve: Callable[[Reply], FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    server = serve(lambda seen: (401, {"error": {"message": f"bad key {SECRET}"}}))
    with pytest.raises(GenerationError) as exc:
        _llm(OPENAI, server.url).rerank(QUESTION, _hits())
    assert "HTTP 401" in exc.value.message and "check OPENAI_API_KEY" in exc.value.message
    assert SECRET not in exc.value.message


def test_a_reply_without_a_message_is_malformed(serve: Callable[[Reply], FakeServer]) -> None:
    server = serve(lambda seen: (200, {"model": "m", "done": True}))
    with pytest.raises(
        GenerationError, match=re.escape("malformed reply: the reply has no message.content")
    ):
        _llm(OLLAMA, server.url).rerank(QUESTION, _hits())


# --- cross-encoder: a tiny real model -------------------------------------------------------

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    *sorted(
        {
            w.strip(".,?>").lower()
            for text in (QUESTION, *(f"Fennick Council > {s} {t}" for _, s, t in PASSAGES))
            for w in text.split()
        }
        - {""}
    ),
]


def _tiny_cross_encoder(folder: Path, labels: int = 1) -> Path:
    """A 2-layer BERT with a `labels`-score head, random weights, saved as a local model folder."""
    torch = pytest.importorskip("torch", reason="cross-encoder reranking needs torch")
    transformers = pytest.importorskip("transformers", reason="needs transformers")
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    tokenizer = transformers.BertTokenizerFast(vocab_file=str(vocab))
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=labels,
        initializer_range=0.5,  # spreads the random scores so the order is not a near-tie
    )
    model_dir = folder / "model"
    transformers.BertForSequenceClassification(config).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    return model_dir


@pytest.mark.slow
def test_cross_encoder_reranks_by_the_models_own_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    st = pytest.importorskip(
        "sentence_transformers", reason="cross-encoder reranking needs sentence-transformers"
    )
    pytest.importorskip("torch", reason="cross-encoder reranking needs torch")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    path = _tiny_cross_encoder(tmp_path)

    reranker = get_reranker(f"cross-encoder:{path}")
    assert isinstance(reranker, CrossEncoderReranker)
    assert reranker.name == f"cross-encoder:{path}"
    assert "HF_HUB_OFFLINE" not in os.environ  # set only while the model loads

    hits = _hits()
    out = reranker.rerank(QUESTION, hits)

    pairs = [(QUESTION, h.chunk.index_text()) for h in hits]
    expected = [float(s) for s in st.CrossEncoder(str(path)).predict(pairs)]
    assert max(expected) - min(expected) > 1e-3
    order = sorted(range(len(hits)), key=lambda i: -expected[i])
    assert [h.chunk.chunk_id for h in out] == [hits[i].chunk.chunk_id for i in order]
    assert [h.score for h in out] == pytest.approx([expected[i] for i in order], abs=1e-6)
    assert [h.rank for h in out] == [1, 2, 3, 4, 5]
    assert {h.retriever for h in out} == {"bm25+rerank"}
    assert [h.chunk.chunk_id for h in reranker.rerank(QUESTION, hits, top_n=2)] == [
        hits[i].chunk.chunk_id for i in order[:2]
    ]
    assert reranker.rerank(QUESTION, []) == []


@pytest.mark.slow
def test_cross_encoder_refuses_a_folder_without_a_model_or_with_many_labels(
    tmp_path: Path,
) -> None:
    pytest.importorskip(
        "sentence_transformers", reason="cross-encoder reranking needs sentence-transformers"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UsageError, match=re.escape(f"cannot load a model from {empty}")):
        get_reranker(f"cross-encoder:{empty}")
    classifier = _tiny_cross_encoder(tmp_path, labels=2)
    with pytest.raises(
        UsageError, match=re.escape("has 2 labels; a reranker needs one relevance score")
    ):
        get_reranker(f"cross-encoder:{classifier}")
