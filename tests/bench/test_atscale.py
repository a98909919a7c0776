"""bench/atscale.py makes the corpora the scale benchmarks grow: the made-up one is checked
here at a small size (the realistic one reads SciFact's vectors: bench/realistic.py)."""

from __future__ import annotations

import sys

import numpy as np

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import atscale


def test_the_made_up_corpus_is_the_same_for_a_size_and_shaped_as_ingest_writes_it() -> None:
    chunks, vectors, queries = atscale.synthetic(60)
    again, vectors_again, _ = atscale.synthetic(60)
    assert [c.text for c in chunks] == [c.text for c in again]
    assert np.array_equal(vectors, vectors_again)
    assert len(chunks) == 60 and vectors.shape == (60, atscale.DIM)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # five parts to a document, each its own section
    assert chunks[7].doc_id == "d1" and chunks[7].section_id == "d1#2"
    assert all(len(c.text.split()) == atscale.WORDS_PER_CHUNK for c in chunks)
    assert len(queries) == atscale.QUERIES
    words, vector = queries[0]
    assert 3 <= len(words) <= 5 and vector.shape == (atscale.DIM,)


def test_the_lower_bound_sits_below_the_mean_by_the_spread() -> None:
    assert atscale.lower_bound([]) == 0.0
    assert atscale.lower_bound([0.9]) == 0.9
    assert atscale.lower_bound([1.0] * 10) == 1.0
    spread = [1.0, 0.8] * 50
    assert atscale.lower_bound(spread) < 0.9
    assert atscale.lower_bound(spread) > atscale.lower_bound(spread[:10])
