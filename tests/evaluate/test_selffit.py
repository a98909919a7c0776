"""The gate's floor and band fitted to each index by itself (`evaluate.selffit`), over
real builds.

The example corpus is big enough to fit on (147 chunks); the two-guide corpus of
`write_small_corpus` is not (under 30). The PostgreSQL store fits the same way.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundqa.cli import main
from groundqa.engine import Engine
from groundqa.evaluate import load_probes, selffit
from groundqa.evaluate.selffit import self_fit
from groundqa.evaluate.synthetic import out_of_scope_questions
from groundqa.gate import DEFAULT_GATE, DEFAULT_READER_GATE
from groundqa.index.manifest import current_build, read_manifest
from groundqa.index.open import set_gate
from groundqa.ingestion import ingest
from tests.conftest import REGPACK, REGPACK_PROBES, is_default, write_small_corpus


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    index = tmp_path_factory.mktemp("selffit") / "idx"
    report = ingest([REGPACK], index, dense=None, fit_gate=self_fit)
    assert "gate: cautious from " in report.message
    assert "self_fit" in report.timings_s
    return index


def test_the_floor_refuses_every_question_it_was_fitted_on(fitted: Path) -> None:
    entry = read_manifest(current_build(fitted)).gate["self_fit"]
    assert entry["questions"] >= selffit.MIN_QUESTIONS and "skipped" not in entry
    assert entry["highest"] < entry["floor"] <= DEFAULT_GATE.threshold
    engine = Engine.open(fitted)
    gate = engine.gate
    assert is_default(gate) and gate.floor == entry["floor"]
    assert "a floor fitted on" in gate.describe()

    questions = out_of_scope_questions(
        lambda q: selffit.known_share(engine.retrieval(q)), n=entry["questions"]
    )
    assert len(questions) == entry["questions"]
    assert {engine.ask(p.question).outcome for p in questions} == {"refused"}


def test_the_band_is_fitted_on_questions_made_from_the_index(fitted: Path) -> None:
    entry = read_manifest(current_build(fitted)).gate["self_fit"]["band"]
    assert entry["method"] == selffit.BAND_METHOD and "skipped" not in entry
    assert "sample" not in entry  # the example corpus is read whole
    made = entry["probes"]
    assert made["answerable"] >= selffit.MIN_BAND_PROBES // 2
    assert made["near_miss"] > 0 and made["out_of_scope"] > 0
    assert 0.0 < entry["floor"] <= entry["threshold"] and entry["cv_auc"] > 0.8
    gate = Engine.open(fitted).gate
    assert gate.band is not None and gate.band.floor == entry["floor"]
    assert f"or where a gate fitted on {sum(made.values())} questions made" in gate.describe()


def test_the_band_only_turns_refusals_into_cautious_answers(fitted: Path) -> None:
    engine = Engine.open(fitted)
    assert engine.gate.band is not None
    alone = replace(engine.gate, band=None)
    rescued = []
    for probe in load_probes(REGPACK_PROBES):
        decision = engine.ask(probe.question).gate
        before = alone.outcome(decision.score) if decision.features else "refused"
        if decision.outcome != before:
            assert (before, decision.outcome) == ("refused", "cautious")
            assert decision.band is not None and decision.band >= engine.gate.band.floor
            rescued.append(probe)
        if probe.kind == "out_of_scope":
            assert decision.outcome == "refused"
    assert rescued, "the band changed no outcome on the example corpus's probes"
    shown = CliRunner().invoke(main, ["ask", "--index", str(fitted), rescued[0].question])
    assert shown.exit_code == 0, shown.output
    assert "cautious: confidence" in shown.stdout and "the band gives" in shown.stdout


def test_the_same_build_fits_the_same_floor(fitted: Path, tmp_path: Path) -> None:
    again = tmp_path / "idx"
    ingest([REGPACK], again, dense=None, fit_gate=self_fit)
    first = read_manifest(current_build(fitted)).gate
    assert read_manifest(current_build(again)).gate == first
    assert (
        Engine.open(again).fingerprint.split(":")[-1]
        == Engine.open(fitted).fingerprint.split(":")[-1]
    )


def test_no_self_fit_keeps_the_built_in_default(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    result = CliRunner().invoke(
        main, ["ingest", str(REGPACK), "--index", str(index), "--no-dense", "--no-self-fit"]
    )
    assert result.exit_code == 0, result.output
    assert "gate: cautious" not in result.stdout
    assert read_manifest(current_build(index)).gate == {}
    assert Engine.open(index).gate is DEFAULT_GATE


def test_a_corpus_too_small_keeps_the_default_floor_with_a_note(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    report = ingest([write_small_corpus(tmp_path / "corpus")], index, dense=None, fit_gate=self_fit)
    assert "the gate keeps the built-in floor: the index has" in report.message
    gate = Engine.open(index).gate
    assert is_default(gate) and gate.floor == DEFAULT_GATE.floor and gate.band is None
    inspected = CliRunner().invoke(main, ["inspect", "--index", str(index)])
    assert inspected.exit_code == 0 and "the floor was not fitted" in inspected.stdout


def test_a_failed_fit_never_fails_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(engine: Engine, n: int = 0) -> dict[str, object]:
        raise RuntimeError("disk full")

    monkeypatch.setattr(selffit, "fit_floor", broken)
    index = tmp_path / "idx"
    report = ingest([REGPACK], index, dense=None, fit_gate=selffit.self_fit)
    assert report.changed
    assert "the gate's floor could not be fitted (disk full)" in report.message
    assert Engine.open(index).gate is DEFAULT_GATE


def test_a_failed_band_keeps_the_floor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(engine: Engine, n: int = 0) -> dict[str, object]:
        raise RuntimeError("disk full")

    monkeypatch.setattr(selffit, "fit_band", broken)
    index = tmp_path / "idx"
    report = ingest([REGPACK], index, dense=None, fit_gate=selffit.self_fit)
    assert "gate: cautious from " in report.message
    assert "; no band: it failed (disk full)" in report.message
    gate = Engine.open(index).gate
    assert gate.floor < DEFAULT_GATE.threshold and gate.band is None


def test_a_calibration_is_kept_and_not_fitted_over(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    ingest([REGPACK], index, dense=None, fit_gate=self_fit)
    calibrated = CliRunner().invoke(
        main, ["calibrate", "--index", str(index), "--probes", str(REGPACK_PROBES)]
    )
    assert calibrated.exit_code == 0, calibrated.output
    report = ingest([REGPACK], index, dense=None, force=True, fit_gate=self_fit)
    assert "gate: cautious" not in report.message
    gate = read_manifest(current_build(index)).gate
    assert gate["calibrated"] and "self_fit" not in gate


def test_the_answer_model_keeps_its_own_default(fitted: Path) -> None:
    assert Engine.open(fitted, reader="model").gate is DEFAULT_READER_GATE


def test_health_says_the_floor_was_fitted(fitted: Path) -> None:
    import httpx

    from groundqa.serve import ServeSettings
    from tests.serve.test_api import live_server

    with live_server(Engine.open(fitted), ServeSettings()) as base:
        gate = httpx.get(f"{base}/health", timeout=30).json()["gate"]
    assert gate["self_fit"] is True and gate["floor"] < gate["threshold"]
    assert "a floor fitted on" in gate["summary"]


def test_the_postgres_store_fits_its_floor_too(pg_url: str, fitted: Path) -> None:
    report = ingest([REGPACK], pg_url, dense=None, fit_gate=self_fit)
    assert "gate: cautious from " in report.message
    engine = Engine.open(pg_url)
    local = read_manifest(current_build(fitted)).gate["self_fit"]
    assert engine.gate.info["self_fit"]["questions"] == local["questions"]
    assert engine.gate.floor == pytest.approx(local["floor"], abs=0.02)
    assert engine.gate.band is not None
    assert engine.gate.info["self_fit"]["band"]["probes"] == local["band"]["probes"]


def test_an_index_built_before_floors_were_fitted_gets_one_when_ingested_again(
    tmp_path: Path,
) -> None:
    index = tmp_path / "idx"
    ingest([REGPACK], index, dense=None)
    assert read_manifest(current_build(index)).gate == {}
    report = ingest([REGPACK], index, dense=None, fit_gate=self_fit)
    assert not report.changed and "nothing to do; gate: cautious from " in report.message
    assert "self_fit" in read_manifest(current_build(index)).gate
    # once fitted, an unchanged corpus is left alone
    assert ingest([REGPACK], index, dense=None, fit_gate=self_fit).message.endswith("nothing to do")
    # a floor fitted before there were bands is fitted again, band and all
    entry = read_manifest(current_build(index)).gate["self_fit"]
    set_gate(index, {"self_fit": {k: v for k, v in entry.items() if k != "band"}})
    assert Engine.open(index).gate.band is None
    report = ingest([REGPACK], index, dense=None, fit_gate=self_fit)
    assert not report.changed and "; cautious, too, where a gate fitted on" in report.message
    assert read_manifest(current_build(index)).gate["self_fit"] == entry


# ---------------------------------------------------------------- calibrate --synthetic


def _built(tmp_path: Path) -> tuple[Path, Path]:
    corpus = Path(shutil.copytree(REGPACK, tmp_path / "corpus"))
    index = tmp_path / "idx"
    ingest([corpus], index, dense=None, fit_gate=self_fit)
    return corpus, index


def test_calibrate_synthetic_fits_the_gate_on_probes_made_from_the_corpus(
    tmp_path: Path,
) -> None:
    _, index = _built(tmp_path)
    result = CliRunner().invoke(main, ["calibrate", "--index", str(index), "--synthetic"])
    assert result.exit_code == 0, result.output
    assert "probes made from the corpus (mixed)" in result.stdout
    assert "not on real questions" in result.stdout
    stored = read_manifest(current_build(index)).gate
    assert stored["calibrated"] and stored["synthetic"]["method"] == "mixed"
    assert stored["synthetic"]["made"]["answerable"] > 0
    gate = Engine.open(index).gate
    assert gate.calibrated and gate.floor <= gate.threshold
    assert "probes made from this corpus" in gate.describe()
    # the same corpus makes the same probes, so the same gate
    again = CliRunner().invoke(
        main, ["calibrate", "--index", str(index), "--synthetic", "--json", "--dry-run"]
    )
    assert again.exit_code == 0, again.output
    fitted = json.loads(again.stdout)["gate"]
    assert fitted["model"] == stored["model"] and fitted["threshold"] == stored["threshold"]


@pytest.mark.parametrize("change", ["gone", "edited"])
def test_calibrate_synthetic_needs_the_sources_the_index_was_built_from(
    tmp_path: Path, change: str
) -> None:
    corpus, index = _built(tmp_path)
    page = corpus / "local_fennick_waste_collection.md"
    if change == "gone":
        shutil.rmtree(corpus)
    else:
        page.write_text(page.read_text("utf-8") + "\n\nBins are washed in May.\n", "utf-8")
    before = read_manifest(current_build(index)).gate
    result = CliRunner().invoke(main, ["calibrate", "--index", str(index), "--synthetic"])
    assert result.exit_code == 1
    (line,) = [ln for ln in result.stderr.splitlines() if ln.strip()]
    expected = "cannot be read again" if change == "gone" else "the sources changed"
    assert line.startswith("error: ") and expected in line
    assert read_manifest(current_build(index)).gate == before
