"""The README cannot drift: its --help text, quoted figures and benchmark table are re-checked."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from groundqa.engine import Engine
from groundqa.evaluate import evaluate_probes, load_probes
from groundqa.ingestion import ingest
from groundqa.loaders import load
from groundqa.validate import validate
from tests.conftest import REGPACK, REGPACK_PROBES, ROOT, need_shared

README = (ROOT / "README.md").read_text(encoding="utf-8")


def block(name: str) -> str:
    m = re.search(rf"<!-- {name}:start -->\n(.*?)<!-- {name}:end -->", README, re.S)
    assert m, f"README has no {name} block"
    return m.group(1)


def test_help_text_matches_the_cli() -> None:
    env = {**os.environ, "COLUMNS": "80"}
    exe = Path(sys.executable).with_name("groundqa")
    out = subprocess.run(
        [str(exe), "--help"], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert block("help").strip() == f"```\n{out.strip()}\n```"


def test_benchmark_tables_are_the_results_files() -> None:
    names = re.findall(r"<!-- bench:(\w+):start -->", README)
    assert {"foundation", "retrieval"} <= set(names)
    for name in names:
        results = ROOT / "bench" / "results" / f"{name}.md"
        assert block(f"bench:{name}").strip() == results.read_text(encoding="utf-8").strip(), name


def test_example_corpus_figures(tmp_path: Path) -> None:
    ingest([REGPACK], tmp_path / "idx")
    engine = Engine.open(tmp_path / "idx")
    probes = load_probes(REGPACK_PROBES)
    reports = [evaluate_probes(engine, probes, retriever=r) for r in engine.compared_retrievers]
    labels = {
        "recall@1": "recall@1",
        "recall@3": "recall@3",
        "recall@5": "recall@5",
        "MRR": "mrr",
        "nDCG@10": "ndcg@10",
        "out-of-scope refused": "refused_out_of_scope",
        "near-miss refused": "refused_near_miss",
        "false refusals (answerable)": "false_refusal",
        "answer contains the expected fact, from the cited passage": "answer_grounded",
    }
    text = block("eval:regpack")
    assert text.splitlines()[0] == (
        "| metric | bm25 | dense | hybrid | hybrid+weighted=0.5/0.5+defs (the default) |"
    )
    rows = {
        m.group(1): m.group(2).split(" | ")
        for m in re.finditer(r"^\| (.+?) \| ([\d. |]+) \|$", text, re.M)
    }
    assert rows == {
        label: [f"{r.metrics[key]:.3f}" for r in reports] for label, key in labels.items()
    }
    assert reports[0].counts["answerable"] == 52 and reports[0].counts["near_miss"] == 15
    assert reports[0].counts["out_of_scope"] == 14


def test_natech_validation_figures() -> None:
    path = need_shared("corpora", "natech", "guidance.csv")
    loaded = load([path])
    findings = validate(loaded.documents, load_findings=loaded.findings)
    assert len(loaded.documents) == 44
    assert [f for f in findings if f.severity == "BLOCK"] == []
    got = sorted((f.check, f.section_id) for f in findings)
    assert got == sorted(
        [
            ("welded-footnote", "1"),
            ("welded-footnote", "3"),
            ("welded-footnote", "4.2"),
            ("welded-footnote", "4.6.1.1"),
            ("welded-footnote", "5.5"),
            ("replacement-char", "4.6.2.2"),
        ]
    )
    for token in ("(2012/18/EC)1", "ISO-310002", "situations3", "RAPID-N4", "eNATECH5"):
        assert token in README
        assert any(token in f.message for f in findings), token


def test_city_guides_figures(tmp_path: Path) -> None:
    guides = need_shared("corpora", "city_guides")
    ingest([guides], tmp_path / "idx")
    engine = Engine.open(tmp_path / "idx")
    bakery = engine.ask("What time does the bakery in Kestrelford sell out?")
    assert not bakery.refused and "11am" in bakery.answer
    assert "guide_kestrelford.md#Eat and drink" in {c.section_id for c in bakery.citations}
    mongolia = engine.ask("What is the capital of Mongolia?")
    assert mongolia.refused and mongolia.citations == ()
    assert mongolia.gate.features["coverage"] == 0.0


@pytest.mark.parametrize("command", ["make demo", "make test"])
def test_first_two_commands_are_make_demo_and_make_test(command: str) -> None:
    first_block = README.split("```sh", 1)[1].split("```", 1)[0]
    assert command in first_block
