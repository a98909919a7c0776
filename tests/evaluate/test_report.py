"""Reports from a real harness run on a small real index: files, tables, JSON and plots."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from groundqa.engine import Engine
from groundqa.errors import UsageError
from groundqa.evaluate import EvalReport, evaluate_probes, load_probes, summarise
from groundqa.evaluate.harness import ProbeResult
from groundqa.evaluate.probes import Probe
from groundqa.evaluate.report import render_markdown, write_beir_report, write_probe_report
from groundqa.ingestion import ingest
from tests.conftest import write_small_corpus

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
KS = (1, 2, 3, 5)

PROBES: list[dict[str, Any]] = [
    {
        "id": "alder-train",
        "question": "When does the last train back from Alderby leave?",
        "expected": ["alderby.md#Getting there"],
        "group": "alder-train",
        "answer_contains": ["11:15pm"],
    },
    {
        "id": "alder-train-2",
        "question": "What time is the final train home from Alderby?",
        "expected": ["alderby.md#Getting there"],
        "group": "alder-train",
    },
    {
        "id": "smokehouse",
        "question": "What time does the smokehouse on Quay Street open?",
        "expected": ["alderby.md#Eat and drink"],
        "answer_contains": ["7am"],
    },
    {
        "id": "bramble-bus",
        "question": "How long is the bus journey from Alderby to Bramblecote?",
        "expected": ["bramblecote.md#Getting there"],
    },
    {
        "id": "worldcup",
        "question": "Who won the football world cup in 1994?",
        "kind": "out_of_scope",
    },
    {
        "id": "cider-price",
        "question": "How much does a bottle of cider from the Bramblecote press cost?",
        "kind": "near_miss",
    },
]


def _write_probes(path: Path, probes: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(p) + "\n" for p in probes), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    root = tmp_path_factory.mktemp("report")
    ingest([write_small_corpus(root / "corpus")], root / "idx", dense=None)
    engine = Engine.open(root / "idx")
    known = {c.section_id for c in engine.chunks}
    expected = {
        "alderby.md#Getting there",
        "alderby.md#Eat and drink",
        "bramblecote.md#Getting there",
    }
    assert expected <= known
    return engine


@pytest.fixture(scope="module")
def report(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> EvalReport:
    path = _write_probes(tmp_path_factory.mktemp("probes") / "probes.jsonl", PROBES)
    return evaluate_probes(engine, load_probes(path), ks=KS, retriever="bm25")


def _table_rows(markdown: str, header_start: str) -> list[list[str]]:
    """The rows (header included, rule excluded) of the table whose header starts so."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    del rows[1]
    return rows


def _assert_png(path: Path) -> None:
    from matplotlib.image import imread

    assert path.read_bytes()[:8] == PNG_MAGIC
    assert path.stat().st_size > 1024
    height, width, _ = imread(path).shape
    assert (width, height) == (660, 440)  # 6x4 in at 110 dpi


def test_one_retriever_writes_every_file(report: EvalReport, tmp_path: Path) -> None:
    out = tmp_path / "nested" / "report"
    meta = {"index": "idx", "probes": "probes.jsonl", "date": "2025-01-31"}
    written = write_probe_report([report], out, title="Small guides", meta=meta)
    names = ["report.md", "report.json", "recall_at_k.png", "gate_scores.png"]
    assert written == [out / n for n in names]
    for path in written:
        assert path.is_file()
    _assert_png(out / "recall_at_k.png")
    _assert_png(out / "gate_scores.png")

    data = json.loads((out / "report.json").read_text("utf-8"))
    assert data["title"] == "Small guides" and data["meta"] == meta
    assert list(data["retrievers"]) == ["bm25"]
    saved = data["retrievers"]["bm25"]
    assert saved["metrics"] == {k: round(v, 4) for k, v in report.metrics.items()}
    assert saved["metrics"] == pytest.approx(report.metrics, abs=5e-5)
    assert saved["counts"] == report.counts
    assert [r["id"] for r in saved["results"]] == [p["id"] for p in PROBES]

    md = (out / "report.md").read_text("utf-8")
    assert md == render_markdown([report], title="Small guides", meta=meta)
    assert md.startswith("# Small guides\n")
    assert "- date: `2025-01-31`" in md
    # deterministic: the same inputs give the same bytes
    again = write_probe_report([report], tmp_path / "again", title="Small guides", meta=meta)
    assert [p.read_bytes() for p in again[:2]] == [p.read_bytes() for p in written[:2]]


