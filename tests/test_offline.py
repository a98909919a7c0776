"""The default path never reaches for the network and leaves no usage records behind.

`ingest` and `ask` on the default install run under strace, which logs every
`connect()` the processes make: only unix sockets and 127.0.0.1 may appear. The
run gets its own empty HOME, so a library that keeps a telemetry queue or a
model cache under it (onnxruntime's ~/.cache/Microsoft, a hub cache) shows up
as a file there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GROUNDQA = Path(sys.executable).with_name("groundqa")

pytestmark = pytest.mark.skipif(
    shutil.which("strace") is None, reason="strace is not installed (.ci/run installs it)"
)

CONNECT = re.compile(r"connect\(\d+, \{sa_family=(AF_\w+)(.*?)\}")


def _traced(args: list[str], home: Path, log: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORT_", "HF_"))}
    env["HOME"] = str(home)
    return subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(log), str(GROUNDQA), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def _remote_connects(log: Path) -> list[str]:
    remote = []
    for line in log.read_text().splitlines():
        m = CONNECT.search(line)
        if not m:
            continue
        family, rest = m.groups()
        if family == "AF_UNIX":
            continue
        if family == "AF_INET" and 'inet_addr("127.0.0.1")' in rest:
            continue
        if family == "AF_INET6" and 'inet_pton(AF_INET6, "::1"' in rest:
            continue
        remote.append(line.strip())
    return remote


def test_ingest_and_ask_connect_to_nothing_and_keep_no_usage_records(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("local_fennick_waste_collection.md", "federal_heritage_places_act.md"):
        shutil.copy(ROOT / "examples" / "regpack" / name, corpus / name)
    index = tmp_path / "index"

    built = _traced(["ingest", str(corpus), "--index", str(index)], home, tmp_path / "ingest.log")
    assert built.returncode == 0, built.stderr
    asked = _traced(
        ["ask", "How often are general waste bins collected?", "--index", str(index), "--json"],
        home,
        tmp_path / "ask.log",
    )
    assert asked.returncode == 0, asked.stderr
    # A real answer came back, so the query model was loaded inside the trace.
    assert json.loads(asked.stdout)["citations"], asked.stdout

    for log in ("ingest.log", "ask.log"):
        assert _remote_connects(tmp_path / log) == [], f"{log} shows a network connection"
    left = sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())
    assert left == [], f"files written under HOME: {left}"


def test_the_connect_filter_sees_a_remote_address(tmp_path: Path) -> None:
    """The check above can fail: a connect to a routable address is reported."""
    log = tmp_path / "probe.log"
    code = (
        "import socket; s = socket.socket(); s.settimeout(0.2)\n"
        "try: s.connect(('192.0.2.1', 9))\nexcept OSError: pass"
    )
    subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(log), sys.executable, "-c", code],
        check=True,
        timeout=60,
    )
    assert any("192.0.2.1" in line for line in _remote_connects(log))
