"""The error tree: the docstring of `errors.py` draws every class where it sits, and
every install line an error names asks for an extra the package has."""

from __future__ import annotations

import inspect
import re
import tomllib

import groundqa.errors as errors
from tests.conftest import ROOT

SRC = ROOT / "src" / "groundqa"
# A row of the drawing: the tree rules, then a class name, then its description.
_ROW = re.compile(r"^(?P<rules>[ │├└─]*)(?P<name>[A-Z]\w*)\s")


def drawn_tree() -> dict[str, str | None]:
    """Each class named in the docstring's drawing, with the class drawn above it (its parent)."""
    parents: dict[str, str | None] = {}
    stack: list[str] = []
    for line in (errors.__doc__ or "").splitlines():
        # The drawing is the docstring's indented block; prose lines are not indented.
        row = _ROW.match(line[4:]) if line.startswith("    ") else None
        if row is None:
            continue
        depth = len(row["rules"]) // 4
        del stack[depth:]
        parents[row["name"]] = stack[-1] if stack else None
        stack.append(row["name"])
    return parents


def test_every_error_class_is_drawn_under_its_parent() -> None:
    classes = {
        name: cls
        for name, cls in vars(errors).items()
        if inspect.isclass(cls) and cls.__module__ == errors.__name__
    }
    drawn = drawn_tree()
    assert sorted(drawn) == sorted(classes)
    for name, cls in classes.items():
        base = cls.__bases__[0]
        assert drawn[name] == (None if base is Exception else base.__name__), name


def test_every_install_line_names_an_extra_the_package_has() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras = set(pyproject["project"]["optional-dependencies"])
    named: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        for found in re.findall(r"groundqa\[([^\]]*)\]", path.read_text(encoding="utf-8")):
            for extra in found.split(","):
                named.setdefault(extra.strip(), set()).add(path.relative_to(SRC).as_posix())
    assert named, "no install line found: the pattern no longer matches the messages"
    unknown = {extra: sorted(files) for extra, files in named.items() if extra not in extras}
    assert unknown == {}
