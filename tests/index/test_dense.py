"""Vectors in the index, dense and hybrid retrieval, and query understanding, end to end.

Indexes are real builds on disk. The offline model embeds the small corpora;
where a test needs an embedder it controls (another dimension, a server that
goes away), it runs the real `ollama:` client against a server on 127.0.0.1
that speaks Ollama's `/api/embed` and embeds by hashing words.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from groundqa.embed import EmbedderOptions
from groundqa.engine import Engine
from groundqa.errors import EmbeddingError, IndexCorruptError, UsageError
from groundqa.evaluate.harness import compared_retrievers
from groundqa.index.dense import HNSW, VECTORS, DenseSettings, VectorIndex
from groundqa.index.manifest import current_build
from groundqa.ingestion import ingest
from tests.conftest import REGPACK, copy_index, write_small_corpus
from tests.fakes import FakeServer, Out, Reply, Seen, closed_port_url

# --- a local embedding server --------------------------------------------------------------


def _hash_vector(text: str, dim: int) -> list[float]:
    v = np.zeros(dim)
    for word in text.lower().split():
        v[int(hashlib.md5(word.encode()).hexdigest(), 16) % dim] += 1.0
    return v.tolist()


def hash_embeddings(state: dict[str, int]) -> Reply:
    """Ollama's `/api/embed`, embedding by hashing words into `state["dim"]` dimensions."""

    def reply(seen: Seen, out: Out) -> None:
        body = seen.body
        vectors = [_hash_vector(t, state["dim"]) for t in body["input"]]
        out.json({"model": body["model"], "embeddings": vectors})

    return reply


# --- the vector index ----------------------------------------------------------------------


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_exact_search_ranks_by_cosine_and_respects_the_filter() -> None:
    vectors = _unit(np.array([[1, 0], [0.9, 0.1], [0, 1], [-1, 0]], dtype=np.float32))
    index = VectorIndex(vectors)
    q = _unit(np.array([[1, 0.05]], dtype=np.float32))[0]
    assert [i for i, _ in index.search(q, 3)] == [0, 1, 2]
    allowed = np.array([False, False, True, True])
    assert [i for i, _ in index.search(q, 3, allowed)] == [2, 3]
    assert index.search(q, 2, np.zeros(4, dtype=bool)) == []


def test_vectors_round_trip_and_a_damaged_file_is_refused(tmp_path: Path) -> None:
    vectors = _unit(np.random.default_rng(0).normal(size=(20, 8)).astype(np.float32))
    VectorIndex(vectors).save(tmp_path)
    assert np.array_equal(VectorIndex.load(tmp_path).vectors, vectors)
    np.save(tmp_path / VECTORS, vectors.astype(np.float64))
    with pytest.raises(IndexCorruptError, match="not a float32 matrix"):
        VectorIndex.load(tmp_path)
    (tmp_path / VECTORS).write_bytes(b"garbage")
    with pytest.raises(IndexCorruptError, match="unreadable"):
        VectorIndex.load(tmp_path)


def test_hnsw_is_built_past_the_threshold_and_finds_the_exact_neighbours(tmp_path: Path) -> None:
    pytest.importorskip("faiss", reason="the ann extra (faiss-cpu) is not installed")
    rng = np.random.default_rng(1)
    vectors = _unit(rng.normal(size=(2000, 32)).astype(np.float32))
    settings = DenseSettings(ann_threshold=1000)
    index = VectorIndex.build(vectors, settings)
    assert index.ann is not None
    index.save(tmp_path)
    assert (tmp_path / HNSW).is_file()
    loaded = VectorIndex.load(tmp_path)
    queries = _unit(rng.normal(size=(50, 32)).astype(np.float32))
    overlap = []
    for q in queries:
        approx = {i for i, _ in loaded.search(q, 10)}
        exact = {i for i, _ in loaded.search(q, 10, exact=True)}
        overlap.append(len(approx & exact) / 10)
    assert np.mean(overlap) >= 0.95
    assert VectorIndex.build(vectors, DenseSettings(ann_threshold=5000)).ann is None


# --- vectors in a build --------------------------------------------------------------------


@pytest.fixture(scope="module")
def regpack_index(tmp_path_factory: pytest.TempPathFactory, regpack_build: Path) -> Path:
    index = tmp_path_factory.mktemp("dense") / "idx"
    copy_index(regpack_build, index)
    return index


@pytest.fixture(scope="module")
def engine(regpack_index: Path) -> Engine:
    return Engine.open(regpack_index)


