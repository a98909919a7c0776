"""The command line, run as a user runs it: a real process, real files, real exit codes."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REGPACK, write_small_corpus
from tests.hostilekit import (
    OUTSIDE_SECRET,
    GiB,
    corpus_with_outside_symlink,
    docx_big_document_xml,
    docx_with_huge_media,
)

EXE = [sys.executable, "-m", "groundqa.cli"]


def run(*args: str | Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [*EXE, *map(str, args)], capture_output=True, text=True, input=stdin, env=env, timeout=120
    )


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    index = tmp_path_factory.mktemp("cli") / "idx"
    proc = run("ingest", REGPACK, "--index", index)
    assert proc.returncode == 0, proc.stderr
    return index


def test_ask_json_has_the_contract_shape(built: Path) -> None:
    proc = run(
        "ask",
        "What is the turbine setback from a dwelling in Northmere?",
        "--index",
        built,
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["refused"] is False and "1,500 metres" in data["answer"]
    assert {"n", "doc_id", "title", "section", "page", "uri", "snippet"} <= set(
        data["citations"][0]
    )
    assert {"chunk_id", "doc_id", "section", "score", "text"} <= set(data["passages"][0])
    assert "audit" in data and "total" in data["timings_ms"]


def test_ask_refusal_and_text_output(built: Path) -> None:
    proc = run("ask", "How do I write a for loop in Rust?", "--index", built)
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[0] == "I don't have enough information about that."
    answered = run(
        "ask", "How many penalty units is the fine for late NEER lodgement?", "--index", built
    )
    assert "[1]" in answered.stdout and "penalty_schedule.csv" in answered.stdout


def test_ask_with_filter_and_bad_filter(built: Path) -> None:
    ok = run("ask", "clearing permit", "--index", built, "--filter", "state=Westhaven", "--json")
    data = json.loads(ok.stdout)
    assert all(p["metadata"]["state"] == "Westhaven" for p in data["passages"])
    bad = run("ask", "trees", "--index", built, "--filter", "colour=red")
    assert bad.returncode == 2
    assert "unknown filter key 'colour'" in one_error_line(bad)
    # A key given twice keeps both values (any of them).
    both = run(
        "ask",
        "clearing permit",
        "--index",
        built,
        "--json",
        "--k",
        "10",
        "--filter",
        "state=Westhaven",
        "--filter",
        "state=Northmere",
    )
    states = {p["metadata"]["state"] for p in json.loads(both.stdout)["passages"]}
    assert states == {"Westhaven", "Northmere"}


def test_ingest_again_is_a_no_op(built: Path) -> None:
    proc = run("ingest", REGPACK, "--index", built)
    assert proc.returncode == 0 and "up to date" in proc.stdout


def test_ingest_without_the_section_path(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "harbour.md").write_text(
        "# Harbour Rules\n\n## Quarantine\n\nVessels must moor at the east pier.\n"
    )
    index = tmp_path / "idx"
    proc = run("ingest", corpus, "--index", index, "--no-dense", "--no-section-path")
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads(run("inspect", "--index", index, "--json").stdout)["manifest"]
    assert manifest["chunker"]["section_path"] is False
    heading = run("ask", "quarantine", "--index", index, "--retriever", "bm25", "--json")
    assert json.loads(heading.stdout)["passages"] == []
    body = run("ask", "Where must vessels moor?", "--index", index, "--json")
    assert json.loads(body.stdout)["citations"][0]["section"] == "Harbour Rules > Quarantine"


def test_inspect(built: Path) -> None:
    proc = run("inspect", "--index", built, "--json")
    data = json.loads(proc.stdout)
    assert data["manifest"]["counts"]["chunks"] > data["manifest"]["counts"]["documents"]
    assert data["staleness"] == "up to date with its sources"
    assert data["split_sections"] >= 1
    assert data["boundary_issues"] == []
    assert data["lexical_engine"]["engine"] == "bm25s"
    text = run("inspect", "--index", built)
    assert "not calibrated" in text.stdout
    assert "BM25 search: bm25s in memory" in text.stdout
    assert data["vector_engine"]["search"] == "exact"
    assert "vector search: exact search (numpy): every chunk is compared" in text.stdout


def test_chat_keeps_the_index_and_takes_commands(built: Path) -> None:
    script = ":k 3\n:filter state=Northmere\n:filters\nWhat is the turbine setback from a dwelling?\n:k x\n:quit\n"
    proc = run("chat", "--index", built, stdin=script)
    assert proc.returncode == 0, proc.stderr
    assert "k = 3" in proc.stdout and "'state': ['Northmere']" in proc.stdout
    assert "1,500 metres" in proc.stdout
    assert "k needs a number" in proc.stderr


def test_chat_takes_a_scope_and_rejects_an_unknown_place(built: Path) -> None:
    script = (
        ":scope area=Ashcombe\nWhat trunk circumference makes a tree protected?\n"
        ":scope area=Ashcomb Shyre\n:clear\n:filters\n:quit\n"
    )
    proc = run("chat", "--index", built, stdin=script)
    assert proc.returncode == 0, proc.stderr
    assert "scope = {'area': ['Ashcombe Shire'], 'state': ['Westhaven']}" in proc.stdout
    assert "1.5 metres" in proc.stdout and "cl.1.1" in proc.stdout
    assert "did you mean Ashcombe Shire?" in proc.stderr
    assert "filters = {}; scope = {}" in proc.stdout


def test_missing_index_and_older_index(tmp_path: Path) -> None:
    missing = run("ask", "q?", "--index", tmp_path / "none")
    assert missing.returncode == 1 and "groundqa ingest" in one_error_line(missing)
    old = tmp_path / "old"
    old.mkdir()
    (old / "manifest.json").write_text('{"version": 0}')
    proc = run("ask", "q?", "--index", old)
    assert proc.returncode == 1 and "older groundqa" in one_error_line(proc)


# ------------------------------------------------------------------ bad corpora

BAD_CORPORA = {
    "malformed.csv": (b'id,title,text\n1,A,"never closed\n2,B,fine\n', "malformed-csv"),
    "binary.csv": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)), "binary"),
    "latin1.md": (
        "# Caf\xe9\n\n## Menu\n\nCr\xe8me br\xfbl\xe9e is served daily until late.\n".encode(
            "latin-1"
        ),
        "not-utf8",
    ),
    "nocol.csv": (b"id,title,summary\n1,A,Body text that is long enough.\n", "missing-column"),
    "dupes.csv": (
        b"id,title,text\n7,A,First record text.\n7,B,Second record text.\n",
        "duplicate-id",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_CORPORA))
def test_bad_corpus_is_refused_and_previous_index_kept(name: str, tmp_path: Path) -> None:
    good = write_small_corpus(tmp_path / "good")
    index = tmp_path / "idx"
    assert run("ingest", good, "--index", index).returncode == 0
    before = os.readlink(index / "current")
    content, check = BAD_CORPORA[name]
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / name).write_bytes(content)
    proc = run("ingest", good, bad, "--index", index)
    assert proc.returncode == 1
    line = one_error_line(proc)
    assert check in line and "unchanged" in line
    assert os.readlink(index / "current") == before
    assert run("ask", "When is the last train back?", "--index", index).returncode == 0
    validate = run("validate", bad, "--json")
    assert validate.returncode == 1
    assert check in {f["check"] for f in json.loads(validate.stdout)["findings"]}


def test_empty_folder_and_missing_path(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    proc = run("ingest", tmp_path / "empty", "--index", tmp_path / "idx")
    assert proc.returncode == 1 and "empty" in one_error_line(proc)
    proc = run("validate", tmp_path / "nowhere")
    assert proc.returncode == 1 and "no such file or folder" in one_error_line(proc)


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    proc = run("ingest", tmp_path, "--index", tmp_path / "i", "--columns", "oops")
    assert proc.returncode == 2 and "KEY=VALUE" in one_error_line(proc)


def test_ctrl_c_during_ingest_keeps_previous_index(tmp_path: Path) -> None:
    corpus = tmp_path / "big"
    corpus.mkdir()
    words = [
        "river",
        "orchard",
        "ferry",
        "bakery",
        "market",
        "tower",
        "harbour",
        "meadow",
        "lantern",
        "quarry",
    ]
    with (corpus / "corpus.jsonl").open("w") as f:
        for i in range(40_000):
            text = " ".join(words[(i * 7 + j) % 10] + str(j % 50) for j in range(60)) + "."
            f.write(json.dumps({"_id": f"r{i}", "title": f"Record {i}", "text": text}) + "\n")
    small = write_small_corpus(tmp_path / "small")
    index = tmp_path / "idx"
    assert run("ingest", small, "--index", index).returncode == 0
    before = os.readlink(index / "current")
    proc = subprocess.Popen(
        [*EXE, "ingest", str(corpus), "--index", str(index)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A shell's background job (`cmd &`, nohup) ignores SIGINT and its children inherit
        # that; Ctrl-C reaches a foreground ingest, so the ingest starts as one would.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(2.0)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert os.readlink(index / "current") == before
    assert not list((index / "builds").glob(".tmp-*"))
    assert run("ask", "When is the last train back?", "--index", index).returncode == 0


def test_eval_probes_json_report_and_bad_probe_files(built: Path, tmp_path: Path) -> None:
    from tests.conftest import REGPACK_PROBES

    report = tmp_path / "report"
    proc = run(
        "eval",
        "--index",
        built,
        "--probes",
        REGPACK_PROBES,
        "--k",
        "1,3,5",
        "--report",
        report,
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert {
        "recall@1",
        "recall@3",
        "mrr",
        "ndcg@10",
        "refused_out_of_scope",
        "refused_near_miss",
        "false_refusal",
    } <= set(data["metrics"]["bm25"])
    assert {p.name for p in report.iterdir()} == {
        "report.md",
        "report.json",
        "recall_at_k.png",
        "gate_scores.png",
    }
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "fine?"}\n{"question": \n')
    proc = run("eval", "--index", built, "--probes", bad)
    assert proc.returncode == 1 and "line 2" in one_error_line(proc)
    typo = tmp_path / "typo.jsonl"
    typo.write_text('{"question": "q?", "expected": ["SCH1-99"]}\n')
    proc = run("eval", "--index", built, "--probes", typo)
    assert proc.returncode == 1 and "'SCH1-99'" in one_error_line(proc)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert "has no probes" in one_error_line(run("eval", "--index", built, "--probes", empty))


def test_eval_beir_and_its_errors(tmp_path: Path) -> None:
    folder = tmp_path / "beir"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(
        json.dumps({"_id": "d1", "title": "Ferry", "text": "The ferry leaves at dawn."})
        + "\n"
        + json.dumps({"_id": "d2", "title": "Bread", "text": "The bakery sells bread."})
        + "\n"
    )
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "ferry dawn"}) + "\n")
    proc = run("eval", "--beir", folder)
    assert proc.returncode == 1 and "missing qrels/test.tsv" in one_error_line(proc)
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    trec = tmp_path / "run.trec"
    proc = run("eval", "--beir", folder, "--run-file", trec, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["retrievers"]["bm25"]["ndcg@10"] == 1.0
    assert trec.read_text().startswith("q1 Q0 d1 1 ")
    assert run("eval", "--index", tmp_path).returncode == 2


def test_retrievers_side_by_side_and_retriever_plans(built: Path) -> None:
    from tests.conftest import REGPACK_PROBES

    proc = run("eval", "--index", built, "--probes", REGPACK_PROBES, "--k", "1,3", "--json")
    assert proc.returncode == 0, proc.stderr
    metrics = json.loads(proc.stdout)["metrics"]
    assert list(metrics) == ["bm25", "dense", "hybrid", "hybrid+weighted=0.5/0.5+defs"]
    assert all(0 < m["recall@3"] <= 1 for m in metrics.values())
    proc = run(
        "ask",
        "How many penalty units for late NEER lodgement?",
        "--index",
        built,
        "--retriever",
        "hybrid+weighted+cap=2",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    passages = json.loads(proc.stdout)["passages"]
    assert {p["retriever"] for p in passages} == {"hybrid+weighted+cap=2"}
    proc = run("ask", "trees", "--index", built, "--retriever", "hybrid+fast")
    assert proc.returncode == 2 and "unknown option 'fast'" in one_error_line(proc)


def test_ingest_without_vectors_and_with_a_wrong_embedder(tmp_path: Path) -> None:
    corpus = write_small_corpus(tmp_path / "c")
    proc = run("ingest", corpus, "--index", tmp_path / "lex", "--no-dense", "--json")
    assert proc.returncode == 0, proc.stderr
    proc = run("ask", "last train from Portmere", "--index", tmp_path / "lex", "--json")
    assert {p["retriever"] for p in json.loads(proc.stdout)["passages"]} == {"bm25+defs"}
    proc = run("ingest", corpus, "--index", tmp_path / "x", "--embedder", "bert-base")
    assert proc.returncode == 2
    assert "unknown embedder 'bert-base'; available: minilm, ollama, openai" in one_error_line(proc)
    assert not (tmp_path / "x").exists()
    proc = run(
        "ingest",
        corpus,
        "--index",
        tmp_path / "y",
        "--embedder",
        "ollama:nomic-embed-text",
        "--embedder-url",
        "http://127.0.0.1:9",
    )
    assert proc.returncode == 1
    assert "cannot reach ollama at http://127.0.0.1:9/api/embed" in one_error_line(proc)


def test_eval_applies_each_probes_scope_unless_told_not_to(built: Path) -> None:
    probes = REGPACK.parent / "regpack.scoped.probes.jsonl"
    common = ("eval", "--index", built, "--probes", probes, "--retrievers", "bm25", "--json")
    scoped = json.loads(run(*common).stdout)
    ignored = json.loads(run(*common, "--ignore-scope").stdout)
    metric = "cited_outside_scope"
    assert scoped["metrics"]["bm25"][metric] == 0.0
    assert ignored["metrics"]["bm25"][metric] > 0.0


def test_chat_reads_a_follow_up_against_the_last_question_until_a_new_conversation(
    built: Path,
) -> None:
    script = (
        "What is the turbine setback from a dwelling in Northmere?\n"
        "And from a public road?\n:new\nAnd from a public road?\n:quit\n"
    )
    proc = run("chat", "--index", built, stdin=script)
    assert proc.returncode == 0, proc.stderr
    flat = " ".join(proc.stdout.split())
    assert flat.count('read from the previous question as: "And from a public road (') == 1
    assert "a new conversation" in flat


def test_validate_skips_links_out_of_the_corpus_unless_told(tmp_path: Path) -> None:
    corpus = corpus_with_outside_symlink(tmp_path)
    proc = run("validate", corpus, "--json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert OUTSIDE_SECRET not in proc.stdout
    report = json.loads(proc.stdout)
    assert report["documents"] == 3
    assert "skipped-links" in {f["check"] for f in report["findings"]}
    followed = run("validate", corpus, "--json", "--follow-links")
    assert "Traceback" not in followed.stderr and OUTSIDE_SECRET in followed.stdout
    assert json.loads(followed.stdout)["documents"] == 6


def test_control_characters_in_corpus_names_print_as_escapes(tmp_path: Path) -> None:
    # A file name and a heading that would recolour the terminal and retitle its window.
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "guide\x1b[31mred\x1b]0;owned\x07.md").write_text(
        "# Guide \x1b[2J\n\n## Hours\n\nThe ferry runs hourly from 7am to 9pm every day.\n",
        encoding="utf-8",
    )
    (corpus / "notes\x1b[5m.xyz").write_text("not loaded", encoding="utf-8")
    index = tmp_path / "idx"
    runs = [
        run("validate", corpus),
        run("ingest", corpus, "--index", index, "--no-dense", "--force"),
        run("inspect", "--index", index, "--sections"),
        run("ask", "When does the ferry run?", "--index", index),
    ]
    for proc in runs:
        assert proc.returncode == 0, proc.stderr
        assert "\x1b" not in proc.stdout + proc.stderr and "\x07" not in proc.stdout
    shown = "".join(p.stdout + p.stderr for p in runs)
    assert "notes\\x1b[5m.xyz" in shown  # the skipped file, named as it is spelt
    assert "guide\\x1b[31mred" in shown


def test_a_word_zip_bomb_is_one_finding_and_the_previous_index_stays(tmp_path: Path) -> None:
    good = write_small_corpus(tmp_path / "good")
    index = tmp_path / "idx"
    assert run("ingest", good, "--index", index, "--no-dense").returncode == 0
    before = os.readlink(index / "current")
    bad = tmp_path / "bad"
    bad.mkdir()
    docx_with_huge_media(bad / "brochure.docx")
    docx_big_document_xml(bad / "long.docx")
    (bad / "note.md").write_text("# Note\n\n## Part\n\nThe office opens at nine.\n", "utf-8")

    def limited() -> None:  # an attack that got through would stop here, not take the machine
        resource.setrlimit(resource.RLIMIT_AS, (2 * GiB, 2 * GiB))

    env = {**os.environ, "COLUMNS": "200"}
    ingest = [*EXE, "ingest", str(good), str(bad), "--index", str(index), "--no-dense"]
    proc = subprocess.run(ingest, capture_output=True, text=True, env=env, preexec_fn=limited)
    assert proc.returncode == 1
    line = one_error_line(proc)
    assert "docx-too-big" in line and "unchanged" in line
    assert os.readlink(index / "current") == before
    validate = [*EXE, "validate", str(bad), "--json"]
    proc = subprocess.run(validate, capture_output=True, text=True, env=env, preexec_fn=limited)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert report["documents"] == 1  # the note still loads
    blocks = [f for f in report["findings"] if f["severity"] == "BLOCK"]
    assert [(f["check"], Path(f["source"]).name) for f in blocks] == [
        ("docx-too-big", "brochure.docx"),
        ("docx-too-big", "long.docx"),
    ]
