"""`groundqa calibrate` end to end: the real CLI on real indexes of the example corpus,
the manifest it rewrites, the engine that reads it, and the HTTP API that reports it.

Indexes are BM25-only builds of examples/regpack (about a second each) unless a test
needs vectors. Tests that change an index work on their own copy of a pristine build.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import shutil
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from click.testing import CliRunner, Result

from groundqa.cli import main
from groundqa.engine import Engine
from groundqa.errors import CalibrationError
from groundqa.evaluate import Probe, load_probes
from groundqa.evaluate.calibrate import ProbeFeatures, fit_report, probe_features, screen
from groundqa.evaluate.selffit import self_fit
from groundqa.gate import (
    DEFAULT_GATE,
    DEFAULT_READER_GATE,
    DENSE_FEATURES,
    LEXICAL_FEATURES,
    READER_FEATURES,
    calibrated_gate,
)
from groundqa.gate.model import probe_fingerprint
from groundqa.index.manifest import MANIFEST, current_build, read_manifest, update_gate
from groundqa.ingestion import ingest
from tests.conftest import (
    REGPACK,
    REGPACK_PROBES,
    ROOT,
    copy_index,
    is_default,
    need_shared,
    write_small_corpus,
)

PROBES = load_probes(REGPACK_PROBES)
PROBE_SET = probe_fingerprint([(p.question, p.kind) for p in PROBES])
TURBINE = "What is the turbine setback from a dwelling in Northmere?"
OFF_TOPIC = "Who won the 1994 World Cup?"
ONE_MODE = (
    "error: calibrate needs exactly one of --probes FILE, --synthetic, --apply FILE or --reset\n"
)
DROPPED = (
    "the corpus or settings changed, so the gate calibration was dropped; "
    "run `groundqa calibrate` again"
)


def cli(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def error_line(result: Result) -> str:
    """The one `error: ...` line a failing command prints, and nothing else."""
    assert result.stdout == "", result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def manifest_bytes(index: Path) -> bytes:
    return (current_build(index) / MANIFEST).read_bytes()


def data_hashes(index: Path) -> dict[str, str]:
    """sha256 of every file of the current build except its manifest."""
    build = current_build(index)
    return {
        str(f.relative_to(build)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(build.rglob("*"))
        if f.is_file() and f.name != MANIFEST
    }


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


@dataclass(frozen=True)
class Calibrated:
    index: Path
    export: Path
    result: Result


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A BM25-only build of the example corpus that no test changes."""
    index = tmp_path_factory.mktemp("pristine") / "idx"
    ingest([REGPACK], index, dense=None)
    return index


@pytest.fixture(scope="module")
def calibrated(pristine: Path, tmp_path_factory: pytest.TempPathFactory) -> Calibrated:
    """A copy of `pristine` calibrated by the CLI on the example probes, and its export."""
    root = tmp_path_factory.mktemp("calibrated")
    index = copy_index(pristine, root / "idx")
    export = root / "gate.json"
    result = cli("calibrate", "--index", index, "--probes", REGPACK_PROBES, "--export", export)
    assert result.exit_code == 0, result.output
    return Calibrated(index, export, result)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Another index altogether: the two-guide corpus."""
    root = tmp_path_factory.mktemp("small")
    index = root / "idx"
    ingest([write_small_corpus(root / "corpus")], index, dense=None)
    return index


@pytest.fixture
def fresh(pristine: Path, tmp_path: Path) -> Path:
    """This test's own copy of the pristine build."""
    return copy_index(pristine, tmp_path / "idx")


@pytest.fixture
def fresh_calibrated(calibrated: Calibrated, tmp_path: Path) -> Path:
    """This test's own copy of the calibrated build."""
    return copy_index(calibrated.index, tmp_path / "cal")


# ---------------------------------------------------------------- calibrate --probes


