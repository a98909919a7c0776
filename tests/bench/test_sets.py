"""bench/sets.py reads each shared data set in one place: the ClapNQ corpus it writes, the
ObliQA dev questions and their gold passages, and the corpora the benchmarks ask.

The ClapNQ reader is checked on a small folder written here; the others read ../shared
and skip with a message where it is absent.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, need_shared

sys.path.insert(0, str(ROOT / "bench"))

import sets


def _write_half(folder: Path) -> None:
    passage = {"title": "Tides", "text": "The tide turns twice a day."}
    other = {"title": "Moon", "text": "The moon pulls the sea."}
    answerable = [
        {"id": "a1", "input": "How often does the tide turn?", "passages": [passage]},
        {"id": "a2", "input": "What pulls the sea?", "passages": [other, passage]},
    ]
    unanswerable = [{"id": "u1", "input": "How deep is the sea?", "passages": [other]}]
    folder.mkdir(parents=True, exist_ok=True)
    for name, items in (("answerable", answerable), ("unanswerable", unanswerable)):
        lines = "".join(json.dumps(item) + "\n" for item in items)
        (folder / f"clapnq_dev_{name}.jsonl").write_text(lines, encoding="utf-8")


def test_clapnq_corpus_holds_each_passage_once_and_labels_by_file(tmp_path: Path) -> None:
    _write_half(tmp_path / "half")
    corpus, probes = sets.clapnq_corpus(tmp_path / "half", tmp_path / "work")
    records = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    assert [r["title"] for r in records] == ["Tides", "Moon"]
    tides, moon = (r["_id"] for r in records)
    assert [(p.id, p.kind, p.expected) for p in probes] == [
        ("clapnq-a1", "answerable", (tides,)),
        ("clapnq-a2", "answerable", (moon, tides)),
        ("clapnq-u1", "near_miss", ()),
    ]


def test_clapnq_corpus_is_rewritten_only_when_its_text_changes(tmp_path: Path) -> None:
    _write_half(tmp_path / "half")
    corpus, _ = sets.clapnq_corpus(tmp_path / "half", tmp_path / "work")
    written = corpus.stat().st_mtime_ns
    corpus, _ = sets.clapnq_corpus(tmp_path / "half", tmp_path / "work")
    assert corpus.stat().st_mtime_ns == written  # builds over it stay current
    (tmp_path / "half" / "clapnq_dev_unanswerable.jsonl").write_text("", encoding="utf-8")
    corpus, probes = sets.clapnq_corpus(tmp_path / "half", tmp_path / "work")
    assert [p.kind for p in probes] == ["answerable", "answerable"]
    assert len(corpus.read_text(encoding="utf-8").splitlines()) == 2


def test_obliqa_dev_questions_carry_their_gold_passages() -> None:
    need_shared("bench", "obliqa")
    dev = sets.obliqa()
    assert dev is not None and dev.documents.is_dir()
    probes = dev.probes()
    assert len(probes) == len(dev.queries) == len(dev.qrels)
    assert [p.id for p in probes] == sorted(dev.queries)
    assert all(p.kind == "answerable" and p.expected for p in probes)
    assert all(":" in passage for p in probes for passage in p.expected)


def test_corpora_name_what_ingest_reads_and_what_is_asked() -> None:
    need_shared("corpora", "city_guides")
    found = sets.corpora()
    assert next(iter(found)) == "example corpus"
    assert "city guides" in found
    for name, (sources, fmt, probes) in found.items():
        assert sources and all(s.exists() for s in sources), name
        assert fmt in {"auto", "obliqa", "beir"}, name
        assert probes and len({p.id for p in probes}) == len(probes), name


def test_scifact_claims_cite_abstracts_of_the_corpus() -> None:
    need_shared("bench", "scifact")
    found = sets.scifact_claims("train")
    assert found is not None
    corpus, claims = found
    assert len(corpus) > 5000 and len(claims) > 800
    cited = [str(d) for c in claims for d in c["cited_doc_ids"]]
    assert cited and sum(d in corpus for d in cited) / len(cited) > 0.95
    assert all(c["claim"].strip() and isinstance(c["evidence"], dict) for c in claims)


def test_built_corpora_name_the_build_each_keeps_and_ask_only_answerable_questions() -> None:
    need_shared("bench", "scifact")
    found = sets.built_corpora()
    assert found["example corpus"][0] == "regpack"
    assert found["SciFact test"][:3] == ("scifact", [sets.scifact("test").corpus], "beir")
    names = [build for build, *_ in found.values()]
    assert len(set(names)) == len(names)
    assert all(p.answerable for *_, probes in found.values() for p in probes)


def test_a_set_that_is_not_there_is_none(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import _common

    monkeypatch.setattr(_common, "SHARED", tmp_path / "nowhere")
    assert sets.obliqa() is None
    assert sets.natech() is None
    assert sets.city_guides() is None
    assert sets.clapnq() is None
    assert sets.scifact("test") is None
    assert sets.scifact_claims() is None
    assert list(sets.corpora()) == ["example corpus"]
    assert list(sets.built_corpora()) == ["example corpus"]
