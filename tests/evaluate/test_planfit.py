"""The retrieval plan fitted to each index by itself (`evaluate.planfit`), over real builds.

The example corpus is big enough to fit on (147 chunks); the two-guide corpus of
`write_small_corpus` is not. The PostgreSQL store keeps the fit in its manifest too.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from groundqa.cli import main
from groundqa.engine import Engine
from groundqa.errors import CalibrationError
from groundqa.evaluate import planfit
from groundqa.evaluate.planfit import documents_of, fit_plan, paired_interval, tune
from groundqa.index import set_part
from groundqa.index.manifest import current_build, read_manifest
from groundqa.ingestion import ingest
from groundqa.retrieve import DEFAULT_DENSE_PLAN, DEFAULT_LEXICAL_PLAN, describe_fit
from groundqa.serve.settings import ServeSettings
from tests.conftest import REGPACK, copy_index, write_small_corpus
from tests.serve.test_api import live_server

# ---------------------------------------------------------------- the interval


def test_a_constant_difference_has_no_width() -> None:
    assert paired_interval([0.5, 1.0, 0.25], [0.25, 0.75, 0.0], ["a", "b", "c"]) == (0.25, 0.25)


def test_two_independent_questions_span_every_resample() -> None:
    # Differences 1 and 0: a resample is {1,1}, {1,0} or {0,0}, so its mean is 1, 0.5 or 0.
    low, high = paired_interval([1.0, 0.0], [0.0, 0.0], ["a", "b"])
    assert (low, high) == (0.0, 1.0)


def test_questions_of_one_group_are_resampled_together() -> None:
    # The same two differences in one group: every resample holds both, mean 0.5.
    assert paired_interval([1.0, 0.0], [0.0, 0.0], ["g", "g"]) == (0.5, 0.5)


def test_the_interval_is_the_same_under_the_same_seed() -> None:
    a = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    b = [0.0, 0.0, 1.0, 0.0, 1.0, 1.0]
    groups = list("abcdef")
    first = paired_interval(a, b, groups, seed=3)
    assert paired_interval(a, b, groups, seed=3) == first
    assert first[0] < 1 / 6 < first[1]  # the mean difference lies inside


# ---------------------------------------------------------------- fitting a real index


@pytest.fixture(scope="module")
def dense_index(tmp_path_factory: pytest.TempPathFactory, regpack_build: Path) -> Path:
    index = tmp_path_factory.mktemp("planfit") / "idx"
    copy_index(regpack_build, index)
    return index


@pytest.fixture(scope="module")
def fitted(dense_index: Path) -> dict:
    return tune(dense_index, dry_run=True)


def test_the_indexed_corpus_comes_back_as_its_sections(dense_index: Path) -> None:
    engine = Engine.open(dense_index)
    documents = documents_of(engine.chunks)
    sections = {s.section_id: s for d in documents for s in d.sections}
    assert set(sections) == {c.section_id for c in engine.chunks}
    assert {d.doc_id for d in documents} == {c.doc_id for c in engine.chunks}
    whole = next(c for c in engine.chunks if c.parts == 1)
    assert sections[whole.section_id].text == whole.text
    split = next(c for c in engine.chunks if c.parts > 1)
    parts = sorted(
        (c for c in engine.chunks if c.section_id == split.section_id), key=lambda c: c.part
    )
    assert sections[split.section_id].text == "\n\n".join(c.text for c in parts)


def test_every_plan_of_the_grid_is_scored_on_made_questions(fitted: dict) -> None:
    assert "skipped" not in fitted
    assert fitted["builtin"] == DEFAULT_DENSE_PLAN
    assert list(fitted["grid"]) == list(planfit.DENSE_GRID)
    assert planfit.MIN_PROBES <= fitted["probes"] <= planfit.ANSWERABLE
    for figures in fitted["grid"].values():
        assert 0.0 <= figures["ndcg@10"] <= figures["recall@10"] <= 1.0
    best = max(fitted["grid"].values(), key=lambda f: (f["recall@10"], f["ndcg@10"]))
    assert fitted["grid"][fitted["best"]] == best


def test_a_plan_is_chosen_only_past_its_noise(fitted: dict) -> None:
    # Either way round, the entry says why: a chosen plan has an interval above zero; a
    # kept built-in plan names the reason.
    if fitted.get("plan"):
        low, high = fitted["interval"]
        assert 0.0 < low <= high
        assert fitted["plan"] == fitted["best"] != fitted["builtin"]
    else:
        assert fitted["kept"]
        assert "interval" not in fitted or fitted["interval"][0] <= 0.0


def test_the_same_build_fits_the_same_plan(dense_index: Path, fitted: dict) -> None:
    assert fit_plan(Engine.open(dense_index, reader="lexical")) == fitted


def test_a_stored_fit_becomes_the_default_plan_and_a_named_one_overrides_it(
    dense_index: Path, fitted: dict
) -> None:
    chosen = fitted.get("plan") or fitted["builtin"]
    tune(dense_index)
    manifest = read_manifest(current_build(dense_index))
    assert manifest.retrieval == {"plan_fit": fitted}
    engine = Engine.open(dense_index)
    assert engine.default_retriever == chosen
    question = "What is the turbine setback from a dwelling in Northmere?"
    assert engine.retrieval(question).plan == chosen
    assert engine.retrieval(question, retriever="dense").plan == "dense"

    inspected = CliRunner().invoke(main, ["inspect", "--index", str(dense_index), "--json"])
    assert inspected.exit_code == 0, inspected.output
    summary = json.loads(inspected.output)["retrieval"]
    assert summary == describe_fit(manifest.retrieval, DEFAULT_DENSE_PLAN)
    assert "questions made from this corpus" in summary
    # read back from the manifest, the line still names what the plans were ranked by
    assert f"recall@10 {fitted['grid'][DEFAULT_DENSE_PLAN]['recall@10']:.3f}" in summary

    with live_server(engine, ServeSettings()) as url:
        health = httpx.get(f"{url}/health").json()
    assert health["default_retriever"] == chosen
    assert health["retrieval"] == {
        "plan": chosen,
        "fitted": bool(fitted.get("plan")),
        "summary": summary,
    }

    planfit.reset(dense_index)
    assert read_manifest(current_build(dense_index)).retrieval == {}
    assert Engine.open(dense_index).default_retriever == DEFAULT_DENSE_PLAN


def test_a_fit_for_another_build_is_refused(dense_index: Path) -> None:
    with pytest.raises(CalibrationError, match="groundqa tune"):
        set_part(dense_index, "retrieval", {"plan_fit": {"plan": "bm25"}}, "0" * 64)
    assert read_manifest(current_build(dense_index)).retrieval == {}


def test_a_rebuild_starts_from_the_built_in_plan(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    ingest([REGPACK], index, dense=None)
    entry = tune(index)
    assert entry["builtin"] == DEFAULT_LEXICAL_PLAN
    assert list(entry["grid"]) == list(planfit.LEXICAL_GRID)
    assert read_manifest(current_build(index)).retrieval == {"plan_fit": entry}
    ingest([REGPACK], index, dense=None, force=True)
    assert read_manifest(current_build(index)).retrieval == {}
    assert Engine.open(index).default_retriever == DEFAULT_LEXICAL_PLAN


def test_ingest_fits_the_plan_of_each_new_build_unless_told_not_to(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    runner = CliRunner()
    args = ["ingest", str(REGPACK), "--index", str(index), "--no-dense", "--json"]
    built = json.loads(runner.invoke(main, args, catch_exceptions=False).output)
    stored = read_manifest(current_build(index)).retrieval["plan_fit"]
    assert set(stored["grid"]) == set(planfit.LEXICAL_GRID)
    assert stored["index_fingerprint"] == read_manifest(current_build(index)).fingerprint
    assert built["retrieval"].startswith("retrieval: ")
    assert "plan_fit" in built["timings_s"]
    # An up-to-date build keeps its fit; a forced rebuild fits again, to the same entry.
    again = json.loads(runner.invoke(main, args, catch_exceptions=False).output)
    assert again["changed"] is False and "plan_fit" not in again["timings_s"]
    forced = json.loads(runner.invoke(main, [*args, "--force"], catch_exceptions=False).output)
    assert forced["changed"] is True and "plan_fit" in forced["timings_s"]
    assert read_manifest(current_build(index)).retrieval["plan_fit"] == stored

    plain = tmp_path / "plain"
    args = ["ingest", str(REGPACK), "--index", str(plain), "--no-dense", "--no-tune", "--json"]
    report = json.loads(runner.invoke(main, args, catch_exceptions=False).output)
    assert report["retrieval"] is None and "plan_fit" not in report["timings_s"]
    assert read_manifest(current_build(plain)).retrieval == {}
    assert "never fitted" in describe_fit({}, DEFAULT_LEXICAL_PLAN)


def test_a_fit_reads_a_seeded_sample_of_a_corpus_over_its_text_budget(
    dense_index: Path, fitted: dict
) -> None:
    chunks = Engine.open(dense_index).chunks
    total = sum(len(c.text) for c in chunks)
    assert planfit.sample_chunks(chunks, total) == list(chunks)
    sample = planfit.sample_chunks(chunks, total // 3)
    assert sample == planfit.sample_chunks(chunks, total // 3)  # the same under SEED
    assert 0 < len(sample) < len(chunks) and sum(len(c.text) for c in sample) <= total // 3
    rows = [chunks.index(c) for c in sample]
    assert rows == sorted(rows) and rows != list(range(len(sample)))  # drawn, in index order
    assert "sample" not in fitted  # the example corpus is read whole


def test_a_fit_over_a_sample_says_so(dense_index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = Engine.open(dense_index).chunks
    half = sum(len(c.text) for c in chunks) // 2
    monkeypatch.setattr(planfit, "MAX_TEXT", half)
    entry = tune(dense_index, dry_run=True)
    sampled = len(planfit.sample_chunks(chunks, half))
    assert entry["sample"] == {"chunks": sampled, "of": len(chunks)}
    assert entry["probes"] >= planfit.MIN_PROBES  # still fitted, on the sample's questions
    # and the line `inspect`, /health and the build report show says the same
    summary = describe_fit({"plan_fit": entry}, str(entry["builtin"]))
    assert f"made from a sample of {sampled:,} of this corpus's {len(chunks):,} chunks" in summary
    assert "made from this corpus" not in summary


def test_a_small_corpus_keeps_the_built_in_plan_and_says_why(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    ingest([write_small_corpus(tmp_path / "corpus")], index, dense=None)
    result = CliRunner().invoke(main, ["tune", "--index", str(index)])
    assert result.exit_code == 0, result.output
    assert f"under {planfit.MIN_CHUNKS}: too few to tell plans apart" in result.output
    stored = read_manifest(current_build(index)).retrieval["plan_fit"]
    assert "skipped" in stored and "plan" not in stored
    assert Engine.open(index).default_retriever == DEFAULT_LEXICAL_PLAN


def test_the_tune_command_reports_and_stores_unless_told_not_to(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    ingest([REGPACK], index, dense=None)
    runner = CliRunner()
    dry = runner.invoke(main, ["tune", "--index", str(index), "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    data = json.loads(dry.output)
    assert data["stored"] is False and set(data["plan_fit"]["grid"]) == set(planfit.LEXICAL_GRID)
    assert read_manifest(current_build(index)).retrieval == {}

    stored = runner.invoke(main, ["tune", "--index", str(index)])
    assert stored.exit_code == 0, stored.output
    assert "questions made from the corpus" in stored.output
    assert read_manifest(current_build(index)).retrieval == {"plan_fit": data["plan_fit"]}

    both = runner.invoke(main, ["tune", "--index", str(index), "--reset", "--dry-run"])
    assert both.exit_code == 2 and "not both" in both.output
    reset = runner.invoke(main, ["tune", "--index", str(index), "--reset"])
    assert reset.exit_code == 0 and "built-in plan again" in reset.output
    assert read_manifest(current_build(index)).retrieval == {}


def test_the_build_hook_never_fails_the_build(tmp_path: Path) -> None:
    note = planfit.tune_plan(tmp_path / "no-index-here")
    assert note.startswith("the retrieval plan could not be fitted (")
    assert note.endswith("the built-in plan is kept")


def test_postgres_keeps_the_fit_in_its_manifest(pg_url: str) -> None:
    report = ingest([REGPACK], pg_url, dense=None, fit_plan=planfit.tune_plan)
    assert report.plan_note.startswith("retrieval: ")
    fitted_at_build = Engine.open(pg_url).manifest.retrieval["plan_fit"]
    entry = tune(pg_url)
    assert entry == fitted_at_build
    engine = Engine.open(pg_url)
    assert engine.manifest.retrieval == {"plan_fit": entry}
    assert engine.default_retriever == (entry.get("plan") or DEFAULT_LEXICAL_PLAN)
    with pytest.raises(CalibrationError, match="groundqa tune"):
        set_part(pg_url, "retrieval", {}, "0" * 64)
    planfit.reset(pg_url)
    assert Engine.open(pg_url).manifest.retrieval == {}