def test_calibrate_stores_the_gate_in_the_manifest_and_nothing_else(
    calibrated: Calibrated, pristine: Path
) -> None:
    out = calibrated.result.stdout
    assert "5-fold cross-validated: each question judged by a model fitted without it" in out
    assert f"stored in {calibrated.index} (build " in out
    # read_manifest verifies every data file against the sizes and hashes it records
    manifest = read_manifest(current_build(calibrated.index))
    gate = manifest.gate
    assert gate["calibrated"] is True and gate["kind"] == "calibrated-logistic"
    assert gate["index_fingerprint"] == manifest.fingerprint
    assert gate["build_id"] == manifest.build_id
    assert gate["probe_fingerprint"] == PROBE_SET
    assert gate["probes"] == {"answerable": 52, "unanswerable": 29}
    assert gate["folds"] == 5 and gate["target_false_refusal"] == 0.05
    engine = Engine.open(calibrated.index)
    assert gate["generator"] == "extractive" and gate["retriever"] == engine.default_retriever
    assert 0.0 < gate["threshold"] < 1.0 and 0.5 < gate["cv_auc"] <= 1.0
    assert gate["model"]["features"] == list(LEXICAL_FEATURES)
    assert json.loads(calibrated.export.read_text("utf-8")) == gate
    # only the gate changed: the rest of the manifest and every data file are as built
    before = read_manifest(current_build(pristine))
    assert {k: v for k, v in manifest.to_dict().items() if k != "gate"} == {
        k: v for k, v in before.to_dict().items() if k != "gate"
    }
    assert data_hashes(calibrated.index) == data_hashes(pristine)
    assert engine.gate.calibrated and engine.gate.to_dict() == gate


def test_inspect_says_which_gate_an_index_uses(calibrated: Calibrated, pristine: Path) -> None:
    def gate_line(index: Path) -> str:
        result = cli("inspect", "--index", index)
        assert result.exit_code == 0, result.output
        return next(line for line in result.stdout.splitlines() if line.startswith("gate: "))

    assert gate_line(calibrated.index).startswith(
        f"gate: calibrated on 52 answerable and 29 unanswerable probes (probe set {PROBE_SET}, "
    )
    assert gate_line(pristine).startswith("gate: not calibrated: the built-in default")


def test_ask_prints_the_confidence_and_which_gate_gave_it(
    calibrated: Calibrated, pristine: Path
) -> None:
    for index, kind in (
        (calibrated.index, "calibrated"),
        (pristine, "default gate, not calibrated for this index"),
    ):
        answer = Engine.open(index).ask(TURBINE)
        result = cli("ask", TURBINE, "--index", index)
        assert result.exit_code == 0, result.output
        gate = answer.gate
        assert gate.floor is not None and gate.floor < gate.threshold  # both have a band
        line = (
            f"confident: confidence {answer.confidence:.2f} ({kind}; confident from "
            f"{gate.threshold:.2f}, cautious from {gate.floor:.2f})"
        )
        assert answer.outcome == "confident"
        assert line in result.stdout.splitlines()
        assert "factors (push" not in result.stdout


def test_ask_explain_shows_factors_and_for_a_refusal_the_closest_sections(
    calibrated: Calibrated,
) -> None:
    engine = Engine.open(calibrated.index)
    refusal = engine.ask(OFF_TOPIC)
    assert refusal.refused and refusal.refused_by == "gate" and refusal.citations == ()
    result = cli("ask", OFF_TOPIC, "--index", calibrated.index, "--explain")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    start = lines.index("factors (push on the log-odds of answering):")
    factor_names = [line.split()[0] for line in lines[start + 1 : start + 8]]
    assert sorted(factor_names) == sorted(LEXICAL_FEATURES)
    closest = lines.index("closest matches (not cited: they do not answer the question):")
    shown = lines[closest + 1 :]
    assert len(shown) == 6  # three sections, each with its link
    for hit, (crumb, uri) in zip(
        refusal.passages[:3], zip(shown[::2], shown[1::2], strict=True), strict=True
    ):
        assert crumb == f"  {hit.chunk.breadcrumb}  § {hit.chunk.section_id}"
        assert uri == f"    {hit.chunk.uri}"
    assert "[1]" not in result.stdout

    answered = cli("ask", TURBINE, "--index", calibrated.index, "--explain")
    assert "factors (push on the log-odds of answering):" in answered.stdout
    assert "closest matches" not in answered.stdout
    plain = cli("ask", OFF_TOPIC, "--index", calibrated.index)
    assert "closest matches" not in plain.stdout and "factors (push" not in plain.stdout


