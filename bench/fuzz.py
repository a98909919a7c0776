"""Fuzzing at length: every target of tests/test_fuzz.py with thousands of inputs, every
pathological input under a memory limit, and (with `--hostile`) the hostile-file table.

The targets and their input generators are the test file's own (CSV, Markdown, front
matter and metadata files, BEIR JSONL, ObliQA JSON, probe files, PDF bytes, questions
with their options against a real index of the example corpus, and HTTP request
bodies); here each runs `--examples` inputs (a fixed seed) and, unlike the test, goes
on past a crash so that every one is counted. Per target it records the inputs tried
(counted call by call, not taken from the setting), the crashes (an exception other
than ours, or no result within the per-input limit) with the first few kinds, and the
slowest input. Each pathological input is loaded in a subprocess under a 2 GiB
address-space limit and a 60 s timeout; its time and peak memory are recorded.

The hostile-file table (`--hostile`, about 12 minutes more) puts each attack of
tests/hostilekit.py, and Markdown files of one 52 MB section, through the command line
of two versions: the code at `BEFORE`, the last commit before the fixes for hostile
corpus files (checked out with `git worktree` under bench/.work), and the working tree.
Per attack and version: `validate` of a copy of the example corpus holding the hostile
file; `ingest` of the example corpus alone, then of that copy into the same index; then
a question the example corpus answers, which the previous index must still answer. Each
command runs in its own process tree under `CAP_SECONDS` of wall-clock time and
`CAP_MEMORY` of address space, so that a version that would take hours or gigabytes is
stopped and reported as such instead of taking the machine; its time and peak resident
memory are recorded. No groundqa code runs in this process for the table.

    python bench/fuzz.py [--examples N] [--hostile]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, WORK, machine, write_result

sys.path.insert(0, str(ROOT))  # the targets and generators live in tests/test_fuzz.py

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from tests import hostilekit as hk

FUZZ_WORK = WORK / "fuzz"
EXAMPLES = 3000
SEED = 20240601
SHOWN_KINDS = 5


def fuzz_target(
    target: Callable[[Any, Path], None], inputs: st.SearchStrategy[Any], examples: int
) -> dict[str, Any]:
    """Run `target` on `examples` generated inputs; count calls, crashes and time."""
    from tests import test_fuzz as fz

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
    from tests import test_fuzz as fz

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
    from tests import test_fuzz as fz

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


# --- the hostile-file table -------------------------------------------------------

BEFORE = "b1078a2"  # the last commit before the fixes for hostile corpus files
HOSTILE_WORK = WORK / "hostile"
REGPACK = ROOT / "examples" / "regpack"
# Each command's limits: a version that would run for hours or take gigabytes is stopped.
CAP_SECONDS = 90
CAP_MEMORY = 4 * hk.GiB
# What the fixed version must keep to, per file and command.
GOAL_SECONDS = 60
GOAL_MB = 1024
QUESTION = "What is the turbine setback from a dwelling in Northmere?"
# Outside the corpus: a fact that only the link attack can put in the index.
VAULT_CODE = "4417-KESTREL"
VAULT = f"The harbour vault code is {VAULT_CODE}."
VAULT_QUESTION = "What is the harbour vault code?"
PROSE_QUESTION = "When does the harbour master inspect the slipway?"
PROSE_BYTES = 52_000_000
SPECKLE_PAGES = 4_999
# Sparse speckle keeps Tesseract busiest: tried by hand on one page, a density of 0.05
# ran past a 60 s timeout, where 0.5 (plain noise) took 2 s and 0.01 took 14 s.
SPECKLE_DENSITY = 0.05
# How much of a command's output is read to judge it (an answer can run to 200 MB).
HEAD_BYTES = 16 * hk.MiB


def one_long_section(path: Path, size: int, stops: bool = True, seed: int = SEED) -> Path:
    """A Markdown file of one heading and about `size` bytes of ordinary prose under it:
    sentences drawn from a few hundred, five to a paragraph, all in one section.

    Without `stops`, the same words as one paragraph of one sentence: clauses ended by
    commas, no full stop, no blank line, so that no sentence or paragraph ends before
    the file does.
    """
    rng = random.Random(seed)
    who = ("The harbour master", "A visiting skipper", "The ferry crew", "The council")
    does = ("inspects", "records", "repairs", "reports on", "closes")
    what = ("the slipway", "the north wall", "the fuel berth", "the tide gauge", "the pontoon")
    when = ("before nine", "after the evening tide", "once a week", "in winter", "at dusk")
    end, between = (".", "\n\n") if stops else (",", " ")
    paragraphs, written = [], 0
    while written < size:
        paragraph = " ".join(
            f"{rng.choice(who)} {rng.choice(does)} {rng.choice(what)} {rng.choice(when)}{end}"
            for _ in range(5)
        )
        paragraphs.append(paragraph)
        written += len(paragraph) + len(between)
    path.write_text(f"# Harbour log\n\n{between.join(paragraphs)}\n", encoding="utf-8")
    return path


@dataclass(frozen=True)
class Attack:
    """One hostile file, planted by `plant` in a copy of the example corpus.

    `ocr`: the attack is on OCR, so the commands run without --no-ocr. `dense`: False
    builds the index BM25-only (--no-dense). `probe`: a question about the hostile file
    itself, asked after the ingest: how long the answer is, and whether it quotes
    `leak`, text that must never reach an answer.
    """

    name: str
    plant: Callable[[Path], object]
    ocr: bool = False
    dense: bool = True
    probe: str | None = None
    leak: str | None = None


ATTACKS = (
    Attack(
        "a link to a file outside the corpus",
        lambda corpus: hk.outside_link(corpus, "vault.txt", f"{VAULT}\n"),
        probe=VAULT_QUESTION,
        leak=VAULT_CODE,
    ),
    Attack(
        "DOCX: a 3 GiB zero-filled picture",
        lambda corpus: hk.docx_with_huge_media(corpus / "media.docx"),
    ),
    Attack(
        "DOCX: a 2 GiB styles.xml",
        lambda corpus: hk.docx_with_huge_styles(corpus / "styles.docx"),
    ),
    Attack(
        "DOCX: document.xml declared as 5,000 bytes, 1 GiB inflated",
        lambda corpus: hk.docx_lying_header(corpus / "lying.docx"),
    ),
    Attack(
        "DOCX: a 250 MiB document.xml",
        lambda corpus: hk.docx_big_document_xml(corpus / "big.docx"),
    ),
    Attack(
        f"PDF: {SPECKLE_PAGES:,} scanned pages of one speckle image, no text layer",
        lambda corpus: hk.pdf_speckle_pages(
            corpus / "speckle.pdf", SPECKLE_PAGES, density=SPECKLE_DENSITY
        ),
        ocr=True,
    ),
    Attack(
        "Markdown: 52 MB of prose in one section",
        lambda corpus: one_long_section(corpus / "log.md", PROSE_BYTES),
        dense=False,
        probe=PROSE_QUESTION,
    ),
    Attack(
        "Markdown: the same 52 MB as one sentence",
        lambda corpus: one_long_section(corpus / "log.md", PROSE_BYTES, stops=False),
        dense=False,
        probe=PROSE_QUESTION,
    ),
)


@dataclass(frozen=True)
class Version:
    """The code one column of the table runs: `src` goes first on PYTHONPATH."""

    name: str
    label: str
    src: Path


# Runs one command, in a process of its own, and reports on one JSON line. A child's
# ru_maxrss starts from its parent's peak (Linux carries it over across fork and exec),
# so this small process, not the benchmark, is the command's parent: its own few
# megabytes are all the command can inherit. The command leads its own process group,
# so that the time limit ends what it started too (tesseract); its peak is the largest
# of its process tree's, each process counted alone.
_MEASURE = """
import json, os, resource, signal, sys, time
spec = json.loads(sys.argv[1])
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (spec["memory"], spec["memory"]))
        for fd, name in ((1, spec["stdout"]), (2, spec["stderr"])):
            os.dup2(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
        os.chdir(spec["cwd"])
        os.execve(spec["argv"][0], spec["argv"], spec["env"])
    finally:
        os._exit(127)
killed = []
def stop(signum, frame):
    killed.append(True)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
signal.signal(signal.SIGALRM, stop)
signal.setitimer(signal.ITIMER_REAL, spec["seconds"])
_, status, usage = os.wait4(pid, 0)
seconds = time.perf_counter() - started
signal.setitimer(signal.ITIMER_REAL, 0)
print(json.dumps({
    "exit": os.waitstatus_to_exitcode(status),
    "seconds": seconds,
    "peak_mb": usage.ru_maxrss / 1024,
    "killed": bool(killed),
}))
"""
_FINDING = re.compile(r"^(BLOCK|REVIEW)\s+([\w-]+)\s", re.MULTILINE)
_BUILT = re.compile(r"^built .*\(([\d,]+) documents?, [\d,]+ sections?, ([\d,]+) chunks?\)", re.M)
# ingest names the first blocking finding in its one-line error.
_BLOCKED = re.compile(r"blocking finding\(s\): ([\w-]+):")
_INDEXED_ANYWAY = re.compile(r"^(\d+) REVIEW finding", re.MULTILINE)
_CITED = re.compile(r'"citations": \[\s*\{')
_OUT_OF_MEMORY = re.compile(r"MemoryError|bad_alloc|Cannot allocate memory|out of memory")


def _head(path: Path) -> str:
    with path.open("rb") as f:
        return f.read(HEAD_BYTES).decode("utf-8", "replace")


def command(version: Version, args: Sequence[str], name: str) -> dict[str, Any]:
    """`groundqa ARGS` of `version` under the caps: exit status, seconds, peak_mb, killed,
    what it printed (the first `HEAD_BYTES` of each stream) and the size of its stdout."""
    out = HOSTILE_WORK / "out"
    out.mkdir(parents=True, exist_ok=True)
    stdout, stderr = out / f"{name}.stdout", out / f"{name}.stderr"
    env = {
        **os.environ,
        "PYTHONPATH": str(version.src),
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }
    spec = {
        "argv": [sys.executable, "-m", "groundqa.cli", *args],
        "env": env,
        "cwd": str(HOSTILE_WORK),
        "stdout": str(stdout),
        "stderr": str(stderr),
        "seconds": CAP_SECONDS,
        "memory": CAP_MEMORY,
    }
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _MEASURE, json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=CAP_SECONDS + 60,
        check=True,
    )
    report: dict[str, Any] = json.loads(proc.stdout)
    report["stdout"], report["stderr"] = _head(stdout), _head(stderr)
    report["stdout_bytes"] = stdout.stat().st_size
    return report


def outcome(report: dict[str, Any]) -> dict[str, Any]:
    """What a command came to, in a few words, with its figures."""
    text = report["stdout"] + report["stderr"]
    summary: dict[str, Any] = {
        "exit": report["exit"],
        "seconds": round(report["seconds"], 2),
        "peak_mb": round(report["peak_mb"]),
        "killed": report["killed"],
        "memory_cap": bool(_OUT_OF_MEMORY.search(text)),
        "traceback": "Traceback (most recent call last)" in text,
    }
    words = [f"killed at {CAP_SECONDS} s"] if report["killed"] else [f"exit {report['exit']}"]
    if summary["memory_cap"]:
        words.append("memory cap hit")
    found = [f"{severity} {check}" for severity, check in _FINDING.findall(text)]
    found += [f"BLOCK {check}" for check in _BLOCKED.findall(report["stderr"])]
    words.extend(dict.fromkeys(found))
    if built := _BUILT.search(report["stdout"]):
        summary["chunks"] = int(built.group(2).replace(",", ""))
        words.append(f"{summary['chunks']:,} chunks")
    if anyway := _INDEXED_ANYWAY.search(text):
        words.append(f"{anyway.group(1)} REVIEW indexed")
    if len(words) == 1 + summary["memory_cap"] and not report["killed"] and report["exit"]:
        lines = [line for line in report["stderr"].splitlines() if line.strip()]
        last = lines[-1] if summary["traceback"] else (lines or ["no output"])[0]
        words.append(last.strip()[:100])
    summary["outcome"] = ", ".join(words)
    return summary


def answered(report: dict[str, Any]) -> bool:
    """The answer to QUESTION came back with a citation."""
    return report["exit"] == 0 and not report["killed"] and bool(_CITED.search(report["stdout"]))


def attack_runs(attack: Attack, version: Version, corpus: Path, slug: str) -> dict[str, Any]:
    """`validate` of `corpus`, then `ingest` of the example corpus and of `corpus` into one
    index, then QUESTION (and the attack's probe) against that index."""
    index = HOSTILE_WORK / "indexes" / f"{slug}-{version.name}"
    shutil.rmtree(index, ignore_errors=True)
    options = [] if attack.ocr else ["--no-ocr"]
    build = [*options, *([] if attack.dense else ["--no-dense"])]
    name = f"{slug}-{version.name}"
    validate = command(version, ["validate", str(corpus), *options], f"{name}-validate")
    clean = command(
        version, ["ingest", str(REGPACK), "--index", str(index), *build], f"{name}-clean"
    )
    if clean["exit"] != 0:
        raise RuntimeError(f"{version.label}: the example corpus did not build: {clean['stderr']}")
    ingest = command(
        version, ["ingest", str(corpus), "--index", str(index), *build], f"{name}-ingest"
    )
    ask = command(version, ["ask", QUESTION, "--index", str(index), "--json"], f"{name}-ask")
    runs = {
        "validate": outcome(validate),
        "ingest": {
            **outcome(ingest),
            "answers": answered(ask),
            "answer_bytes": ask["stdout_bytes"],
        },
    }
    if attack.probe:
        probe = command(
            version, ["ask", attack.probe, "--index", str(index), "--json"], f"{name}-probe"
        )
        runs["ingest"]["probe_bytes"] = probe["stdout_bytes"]
        if attack.leak:
            runs["ingest"]["probe_leaks"] = attack.leak in probe["stdout"]
    shutil.rmtree(index, ignore_errors=True)
    return runs


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def _checkout(revision: str, path: Path) -> None:
    """A detached `git worktree` of `revision` at `path`, made afresh."""
    if path.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)])
        shutil.rmtree(path, ignore_errors=True)
    _git("worktree", "prune")
    _git("worktree", "add", "--detach", str(path), revision)


