"""constraints.txt pins exactly what the venv holds (`make install` applies it; `make lock` writes it)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([a-z0-9-]+)==([^\s;#]+)$")


def _lock() -> Any:
    spec = importlib.util.spec_from_file_location("lock", ROOT / ".ci" / "lock.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for n, line in enumerate((ROOT / "constraints.txt").read_text().splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        m = PIN.match(line)
        assert m, f"constraints.txt:{n} is not 'name==version' (normalised name): {line!r}"
        assert m.group(1) not in pins, f"constraints.txt:{n} pins {m.group(1)} twice"
        pins[m.group(1)] = m.group(2)
    return pins


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="runs in the project venv")
def test_every_installed_package_is_pinned_at_its_installed_version() -> None:
    pins = _pins()
    installed = _lock().installed()
    unpinned = sorted(set(installed) - set(pins))
    differ = sorted(
        f"{n} {installed[n]} (pinned {pins[n]})"
        for n in installed.keys() & pins.keys()
        if installed[n] != pins[n]
    )
    assert not unpinned and not differ, (
        f"run `make lock`: not pinned {unpinned}; other version than pinned {differ}"
    )


def test_the_lock_writes_exact_pins_that_this_test_reads(tmp_path: Path) -> None:
    target = tmp_path / "constraints.txt"
    assert _lock().main([str(target)]) == 0
    lines = [ln for ln in target.read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines and all(PIN.match(ln) for ln in lines)
    assert any(ln.startswith("numpy==") for ln in lines)