def test_markdown_puts_retrievers_in_columns_and_every_metric_in_a_row(
    report: EvalReport, tmp_path: Path
) -> None:
    other = dataclasses.replace(report, retriever="hybrid")
    written = write_probe_report([report, other], tmp_path, title="Two")
    assert (tmp_path / "gate_scores.png") in written
    _assert_png(tmp_path / "recall_at_k.png")
    md = (tmp_path / "report.md").read_text("utf-8")

    rows = _table_rows(md, "| metric |")
    assert rows[0] == ["metric", "bm25", "hybrid"]
    assert all(len(row) == 3 for row in rows)
    keys = [row[0].strip("`") for row in rows[1:]]
    assert sorted(keys) == sorted(report.metrics)
    assert keys[: len(KS)] == [f"recall@{k}" for k in KS]
    assert keys[len(KS) : 2 * len(KS)] == [f"hit@{k}" for k in KS]
    by_key = {row[0].strip("`"): row[1:] for row in rows[1:]}
    assert by_key["mrr"] == [f"{report.metrics['mrr']:.3f}"] * 2
    assert by_key["latency_ms_p50"][0].endswith(" ms")

    data = json.loads((tmp_path / "report.json").read_text("utf-8"))
    assert list(data["retrievers"]) == ["bm25", "hybrid"]
    assert data["retrievers"]["hybrid"]["retriever"] == "hybrid"

    for note in ("## Recall sweep", f"- **bm25**: {report.sweep['note']}", "- **hybrid**:"):
        assert note in md
    counts = {row[0]: int(row[1]) for row in _table_rows(md, "| probes | n |")[1:]}
    assert counts == report.counts
    # the per-question table covers the first retriever only, one row per probe
    per_question = _table_rows(md, "| id |")
    assert per_question[0] == ["id", "kind", "rank", "outcome", "confidence", "answer check"]
    assert [row[0].strip("`") for row in per_question[1:]] == [p["id"] for p in PROBES]
    worldcup = next(row for row in per_question if row[0] == "`worldcup`")
    assert worldcup[1:4] == ["out_of_scope", "—", "refused (gate)"]
    assert "## Per question (bm25)" in md and "### hybrid" in md


def _result(
    probe_id: str,
    ranked: tuple[str, ...],
    *,
    kind: str = "answerable",
    gate_score: float = 0.5,
) -> ProbeResult:
    """A probe outcome written by hand: its rank is where `b.md#B` sits in `ranked`."""
    expected = ("b.md#B",) if kind == "answerable" else ()
    rank = next((i for i, s in enumerate(ranked, 1) if s in expected), None)
    return ProbeResult(
        probe=Probe(probe_id, f"Question {probe_id}?", expected=expected, kind=kind),
        ranked_sections=ranked,
        chunk_sections=ranked,
        chunk_docs=tuple(s.split("#")[0] for s in ranked),
        rank=rank,
        refused=kind != "answerable",
        refused_by="gate" if kind != "answerable" else None,
        answer="",
        contains=None,
        grounded=None,
        gate_score=gate_score,
        latency_ms=1.0,
    )


HAND_RESULTS = [
    _result("near", ("b.md#B", "a.md#A"), gate_score=0.9),
    _result("far", ("a.md#A", "c.md#C", "d.md#D", "e.md#E", "b.md#B"), gate_score=0.6),
    _result("lost", ("c.md#C",), gate_score=0.3),
    _result("offtopic", ("a.md#A",), kind="out_of_scope", gate_score=0.2),
]


def test_misses_and_metrics_of_hand_worked_results() -> None:
    report = summarise(HAND_RESULTS, (1, 3, 5), "bm25")
    md = render_markdown([report], title="Misses")
    # Worked by hand over the three answerable probes (ranks 1, 5 and none):
    # recall@1 = recall@3 = 1/3, recall@5 = 2/3, mrr = (1 + 1/5 + 0) / 3 = 0.4.
    by_key = {row[0].strip("`"): row[1] for row in _table_rows(md, "| metric |")[1:]}
    assert by_key["recall@1"] == "0.333"
    assert by_key["recall@3"] == "0.333"
    assert by_key["recall@5"] == "0.667"
    assert by_key["mrr"] == "0.400"
    assert by_key["false_refusal"] == "0.000"
    assert by_key["refused_out_of_scope"] == "1.000"

    section = md.split("## Misses", 1)[1]
    assert "- `far` (rank 5): Question far?\n  expected `b.md#B`; top-1 `a.md#A`" in section
    assert (
        "- `lost` (not retrieved): Question lost?\n  expected `b.md#B`; top-1 `c.md#C`" in section
    )
    assert "near" not in section and "offtopic" not in section


def test_notes_say_what_the_figures_rest_on() -> None:
    ghost = _result("ghost", ("a.md#A", "c.md#C"))  # expects b.md#B, which the index lacks
    report = dataclasses.replace(
        summarise([ghost, HAND_RESULTS[3]], (1, 3), "bm25"),
        missing_expected=("b.md#B",),
        gate_calibrated_for="hybrid",
    )
    md = render_markdown([report, dataclasses.replace(report, retriever="hybrid")], title="N")
    notes = md.split("## Notes\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert notes == [
        "- 1 expected section id(s) are not in the index, so the probes naming them score as "
        "misses: 'b.md#B'; check the ids against `groundqa inspect --sections`",
        "- the gate was calibrated with the hybrid retriever; the refusals of bm25 come from "
        "that gate as it is, on scores it was not fitted to",
    ]
    misses = md.split("## Misses", 1)[1]
    assert "- `ghost` (expected id not in the index): Question ghost?" in misses
    assert "## Notes" not in render_markdown([summarise(HAND_RESULTS, (1,), "bm25")], title="N")