def _check_imports(version: Version) -> None:
    """The child imports groundqa from `version.src`, not from the installed package."""
    env = {**os.environ, "PYTHONPATH": str(version.src)}
    where = subprocess.run(
        [sys.executable, "-c", "import groundqa; print(groundqa.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=HOSTILE_WORK,
    ).stdout.strip()
    if not Path(where).is_relative_to(version.src):
        raise RuntimeError(f"{version.label} imports groundqa from {where}, not {version.src}")


def hostile() -> dict[str, Any]:
    """The hostile-file table's figures: each attack through both versions."""
    started = time.perf_counter()
    shutil.rmtree(HOSTILE_WORK, ignore_errors=True)
    HOSTILE_WORK.mkdir(parents=True)
    checkout = HOSTILE_WORK / "before"
    _checkout(BEFORE, checkout)
    head = _git("rev-parse", "--short", "HEAD")
    dirty = bool(_git("status", "--porcelain", "--", "src"))
    versions = (
        Version("before", _git("rev-parse", "--short", BEFORE), checkout / "src"),
        Version("after", f"{head}{' + uncommitted src' if dirty else ''}", ROOT / "src"),
    )
    try:
        for version in versions:
            _check_imports(version)
        rows: dict[str, Any] = {}
        for number, attack in enumerate(ATTACKS, 1):
            slug = f"attack{number}"
            corpus = HOSTILE_WORK / "corpora" / slug / "corpus"
            shutil.copytree(REGPACK, corpus)
            attack.plant(corpus)
            rows[attack.name] = {
                "options": {"ocr": attack.ocr, "dense": attack.dense},
                **{v.name: attack_runs(attack, v, corpus, slug) for v in versions},
            }
            print(f"{attack.name}: {json.dumps(rows[attack.name])}", flush=True)
            shutil.rmtree(corpus.parent, ignore_errors=True)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(checkout)])
    return {
        "before": versions[0].label,
        "after": versions[1].label,
        "cap_seconds": CAP_SECONDS,
        "cap_memory_gib": CAP_MEMORY // hk.GiB,
        "goal_seconds": GOAL_SECONDS,
        "goal_mb": GOAL_MB,
        "question": QUESTION,
        "rows": rows,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _time(run: dict[str, Any]) -> str:
    return f"> {CAP_SECONDS}" if run["killed"] else f"{run['seconds']:.1f}"


def _peak(run: dict[str, Any]) -> str:
    if run["memory_cap"]:
        return f"{run['peak_mb']:,} (cap hit)"
    return f"≥ {run['peak_mb']:,}" if run["killed"] else f"{run['peak_mb']:,}"


def _said(run: dict[str, Any]) -> str:
    """The outcome, with what the attack's probe question got back."""
    said = str(run["outcome"])
    if "probe_leaks" in run:
        said += "; `ask` quotes the outside file" if run["probe_leaks"] else "; not in answers"
    elif "probe_bytes" in run:
        said += f"; `ask --json` about it: {run['probe_bytes']:,} bytes"
    return said


def short_of_goal(data: dict[str, Any]) -> list[str]:
    """The fixed version's commands that missed the goal: over the time or memory bound,
    stopped, no finding or one line (a traceback), or an index that no longer answers."""
    missed = []
    for name, row in data["rows"].items():
        for step, run in row["after"].items():
            why = [
                *(
                    [f"{run['seconds']:.0f} s"]
                    if run["killed"] or run["seconds"] > GOAL_SECONDS
                    else []
                ),
                *(
                    [f"{run['peak_mb']:,} MB"]
                    if run["memory_cap"] or run["peak_mb"] > GOAL_MB
                    else []
                ),
                *(["a traceback"] if run["traceback"] else []),
                *(["the index no longer answers"] if run.get("answers") is False else []),
            ]
            if why:
                missed.append(f"{name}, {step}: {', '.join(why)}")
    return missed


def hostile_markdown(data: dict[str, Any]) -> str:
    rows = []
    for name, row in data["rows"].items():
        options = [] if row["options"]["ocr"] else ["--no-ocr"]
        build = [*options, *([] if row["options"]["dense"] else ["--no-dense"])]
        commands = {
            "validate": " ".join(["validate CORPUS", *options]),
            "ingest": " ".join(["ingest CORPUS --index IDX", *build]),
        }
        for step, shown in commands.items():
            before, after = row["before"][step], row["after"][step]
            answers = (
                " / ".join("yes" if r["answers"] else "**no**" for r in (before, after))
                if step == "ingest"
                else ""
            )
            rows.append(
                f"| {name if step == 'validate' else ''} | `{shown}` "
                f"| {_said(before)} | {_time(before)} | {_peak(before)} "
                f"| {_said(after)} | {_time(after)} | {_peak(after)} | {answers} |"
            )
    missed = short_of_goal(data)
    verdict = (
        f"After, every command kept within {data['goal_mb']:,} MB and {data['goal_seconds']} s, "
        "ended in a finding or one line, and left an index that answers."
        if not missed
        else f"After, short of {data['goal_mb']:,} MB, {data['goal_seconds']} s, a finding or "
        "one line, and an index that answers: " + "; ".join(missed) + "."
    )
    return "\n".join(
        [
            "## Hostile files: before and after",
            "",
            f"`python bench/fuzz.py --hostile`, one run: each attack through the command line "
            f"of `{data['before']}` (before the fixes for hostile corpus files) and of "
            f"`{data['after']}` (after); {data['seconds']:.0f} s in all. CORPUS is a copy of "
            "`examples/regpack` holding the hostile file; IDX held `examples/regpack` alone "
            "before each ingest, and the last column says whether, after it, "
            f'`ask "{data["question"]}" --index IDX --json` still exits 0 with a citation '
            "(before / after). Every command runs in its own process tree under a "
            f"{data['cap_seconds']} s and {data['cap_memory_gib']} GiB address-space cap: "
            f"> {data['cap_seconds']} is a command stopped at the time cap (its peak, ≥, is "
            "where it stood), `memory cap hit` one that ran out of address space (the peak "
            "shown is where it stood: it needed more). Peak RSS is the largest of the "
            "command's processes (ru_maxrss). The OCR row runs with each version's OCR "
            "defaults, the others with --no-ocr; the Markdown row builds BM25-only "
            "(--no-dense): 52 MB of prose is tens of thousands of chunks, and embedding them "
            "takes time in proportion to the text, which is not what the row measures.",
            "",
            "| attack | command | before: outcome | before: time (s) | before: peak RSS (MB) "
            "| after: outcome | after: time (s) | after: peak RSS (MB) "
            "| previous index answers after |",
            "|---|---|---|---:|---:|---|---:|---:|---|",
            *rows,
            "",
            verdict,
        ]
    )


def run(examples: int = EXAMPLES, with_hostile: bool = False) -> dict[str, Any]:
    from tests import test_fuzz as fz

    from groundqa.engine import Engine
    from groundqa.ingestion import ingest

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
    data["hostile"] = hostile() if with_hostile else None
    text = markdown(data)
    if data["hostile"]:
        text += "\n\n" + hostile_markdown(data["hostile"])
    write_result("fuzz", data, text)
    return data


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=EXAMPLES, help="inputs per target")
    parser.add_argument(
        "--hostile",
        action="store_true",
        help="also run each hostile file through the code before its fixes and after",
    )
    args = parser.parse_args()
    run(args.examples, args.hostile)