def test_the_manifest_records_the_embedder_and_the_vectors_are_sealed(regpack_index: Path) -> None:
    engine = Engine.open(regpack_index)
    dense = engine.manifest.dense
    assert dense["embedder"] == "minilm" and dense["dim"] == 384
    assert dense["model_id"] == "all-MiniLM-L6-v2/onnx-int8"
    assert VECTORS in engine.manifest.files
    assert engine.retrievers == ("bm25", "dense", "hybrid")
    assert engine.default_retriever == "hybrid+weighted=0.5/0.5+defs"
    assert compared_retrievers(engine) == ["bm25", "dense", "hybrid", engine.default_retriever]


def test_dense_finds_a_paraphrase_that_shares_no_keyword(engine: Engine) -> None:
    question = "How far from a house must a wind generator be placed?"
    dense = engine.retrieve(question, k=3, retriever="dense")
    assert any("setback" in h.chunk.text.lower() for h in dense)
    assert all(h.retriever == "dense" for h in dense)
    assert [h.rank for h in dense] == [1, 2, 3]
    assert dense[0].score >= dense[1].score >= dense[2].score


def test_hybrid_fuses_both_rankings(engine: Engine) -> None:
    q = "penalty units for late NEER lodgement"
    bm25 = [h.chunk.chunk_id for h in engine.search(q, depth=100, retriever="bm25")]
    dense = [h.chunk.chunk_id for h in engine.search(q, depth=100, retriever="dense")]
    hybrid = engine.search(q, depth=5, retriever="hybrid")
    top = hybrid[0].chunk.chunk_id
    expected = 1 / (60 + bm25.index(top) + 1) + 1 / (60 + dense.index(top) + 1)
    assert hybrid[0].score == pytest.approx(expected)
    weighted = engine.search(q, depth=5, retriever="hybrid+weighted")
    assert weighted[0].retriever == "hybrid+weighted" and weighted[0].score <= 1.0


def test_filters_apply_to_dense_before_top_k(engine: Engine) -> None:
    hits = engine.retrieve(
        "protected trees", k=5, retriever="dense", filters={"state": "Westhaven"}
    )
    assert hits and all(h.chunk.metadata.get("state") == "Westhaven" for h in hits)


def test_acronyms_mined_from_the_corpus_expand_the_query(engine: Engine) -> None:
    assert "NEER" in engine.store.acronyms
    name = engine.store.acronyms["NEER"]
    assert "Reporting" in name
    with_expansion = engine.search("NEER threshold", depth=10, retriever="bm25+acr")
    without = engine.search("NEER threshold", depth=10, retriever="bm25")
    assert [h.chunk.chunk_id for h in with_expansion] != [h.chunk.chunk_id for h in without]


def test_cap_keeps_one_document_from_crowding_the_top_k(engine: Engine) -> None:
    q = "wind turbine"
    plain = engine.retrieve(q, k=5, retriever="hybrid")
    assert len({h.chunk.doc_id for h in plain}) == 1  # one document fills the list
    capped = engine.retrieve(q, k=5, retriever="hybrid+cap=2")
    assert len(capped) == 5
    docs = [h.chunk.doc_id for h in capped]
    assert max(docs.count(d) for d in docs) == 2 and len(set(docs)) >= 3
    assert capped[0].chunk.chunk_id == plain[0].chunk.chunk_id


def test_mmr_spreads_the_list_and_needs_vectors(engine: Engine, tmp_path: Path) -> None:
    q = "tree protection"
    plain = [h.chunk.chunk_id for h in engine.retrieve(q, k=5, retriever="hybrid")]
    spread = [h.chunk.chunk_id for h in engine.retrieve(q, k=5, retriever="hybrid+mmr=0.3")]
    assert plain[0] == spread[0] and plain != spread
    ingest([REGPACK], tmp_path / "lexical", dense=None)
    lexical = Engine.open(tmp_path / "lexical")
    with pytest.raises(UsageError, match="needs vectors and this index has none"):
        lexical.retrieve(q, retriever="bm25+mmr=0.5")


def test_place_filter_and_boost_use_the_corpus_gazetteer(engine: Engine) -> None:
    q = "Which trees are protected in Fennick?"
    filtered = engine.retrieve(q, k=10, retriever="hybrid+places=filter")
    assert all(h.chunk.metadata.get("area") in (None, "Fennick City") for h in filtered)
    boosted = engine.retrieve(q, k=3, retriever="hybrid+places=boost")
    assert boosted[0].chunk.metadata.get("area") == "Fennick City"


