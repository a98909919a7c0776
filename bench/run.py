"""`make bench`: every benchmark in one run, each against its named baseline."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import foundation
from _common import RESULTS


def main() -> int:
    started = time.perf_counter()
    foundation.run()
    total = time.perf_counter() - started
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "wall_time.txt").write_text(f"make bench wall time: {total:.1f} s\n")
    print(f"make bench wall time: {total:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