def test_dry_run_reports_but_stores_nothing(fresh: Path) -> None:
    before = manifest_bytes(fresh)
    result = cli("calibrate", "--index", fresh, "--probes", REGPACK_PROBES, "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["stored"] is False and report["gate"]["calibrated"] is True
    assert len(report["probes"]) == 81
    assert set(report["results"]) == {"calibrated", "coverage>=0.4"}  # no vectors: no cosine
    assert set(report["operating_points"]) == {"5%", "10%"}
    assert report["results"]["calibrated"]["outcome"]["answerable"]["n"] == 52
    text = cli("calibrate", "--index", fresh, "--probes", REGPACK_PROBES, "--dry-run")
    assert text.exit_code == 0 and "dry run: nothing stored" in text.stdout
    assert "stored in" not in text.stdout
    assert manifest_bytes(fresh) == before
    assert is_default(Engine.open(fresh).gate)


# ---------------------------------------------------------------- --apply and --reset


def test_a_calibration_exported_from_one_index_is_refused_by_another(
    calibrated: Calibrated, small: Path
) -> None:
    before = manifest_bytes(small)
    result = cli("calibrate", "--index", small, "--apply", calibrated.export)
    assert result.exit_code == 1
    assert error_line(result).startswith("error: this calibration was made for another index")
    assert manifest_bytes(small) == before
    assert Engine.open(small).gate is DEFAULT_GATE


def test_apply_onto_the_index_it_was_made_for_stores_it(
    calibrated: Calibrated, fresh: Path
) -> None:
    result = cli("calibrate", "--index", fresh, "--apply", calibrated.export)
    assert result.exit_code == 0, result.output
    manifest = read_manifest(current_build(fresh))
    assert result.stdout.strip() == (
        f"calibration from {calibrated.export} stored in build {manifest.build_id}"
    )
    assert manifest.gate == json.loads(calibrated.export.read_text("utf-8"))
    assert Engine.open(fresh).gate.calibrated


def _edited(export: Path, edit: str) -> Any:
    gate = json.loads(export.read_text("utf-8"))
    model = gate["model"]
    edits: dict[str, Any] = {
        "default": DEFAULT_GATE.to_dict(),
        "threshold>1": {**gate, "threshold": 1.5},
        "word threshold": {**gate, "threshold": "high"},
        "short coef": {**gate, "model": {**model, "coef": model["coef"][:-1]}},
        "nan coef": {**gate, "model": {**model, "coef": [float("nan"), *model["coef"][1:]]}},
        "nan threshold": {**gate, "threshold": float("nan")},
        "dense": {
            **gate,
            "model": {
                **model,
                "features": model["features"] + list(DENSE_FEATURES),
                "mean": model["mean"] + [0.5, 0.1, 0.4],
                "scale": model["scale"] + [0.1, 0.05, 0.2],
                "coef": model["coef"] + [1.0, 0.5, 0.2],
            },
        },
    }
    return edits[edit]


@pytest.mark.parametrize(
    ("edit", "code", "message"),
    [
        ("default", 1, "error: that file holds no calibration"),
        ("threshold>1", 1, "error: the calibration's threshold 1.5 is not a probability"),
        ("word threshold", 1, "error: the calibration has no numeric `threshold`"),
        ("short coef", 1, "error: the stored gate model has lists of different lengths"),
        ("nan coef", 1, "error: the stored gate model holds a number that is not finite"),
        ("nan threshold", 1, "error: the calibration's threshold nan is not a probability"),
        (
            "dense",
            1,
            "error: the calibration uses features this index cannot give "
            "(agreement, dense_margin, dense_top)",
        ),
        ("missing", 2, "error: no calibration file at"),
        ("not json", 2, "is not a calibration JSON file"),
        ("a list", 2, "is not a calibration JSON file (expected an object)"),
    ],
)
def test_apply_refuses_what_is_not_a_usable_calibration(
    calibrated: Calibrated, fresh: Path, tmp_path: Path, edit: str, code: int, message: str
) -> None:
    path = tmp_path / "gate.json"
    if edit == "not json":
        path.write_text("{not json", encoding="utf-8")
    elif edit == "a list":
        path.write_text("[1, 2]", encoding="utf-8")
    elif edit != "missing":
        path.write_text(json.dumps(_edited(calibrated.export, edit)), encoding="utf-8")
    before = manifest_bytes(fresh)
    result = cli("calibrate", "--index", fresh, "--apply", path)
    assert result.exit_code == code
    line = error_line(result)
    assert line.startswith(message) if message.startswith("error: ") else message in line
    assert manifest_bytes(fresh) == before


def test_reset_puts_the_default_gate_back(fresh_calibrated: Path) -> None:
    assert Engine.open(fresh_calibrated).gate.calibrated
    result = cli("calibrate", "--index", fresh_calibrated, "--reset")
    assert result.exit_code == 0, result.output
    manifest = read_manifest(current_build(fresh_calibrated))
    assert result.stdout.strip() == (
        f"build {manifest.build_id} uses the built-in default gate again"
    )
    # the default, with the floor fitted to this index again, as a new build gets
    assert set(manifest.gate) == {"self_fit"}
    gate = Engine.open(fresh_calibrated).gate
    assert is_default(gate) and gate.floor == manifest.gate["self_fit"]["floor"]


@pytest.mark.parametrize(
    "modes",
    [
        [],
        ["--reset", "--apply", "gate.json"],
        ["--probes", str(REGPACK_PROBES), "--reset"],
        ["--probes", str(REGPACK_PROBES), "--apply", "gate.json"],
    ],
)
def test_calibrate_takes_exactly_one_mode(fresh: Path, modes: list[str]) -> None:
    before = manifest_bytes(fresh)
    result = cli("calibrate", "--index", fresh, *modes)
    assert result.exit_code == 2
    assert result.stderr == ONE_MODE and result.stdout == ""
    assert manifest_bytes(fresh) == before


# ---------------------------------------------------------------- probe files that cannot calibrate


def _probe_file(path: Path, kinds: dict[str, int]) -> Path:
    lines = REGPACK_PROBES.read_text("utf-8").splitlines()
    picked = []
    for kind, n in kinds.items():
        picked += [line for line in lines if json.loads(line)["kind"] == kind][:n]
    path.write_text("\n".join(picked) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("kinds", "message"),
    [
        (
            {"answerable": 12},
            "error: the probe file has no negative questions; calibration needs some the "
            "corpus cannot answer",
        ),
        (
            {"answerable": 6, "out_of_scope": 3},
            "error: calibration needs at least 10 probes and the file has 9; ",
        ),
        (
            {"answerable": 11, "near_miss": 1},
            "error: calibration needs at least 2 answerable and 2 unanswerable probes "
            "(has 11 and 1)",
        ),
    ],
)
def test_a_probe_file_that_cannot_calibrate_is_a_clear_error(
    fresh: Path, tmp_path: Path, kinds: dict[str, int], message: str
) -> None:
    probes = _probe_file(tmp_path / "probes.jsonl", kinds)
    before = manifest_bytes(fresh)
    result = cli("calibrate", "--index", fresh, "--probes", probes)
    assert result.exit_code == 1
    assert error_line(result).startswith(message)
    assert manifest_bytes(fresh) == before


# ---------------------------------------------------------------- storage and rebuilds


def test_update_gate_refuses_a_gate_fitted_for_another_build(fresh: Path) -> None:
    before = manifest_bytes(fresh)
    with pytest.raises(CalibrationError) as exc:
        update_gate(fresh, {"calibrated": True}, fingerprint="0" * 64)
    assert exc.value.message.startswith("the gate was fitted for index build 000000000000, but ")
    assert manifest_bytes(fresh) == before


def test_a_forced_rebuild_of_the_same_corpus_keeps_the_calibration(
    fresh_calibrated: Path,
) -> None:
    old = read_manifest(current_build(fresh_calibrated))
    report = ingest([REGPACK], fresh_calibrated, dense=None, force=True)
    assert report.changed and report.gate_note == ""
    new = read_manifest(current_build(fresh_calibrated))
    assert new.build_id != old.build_id and new.fingerprint == old.fingerprint
    assert new.gate == old.gate
    assert Engine.open(fresh_calibrated).gate.calibrated
    unchanged = ingest([REGPACK], fresh_calibrated, dense=None)
    assert not unchanged.changed
    assert read_manifest(current_build(fresh_calibrated)).gate == old.gate


def test_a_changed_corpus_drops_the_calibration_and_says_so(tmp_path: Path) -> None:
    corpus = shutil.copytree(REGPACK, tmp_path / "corpus")
    index = tmp_path / "idx"
    ingest([corpus], index, dense=None)
    export = tmp_path / "gate.json"
    result = cli("calibrate", "--index", index, "--probes", REGPACK_PROBES, "--export", export)
    assert result.exit_code == 0, result.output
    assert Engine.open(index).gate.calibrated
    page = corpus / "local_fennick_waste_collection.md"
    page.write_text(
        page.read_text("utf-8") + "\n\nBins are washed twice a year by the council.\n", "utf-8"
    )
    report = ingest([corpus], index, dense=None)
    assert report.changed and report.gate_note == DROPPED
    assert report.message.endswith(f"; {DROPPED}")
    assert read_manifest(current_build(index)).gate == {}  # no calibration: the default applies
    assert Engine.open(index).gate is DEFAULT_GATE
    # and the calibration made for the old build cannot be put back on the new one
    again = cli("calibrate", "--index", index, "--apply", export)
    assert again.exit_code == 1
    assert error_line(again).startswith("error: this calibration was made for another index")


# ---------------------------------------------------------------- engine


def test_engine_fingerprint_follows_the_gate(
    calibrated: Calibrated, pristine: Path, fresh_calibrated: Path, tmp_path: Path
) -> None:
    default = Engine.open(pristine).fingerprint
    fitted = Engine.open(calibrated.index).fingerprint
    build = read_manifest(current_build(pristine))
    assert default.startswith(f"{build.build_id}:{build.fingerprint}:")
    assert fitted.startswith(f"{build.build_id}:{build.fingerprint}:")  # a copy: same build
    assert fitted != default
    # the same probes at another target: another threshold, so another cache key
    result = cli(
        "calibrate", "--index", fresh_calibrated, "--probes", REGPACK_PROBES, "--target", "0.2"
    )
    assert result.exit_code == 0, result.output
    retargeted = Engine.open(fresh_calibrated)
    assert retargeted.gate.threshold != Engine.open(calibrated.index).gate.threshold
    assert retargeted.fingerprint not in (fitted, default)
    assert cli("calibrate", "--index", fresh_calibrated, "--reset").exit_code == 0
    # reset: the default gate, with the floor fitted to this build, as `groundqa ingest` has
    refitted = copy_index(pristine, tmp_path / "refitted")
    self_fit(str(refitted))
    assert Engine.open(fresh_calibrated).fingerprint == Engine.open(refitted).fingerprint
    assert Engine.open(refitted).fingerprint != default


def test_answers_carry_the_calibrated_confidence_and_its_factors(calibrated: Calibrated) -> None:
    engine = Engine.open(calibrated.index)
    model = engine.gate.model
    for question, refused in ((TURBINE, False), (OFF_TOPIC, True)):
        answer = engine.ask(question)
        assert answer.refused is refused
        assert answer.confidence == answer.gate.score
        assert answer.to_dict()["confidence"] == answer.gate.score
        assert answer.gate.calibrated and answer.gate.threshold == round(engine.gate.threshold, 4)
        assert list(answer.gate.factors) == list(model.names)
        logit = model.intercept + sum(answer.gate.factors.values())
        assert sigmoid(logit) == pytest.approx(answer.confidence, abs=2e-3)
        # `screen` hands calibration the very features `ask` gave the gate
        _, feats = screen(engine, question)
        assert feats == answer.gate.features


def test_the_default_gate_is_a_fresh_fit_on_the_example_corpus(calibrated: Calibrated) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        default_gate = importlib.import_module("default_gate")
    finally:
        sys.path.remove(str(ROOT / "bench"))
    assert default_gate.matches(default_gate.fit_default())
    # calibrating a BM25-only build of the same corpus on the same probes is that fit
    stored = read_manifest(current_build(calibrated.index)).gate
    assert default_gate.matches(calibrated_gate(stored))


@pytest.mark.slow  # a minute of fitting: in `make test-slow`, which CI runs
def test_the_reader_default_gate_is_a_fresh_fit_on_training_data() -> None:
    need_shared("bench", "clapnq")
    need_shared("train", "policyqa")
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        default_gate = importlib.import_module("default_gate")
    finally:
        sys.path.remove(str(ROOT / "bench"))
    fitted = default_gate.fit_reader_default()
    assert fitted.model.names == LEXICAL_FEATURES + READER_FEATURES
    assert default_gate.matches(fitted, DEFAULT_READER_GATE)


@pytest.mark.slow  # in `make test-slow`, which CI runs
def test_calibrating_with_the_answer_model_weighs_its_features(pristine: Path) -> None:
    engine = Engine.open(pristine, reader="model")
    assert engine.gate is DEFAULT_READER_GATE
    report = fit_report(probe_features(engine, load_probes(REGPACK_PROBES)))
    assert report.gate.model.names[-3:] == READER_FEATURES
    assert set(READER_FEATURES) <= set(report.data.names)


def test_eval_notes_when_the_gate_was_calibrated_on_the_same_probes(
    calibrated: Calibrated, pristine: Path, tmp_path: Path
) -> None:
    note = (
        "note: the gate was calibrated on these probes, so its refusal figures here are in-sample"
    )
    same = cli("eval", "--index", calibrated.index, "--probes", REGPACK_PROBES)
    assert same.exit_code == 0, same.output
    assert note in same.stdout
    default = cli("eval", "--index", pristine, "--probes", REGPACK_PROBES, "--json")
    assert default.exit_code == 0 and json.loads(default.stdout)["gate_in_sample"] is False
    subset = _probe_file(tmp_path / "p.jsonl", {"answerable": 10, "out_of_scope": 5})
    other = cli("eval", "--index", calibrated.index, "--probes", subset)
    assert other.exit_code == 0, other.output
    assert "note: the gate was calibrated on these probes" not in other.stdout


def test_eval_says_when_the_gate_was_calibrated_with_another_plan(
    calibrated: Calibrated,
) -> None:
    plan = Engine.open(calibrated.index).default_retriever  # what `calibrate` fitted for
    assert plan != "bm25"
    args = ("eval", "--index", calibrated.index, "--probes", REGPACK_PROBES, "--k", "1,3")
    result = cli(*args, "--retrievers", f"bm25,{plan}", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["default_retriever"] == plan and data["gate_calibrated_for"] == plan
    off_plan = [n for n in data["notes"] if n.startswith("the gate was calibrated with")]
    assert off_plan == [
        f"the gate was calibrated with the {plan} retriever; the refusals of bm25 come "
        "from that gate as it is, on scores it was not fitted to"
    ]
    alone = cli(*args, "--retrievers", plan)
    assert alone.exit_code == 0, alone.output
    assert "calibrated with the" not in alone.stdout


def test_calibrate_screens_each_probe_within_its_scope(pristine: Path) -> None:
    # As `eval` asks a scoped probe: the features are those `ask` gives the gate in scope.
    engine = Engine.open(pristine)
    probes = load_probes(ROOT / "examples" / "regpack.scoped.probes.jsonl")[:8]
    assert all(p.scope for p in probes)
    data = probe_features(engine, probes)
    moved = 0
    for row, probe in zip(data.x, probes, strict=True):
        got = dict(zip(data.names, row.tolist(), strict=True))
        scoped = engine.ask(probe.question, scope=probe.scope).gate.features
        assert got == {n: scoped.get(n, 0.0) for n in data.names}, probe.id
        unscoped = engine.ask(probe.question).gate.features
        moved += got != {n: unscoped.get(n, 0.0) for n in data.names}
    assert moved >= 3  # the scope does change what the gate sees


def test_calibration_never_splits_a_paraphrase_group() -> None:
    # Twenty questions asked twice, with labels the features do not carry: judged by a model
    # that saw the twin, noise would look like signal (AUC near 0.86 with the twins split).
    rng = np.random.default_rng(0)
    labels = np.asarray([1.0] * 12 + [0.0] * 8)
    rng.shuffle(labels)
    x = np.repeat(rng.normal(size=(20, 12)), 2, axis=0)
    y = np.repeat(labels, 2)
    names = tuple(f"f{i}" for i in range(12))

    def features(grouped: bool) -> ProbeFeatures:
        probes = tuple(
            Probe(
                f"p{i}",
                f"Question {i}?",
                kind="answerable" if y[i] else "near_miss",
                group=f"q{i // 2}" if grouped else None,
            )
            for i in range(40)
        )
        none = np.zeros(40, dtype=bool)
        return ProbeFeatures(probes, names, x, y, none, none)

    grouped = fit_report(features(grouped=True)).results["calibrated"]["auc"]
    split = fit_report(features(grouped=False)).results["calibrated"]["auc"]
    assert grouped < 0.65 and split > 0.8


def test_calibration_with_vectors_uses_the_dense_features(
    tmp_path_factory: pytest.TempPathFactory, pristine: Path, regpack_build: Path
) -> None:
    root = tmp_path_factory.mktemp("dense")
    index = copy_index(regpack_build, root / "idx")  # BM25 and vectors
    export = root / "gate.json"
    result = cli(
        "calibrate", "--index", index, "--probes", REGPACK_PROBES, "--export", export, "--json"
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["stored"] is True
    assert set(report["results"]) == {"calibrated", "coverage>=0.4", "cosine>=0.3"}
    gate = read_manifest(current_build(index)).gate
    assert gate["model"]["features"] == list(LEXICAL_FEATURES + DENSE_FEATURES)
    answer = Engine.open(index).ask(TURBINE)
    assert answer.gate.calibrated and set(answer.gate.factors) >= set(DENSE_FEATURES)
    # a BM25-only build of the same corpus is another index
    before = manifest_bytes(pristine)
    refused = cli("calibrate", "--index", pristine, "--apply", export)
    assert refused.exit_code == 1 and "another index" in error_line(refused)
    assert manifest_bytes(pristine) == before


# ---------------------------------------------------------------- HTTP API


@contextmanager
def live_server(engine: Engine) -> Iterator[str]:
    """`create_app` under uvicorn on a free 127.0.0.1 port (as in test_api.py); yields its URL."""
    pytest.importorskip("fastapi", reason="the API tests need the serve extra")
    pytest.importorskip("uvicorn", reason="the API tests need the serve extra")
    import uvicorn

    from groundqa.serve import ServeSettings, create_app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = uvicorn.Config(
        create_app(engine, ServeSettings()), log_level="warning", ws="none", lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError(f"the test server at {base} did not come up")
            time.sleep(0.05)
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def sse_events(text: str) -> list[tuple[str, Any]]:
    """Server-Sent Events as (event, data) pairs."""
    events = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


@pytest.fixture(scope="module")
def api(calibrated: Calibrated) -> Iterator[tuple[str, Engine]]:
    engine = Engine.open(calibrated.index)
    with live_server(engine) as base:
        yield base, engine


def ask(base: str, body: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(f"{base}/query", json=body, timeout=30)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def test_health_reports_the_calibrated_gate(api: tuple[str, Engine]) -> None:
    base, engine = api
    gate = httpx.get(f"{base}/health", timeout=10).json()["gate"]
    assert gate == {
        "kind": "calibrated-logistic",
        "calibrated": True,
        "threshold": engine.gate.threshold,
        "floor": engine.gate.floor,
        "self_fit": False,
        "band_floor": None,
        "summary": engine.gate.describe(),
    }
    assert gate["summary"].startswith("calibrated on 52 answerable and 29 unanswerable probes")


def test_a_refusal_lists_its_closest_matches_only_when_asked(api: tuple[str, Engine]) -> None:
    base, engine = api
    plain = ask(base, {"question": OFF_TOPIC})
    assert plain["refused"] is True and "closest_matches" not in plain
    explained = ask(base, {"question": OFF_TOPIC, "explain": True})
    assert explained["cache"] == "hit"  # explain does not split the cache, yet it is honoured
    assert explained["refused"] is True and explained["citations"] == []
    keys = ("title", "section", "section_id", "page", "uri", "score")
    closest = explained["closest_matches"]
    assert len(closest) == 3
    assert closest == [{k: p[k] for k in keys} for p in explained["passages"][:3]]
    for body in (plain, explained):
        assert body["confidence"] == body["gate"]["score"]
        assert body["gate"]["calibrated"] is True
        assert list(body["gate"]["factors"]) == list(engine.gate.model.names)

    answered = ask(base, {"question": TURBINE, "explain": True})
    assert answered["refused"] is False and answered["citations"]
    assert "closest_matches" not in answered
    assert answered["confidence"] == answered["gate"]["score"] >= answered["gate"]["threshold"]
    logit = engine.gate.model.intercept + sum(answered["gate"]["factors"].values())
    assert sigmoid(logit) == pytest.approx(answered["confidence"], abs=2e-3)


def test_a_streamed_refusal_explains_itself_in_its_done_event(api: tuple[str, Engine]) -> None:
    base, _ = api
    body = {"question": "Who won the 1986 World Cup?", "explain": True}
    with httpx.stream("POST", f"{base}/query/stream", json=body, timeout=30) as response:
        events = sse_events(response.read().decode("utf-8"))
    done = events[-1][1]
    assert events[-1][0] == "done" and done["refused"] is True
    assert [m["section_id"] for m in done["closest_matches"]] == [
        p["section_id"] for p in done["passages"][:3]
    ]