def test_an_index_without_vectors_serves_bm25_only(tmp_path: Path) -> None:
    ingest([write_small_corpus(tmp_path / "c")], tmp_path / "idx", dense=None)
    engine = Engine.open(tmp_path / "idx")
    assert engine.retrievers == ("bm25",) and engine.default_retriever == "bm25+defs"
    assert engine.manifest.dense == {} and VECTORS not in engine.manifest.files
    with pytest.raises(UsageError, match="needs vectors and this index has none"):
        engine.retrieve("trains", retriever="hybrid")
    assert engine.retrieve("trains")[0].retriever == "bm25+defs"


def _minilm_index(tmp_path: Path) -> Path:
    """A small index built with the default model, to borrow its query embedder."""
    index = tmp_path / "minilm"
    ingest([write_small_corpus(tmp_path / "c2")], index)
    return index


# --- bad input -----------------------------------------------------------------------------


def test_unknown_embedder_fails_before_anything_is_written(tmp_path: Path) -> None:
    corpus = write_small_corpus(tmp_path / "c")
    with pytest.raises(
        UsageError, match="unknown embedder 'bert'; available: minilm, ollama, openai"
    ):
        ingest([corpus], tmp_path / "idx", dense=DenseSettings("bert"))
    assert not (tmp_path / "idx").exists()


def test_unreachable_embedder_keeps_the_previous_index(tmp_path: Path) -> None:
    corpus = write_small_corpus(tmp_path / "c")
    ingest([corpus], tmp_path / "idx", dense=None)
    before = current_build(tmp_path / "idx")
    url = closed_port_url()
    with pytest.raises(EmbeddingError, match=f"cannot reach ollama at {url}/api/embed"):
        ingest(
            [corpus],
            tmp_path / "idx",
            dense=DenseSettings("ollama:nomic-embed-text"),
            embedder_options=EmbedderOptions(base_url=url),
        )
    assert current_build(tmp_path / "idx") == before
    assert Engine.open(tmp_path / "idx").retrieve("trains")


def test_an_index_refuses_queries_from_another_model_or_dimension(
    tmp_path: Path, serve: Callable[[Reply], FakeServer]
) -> None:
    corpus = write_small_corpus(tmp_path / "c")
    state = {"dim": 16}
    url = serve(hash_embeddings(state)).url
    ingest(
        [corpus],
        tmp_path / "idx",
        dense=DenseSettings("ollama:hash16"),
        embedder_options=EmbedderOptions(base_url=url),
    )
    engine = Engine.open(tmp_path / "idx", EmbedderOptions(base_url=url))
    assert engine.manifest.dense["model_id"] == "ollama:hash16"
    hits = engine.retrieve("last train back from Portmere", retriever="dense")
    assert hits[0].chunk.section_path[-1] == "Getting there"
    state["dim"] = 8  # the server now answers with another model's vectors
    with pytest.raises(EmbeddingError, match="the query vector has 8 dimensions, the index 16"):
        engine.retrieve("last train", retriever="dense")
    # The model is named in the manifest, and a query embedder must match it.
    manifest = json.loads((current_build(tmp_path / "idx") / "manifest.json").read_text())
    assert manifest["dense"]["embedder"] == "ollama:hash16"
    engine.retriever._embedder = Engine.open(_minilm_index(tmp_path)).retriever.query_embedder()
    with pytest.raises(EmbeddingError, match="embedded with 'ollama:hash16', the query with"):
        engine.retrieve("last train", retriever="dense")


