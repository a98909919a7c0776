"""The README is the two-minute introduction: short, its commands real, its snippet runnable,
its links and screenshot present, and the package's long description free of links that
only resolve in the repository. The figures it used to quote are checked in test_docs.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def fenced(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.S | re.M)


def section(title: str) -> str:
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.S | re.M)
    assert m, f"README has no section {title!r}"
    return m.group(1)


def cli_commands() -> set[str]:
    env = {**os.environ, "COLUMNS": "80"}
    exe = Path(sys.executable).with_name("groundqa")
    out = subprocess.run(
        [str(exe), "--help"], capture_output=True, text=True, env=env, check=True
    ).stdout
    listed = out.split("\nCommands:\n", 1)[1]
    return set(re.findall(r"^  (\S+)", listed, re.M))


def slug(heading: str) -> str:
    """The anchor MkDocs (Python-Markdown's toc) gives a heading."""
    text = re.sub(r"[^\w\s-]", "", heading.replace("`", "")).strip().lower()
    return re.sub(r"[\s-]+", "-", text)


def test_the_readme_reads_in_two_minutes() -> None:
    lines = README.splitlines()
    assert len(lines) < 200
    headings = [ln for ln in lines if ln.startswith("#")]
    assert len(headings) == len(set(headings)), "a heading is repeated"
    # No generated benchmark output: that lives on the documentation's benchmark pages.
    assert "<!-- bench:" not in README and "|---" not in README


@pytest.mark.parametrize("command", ["make demo", "make test"])
def test_first_two_commands_are_make_demo_and_make_test(command: str) -> None:
    first_block = README.split("```sh", 1)[1].split("```", 1)[0]
    assert command in first_block


def test_the_five_commands_are_commands_of_the_cli() -> None:
    (block,) = fenced(section("Five commands"), "sh")
    used = [line.split()[1] for line in block.splitlines() if line.strip()]
    assert len(used) == len(set(used)) == 5
    known = cli_commands()
    assert set(used) <= known
    # The rest are named in the paragraph after them, so none is hidden.
    rest = known - set(used)
    assert all(f"`{name}`" in section("Five commands") for name in rest), rest


def test_the_python_snippet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (snippet,) = fenced(README, "python")
    assert "Engine.open(" in snippet and "engine.ask(" in snippet
    monkeypatch.chdir(ROOT)
    code = snippet.replace('"idx"', repr(str(tmp_path / "idx")))
    scope: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), scope)
    answer = scope["answer"]
    assert not answer.refused and answer.citations  # type: ignore[attr-defined]


def test_links_and_the_screenshot_resolve_in_the_repository() -> None:
    targets = LINK.findall(README)
    assert "docs/img/web.png" in targets
    for target in targets:
        if target.startswith(("http://", "https://")):
            continue
        path, _, anchor = target.partition("#")
        assert (ROOT / path).exists(), target
        if anchor:
            headings = re.findall(r"^#+ (.+)$", (ROOT / path).read_text(), re.M)
            assert anchor in {slug(h) for h in headings}, target


def test_the_screenshot_is_small() -> None:
    png = ROOT / "docs" / "img" / "web.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size < 100_000


def test_the_long_description_has_no_repository_relative_links() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    readme = project["readme"]
    assert readme["content-type"] == "text/markdown"
    text = (ROOT / readme["file"]).read_text(encoding="utf-8")
    for target in LINK.findall(text):
        assert target.startswith(("http://", "https://")), target
    # It introduces the package in the README's own words.
    first = README.split("\n\n", 2)[1]
    assert text.split("\n\n", 2)[1] == first
