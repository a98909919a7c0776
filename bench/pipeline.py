"""The pipeline before and after: a baseline commit and the working tree in one run.

`ask` latency, `eval` wall time, and every metric `eval` reports, compared to 4 decimals,
measured on the bundled example corpus (examples/regpack with its probe file) and on
SciFact test (BEIR, ../shared/bench/scifact; skipped when absent, and with --quick):

- `ask` latency, warm: a driver process opens an Engine once, asks a few warm-up
  questions, then times each `engine.ask(question)` once. Rounds alternate the two
  sides, each round a fresh process, so load from elsewhere on a shared machine falls
  on both; the figure per question is its median over rounds.
- `eval` wall time: `groundqa eval ... --json` as a user runs it, process start included.
- Every metric of that eval for each retriever, before and after, marked unchanged when
  both print the same to 4 decimals; timing metrics are shown but not judged. For probe
  sets, the probes whose rank, refusal, gate score or answer moved are listed, so each
  changed figure can be traced to questions.

The baseline is the commit's `src/` extracted with `git archive` (the repository is only
read) and run by this venv's interpreter with PYTHONPATH pointing at it; each side is
checked to import `groundqa` from its own tree, and the two never share a process. Both
sides read the working tree's corpora and probe files. This benchmark does not judge
whether a change is right: a changed figure is reported with its explanation from
`EXPLAINED`, or as unexplained.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sets
from _common import ROOT, latency_summary, machine, write_result

DEFAULT_BASELINE = "3e7a25b"
# Kept between runs (bench/retrieval.py clears bench/.work): the baseline's source per
# commit, and the SciFact build, which takes minutes to embed.
PIPELINE_WORK = sets.BUILDS / "pipeline"
PLACES = 4
WARMUP = 5
# The methods alone, as `eval --beir` compares them by default; each side's default plan
# is added to these.
BEIR_RETRIEVERS = ("bm25", "dense", "hybrid")
# Why a figure moved, by "retriever/metric" or by metric name, written once the change is
# understood; a changed figure without an entry is reported as not explained yet.
_BAND = (
    "each index now fits a band at ingest (a gate fitted on 400 questions made from its own "
    "chunks, 08c5475): a question the default gate would refuse and the band passes is "
    "answered with caution, so refusals become cautious answers (which still quote the "
    "passage) and no answer becomes confident"
)
EXPLAINED: dict[str, str] = {
    metric: _BAND
    for metric in (
        "refused_near_miss",
        "gate_refused_near_miss",
        "false_refusal",
        "gate_false_refusal",
        "cautious_answerable",
        "cautious_near_miss",
        "answer_contains",
        "answer_grounded",
        "answer_cited_right",
    )
}

# Run in each side's own process: open the index once, warm up, time each ask once.
# It uses only what both sides offer: Engine.open, ask, Answer.to_dict, default_retriever.
ASK_DRIVER = r"""
import hashlib, json, sys, time
from groundqa.engine import Engine

index, questions_file, warmup = sys.argv[1], sys.argv[2], int(sys.argv[3])
questions = json.loads(open(questions_file, encoding="utf-8").read())
engine = Engine.open(index)
for q in questions[:warmup]:
    engine.ask(q)
ms, answers = [], []
for q in questions:
    t = time.perf_counter()
    answer = engine.ask(q)
    ms.append((time.perf_counter() - t) * 1000)
    d = answer.to_dict()
    cited = [c.get("chunk_id") or c.get("section_id") for c in d.get("citations") or []]
    key = json.dumps([d.get("refused"), d.get("answer"), cited], sort_keys=True)
    answers.append(hashlib.sha1(key.encode("utf-8")).hexdigest()[:16])
print(json.dumps({"ms": ms, "answers": answers, "default_retriever": engine.default_retriever}))
"""


class SideFailed(RuntimeError):
    """A side's command exited non-zero; the message holds the command and its stderr."""