@pytest.mark.parametrize(
    ("question", "message"),
    [
        ("", "the question is empty"),
        ("   ", "the question is empty"),
        ("x" * 100_000, "the question is 100000 characters; the limit is 2000"),
    ],
)
def test_empty_and_oversized_queries_are_refused_before_embedding(
    engine: Engine, question: str, message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        engine.retrieve(question, retriever="dense")


def ratings(keyword: str) -> Reply:
    """Ollama's `/api/chat`, rating a passage 9 when it holds `keyword`, else 1."""

    def reply(seen: Seen, out: Out) -> None:
        prompt = "\n".join(m["content"] for m in seen.body["messages"])
        message = {"role": "assistant", "content": "9" if keyword in prompt.lower() else "1"}
        out.json({"model": seen.body["model"], "message": message, "done": True})

    return reply


def test_an_llm_reranker_reorders_what_retrieval_found(
    engine: Engine, serve: Callable[[Reply], FakeServer]
) -> None:
    from groundqa.generate import GeneratorOptions

    q = "What rules apply to wind farms?"
    plain = engine.search(q, depth=20, retriever="bm25")
    server = serve(ratings("noise"))
    options = GeneratorOptions(base_url=server.url)
    reranked = engine.search(q, depth=5, retriever="bm25", reranker="llm:ollama:m", options=options)
    answer = engine.ask(q, k=3, retriever="bm25", reranker="llm:ollama:m", options=options)
    assert len(server.seen) == len(plain) + min(len(plain), 20)  # the best 20, once per call
    noisy = [h.chunk.chunk_id for h in plain if "noise" in h.chunk.index_text().lower()]
    assert noisy and [h.chunk.chunk_id for h in reranked[: len(noisy)]] == noisy[:5]
    assert all(h.retriever == "bm25+rerank" for h in reranked) and reranked[0].score == 9
    assert "noise" in answer.passages[0].chunk.index_text().lower()


def test_defs_lifts_the_passage_that_defines_the_term(tmp_path: Path) -> None:
    corpus = tmp_path / "defs"
    corpus.mkdir()
    (corpus / "uses.md").write_text(
        "# Turbine siting\n\n## Distances\n\nThe setback from a road is 300 metres and the "
        "setback from a dwelling is 1,500 metres, measured from the tower base.\n",
        encoding="utf-8",
    )
    (corpus / "terms.md").write_text(
        "# Planning terms\n\n## Words used in this code\n\nA setback is the least distance "
        "between a structure and a boundary, road or dwelling. Consent is a written approval.\n",
        encoding="utf-8",
    )
    ingest([corpus], tmp_path / "idx", dense=None)
    engine = Engine.open(tmp_path / "idx")
    question = "What is a setback?"
    plain = engine.retrieve(question, k=2, retriever="bm25")
    lifted = engine.retrieve(question, k=2, retriever="bm25+defs")
    assert plain[0].chunk.doc_id == "uses.md"
    assert lifted[0].chunk.doc_id == "terms.md"
    assert lifted[0].score == pytest.approx(2 * plain[1].score)
    # A question that is not a definition question leaves the ranking alone.
    other = "How far is the setback from a dwelling?"
    assert [h.chunk.chunk_id for h in engine.retrieve(other, k=2, retriever="bm25+defs")] == [
        h.chunk.chunk_id for h in engine.retrieve(other, k=2, retriever="bm25")
    ]


@pytest.mark.slow  # in `make test-slow`, which CI runs
def test_an_edit_embeds_only_the_changed_chunks_and_answers_as_a_fresh_build(
    tmp_path: Path,
) -> None:
    import shutil

    corpus = tmp_path / "corpus"
    shutil.copytree(REGPACK, corpus)
    index = tmp_path / "idx"
    first = ingest([corpus], index)
    chunks = first.counts["chunks"]
    assert first.timings_s["embedded_chunks"] == chunks  # nothing to reuse the first time
    assert "kept their vectors" not in first.message
    changed = sorted(corpus.glob("*.md"))[0]
    changed.write_text(
        changed.read_text("utf-8") + "\n\nA new closing paragraph about heron nesting sites.\n",
        "utf-8",
    )
    second = ingest([corpus], index)
    embedded = int(second.timings_s["embedded_chunks"])
    assert 1 <= embedded <= 3  # the changed document's changed chunks only
    assert second.timings_s["reused_vectors"] == second.counts["chunks"] - embedded
    assert f"embedded {embedded} of {second.counts['chunks']} chunks" in second.message

    fresh = tmp_path / "fresh"
    ingest([corpus], fresh)
    updated, rebuilt = Engine.open(index), Engine.open(fresh)
    assert updated.store.vectors is not None and rebuilt.store.vectors is not None
    assert np.allclose(updated.store.vectors.vectors, rebuilt.store.vectors.vectors, atol=1e-5)
    for question in ["heron nesting sites", "turbine setback from a dwelling"]:
        a = [h.chunk.chunk_id for h in updated.search(question, 10, retriever="dense")]
        assert a == [h.chunk.chunk_id for h in rebuilt.search(question, 10, retriever="dense")]

    # Another model's vectors are never reused.
    from groundqa.ingestion import DirectoryTarget

    class Model:
        def __init__(self, model_id: str) -> None:
            self.model_id = model_id

    target = DirectoryTarget(index)
    assert target._known_vectors(Model(updated.manifest.dense["model_id"])) == {}  # type: ignore[arg-type]
    assert target.current_manifest() is not None  # the build it may reuse, verified
    assert target._known_vectors(Model(updated.manifest.dense["model_id"]))  # type: ignore[arg-type]
    assert target._known_vectors(Model("another-model")) == {}  # type: ignore[arg-type]


def test_ef_search_grows_with_the_index_through_the_measured_points() -> None:
    from groundqa.index.dense import ann_ef_search

    assert ann_ef_search(128, 5_000) == 128  # small indexes keep the build's setting
    assert ann_ef_search(128, 100_000) == 128  # measured: 0.98 of exact recall@10
    assert ann_ef_search(128, 1_000_000) == 1000  # measured at 1M
    sizes = [100_000, 200_000, 500_000, 1_000_000, 5_000_000]
    grown = [ann_ef_search(128, n) for n in sizes]
    assert grown == sorted(grown) and 128 < grown[1] < grown[2] < 1000
    assert grown[-1] == 1000  # capped at pgvector's limit
    assert ann_ef_search(600, 100_000) == 600  # a higher setting in the build is kept


def test_postgresql_searches_its_graph_wider_than_the_directory_past_100k() -> None:
    from groundqa.index.dense import PG_WIDTH_MAX, ann_ef_search, pg_search_width

    assert pg_search_width(128, 5_000) == 128  # small indexes keep the build's setting
    assert pg_search_width(128, 100_000) == 128 == ann_ef_search(128, 100_000)
    assert pg_search_width(128, 1_000_000) == 1500  # measured at 1M (bench/pg_ann.py)
    sizes = [200_000, 500_000, 1_000_000, 3_000_000, 10**9]
    widths = [pg_search_width(128, n) for n in sizes]
    assert widths == sorted(widths)
    assert all(w > ann_ef_search(128, n) for w, n in zip(widths, sizes, strict=True))
    assert widths[-1] == PG_WIDTH_MAX  # the rows pgvector's iterative scan reads by default
    assert pg_search_width(2000, 100_000) == 2000  # a higher setting in the build is kept


def test_a_postgresql_build_widens_ef_construction_with_its_size() -> None:
    pytest.importorskip("psycopg", reason="the PostgreSQL target needs psycopg")
    from groundqa.index.postgres.target import EF_CONSTRUCTION_MAX, pg_ef_construction

    assert pg_ef_construction(200, 7_280) == pg_ef_construction(200, 100_000) == 200
    assert pg_ef_construction(200, 1_000_000) == 400  # measured at 1M
    sizes = [100_000, 300_000, 1_000_000, 10_000_000, 10**9]
    grown = [pg_ef_construction(200, n) for n in sizes]
    assert grown == sorted(grown) and 200 < grown[1] < 400 < grown[3]
    assert grown[-1] == EF_CONSTRUCTION_MAX  # pgvector's limit
    assert pg_ef_construction(64, 50_000) == 64  # a small build keeps its own setting
    assert pg_ef_construction(600, 1_000_000) == 600  # a higher setting is kept


def test_inspect_and_health_name_the_hnsw_graph_a_directory_searches(tmp_path: Path) -> None:
    pytest.importorskip("faiss", reason="the ann extra (faiss-cpu) is not installed")
    from groundqa.index.dense import DenseSettings

    index = tmp_path / "idx"
    ingest([REGPACK], index, dense=DenseSettings(ann_threshold=10))
    store = Engine.open(index).store
    assert store.vector_engine == {
        "search": "hnsw",
        "engine": "faiss",
        "m": 32,
        "ef_construction": 200,
        "width": 128,
        "note": "faiss HNSW, m 32, ef_construction 200, searched 128 wide; "
        "filtered searches are exact",
    }


def test_a_query_vector_is_kept_until_the_retriever_forgets_it(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    retriever = engine.retriever
    embedder = retriever.query_embedder()
    original = embedder.embed
    calls: list[list[str]] = []

    def counted(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        return original(texts)

    monkeypatch.setattr(embedder, "embed", counted)
    question = "How tall may a fence along a boundary be?"
    retriever.forget_queries()
    first = retriever.embed(question)
    assert retriever.embed(question) is first and calls == [[question]]
    retriever.forget_queries()
    again = retriever.embed(question)
    assert calls == [[question], [question]] and again is not first
    assert np.allclose(again, first)
