"""Every benchmark script still imports: a helper moved or renamed under a script breaks
it here, not on the day someone runs `make bench`.

The imports run in a fresh interpreter (the scripts put bench/ on sys.path and import
each other by module name). A script that runs in another environment imports there.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT

# Scripts run by another interpreter, with what they need at import time.
OTHER_ENVIRONMENT = {"_reference_embed": "torch (run in .venv-ref by bench/embedder.py)"}

PROBE = """
import importlib, json, sys, traceback
sys.path.insert(0, "bench")
failed = {}
for name in json.loads(sys.argv[1]):
    try:
        importlib.import_module(name)
    except BaseException:
        failed[name] = traceback.format_exc(limit=-1).strip().splitlines()[-1]
print(json.dumps(failed))
"""


def _failed_imports(names: list[str]) -> dict[str, str]:
    """Each named script that does not import, with the last line of its error."""
    run = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(names)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    failed: dict[str, str] = json.loads(run.stdout.strip().splitlines()[-1])
    return failed


def test_every_benchmark_script_imports() -> None:
    names = sorted(p.stem for p in (ROOT / "bench").glob("*.py"))
    assert "dense" in names and "pg" in names
    assert _failed_imports([n for n in names if n not in OTHER_ENVIRONMENT]) == {}


def test_a_script_that_does_not_import_is_reported() -> None:
    failed = _failed_imports(["no_such_benchmark"])
    assert "No module named 'no_such_benchmark'" in failed["no_such_benchmark"]
