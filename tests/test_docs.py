"""The documentation cannot drift: its quoted figures are re-run or read back from
bench/results/, its CLI reference is every command's --help, and every benchmark page says
truthfully whether the code it measures has changed since it ran."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from groundqa.engine import Engine
from groundqa.evaluate import evaluate_probes, load_probes
from groundqa.evaluate.harness import compared_retrievers
from groundqa.evaluate.planfit import tune_plan
from groundqa.evaluate.selffit import self_fit
from groundqa.ingestion import ingest
from groundqa.loaders import load
from groundqa.validate import validate
from tests.conftest import REGPACK, REGPACK_PROBES, ROOT, need_shared

DOCS = ROOT / "docs"
RESULTS = ROOT / "bench" / "results"

sys.path.insert(0, str(ROOT / "bench"))

import _common  # noqa: E402
import provenance  # noqa: E402


def hook(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"docs_hook_{name}", DOCS / "hooks" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def doc(path: str) -> str:
    return (DOCS / path).read_text(encoding="utf-8")


def block(text: str, name: str) -> str:
    m = re.search(rf"<!-- {name}:start -->\n(.*?)<!-- {name}:end -->", text, re.S)
    assert m, f"no {name} block"
    return m.group(1)


def results(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RESULTS / f"{name}.json").read_text())
    return data


def quoted(text: str, phrase: str, number: str, value: float) -> None:
    """`phrase` is in the text and its `number` is `value` written to that many decimals."""
    assert phrase in text and number in phrase, phrase
    digits = len(number.partition(".")[2])
    assert abs(float(number) - value) <= 0.5 * 10**-digits + 1e-9, (phrase, value)


# ------------------------------------------------------------ figures re-run or read back


@pytest.mark.slow  # in `make test-slow`, which CI runs
def test_example_corpus_figures(tmp_path: Path) -> None:
    # as `groundqa ingest` builds it
    ingest([REGPACK], tmp_path / "idx", fit_gate=self_fit, fit_plan=tune_plan)
    engine = Engine.open(tmp_path / "idx")
    probes = load_probes(REGPACK_PROBES)
    reports = [evaluate_probes(engine, probes, retriever=r) for r in compared_retrievers(engine)]
    labels = {
        "recall@1": "recall@1",
        "recall@3": "recall@3",
        "recall@5": "recall@5",
        "MRR": "mrr",
        "nDCG@10": "ndcg@10",
        "out-of-scope refused": "refused_out_of_scope",
        "near-miss refused": "refused_near_miss",
        "false refusals (answerable)": "false_refusal",
        "answer contains the expected fact, from a cited expected section": "answer_grounded",
    }
    text = block(doc("evaluation.md"), "eval:regpack")
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
    text = doc("evaluation.md")
    assert "44 documents, 0 BLOCK, 6 REVIEW" in text
    for token in ("(2012/18/EC)1", "ISO-310002", "situations3", "RAPID-N4", "eNATECH5"):
        assert token in text
        assert any(token in f.message for f in findings), token


def test_city_guides_figures(tmp_path: Path) -> None:
    guides = need_shared("corpora", "city_guides")
    ingest([guides], tmp_path / "idx")
    engine = Engine.open(tmp_path / "idx")
    bakery = engine.ask("What time does the bakery in Kestrelford sell out?")
    assert not bakery.refused and "11am" in bakery.answer
    assert "guide_kestrelford.md#Eat and drink" in {c.section_id for c in bakery.citations}
    assert "guide_kestrelford.md#Eat and drink" in doc("evaluation.md")
    mongolia = engine.ask("What is the capital of Mongolia?")
    assert mongolia.refused and mongolia.citations == ()
    assert mongolia.gate.features["coverage"] == 0.0


def test_embedder_figures_are_its_results_file() -> None:
    text = re.sub(r"\s+", " ", doc("pipeline/index.md"))
    runtimes = results("embedder")["runtimes"]
    int8, torch = runtimes["minilm"], runtimes["sentence-transformers (torch CPU)"]
    quoted(text, "mean cosine of 0.9994", "0.9994", int8["agreement_mean"])
    quoted(text, "(lowest 0.9991)", "0.9991", int8["agreement_min"])
    assert "more than twice as fast as sentence-transformers" in text
    assert torch["p50_ms"] / int8["p50_ms"] > 2
    quoted(text, "(p50 3.1 ms", "3.1", int8["p50_ms"])
    quoted(text, "against 8.3 ms", "8.3", torch["p50_ms"])
    quoted(text, "passages at 40.2 a second", "40.2", int8["passages_per_s"])
    quoted(text, "against torch's 27.4", "27.4", torch["passages_per_s"])
    assert "a quarter of the space" in text
    assert 0.2 <= int8["install_mb"] / torch["install_mb"] <= 0.3


def test_scale_figures_are_its_results_files() -> None:
    from groundqa.index.dense import ann_ef_search, pg_search_width
    from groundqa.index.postgres.target import pg_ef_construction

    text = re.sub(r"\s+", " ", doc("postgres.md"))

    def run(name: str, store: str, chunks: int) -> dict[str, Any]:
        (row,) = [r for r in results(name)["runs"] if r["store"] == store and r["chunks"] == chunks]
        return row

    def p50(row: dict[str, Any], what: str) -> float:
        return float(row[what]["p50_ms"])

    d1m, pg1m = run("scale_1m", "directory", 1_000_000), run("scale_1m", "postgresql", 1_000_000)
    pg10k, pg100k = run("scale", "postgresql", 10_000), run("scale", "postgresql", 100_000)
    recall = "vector_recall_at_10_of_exact"
    checked = results("scale_1m")["generator_check"]
    quoted(text, "median cosine of 0.573", "0.573", checked["generated"]["top1_cos_p50"])
    quoted(text, "their nearest real one at 0.583", "0.583", checked["real"]["top1_cos_p50"])
    quoted(text, "used before: 0.174)", "0.174", checked["clustered (before)"]["top1_cos_p50"])
    quoted(text, "opens a 1M-chunk build in 0.3 s", "0.3", d1m["open_s"])
    quoted(text, "default plan in p50 8.4 ms at 1M", "8.4", p50(d1m, "default_plan"))
    # ef_search: the smallest setting whose lower bound reaches 0.98, at both sizes, and
    # the points the size rule grows through.
    chosen = {s["chunks"]: s for s in results("ann")["sizes"]}
    for size, ef in ((100_000, 128), (1_000_000, 1000)):
        swept = chosen[size]["ef_search_sweep"]
        enough = [e["ef_search"] for e in swept if e["tuning"]["recall_at_10_low95"] >= 0.98]
        assert min(enough) == ef == chosen[size]["chosen_ef_search"] == ann_ef_search(128, size)
        assert chosen[size]["choosing_queries"] == 905
    assert "is 128 at 100k chunks and 1000 at 1M" in text
    quoted(text, "keeps 0.987 of exact recall@10 on the reported", "0.987", d1m[recall])

    def at(row: dict[str, Any], ef: int) -> dict[str, Any]:
        (found,) = [e for e in row["ef_search_sweep"] if e["ef_search"] == ef]
        return found

    quoted(text, "queries (0.9225 at 128)", "0.9225", at(d1m, 128)["reported"]["recall_at_10"])
    quoted(text, "kept 0.9865 on them", "0.9865", at(d1m, 512)["tuning"]["recall_at_10"])
    on_905 = at(chosen[1_000_000], 512)["tuning"]["recall_at_10"]
    assert f"but {on_905} on the 905" in text
    quoted(text, "has 4.1 GB of mapped files", "4.1", d1m["query_peak_mb"] / 1000)
    rss10k, rss100k = f"{pg10k['worker_rss_mb']:.0f}", f"{pg100k['worker_rss_mb']:.0f}"
    assert f"was {rss10k} MB at 10k, {rss100k} MB at 100k and 81 MB at 1M" in text
    quoted(text, "and 81 MB at 1M", "81", pg1m["worker_rss_mb"])
    quoted(text, "takes p50 23.7 ms through pg_textsearch", "23.7", p50(pg1m, "lexical"))
    quoted(text, "and the default plan p50 64.0 ms", "64.0", p50(pg1m, "default_plan"))
    # PostgreSQL's graph at 1M: built with the ef_construction its size rule gives, searched
    # as wide as its width rule gives, and what that kept.
    assert pg1m["hnsw"] == {"m": 32, "ef_construction": 400, "ef_search": 1500}
    assert pg_ef_construction(200, 1_000_000) == 400 and "to 400 at 1M" in text
    assert pg_search_width(128, 1_000_000) == 1500 and "searched 1500 wide" in text
    quoted(text, "recall@10 of exact is 0.9895 there", "0.9895", pg1m[recall])
    assert "took 998 s to build" in text and round(pg1m["index_vectors_s"]) == 998
    quoted(text, "kept 0.9715 of exact", "0.9715", at(pg1m, 1000)["reported"]["recall_at_10"])
    quoted(
        text, "1500 wide kept 0.9895 on the", "0.9895", at(pg1m, 1500)["reported"]["recall_at_10"]
    )
    quoted(text, "and 0.987 on the 200 choosing", "0.987", at(pg1m, 1500)["tuning"]["recall_at_10"])
    quoted(text, "at p50 39.5 ms a search", "39.5", at(pg1m, 1500)["reported"]["p50_ms"])
    quoted(text, "against 15.6 ms 1000 wide", "15.6", at(pg1m, 1000)["reported"]["p50_ms"])
    # bench/pg_ann.py at 1M: another build of the same graph, and the width it chose.
    pg_ann = results("pg_ann_1m")
    (build,) = pg_ann["builds"]
    assert (build["m"], build["ef_construction"]) == (32, 400)
    widths = {r["width"]: r for r in build["sweep"]}
    choosing = {w: r["choosing"] for w, r in widths.items()}
    assert pg_ann["choosing_queries"] == 905
    assert pg_ann["enough"] == [{"m": 32, "ef_construction": 400, "width": 1500}]
    assert f"and {widths[1000]['reported']['recall_at_10']} in the build of" in text
    assert f"1000 wide kept {choosing[1000]['recall_at_10']} (lower bound" in text
    assert f"bound {choosing[1000]['recall_at_10_low95']}), 1500 wide" in text
    assert (
        f"1500 wide {choosing[1500]['recall_at_10']} ({choosing[1500]['recall_at_10_low95']})"
        in text
    )
    assert f"at p50 {choosing[1500]['p50_ms']:.1f} ms a search against" in text
    assert f"against {choosing[1000]['p50_ms']:.1f} ms; 2000 wide" in text
    assert choosing[2000]["recall_at_10"] == choosing[1500]["recall_at_10"]
    assert (
        f"3000 wide {choosing[3000]['recall_at_10']} at {choosing[3000]['p50_ms']:.1f} ms" in text
    )
    serve = pg1m["serve"]
    quoted(text, "answered 12.4 requests a second", "12.4", serve["throughput_rps"])
    quoted(text, "(p50 1.28 s", "1.28", serve["p50_ms"] / 1000)
    quoted(text, "p99 3.4 s; 14.1", "3.4", serve["p99_ms"] / 1000)
    assert serve["errors"] == 0 and serve["workers_answering"] == 2
    quoted(text, "PostgreSQL took 71% of the CPU", "71", serve["cpu_share_pct"]["postgres"])
    at_100k = [f"{p50(pg100k, 'lexical'):.1f}", f"{p50(pg100k, 'default_plan'):.1f}"]
    phrase = f"at 100k: lexical p50 {at_100k[0]} ms, default plan p50 {at_100k[1]} ms"
    assert phrase in text, phrase
    assert f"recall {pg100k[recall]}, searched 128 wide" in text
    assert pg100k["hnsw"] == {"m": 32, "ef_construction": 200, "ef_search": 128}
    # bench/pg_ann.py at 100k: two builds of each graph, 128 wide on the choosing queries.
    at_100k_graphs: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for b in results("pg_ann")["builds"]:
        (row,) = [r["choosing"] for r in b["sweep"] if r["width"] == 128]
        at_100k_graphs.setdefault((b["m"], b["ef_construction"]), []).append(row)
    default, wider, denser = (at_100k_graphs[g] for g in ((32, 200), (32, 400), (48, 200)))
    assert (
        f"kept {default[0]['recall_at_10']} and {default[1]['recall_at_10']} of exact recall@10 "
        f"on the 905 choosing queries (lower bounds {default[0]['recall_at_10_low95']} and "
        f"{default[1]['recall_at_10_low95']})"
    ) in text
    assert f"400 kept {wider[0]['recall_at_10']} and {wider[1]['recall_at_10']};" in text
    assert f"m 48 kept {denser[0]['recall_at_10']} and {denser[1]['recall_at_10']}" in text
    enough = {(e["m"], e["ef_construction"]): e["width"] for e in results("pg_ann")["enough"]}
    assert enough[(32, 200)] == 256 and "would need 256 wide at 100k" in text
    for phrase, value in (
        ("lexical p50 ≤ 30 ms (23.7)", p50(pg1m, "lexical")),
        ("default plan p50 ≤ 80 ms (64.0)", p50(pg1m, "default_plan")),
        ("of exact (0.9895)", pg1m[recall]),
        ("worker memory ≤ 400 MB (81 MB)", pg1m["worker_rss_mb"]),
        ("open ≤ 5 s (0.3 s)", d1m["open_s"]),
        ("hybrid p50 ≤ 20 ms (8.4 ms", p50(d1m, "default_plan")),
        ("recall@10 ≥ 0.98 (0.987)", d1m[recall]),
    ):
        quoted(text, phrase, re.findall(r"\(([0-9.]+)", phrase)[-1], value)
    (bm25_1m,) = [s for s in results("pg_bm25")["scale"] if s["chunks"] == 1_000_000]
    lexical = bm25_1m["latency"]
    quoted(text, "; 6.4 ms with the three", "6.4", lexical["pg-index"]["k10"]["p50_ms"])
    quoted(text, "exhaustive SQL took 442 ms", "442", lexical["pg-sql"]["k10"]["p50_ms"])


def test_synthetic_probe_figures_are_its_results_file() -> None:
    text = " ".join(doc("pipeline/gate.md").split())
    corpora = results("synthetic")["corpora"]

    def refused(corpus: str, row: str) -> float:
        o = corpora[corpus]["methods"][row]["outcome"]["answerable"]
        return 100 * o["refused"] / o["n"]

    city, obliqa = corpora["city guides"], corpora["ObliQA dev"]
    mixed, heading = "fitted on mixed probes", "fitted on heading probes"
    # `written` counts the language model's writing in its seconds; the makers do not.
    seconds = max(m["make_seconds"] for name, m in obliqa["made"].items() if name != "written")
    quoted(text, "sections take about 2.2 s", "2.2", seconds)
    quoted(text, "the `mixed` maker: 12% against", "12", refused("city guides", mixed))
    quoted(text, "12% against 25%)", "25", refused("city guides", "default"))
    quoted(text, "comes within 0.08 of", "0.08", city["methods"][mixed]["gap"])
    quoted(text, "maker refuses 6% against", "6", refused("ObliQA dev", heading))
    quoted(text, "the default's 24%", "24", refused("ObliQA dev", "default"))
    low, high = obliqa["methods"][heading]["answerable_refused_range"]
    quoted(text, "ranges over 6% to", "6", 100 * low)
    quoted(text, "6% to 6% for", "6", 100 * high)
    features = city["features"]
    quoted(
        text, "answerable query is 0.7 against", "0.7", features["mixed"]["answerable"]["coverage"]
    )
    quoted(text, "0.7 against 0.6 for", "0.6", features["real"]["answerable"]["coverage"])


def test_band_figures_are_the_outcomes_results_file() -> None:
    text = " ".join(doc("pipeline/gate.md").split())
    data = results("outcomes")
    for name, label in (
        ("city guides", "| city guides (seed questions and probes) |"),
        ("Natech", "| Natech seed probes |"),
        ("ObliQA dev", "| ObliQA dev |"),
        ("ClapNQ shared half", "| ClapNQ shared half |"),
    ):
        rows = data["sets"][name]["rows"]
        alone = rows["three outcomes, the floor fitted to the index"]
        both = rows["three outcomes, the floor and band fitted to the index (default)"]
        a, b = alone["answerable"], both["answerable"]
        assert f"{label} {a['refused']} / {b['refused']} of {a['n']:,}" in text, name
        assert f"| {a['cautious']} / {b['cautious']} |" in text, name
        # the band never adds a confident answer
        for kind in alone:
            assert alone[kind]["confident"] == both[kind]["confident"], (name, kind)
    cost = data["ingest_cost"]["SciFact, BM25-only"]
    quoted(text, "| 2.64 s | 8.39 s | +217% | 5.69 s |", "5.69", cost["fit_seconds"])
    quoted(text, "| 2.64 s | 8.39 s | +217% |", "217", 100 * cost["added"])


def test_plan_fit_figures_are_its_results_file() -> None:
    text = " ".join(doc("pipeline/retrieve.md").split())
    sets = results("planfit")["sets"]

    def recall(name: str, pair: str) -> float:
        return float(sets[name]["differences"][pair]["recall@10"]["mean"])

    free = "free-grid plan - built-in plan"
    assert all(
        s["free_grid_fitted"] == "bm25+defs" for s in (sets["ObliQA dev"], sets["SciFact test"])
    )
    assert all(
        sets[n]["differences"][free]["recall@10"]["real"] for n in ("ObliQA dev", "SciFact test")
    )
    quoted(text, "lost 0.019 and", "0.019", -recall("ObliQA dev", free))
    quoted(text, "and 0.032 recall@10", "0.032", -recall("SciFact test", free))
    assert all(s["fitted"] == s["builtin"] for s in sets.values()) and len(sets) == 6
    quoted(text, "0.8 s on the example corpus", "0.8", sets["example corpus"]["fit_s"])
    quoted(text, "beside its 2.7 s build", "2.7", sets["example corpus"]["build_s"])
    quoted(text, "3.4 s on ObliQA dev", "3.4", sets["ObliQA dev"]["fit_s"])
    quoted(text, "beside 164 s", "164", sets["ObliQA dev"]["build_s"])
    quoted(text, "4.2 s on SciFact", "4.2", sets["SciFact test"]["fit_s"])
    quoted(text, "beside 173 s", "173", sets["SciFact test"]["build_s"])
    quoted(text, "it keeps there is 0.019", "0.019", recall("ObliQA dev", "built-in plan - bm25"))


def test_hostile_file_figures_are_its_results_file() -> None:
    text = " ".join(doc("hardening.md").split())
    hostile = results("fuzz")["hostile"]
    rows = hostile["rows"]
    after = [run for row in rows.values() for run in row["after"].values()]
    quoted(text, "no command took more than 743 MB", "743", max(r["peak_mb"] for r in after))
    quoted(text, "743 MB or 47.2 s", "47.2", max(r["seconds"] for r in after))
    assert all(r["answers"] for row in rows.values() for r in (row["after"]["ingest"],))
    one_sentence = rows["Markdown: the same 52 MB as one sentence"]["before"]["ingest"]
    quoted(text, "print 208 MB", "208", one_sentence["probe_bytes"] / 1e6)
    prose = rows["Markdown: 52 MB of prose in one section"]["before"]
    quoted(text, "to 1.1 GB", "1.1", max(prose[s]["peak_mb"] for s in prose) / 1024)
    assert importlib.import_module("fuzz").short_of_goal(hostile) == []


# ------------------------------------------------------------ the generated CLI reference


def test_the_cli_reference_is_every_commands_help() -> None:
    from groundqa.cli import main

    cli = hook("cli")
    found = cli.helps()
    assert {c for c, _ in found} == {(), *((name,) for name in main.commands)}
    page = cli.reference()
    for command, text in found:
        assert text.startswith(f"Usage: {' '.join(('groundqa', *command))} ")
        assert text in page
    assert cli.MARKER in doc("cli.md")


def test_subcommands_are_read_from_a_help_text() -> None:
    text = "Usage: x\n\nOptions:\n  -h  Help.\n\nCommands:\n  ask   Ask.\n  eval  Eval...\n"
    assert hook("cli").subcommands(text) == ["ask", "eval"]
    assert hook("cli").subcommands("Usage: x ask [OPTIONS]\n") == []


# ------------------------------------------------------------ benchmark records and pages


def test_every_results_file_is_declared_with_paths_that_exist() -> None:
    names = provenance.names()
    assert {"foundation", "retrieval", "gate"} <= set(names)
    assert set(names) <= set(provenance.BENCHMARKS), "declare it in bench/provenance.py"
    for name, bench in provenance.BENCHMARKS.items():
        assert (ROOT / bench.script).is_file(), name
        missing = [p for p in bench.paths if not (ROOT / p).exists()]
        assert not missing, f"{name} declares paths that do not exist: {missing}"


def test_results_written_before_recording_are_never_reported_fresh(tmp_path: Path) -> None:
    # Every committed results file records its provenance now; one written before recording
    # began (the same figures without the block) must read as such, never as fresh.
    assert all("provenance" in results(n) for n in provenance.names())
    data = results("scale_1m")
    del data["provenance"]
    (tmp_path / "scale_1m.json").write_text(json.dumps(data))
    s = provenance.status("scale_1m", results=tmp_path)
    assert s.state == "predates recording" and not s.fresh
    assert s.ran == data["machine"]["date"]
    assert "Predates recording" in hook("benchmarks").page("scale_1m", s)


def test_a_record_is_fresh_until_a_measured_path_changes_or_goes(tmp_path: Path) -> None:
    # A copy of what the embedder benchmark measures, outside any repository.
    bench = provenance.BENCHMARKS["embedder"]
    for rel in bench.paths:
        src, dst = ROOT / rel, tmp_path / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            dst.write_bytes(src.read_bytes())
    out = tmp_path / "results"
    out.mkdir()

    def write() -> None:
        data = {
            "machine": {"date": "2026-12-01"},
            "provenance": provenance.record("embedder", tmp_path),
        }
        (out / "embedder.json").write_text(json.dumps(data))

    write()
    s = provenance.status("embedder", tmp_path, out)
    assert s.state == "fresh" and s.changed == () and s.commit is None

    # A byte changed anywhere under a declared folder.
    embed = tmp_path / "src" / "groundqa" / "embed"
    first = sorted(embed.glob("*.py"))[0]
    first.write_text(first.read_text() + "\n# changed\n")
    s = provenance.status("embedder", tmp_path, out)
    assert s.state == "stale" and s.changed == ("src/groundqa/embed",)

    write()
    (tmp_path / "bench" / "_reference_embed.py").unlink()
    s = provenance.status("embedder", tmp_path, out)
    assert s.state == "stale" and s.changed == ("bench/_reference_embed.py",)
    assert "stale" in s.line() and "bench/_reference_embed.py" in s.line()


def test_write_result_records_the_commit_and_a_hash_of_every_measured_path(
    tmp_path: Path,
) -> None:
    readme = (ROOT / "README.md").read_bytes()
    _common.write_result("embedder", {"runtimes": {}}, "## Title\n\nbody", results=tmp_path)
    data = json.loads((tmp_path / "embedder.json").read_text())
    prov = data["provenance"]
    assert set(prov["sources"]) == set(provenance.BENCHMARKS["embedder"].paths)
    assert all(len(h) == 64 for h in prov["sources"].values())
    assert set(prov["uncommitted"]) <= set(prov["sources"])
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert prov["commit"] == (head or None)
    assert (tmp_path / "embedder.md").read_text() == "## Title\n\nbody\n"
    # The figures go to the generated pages, never into the README.
    assert (ROOT / "README.md").read_bytes() == readme
    assert provenance.status("embedder", ROOT, tmp_path).state == "fresh"


def test_bench_status_lists_what_is_not_fresh(capsys: pytest.CaptureFixture[str]) -> None:
    statuses = provenance.statuses()
    assert provenance.main([]) == 0
    out = capsys.readouterr().out
    listed = {line.split()[0] for line in out.splitlines()[:-1]}
    assert listed == {s.name for s in statuses if not s.fresh}
    fresh = sum(s.fresh for s in statuses)
    assert f"{fresh} of {len(statuses)} results fresh" in out
    assert provenance.main(["--check"]) == (0 if fresh == len(statuses) else 1)


def test_a_benchmark_page_is_its_results_file_under_the_note() -> None:
    pages = hook("benchmarks")
    for name in provenance.names():
        s = provenance.status(name)
        page = pages.page(name, s)
        body = (RESULTS / f"{name}.md").read_text().strip()
        if body.startswith("## "):
            body = body.split("\n", 1)[1].strip()
        assert pages.IMAGE.sub(r"](\1)", body) in page
        assert page.startswith(f"# {provenance.BENCHMARKS[name].title}\n")
        assert s.ran and s.ran in page.split("\n\n", 2)[1]
    # An image the results file links from the repository root is served beside the page.
    gate = pages.page("gate", provenance.status("gate"))
    assert "](gate_reliability.png)" in gate and "/bench/results/" not in gate


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the docs need the dev extra: pip install -e '.[dev]'")
    exe = Path(sys.executable).with_name("mkdocs")
    proc = subprocess.run(
        [str(exe), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    site = tmp_path / "site"
    assert (site / "cli" / "index.html").exists()
    for name in provenance.names():
        assert (site / "benchmarks" / name / "index.html").exists(), name
    assert (site / "benchmarks" / "gate_reliability.png").exists()


def _imports(script: Path) -> set[str]:
    import ast

    found: set[str] = set()
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


def _source(module: str) -> str | None:
    """The repository path of an importable module of ours, or None."""
    parts = module.split(".")
    if parts[0] == "groundqa":
        base = Path("src", *parts)
    elif parts[0] == "tests":
        base = Path(*parts)
    elif (ROOT / "bench" / f"{parts[0]}.py").exists() and len(parts) == 1:
        base = Path("bench", parts[0])
    else:
        return None
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if (ROOT / candidate).is_file():
            return candidate.as_posix()
    return None


def test_what_a_benchmark_script_imports_is_declared() -> None:
    # The harness itself is not what a benchmark measures.
    harness = {*provenance.HARNESS, "tests/__init__.py"}
    for name, bench in provenance.BENCHMARKS.items():
        used = {_source(m) for m in _imports(ROOT / bench.script)} - {None, *harness}
        undeclared = sorted(
            str(p)
            for p in used
            if not any(p == d or str(p).startswith(d.rstrip("/") + "/") for d in bench.paths)
        )
        assert not undeclared, f"{name}: declare in bench/provenance.py: {undeclared}"


def test_make_lint_builds_the_site_strictly() -> None:
    makefile = (ROOT / "Makefile").read_text()
    lint = makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    (line,) = [ln for ln in lint.splitlines() if "mkdocs build" in ln]
    assert "--strict" in line
    # mkdocs 1.6 counts warnings for --strict only at the verbosity it prints them.
    assert "--quiet" not in line and " -q" not in line