@dataclass(frozen=True)
class Side:
    """One codebase under test: its label and the `src` folder its processes import."""

    name: str
    label: str
    src: Path

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(self.src)
        # One BLAS thread, as `make` exports: two cores are shared with the timed process.
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        env.setdefault("OMP_NUM_THREADS", "1")
        return env

    def run(self, args: Sequence[str]) -> tuple[str, float]:
        """Run `python ARGS` in this side's environment: stdout and wall seconds."""
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, *args],
            cwd=ROOT,
            env=self.env(),
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = time.perf_counter() - started
        if proc.returncode != 0:
            shown = " ".join("<driver>" if "\n" in a else a for a in args)
            raise SideFailed(
                f"{self.name} ({self.label}): `python {shown}` exited {proc.returncode}:\n"
                + proc.stderr[-3000:]
            )
        return proc.stdout, seconds

    def cli(self, *args: str) -> tuple[Any, float]:
        """`groundqa ARGS --json` in this side's process: the parsed JSON and wall seconds."""
        out, seconds = self.run(["-m", "groundqa.cli", *args, "--json"])
        return json.loads(out), seconds

    def check_import(self) -> None:
        out, _ = self.run(["-c", "import groundqa; print(groundqa.__file__)"])
        path = Path(out.strip()).resolve()
        if not path.is_relative_to(self.src.resolve()):
            raise SideFailed(f"{self.name} imports groundqa from {path}, not from {self.src}")


def git(*args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def commit_src(commit: str) -> tuple[Path, str]:
    """The commit's `src/` folder, extracted once per commit, and the full commit id."""
    sha = git("rev-parse", "--verify", f"{commit}^{{commit}}")
    folder = PIPELINE_WORK / f"src-{sha[:12]}"
    if not (folder / "src" / "groundqa" / "__init__.py").exists():
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", sha, "src"],
            capture_output=True,
            check=True,
        ).stdout
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(partial, filter="data")
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
    return folder / "src", sha


# ------------------------------------------------------------------ comparison (pure)


def is_timing(metric: str) -> bool:
    return metric.startswith("latency") or metric.endswith(("_ms", "_s"))


