"""The benchmark pages: one per results file in bench/results/, made when the site is built.

Each page is the benchmark's own Markdown (`bench/results/<name>.md`, written with its
figures) under a note that says when and at which commit it ran, and whether the code it
measures has changed since (bench/provenance.py, the same check as `make bench-status`).
Nothing is copied by hand, so a page can neither drift from its results file nor hide
that the code has moved on. Results written before recording began are said to be so,
never presented as current.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
SECTION = "Benchmarks"

sys.path.insert(0, str(ROOT / "bench"))
import provenance  # noqa: E402

# An image the results Markdown links from the repository root (`/bench/results/x.png`).
IMAGE = re.compile(r"\]\(/?bench/results/([\w.-]+\.png)\)")


def title(name: str) -> str:
    bench = provenance.BENCHMARKS.get(name)
    return bench.title if bench else name


def _commit(s: provenance.Status) -> str:
    if not s.commit:
        return "an unknown commit (no git history here)"
    when = f", {s.commit_date}" if s.commit_date else ""
    since = ""
    if s.commits_since is not None:
        since = f", {s.commits_since} commits before the code this site was built from"
    return f"`{s.commit[:7]}` ({s.commit[:12]}{when}{since})"


def _paths(paths: tuple[str, ...]) -> str:
    return ", ".join(f"`{p}`" for p in paths)


def _count(s: provenance.Status) -> str:
    bench = provenance.BENCHMARKS.get(s.name)
    total = len(bench.paths) if bench else len(s.changed)
    return f"{len(s.changed)} of the {total} paths it measures"


def note(s: provenance.Status) -> str:
    """The admonition at the top of a benchmark page."""
    ran = s.ran or "an unrecorded date"
    if s.state == "fresh":
        body = (
            f"Ran on {ran} at commit {_commit(s)}. None of the code it measures has "
            "changed since: every path it measures hashes as it did when these figures "
            "were written."
        )
        if s.uncommitted:
            body += f" It ran with uncommitted changes to {_paths(s.uncommitted)}."
        return f'!!! success "Fresh"\n    {body}\n'
    if s.state == "stale":
        body = (
            f"Ran on {ran} at commit {_commit(s)}. The code it measures has changed since "
            f"({_count(s)}, marked below), so these figures may no longer hold."
        )
        if s.uncommitted:
            body += f" It ran with uncommitted changes to {len(s.uncommitted)} of them."
        return f'!!! warning "The code has changed since these figures"\n    {body}\n'
    if s.state == "predates recording":
        body = (
            f"Ran on {ran} (the date in its results file), before benchmarks recorded the "
            "code they measured, so no hash can say whether these figures still hold. "
            f"The commit that last wrote `bench/results/{s.name}.json` is {_commit(s)}."
        )
        if s.changed:
            body += f" Git shows changes since that commit to {_count(s)} (marked below)."
        else:
            body += " Git shows no change since that commit to the paths it measures."
        return f'!!! warning "Predates recording"\n    {body}\n'
    body = (
        f"Ran on {ran}. `{s.name}` declares no measured paths in bench/provenance.py, "
        "so nothing can say whether these figures still hold."
    )
    return f'!!! danger "Undeclared"\n    {body}\n'


def page(name: str, s: provenance.Status, results: Path = RESULTS) -> str:
    """A benchmark's page: the note, how to rerun it, what it measures, then its figures."""
    body = (results / f"{name}.md").read_text(encoding="utf-8").strip()
    # The results file's own heading is the page title.
    lines = body.splitlines()
    if lines and lines[0].startswith("## "):
        body = "\n".join(lines[1:]).strip()
    body = IMAGE.sub(r"](\1)", body)
    bench = provenance.BENCHMARKS.get(name)
    parts = [f"# {title(name)}\n", note(s)]
    if bench is not None:
        measured = "\n".join(
            f"    - `{p}`" + (" (changed since)" if p in s.changed else "") for p in bench.paths
        )
        parts.append(
            f'??? note "Rerun it, and what it measures"\n'
            f"    `python {bench.script}` writes `bench/results/{name}.md` and `.json`; "
            "`make bench` runs every benchmark. It measures:\n\n"
            f"{measured}\n"
        )
    parts.append(body + "\n")
    return "\n".join(parts)


def index(statuses: list[provenance.Status], results: Path = RESULTS) -> str:
    rows = [
        "| benchmark | ran | commit | state |",
        "|---|---|---|---|",
    ]
    for s in statuses:
        commit = f"`{s.commit[:7]}`" if s.commit else "—"
        rows.append(f"| [{title(s.name)}]({s.name}.md) | {s.ran or '—'} | {commit} | {s.state} |")
    wall = results / "wall_time.txt"
    last = f" The last full run: {wall.read_text().strip()}." if wall.exists() else ""
    fresh = sum(s.fresh for s in statuses)
    return "\n".join(
        [
            "# Benchmarks\n",
            "Every figure here comes from a script in `bench/` that writes "
            "`bench/results/<name>.md` and `.json`; `make bench` runs them all, each against "
            f"its named baseline.{last} The pages are made from those files when this "
            "site is built.\n",
            "Each results file records the commit it ran at and a hash of every path its "
            "benchmark measures (declared in `bench/provenance.py`). *fresh*: none of them "
            "has changed since; *stale*: some have, and the figures may no longer hold; "
            "*predates recording*: written before the record existed, so only git's history "
            "of the file can be given. `make bench-status` lists every result that is not "
            f"fresh. When this site was built, {fresh} of {len(statuses)} were fresh.\n",
            "\n".join(rows) + "\n",
        ]
    )


def _statuses() -> list[provenance.Status]:
    return provenance.statuses(ROOT, RESULTS)


def on_config(config: Any, **_: Any) -> Any:
    entries: list[Any] = [{"All results": "benchmarks/index.md"}]
    entries += [{title(n): f"benchmarks/{n}.md"} for n in provenance.names(RESULTS)]
    for item in config["nav"]:
        if isinstance(item, dict) and SECTION in item:
            item[SECTION] = entries
    return config


def on_files(files: Any, config: Any, **_: Any) -> Any:
    from mkdocs.structure.files import File

    statuses = _statuses()
    files.append(File.generated(config, "benchmarks/index.md", content=index(statuses)))
    for s in statuses:
        text = page(s.name, s)
        files.append(File.generated(config, f"benchmarks/{s.name}.md", content=text))
        for image in sorted(set(IMAGE.findall((RESULTS / f"{s.name}.md").read_text()))):
            files.append(
                File.generated(config, f"benchmarks/{image}", abs_src_path=str(RESULTS / image))
            )
    return files
