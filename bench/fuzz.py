"""Fuzzing at length: every target of tests/test_fuzz.py with thousands of inputs, and
every pathological input under a memory limit.

The targets and their input generators are the test file's own (CSV, Markdown, front
matter and metadata files, BEIR JSONL, ObliQA JSON, probe files, PDF bytes, questions
with their options against a real index of the example corpus, and HTTP request
bodies); here each runs `--examples` inputs (a fixed seed) and, unlike the test, goes
on past a crash so that every one is counted. Per target it records the inputs tried
(counted call by call, not taken from the setting), the crashes (an exception other
than ours, or no result within the per-input limit) with the first few kinds, and the
slowest input. Each pathological input is loaded in a subprocess under a 2 GiB
address-space limit and a 60 s timeout; its time and peak memory are recorded.

    python bench/fuzz.py [--examples N]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, WORK, machine, write_result

sys.path.insert(0, str(ROOT))  # the targets and generators live in tests/test_fuzz.py

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from tests import test_fuzz as fz

from groundqa.engine import Engine
from groundqa.ingestion import ingest

FUZZ_WORK = WORK / "fuzz"
EXAMPLES = 3000
SEED = 20240601
SHOWN_KINDS = 5


def fuzz_target(
    target: Callable[[Any, Path], None], inputs: st.SearchStrategy[Any], examples: int
) -> dict[str, Any]:
    """Run `target` on `examples` generated inputs; count calls, crashes and time."""
    calls = 0
    crashes: Counter[str] = Counter()
    slowest = 0.0
    scratch = Path(tempfile.mkdtemp(dir=FUZZ_WORK))

    @seed(SEED)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        print_blob=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(inputs)
    def run(case: Any) -> None:
        nonlocal calls, slowest
        calls += 1
        started = time.perf_counter()
        try:
            fz.exercise(target, case, scratch)
        except Exception as exc:  # a crash: counted, and the run goes on
            first = (str(exc).splitlines() or [""])[0][:120]
            crashes[f"{type(exc).__name__}: {first}"] += 1
        slowest = max(slowest, time.perf_counter() - started)

    started = time.perf_counter()
    run()
    shutil.rmtree(scratch, ignore_errors=True)
    return {
        "inputs": calls,
        "crashes": sum(crashes.values()),
        "crash_kinds": dict(crashes.most_common(SHOWN_KINDS)),
        "slowest_s": round(slowest, 3),
        "seconds": round(time.perf_counter() - started, 1),
    }


def pathological() -> dict[str, dict[str, Any]]:
    out = {}
    for name in fz.PATHOLOGICAL:
        folder = Path(tempfile.mkdtemp(dir=FUZZ_WORK))
        report = fz.run_pathological(name, folder)
        shutil.rmtree(folder, ignore_errors=True)
        messages = [*report.get("findings", []), *([report["error"]] if "error" in report else [])]
        outcome = (
            "crash"
            if report["crash"]
            else f"{report.get('documents', 0)} document(s)"
            + (f", {len(messages)} finding(s)/error" if messages else "")
        )
        out[name] = {
            "outcome": outcome,
            "crash": report["crash"],
            "seconds": round(report.get("seconds", 0.0), 2),
            "peak_mb": round(report.get("peak_mb", 0.0)),
            "message": messages[0][:160] if messages else "",
        }
        print(f"{name}: {out[name]}", flush=True)
    return out


def markdown(data: dict[str, Any]) -> str:
    rows = [
        f"| {name} | {r['inputs']:,} | {r['crashes']} | {r['slowest_s']:.2f} | {r['seconds']:.0f} |"
        for name, r in data["targets"].items()
    ]
    path_rows = [
        f"| {name} | {r['outcome']} | {r['crash'] or 'none'} | {r['seconds']:.2f} | {r['peak_mb']:,} |"
        for name, r in data["pathological"].items()
    ]
    total = sum(r["inputs"] for r in data["targets"].values())
    crashes = sum(r["crashes"] for r in data["targets"].values())
    crashes += sum(1 for r in data["pathological"].values() if r["crash"])
    return "\n".join(
        [
            "## Fuzzing: loaders, parsers, questions and request bodies",
            "",
            f"`python bench/fuzz.py --examples {data['examples']}`: the targets of `tests/test_fuzz.py`, "
            f"{data['examples']:,} hypothesis inputs each (seed {SEED}), every input under a "
            f"{data['input_seconds']:g} s limit; {data['machine']['cpus']} CPUs, "
            f"{data['seconds']:.0f} s in all. A crash is an exception other than groundqa's own "
            "errors, or no result in time; a finding or a GroundqaError is a correct answer to "
            f"bad input. {total:,} inputs, {crashes} crash(es).",
            "",
            "| target | inputs tried | crashes | slowest input (s) | time (s) |",
            "|---|---:|---:|---:|---:|",
            *rows,
            "",
            "Pathological inputs, each loaded in a subprocess under a "
            f"{fz.MEMORY_LIMIT // 1024**3} GiB address-space limit and a "
            f"{fz.PATHOLOGICAL_SECONDS} s timeout (peak memory is the child's maximum RSS):",
            "",
            "| input | outcome | crash | load time (s) | peak memory (MB) |",
            "|---|---|---|---:|---:|",
            *path_rows,
        ]
    )


def run(examples: int = EXAMPLES) -> dict[str, Any]:
    started = time.perf_counter()
    shutil.rmtree(FUZZ_WORK, ignore_errors=True)
    FUZZ_WORK.mkdir(parents=True)
    ingest([ROOT / "examples" / "regpack"], FUZZ_WORK / "idx")
    engine = Engine.open(FUZZ_WORK / "idx")

    from fastapi.testclient import TestClient

    from groundqa.serve import ServeSettings, create_app

    app = create_app(engine, ServeSettings(cache="off"))
    targets: dict[str, tuple[Callable[[Any, Path], None], st.SearchStrategy[Any]]] = {
        "CSV": (fz.load_csv_file, fz.CSV_CASES),
        "Markdown": (fz.load_markdown_file, fz.files_of(fz.MARKDOWN)),
        "front matter and metadata files": (
            fz.load_front_matter,
            fz.YAML_TEXTS | fz.mutated(fz.YAML_TEXTS),
        ),
        "BEIR JSONL corpus": (fz.load_jsonl_corpus, fz.files_of(fz.JSONL)),
        "ObliQA JSON": (fz.load_obliqa_file, fz.files_of(fz.OBLIQA)),
        "probe file": (fz.load_probe_file, fz.files_of(fz.PROBES)),
        "PDF bytes": (fz.load_pdf_file, fz.pdf_bytes()),
        "questions (Engine.ask)": (fz.ask_engine(engine), fz.QUESTION_CASES),
    }
    data: dict[str, Any] = {
        "machine": machine(),
        "examples": examples,
        "input_seconds": fz.INPUT_SECONDS,
        "targets": {},
    }
    for name, (target, inputs) in targets.items():
        data["targets"][name] = fuzz_target(target, inputs, examples)
        print(f"{name}: {data['targets'][name]}", flush=True)
    with TestClient(app, raise_server_exceptions=False) as client:
        name = "HTTP body (POST /query)"
        data["targets"][name] = fuzz_target(fz.post_query(client), fz.BODIES, examples)
        print(f"{name}: {data['targets'][name]}", flush=True)
    data["pathological"] = pathological()
    data["seconds"] = round(time.perf_counter() - started, 1)
    shutil.rmtree(FUZZ_WORK, ignore_errors=True)
    write_result("fuzz", data, markdown(data))
    return data


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=EXAMPLES, help="inputs per target")
    run(parser.parse_args().examples)