def test_no_misses_says_none() -> None:
    report = summarise([HAND_RESULTS[0], HAND_RESULTS[3]], (1, 3), "bm25")
    section = render_markdown([report], title="No misses").split("## Misses", 1)[1]
    assert section.split() == ["(expected", "section", "not", "in", "the", "top", "3)", "None."]


def test_answerable_only_probes_write_no_gate_plot(engine: Engine, tmp_path: Path) -> None:
    answerable = [p for p in PROBES if p.get("kind", "answerable") == "answerable"]
    probes = load_probes(_write_probes(tmp_path / "answerable.jsonl", answerable))
    written = write_probe_report([evaluate_probes(engine, probes, ks=KS)], tmp_path, title="A")
    assert [p.name for p in written] == ["report.md", "report.json", "recall_at_k.png"]
    assert not (tmp_path / "gate_scores.png").exists()


def test_table_cells_escape_pipes(report: EvalReport) -> None:
    first = report.results[0]
    probe = dataclasses.replace(first.probe, id="a|b")
    odd = dataclasses.replace(report, results=[dataclasses.replace(first, probe=probe)])
    md = render_markdown([odd], title="Pipes | and\nnewlines")
    assert md.startswith("# Pipes \\| and newlines\n")
    assert "| `a\\|b` |" in md


def test_bad_report_sets_are_usage_errors(report: EvalReport, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="at least one"):
        write_probe_report([], tmp_path, title="x")
    with pytest.raises(UsageError, match="unique"):
        render_markdown([report, report], title="x")
    fewer = dataclasses.replace(report, retriever="dense", results=report.results[:2])
    with pytest.raises(UsageError, match="same probe file"):
        render_markdown([report, fewer], title="x")
    with pytest.raises(UsageError, match="non-empty `metrics` mapping"):
        write_beir_report({"dataset": "scifact"}, tmp_path, title="x")


def test_without_matplotlib_text_is_written_then_usage_error(
    report: EvalReport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A None entry in sys.modules makes `import` fail as if the package were absent.
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(UsageError, match=r"pip install 'groundqa\[plots\]'"):
        write_probe_report([report], tmp_path, title="No plots")
    assert (tmp_path / "report.md").is_file() and (tmp_path / "report.json").is_file()
    assert not list(tmp_path.glob("*.png"))


BEIR_RESULT: dict[str, Any] = {
    "dataset": "scifact",
    "split": "test",
    "queries": 100,
    "default_retriever": "bm25",
    "metrics": {
        "bm25": {
            "ndcg@10": 0.6812,
            "recall@100": 0.9123,
            "mrr@10": 0.6431,
            "recall@k": {"1": 0.52, "10": 0.81, "100": 0.9123},
        },
        "dense": {"ndcg@10": 0.7, "mrr@10": 0.66},
    },
}


def test_beir_report(tmp_path: Path) -> None:
    written = write_beir_report(BEIR_RESULT, tmp_path / "beir", title="BEIR scifact")
    assert [p.name for p in written] == ["report.md", "report.json", "recall_at_k.png"]
    _assert_png(tmp_path / "beir" / "recall_at_k.png")
    assert json.loads((tmp_path / "beir" / "report.json").read_text("utf-8")) == BEIR_RESULT
    md = (tmp_path / "beir" / "report.md").read_text("utf-8")
    assert "- queries: `100`" in md and "- default_retriever: `bm25`" in md
    rows = _table_rows(md, "| metric |")
    assert rows == [
        ["metric", "bm25", "dense"],
        ["`ndcg@10`", "0.6812", "0.7000"],
        ["`recall@100`", "0.9123", "—"],
        ["`mrr@10`", "0.6431", "0.6600"],
    ]
    assert _table_rows(md, "| k |")[1:] == [
        ["1", "0.5200", "—"],
        ["10", "0.8100", "—"],
        ["100", "0.9123", "—"],
    ]


def test_beir_report_without_curves_has_no_plot(tmp_path: Path) -> None:
    # `retrievers`, the old name of `metrics`, is still read
    result = {"dataset": "nfcorpus", "retrievers": {"bm25": {"ndcg@10": 0.32}}}
    written = write_beir_report(result, tmp_path, title="BEIR nfcorpus")
    assert [p.name for p in written] == ["report.md", "report.json"]
    assert _table_rows(written[0].read_text("utf-8"), "| metric |")[1] == ["`ndcg@10`", "0.3200"]
