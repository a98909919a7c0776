"""The evaluation harness on real indexes: probe files, BEIR folders, and their bad inputs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundqa.cli import main
from groundqa.engine import Engine
from groundqa.errors import ProbeError
from groundqa.evaluate import EvalReport, evaluate_probes, load_probes, report_notes
from groundqa.evaluate.beir import (
    evaluate_beir,
    load_beir_set,
    read_qrels,
    score_run,
    write_trec_run,
)
from groundqa.evaluate.harness import compared_retrievers
from groundqa.ingestion import ingest


def _write(path: Path, rows: list[dict[str, object]] | list[str]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


@pytest.fixture
def engine(small_corpus: Path, tmp_path: Path) -> Engine:
    ingest([small_corpus], tmp_path / "idx")
    return Engine.open(tmp_path / "idx")


PROBES = [
    {
        "id": "a1",
        "question": "When does the last train back to Portmere leave Alderby?",
        "expected": ["alderby.md#Getting there"],
        "group": "train",
        "answer_contains": ["11:15pm"],
    },
    {
        "id": "a2",
        "question": "What time is the final train from Alderby?",
        "expected": ["alderby.md#Getting there"],
        "group": "train",
        "answer_contains": ["11:15pm"],
    },
    {
        "id": "a3",
        "question": "How long is the orchard trail in Bramblecote?",
        "expected": ["bramblecote.md#What to see"],
        "answer_contains": ["four miles"],
    },
    {"id": "n1", "question": "Is there a swimming pool in Bramblecote?", "kind": "near_miss"},
    {"id": "o1", "question": "How do I compile a Rust program?", "kind": "out_of_scope"},
]


def test_harness_scores_ranks_refusals_and_answers(engine: Engine, tmp_path: Path) -> None:
    probes = load_probes(_write(tmp_path / "p.jsonl", PROBES))
    report = evaluate_probes(engine, probes, ks=(1, 3))
    m = report.metrics
    assert report.counts == {
        "answerable": 3,
        "out_of_scope": 1,
        "near_miss": 1,
        "scored": 3,
        "paraphrase_groups": 1,
        "answer_checked": 3,
    }
    ranks = {r.probe.id: r.rank for r in report.results}
    assert ranks["a1"] == 1 and ranks["a3"] == 1
    assert m["recall@1"] == pytest.approx(sum(r == 1 for r in ranks.values() if r) / 3)
    assert m["refused_out_of_scope"] == 1.0 and m["gate_refused_out_of_scope"] == 1.0
    assert 0.0 <= m["crowding@5"] <= 1.0 and "same_doc_crowding@5" in m
    assert m["paraphrase_rank1_any"] == 1.0
    first = next(r for r in report.results if r.probe.id == "a1")
    assert first.contains and first.grounded
    assert report.sweep["levels_off_at"] in (1, 3) or report.sweep["still_climbing"]
    assert report.to_dict()["results"][0]["id"] == "a1"


def test_expected_ids_missing_from_the_index_score_as_misses(
    engine: Engine, tmp_path: Path
) -> None:
    typo = {**PROBES[0], "id": "typo", "expected": ["alderby.md#Getting There"]}
    half = {**PROBES[2], "id": "half", "expected": ["bramblecote.md#What to see", "nowhere.md#X"]}
    path = _write(tmp_path / "p.jsonl", [PROBES[0], typo, half])
    report = evaluate_probes(engine, load_probes(path), ks=(1, 3))
    assert report.missing_expected == ("alderby.md#Getting There", "nowhere.md#X")
    assert report.to_dict()["missing_expected"] == list(report.missing_expected)
    ranks = {r.probe.id: r.rank for r in report.results}
    assert ranks == {"a1": 1, "typo": None, "half": 1}
    # a1 finds its one section, typo none, half one of two: (1 + 0 + 0.5) / 3
    assert report.metrics["recall@3"] == 0.5
    assert report_notes([report]) == [
        "2 expected section id(s) are not in the index, so the probes naming them score as "
        "misses: 'alderby.md#Getting There', 'nowhere.md#X'; check the ids against "
        "`groundqa inspect --sections`"
    ]
    run = CliRunner().invoke(
        main, ["eval", "--index", str(tmp_path / "idx"), "--probes", str(path), "--json"]
    )
    assert run.exit_code == 0, run.output
    data = json.loads(run.stdout)
    assert data["missing_expected"] == ["alderby.md#Getting There", "nowhere.md#X"]
    assert data["default_retriever"] == engine.default_retriever
    assert set(data["metrics"]) == set(compared_retrievers(engine))


def test_a_probe_file_that_names_no_section_of_the_index_is_refused(
    engine: Engine, tmp_path: Path
) -> None:
    probes = load_probes(
        _write(
            tmp_path / "p.jsonl",
            [
                {"question": "q one?", "expected": ["alderby.md#Getting There"]},
                {"question": "q two?", "expected": ["nowhere.md#X"]},
            ],
        )
    )
    with pytest.raises(
        ProbeError,
        match=r"none of the 2 expected section id\(s\) is in the index: "
        r"'alderby.md#Getting There', 'nowhere.md#X'",
    ):
        evaluate_probes(engine, probes)


def test_a_report_knows_when_its_gate_was_fitted_for_another_plan() -> None:
    report = EvalReport("bm25+defs+acr", {}, gate_calibrated_for="bm25+acr+defs")
    assert not report.gate_off_plan  # one plan, options in another order
    assert dataclasses.replace(report, retriever="bm25").gate_off_plan
    assert dataclasses.replace(report, retriever="hybrid+weighted=0.3/0.7").gate_off_plan
    assert not dataclasses.replace(report, gate_calibrated_for=None).gate_off_plan


def test_grounded_means_a_cited_expected_section_holds_the_fact(
    engine: Engine, tmp_path: Path
) -> None:
    # The right answer, quoted from the right passage, but the probe expects another
    # section: the answer contains the fact, yet no cited expected section holds it.
    elsewhere = {**PROBES[2], "id": "elsewhere", "expected": ["alderby.md#Getting there"]}
    unchecked = {k: v for k, v in PROBES[2].items() if k != "expected"} | {"id": "no-expected"}
    path = _write(tmp_path / "p.jsonl", [PROBES[2], elsewhere, unchecked])
    report = evaluate_probes(engine, load_probes(path), ks=(1,))
    got = {r.probe.id: (r.contains, r.grounded, r.cited_right) for r in report.results}
    assert got == {
        "a3": (True, True, True),
        "elsewhere": (True, False, False),
        "no-expected": (True, None, None),
    }
    assert report.metrics["answer_contains"] == 1.0
    assert report.metrics["answer_grounded"] == 0.5  # over the two probes that name a section


def test_an_obliqa_heading_passage_keeps_its_id_and_is_found(tmp_path: Path) -> None:
    # A qrel may name a passage that is only a heading: `7:2.1` here, whose children
    # carry the clauses. It stays a section of its own, so eval can score it.
    passages = [
        ("1.", "INTRODUCTION"),
        ("1.1", "Every licensed firm must keep its records for six years."),
        ("2.", "SUPERVISION"),
        ("2.1", "Remuneration committees"),
        ("2.1.1", "A firm must appoint a committee that sets the pay of its senior staff."),
        ("2.1.2", "The committee must meet at least twice a year."),
    ]
    rows = [
        {"ID": str(n), "DocumentID": 7, "PassageID": pid, "Passage": text}
        for n, (pid, text) in enumerate(passages)
    ]
    (tmp_path / "7.json").write_text(json.dumps(rows), encoding="utf-8")
    ingest([tmp_path / "7.json"], tmp_path / "idx", fmt="obliqa", dense=None)
    engine = Engine.open(tmp_path / "idx")
    probes = [
        {"id": "heading", "question": "Remuneration committees", "expected": ["7:2.1"]},
        {"id": "clause", "question": "How long are records kept?", "expected": ["7:1.1"]},
    ]
    report = evaluate_probes(engine, load_probes(_write(tmp_path / "p.jsonl", probes)), ks=(3,))
    assert report.missing_expected == ()
    assert {r.probe.id: r.rank for r in report.results} == {"heading": 1, "clause": 1}


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"question": "ok?"}', "{not json"], "line 2"),
        (['{"question": ""}'], "line 1: `question` must be a non-empty string"),
        (['{"question": "q?", "kind": "maybe"}'], "`kind` must be one of"),
        (['{"question": "q?", "kind": "out_of_scope", "expected": ["a"]}'], "cannot name expected"),
        (
            ['{"id": "x", "question": "a?"}', '{"id": "x", "question": "b?"}'],
            "already used on line 1",
        ),
        (["[1, 2]"], "must be a JSON object"),
        (["", "  "], "has no probes"),
    ],
)
def test_bad_probe_files(tmp_path: Path, lines: list[str], message: str) -> None:
    with pytest.raises(ProbeError, match=message):
        load_probes(_write(tmp_path / "p.jsonl", lines))


def test_missing_probe_file(tmp_path: Path) -> None:
    with pytest.raises(ProbeError, match="no probe file"):
        load_probes(tmp_path / "none.jsonl")


def _beir(folder: Path, with_qrels: bool = True) -> Path:
    folder.mkdir()
    docs = [
        ("d1", "Ferries", "The ferry to the island leaves at dawn and returns at dusk."),
        ("d2", "Bakeries", "The bakery sells out of bread by eleven in the morning."),
        ("d3", "Trains", "Trains to the coast run hourly and take forty minutes."),
        ("d4", "Markets", "The market opens on Saturdays and sells bread, fish and cheese."),
    ]
    _write(folder / "corpus.jsonl", [{"_id": i, "title": t, "text": x} for i, t, x in docs])
    _write(
        folder / "queries.jsonl",
        [
            {"_id": "q1", "text": "when does the ferry leave"},
            {"_id": "q2", "text": "where can I buy bread"},
            {"_id": "q3", "text": "unjudged query"},
        ],
    )
    if with_qrels:
        (folder / "qrels").mkdir()
        (folder / "qrels" / "test.tsv").write_text(
            "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t2\nq2\td4\t1\n"
        )
    return folder


def test_beir_evaluation_and_trec_run(tmp_path: Path) -> None:
    folder = _beir(tmp_path / "beir")
    run_file = tmp_path / "run.trec"
    result = evaluate_beir(folder, index_dir=tmp_path / "idx", run_file=run_file)
    assert result["queries"] == 2 and not result["index_reused"]
    # `metrics`, as `eval --probes` has it; `retrievers` is its old name, kept for a release
    assert result["metrics"] is result["retrievers"]
    assert result["default_retriever"] == Engine.open(tmp_path / "idx").default_retriever
    m = result["metrics"]["bm25"]
    assert m["recall@100"] == 1.0 and m["mrr@10"] == 1.0
    lines = run_file.read_text().splitlines()
    assert lines[0].split()[:4] == ["q1", "Q0", "d1", "1"]
    again = evaluate_beir(folder, index_dir=tmp_path / "idx")
    assert again["index_reused"] and again["metrics"] == result["metrics"]


def test_beir_scores_match_trec_eval(tmp_path: Path) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    folder = _beir(tmp_path / "beir")
    data = load_beir_set(folder)
    run = {"q1": {"d3": 2.0, "d1": 1.0}, "q2": {"d4": 3.0, "d1": 2.0, "d2": 1.0}}
    ours = score_run(run, data.qrels)
    ref = pytrec_eval.RelevanceEvaluator(data.qrels, {"ndcg_cut.10", "recall.100"}).evaluate(run)
    assert ours["ndcg@10"] == pytest.approx(sum(r["ndcg_cut_10"] for r in ref.values()) / 2)
    write_trec_run(run, tmp_path / "r.trec")
    assert len((tmp_path / "r.trec").read_text().splitlines()) == 5


def test_beir_folder_without_qrels_is_a_clear_error(tmp_path: Path) -> None:
    folder = _beir(tmp_path / "beir", with_qrels=False)
    with pytest.raises(ProbeError, match=r"missing qrels/test.tsv"):
        load_beir_set(folder)


def test_malformed_qrels(tmp_path: Path) -> None:
    (tmp_path / "q.tsv").write_text("q1\td1\tyes\n")
    with pytest.raises(ProbeError, match="not a whole number"):
        read_qrels(tmp_path / "q.tsv")
