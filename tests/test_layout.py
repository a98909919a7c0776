"""The tree reads as the pipeline: the import contract holds, and breaks when a stage
imports one after it; the Engine stays a façade and no module grows past a screen's worth
of seams.

The contract is `[tool.importlinter]` in pyproject.toml, checked by `lint-imports` (the
`dev` extra), which `make lint` runs on the real tree. Here it runs on a copy of the
package with one wrong import added, to show that the contract would catch it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "groundqa"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

ENGINE_LINES = 250
MODULE_LINES = 900


def _lint_imports(tmp_path: Path, wrong: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`lint-imports` over a copy of the package where each file in `wrong` (relative to
    the package) has the given line appended."""
    if not LINT_IMPORTS.exists():
        pytest.skip(f"needs {LINT_IMPORTS} (pip install -e '.[dev]')")
    src = tmp_path / "src"
    shutil.copytree(PACKAGE, src / "groundqa", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for relative, line in wrong.items():
        path = src / "groundqa" / relative
        path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_contract_holds_on_the_tree_as_it_is(tmp_path: Path) -> None:
    done = _lint_imports(tmp_path, {})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 kept, 0 broken" in done.stdout


def test_a_question_stage_module_that_imports_retrieval_breaks_the_contract(
    tmp_path: Path,
) -> None:
    done = _lint_imports(
        tmp_path,
        {
            "query/intent.py": "import groundqa.retrieve  # noqa: E402",
            "text.py": "import groundqa.query  # noqa: E402",
        },
    )
    assert done.returncode != 0
    out = done.stdout
    assert "stages import only the stages before them BROKEN" in out
    assert "groundqa.query.intent -> groundqa.retrieve" in out
    assert "the shared foundation imports no stage BROKEN" in out
    assert "groundqa.text -> groundqa.query" in out


def test_the_engine_is_a_facade_and_no_module_is_too_long() -> None:
    engine = len((PACKAGE / "engine.py").read_text(encoding="utf-8").splitlines())
    assert engine <= ENGINE_LINES
    long = {
        str(path.relative_to(PACKAGE)): n
        for path in sorted(PACKAGE.rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINES
    }
    assert long == {}


def test_the_question_stage_is_a_package_ahead_of_retrieval() -> None:
    top = {p.stem for p in PACKAGE.glob("*.py")}
    moved = {"query", "intent", "conversation", "acronyms", "definitions"}
    assert not top & moved
    assert {p.stem for p in (PACKAGE / "query").glob("*.py")} >= {
        "__init__",
        "request",
        "intent",
        "conversation",
        "acronyms",
        "definitions",
    }