def eval_metrics(data: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """Per-retriever figures from `eval --json`: `metrics`, or `retrievers` (older --beir).
    Counts stay integers, so they print as counts."""
    table = data.get("metrics") or data.get("retrievers") or {}
    return {
        name: {
            k: v for k, v in row.items() if isinstance(v, int | float) and not isinstance(v, bool)
        }
        for name, row in table.items()
    }


def compare_metrics(
    before: Mapping[str, Mapping[str, float]],
    after: Mapping[str, Mapping[str, float]],
    places: int = PLACES,
    explained: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """One row per (retriever, metric) either side reports, in the order first seen.

    `status` is "unchanged" when both print the same to `places` decimals, "changed",
    "timing" (latency figures, not judged), or "before only"/"after only". A row that is
    neither unchanged nor timing carries `explanation`: `explained["retriever/metric"]`,
    else `explained["metric"]`, else None.
    """
    explained = explained or {}
    rows: list[dict[str, Any]] = []
    for retriever in dict.fromkeys([*before, *after]):
        b_row, a_row = before.get(retriever, {}), after.get(retriever, {})
        for metric in dict.fromkeys([*b_row, *a_row]):
            b, a = b_row.get(metric), a_row.get(metric)
            if b is None:
                status = "after only"
            elif a is None:
                status = "before only"
            elif is_timing(metric):
                status = "timing"
            elif f"{b:.{places}f}" == f"{a:.{places}f}":
                status = "unchanged"
            else:
                status = "changed"
            row: dict[str, Any] = {
                "retriever": retriever,
                "metric": metric,
                "before": b,
                "after": a,
                "status": status,
            }
            if status not in ("unchanged", "timing"):
                row["explanation"] = explained.get(f"{retriever}/{metric}") or explained.get(metric)
            rows.append(row)
    return rows


def probe_diffs(
    before: Mapping[str, Sequence[Mapping[str, Any]]],
    after: Mapping[str, Sequence[Mapping[str, Any]]],
    places: int = PLACES,
) -> dict[str, dict[str, list[str]]]:
    """Per retriever both sides ran, the probe ids whose rank, refusal, gate score (to
    `places` decimals) or answer differ, and the ids only one side scored."""

    def score(r: Mapping[str, Any]) -> str | None:
        value = r.get("gate_score")
        return None if value is None else f"{value:.{places}f}"

    fields: dict[str, Callable[[Mapping[str, Any]], Any]] = {
        "rank": lambda r: r.get("rank"),
        "refusal": lambda r: (r.get("refused"), r.get("refused_by")),
        "gate score": score,
        "answer": lambda r: r.get("answer"),
    }
    out: dict[str, dict[str, list[str]]] = {}
    for retriever in before:
        if retriever not in after:
            continue
        b_by = {r["id"]: r for r in before[retriever]}
        a_by = {r["id"]: r for r in after[retriever]}
        diff: dict[str, list[str]] = {name: [] for name in fields}
        for pid, b in b_by.items():
            if pid in a_by:
                for name, get in fields.items():
                    if get(b) != get(a_by[pid]):
                        diff[name].append(pid)
        diff["one side only"] = sorted(set(b_by) ^ set(a_by))
        out[retriever] = diff
    return out


def merge_rounds(rounds: Sequence[Sequence[float]]) -> list[float]:
    """Per question, its median over rounds (each round one timed pass in a fresh process)."""
    return [statistics.median(times) for times in zip(*rounds, strict=True)]


# ------------------------------------------------------------------ measuring


def _ask_rounds(
    sides: Sequence[Side], indexes: Mapping[str, Path], questions_file: Path, rounds: int
) -> dict[str, dict[str, Any]]:
    ms: dict[str, list[list[float]]] = {s.name: [] for s in sides}
    first: dict[str, dict[str, Any]] = {}
    for _ in range(rounds):
        for side in sides:
            out, _ = side.run(
                ["-c", ASK_DRIVER, str(indexes[side.name]), str(questions_file), str(WARMUP)]
            )
            data = json.loads(out)
            ms[side.name].append(data["ms"])
            first.setdefault(side.name, data)
    return {
        s.name: {
            **latency_summary(merge_rounds(ms[s.name])),
            "rounds": rounds,
            "answers": first[s.name]["answers"],
            "default_retriever": first[s.name]["default_retriever"],
        }
        for s in sides
    }


def _ask_figures(asks: dict[str, dict[str, Any]], questions: Sequence[str]) -> dict[str, Any]:
    """Latency per side, and the questions whose answers (as hashed) differ between them."""
    b, a = asks["before"].pop("answers"), asks["after"].pop("answers")
    differ = [q for q, x, y in zip(questions, b, a, strict=True) if x != y]
    return {
        **asks,
        "answers_identical": f"{len(questions) - len(differ)}/{len(questions)}",
        "answers_differ": differ,
    }


def _eval_rounds(
    sides: Sequence[Side], args: Callable[[Side], list[str]], rounds: int
) -> dict[str, Any]:
    """Each side's `eval ARGS --json` output (its first round's) and wall seconds per round."""
    seconds: dict[str, list[float]] = {s.name: [] for s in sides}
    data: dict[str, Any] = {}
    for _ in range(rounds):
        for side in sides:
            out, secs = side.cli("eval", *args(side))
            seconds[side.name].append(round(secs, 2))
            data.setdefault(side.name, out)
    return {
        "data": data,
        "wall_s": {
            name: {"median": round(statistics.median(s), 2), "rounds": s}
            for name, s in seconds.items()
        },
    }


def _index_facts(report: Mapping[str, Any], how: str) -> dict[str, Any]:
    return {
        "build_id": report.get("build_id"),
        "chunks": (report.get("counts") or {}).get("chunks"),
        "built": bool(report.get("changed")),
        "seconds": report.get("seconds"),
        "how": how,
    }


def _write_questions(work: Path, questions: Sequence[str]) -> Path:
    path = work / "questions.json"
    path.write_text(json.dumps(list(questions)), encoding="utf-8")
    return path


def regpack(sides: Sequence[Side], rounds: int) -> dict[str, Any]:
    """Each side builds its own index: seconds, and its own ingest is then part of the test."""
    corpus = ROOT / "examples" / "regpack"
    probes = ROOT / "examples" / "regpack.probes.jsonl"
    questions = [
        json.loads(line)["question"]
        for line in probes.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    work = PIPELINE_WORK / "regpack"
    work.mkdir(parents=True, exist_ok=True)
    questions_file = _write_questions(work, questions)
    indexes = {side.name: work / side.name for side in sides}
    facts: dict[str, Any] = {}
    for side in sides:
        shutil.rmtree(indexes[side.name], ignore_errors=True)
        report, _ = side.cli("ingest", str(corpus), "--index", str(indexes[side.name]))
        facts[side.name] = _index_facts(report, "its own build")
    asks = _ask_figures(_ask_rounds(sides, indexes, questions_file, rounds), questions)
    evals = _eval_rounds(
        sides, lambda side: ["--index", str(indexes[side.name]), "--probes", str(probes)], rounds
    )
    before, after = evals["data"]["before"], evals["data"]["after"]
    return {
        "corpus": "examples/regpack",
        "probes": "examples/regpack.probes.jsonl",
        "questions": len(questions),
        "index": facts,
        "ask": asks,
        "eval_wall_s": evals["wall_s"],
        "counts": {"before": before.get("counts"), "after": after.get("counts")},
        "gate": {"before": before.get("gate"), "after": after.get("gate")},
        "metrics": compare_metrics(eval_metrics(before), eval_metrics(after), explained=EXPLAINED),
        "probe_diffs": probe_diffs(before.get("results") or {}, after.get("results") or {}),
    }


def scifact(sides: Sequence[Side], rounds: int, rebuild: bool) -> dict[str, Any] | None:
    """The baseline embeds SciFact once (kept between runs); the working tree is handed a
    copy of that build and its own ingest decides: the same corpus and settings open the
    same build, anything else (or `rebuild`) makes the working tree build its own."""
    test = sets.scifact("test")
    if test is None:
        return None
    before_side, after_side = sides
    work = PIPELINE_WORK / "scifact"
    work.mkdir(parents=True, exist_ok=True)
    questions = [test.queries[q] for q in test.qrels]  # in qrels order
    questions_file = _write_questions(work, questions)
    corpus = str(test.corpus)
    indexes = {"before": work / "before", "after": work / "after"}
    ingest = ["ingest", corpus, "--format", "beir", "--index"]
    report, _ = before_side.cli(*ingest, str(indexes["before"]))
    how = "built by the baseline" if report.get("changed") else "the baseline's earlier build"
    facts = {"before": _index_facts(report, how)}
    shutil.rmtree(indexes["after"], ignore_errors=True)
    if not rebuild:
        shutil.copytree(indexes["before"], indexes["after"], symlinks=True)
    try:
        report, _ = after_side.cli(*ingest, str(indexes["after"]))
    except SideFailed:
        if rebuild:
            raise
        # A store layout the working tree no longer reads: it builds its own from scratch.
        shutil.rmtree(indexes["after"], ignore_errors=True)
        report, _ = after_side.cli(*ingest, str(indexes["after"]))
    shared = report.get("build_id") == facts["before"]["build_id"]
    facts["after"] = _index_facts(
        report,
        "the baseline's build, which the working tree's ingest found current"
        if shared
        else "its own build",
    )
    asks = _ask_figures(_ask_rounds(sides, indexes, questions_file, rounds), questions)
    names = list(
        dict.fromkeys([*BEIR_RETRIEVERS, *(asks[s.name]["default_retriever"] for s in sides)])
    )
    evals = _eval_rounds(
        sides,
        lambda side: [
            "--beir",
            str(test.folder),
            "--index",
            str(indexes[side.name]),
            "--retrievers",
            ",".join(names),
        ],
        rounds,
    )
    return {
        "corpus": "SciFact test (BEIR)",
        "questions": len(questions),
        "retrievers": names,
        "index": facts,
        "index_shared": shared,
        "ask": asks,
        "eval_wall_s": evals["wall_s"],
        "metrics": compare_metrics(
            eval_metrics(evals["data"]["before"]),
            eval_metrics(evals["data"]["after"]),
            explained=EXPLAINED,
        ),
    }


# ------------------------------------------------------------------ report


def _num(v: float | None, metric: str) -> str:
    if v is None:
        return "—"
    if isinstance(v, int):
        return str(v)
    return f"{v:.1f}" if is_timing(metric) else f"{v:.{PLACES}f}"


def metrics_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per metric, one column per retriever: the figure once when both sides print
    it the same, else `before → after`; the last column marks the line."""
    retrievers = list(dict.fromkeys(r["retriever"] for r in rows))
    by_metric: dict[str, dict[str, Mapping[str, Any]]] = {}
    for r in rows:
        by_metric.setdefault(r["metric"], {})[r["retriever"]] = r
    md = [
        "| metric | " + " | ".join(f"`{n}`" for n in retrievers) + " | |",
        "|---|" + "---:|" * len(retrievers) + "---|",
    ]
    for metric, cells in by_metric.items():
        shown = []
        for name in retrievers:
            cell = cells.get(name)
            if cell is None:
                shown.append("—")
                continue
            b, a = _num(cell["before"], metric), _num(cell["after"], metric)
            shown.append(b if b == a else f"{b} → {a}")
        statuses = {r["status"] for r in cells.values()}
        if "changed" in statuses:
            mark = "**changed**"
        elif statuses & {"before only", "after only"}:
            mark = "one side only"
        elif statuses == {"timing"}:
            mark = "timing"
        else:
            mark = "unchanged"
        md.append(f"| {metric} | " + " | ".join(shown) + f" | {mark} |")
    return md


def _changes(label: str, rows: Sequence[Mapping[str, Any]]) -> list[str]:
    out = []
    for r in rows:
        if r["status"] in ("unchanged", "timing"):
            continue
        why = r.get("explanation") or "not explained yet"
        out.append(
            f"- {label}, `{r['retriever']}` {r['metric']}: {_num(r['before'], r['metric'])} → "
            f"{_num(r['after'], r['metric'])} ({r['status']}): {why}"
        )
    return out


def _judged(rows: Sequence[Mapping[str, Any]]) -> str:
    judged = [r for r in rows if r["status"] != "timing"]
    same = sum(r["status"] == "unchanged" for r in judged)
    return f"{same}/{len(judged)}"


def markdown(data: Mapping[str, Any]) -> str:
    parts = [("example corpus", data["regpack"])]
    if data.get("scifact"):
        parts.append(("SciFact", data["scifact"]))
    before, after = data["before"], data["after"]
    if after.get("commit_only"):
        after_text = f"`{after['commit'][:7]}`"
    else:
        after_text = f"the working tree at `{after['commit'][:7]}`" + (
            " with uncommitted changes" if after["dirty"] else ""
        )
    md = [
        "## The pipeline before and after",
        "",
        "`python bench/pipeline.py` (part of `make bench`; `--quick` leaves SciFact out). "
        f"Before: `{before['commit'][:7]}` ({before['subject']}); after: {after_text}. "
        "Each side runs in its own processes, this venv's interpreter importing its own "
        "`src/`; both read the same corpora and probe files. `ask`: an Engine opened once, "
        f"{WARMUP} warm-up questions, then each question asked once per round, alternating "
        f"the sides ({data['rounds']} rounds on the example corpus, 1 on SciFact; median per "
        "question); `eval`: `groundqa eval ... --json` wall time, process start included "
        "(median of the rounds). Seconds per part: "
        + ", ".join(f"{k} {v}" for k, v in data["seconds"].items())
        + ".",
        "",
        "| | " + " | ".join(f"{label} before | {label} after" for label, _ in parts) + " |",
        "|---|" + "---:|---:|" * len(parts),
    ]

    def line(title: str, get: Callable[[Mapping[str, Any], str], str]) -> str:
        cells = [get(p, side) for _, p in parts for side in ("before", "after")]
        return f"| {title} | " + " | ".join(cells) + " |"

    md += [
        line("`ask` p50 (ms)", lambda p, s: f"{p['ask'][s]['p50_ms']:.1f}"),
        line("`ask` p95 (ms)", lambda p, s: f"{p['ask'][s]['p95_ms']:.1f}"),
        line("`eval` wall time (s)", lambda p, s: f"{p['eval_wall_s'][s]['median']:.1f}"),
        line("index chunks", lambda p, s: str(p["index"][s]["chunks"])),
        line(
            "answers the same (refusal, text, citations)",
            lambda p, s: p["ask"]["answers_identical"] if s == "after" else "",
        ),
        line(
            "metrics the same to 4 decimals",
            lambda p, s: _judged(p["metrics"]) if s == "after" else "",
        ),
        "",
    ]
    rp = data["regpack"]
    gate = f"gate: {rp['gate']['before']}"
    if rp["gate"]["after"] != rp["gate"]["before"]:
        gate = f"gate before: {rp['gate']['before']}; after: {rp['gate']['after']}"
    md += [
        f"**Example corpus** ({rp['corpus']}, {rp['questions']} probes from {rp['probes']}); "
        "each side builds its own index; the default retrievers of `eval`. One figure: the "
        f"same on both sides to 4 decimals; `a → b`: before → after. The {gate}.",
        "",
        *metrics_table(rp["metrics"]),
        "",
    ]
    moved = [
        f"- `{retriever}`: " + "; ".join(f"{k} {', '.join(v)}" for k, v in diff.items() if v)
        for retriever, diff in rp["probe_diffs"].items()
        if any(diff.values())
    ]
    if moved:
        md += ["Probes that moved (rank, refusal, gate score to 4 decimals, answer):", "", *moved]
    else:
        md.append("No probe moved: rank, refusal, gate score (to 4 decimals) and answer agree.")
    md.append("")
    sf = data.get("scifact")
    if sf:
        md += [
            f"**SciFact test** ({sf['questions']} queries; the index: before, "
            f"{sf['index']['before']['how']}; after, {sf['index']['after']['how']}):",
            "",
            *metrics_table(sf["metrics"]),
            "",
        ]
    elif data.get("scifact_skipped"):
        md += [f"SciFact: {data['scifact_skipped']}.", ""]
    changes = [c for label, p in parts for c in _changes(label, p["metrics"])]
    if changes:
        md += ["Changed figures:", "", *changes]
    else:
        md.append("No retrieval or refusal figure changed.")
    return "\n".join(md)


# ------------------------------------------------------------------ run


def run(
    baseline: str = DEFAULT_BASELINE,
    quick: bool = False,
    rounds: int = 3,
    rebuild: bool = False,
    after: str | None = None,
) -> dict[str, Any]:
    """Compare commit `baseline` with the working tree, or with commit `after`."""
    started = time.perf_counter()
    PIPELINE_WORK.mkdir(parents=True, exist_ok=True)
    src, sha = commit_src(baseline)
    after_data: dict[str, Any]
    if after is None:
        after_src = ROOT / "src"
        after_data = {
            "commit": git("rev-parse", "HEAD"),
            "dirty": bool(git("status", "--porcelain")),
        }
    else:
        after_src, after_sha = commit_src(after)
        after_data = {"commit": after_sha, "dirty": False, "commit_only": True}
    sides = (
        Side("before", sha[:12], src),
        Side("after", after_data["commit"][:12] if after else "working tree", after_src),
    )
    for side in sides:
        side.check_import()
    data: dict[str, Any] = {
        "machine": machine(),
        "rounds": rounds,
        "before": {"commit": sha, "subject": git("log", "-1", "--format=%s", sha)},
        "after": after_data,
    }
    seconds: dict[str, float] = {}
    t = time.perf_counter()
    data["regpack"] = regpack(sides, rounds)
    seconds["example corpus"] = round(time.perf_counter() - t, 1)
    if quick:
        data["scifact"] = None
        data["scifact_skipped"] = "left out (--quick)"
    else:
        t = time.perf_counter()
        # One round: each takes minutes, and 300 queries give a steady median on their own.
        data["scifact"] = scifact(sides, 1, rebuild)
        if data["scifact"] is None:
            data["scifact_skipped"] = "skipped, ../shared/bench/scifact not found"
        seconds["scifact"] = round(time.perf_counter() - t, 1)
    seconds["total"] = round(time.perf_counter() - started, 1)
    data["seconds"] = seconds
    write_result("pipeline", data, markdown(data))
    return data


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="commit to compare against")
    parser.add_argument("--quick", action="store_true", help="the example corpus only")
    parser.add_argument("--rounds", type=int, default=3, help="rounds on the example corpus")
    parser.add_argument(
        "--rebuild",
        action="store_true",
        help="the working tree builds its own SciFact index instead of opening the baseline's",
    )
    parser.add_argument(
        "--after", default=None, help="a commit to measure instead of the working tree"
    )
    args = parser.parse_args(argv)
    try:
        run(
            args.baseline,
            quick=args.quick,
            rounds=args.rounds,
            rebuild=args.rebuild,
            after=args.after,
        )
    except SideFailed as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
