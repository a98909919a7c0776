"""Convert files to Markdown with markitdown, timing each conversion.

Run by bench/real_docs.py with the interpreter of markitdown's own venv
(`make .venv-markitdown/bin/python`), since markitdown is a baseline and not a
dependency of the project; it imports nothing from groundqa.

    python _markitdown_convert.py OUT_DIR ROUNDS FILE...

Writes OUT_DIR/<file name>.md for every file that converts and prints one JSON object:
{file name: {"seconds": median of ROUNDS conversions or null, "error": str or null}}.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any


def convert(files: list[Path], out: Path, rounds: int) -> dict[str, dict[str, Any]]:
    from markitdown import MarkItDown

    converter = MarkItDown(enable_plugins=False)
    report: dict[str, dict[str, Any]] = {}
    for path in files:
        times: list[float] = []
        text = ""
        error = None
        for _ in range(rounds):
            started = time.perf_counter()
            try:
                text = converter.convert(str(path)).text_content
            except Exception as exc:  # any failure is the baseline's result, not a crash
                error = f"{type(exc).__name__}: {exc}"[:300]
                break
            times.append(time.perf_counter() - started)
        if error is None:
            (out / f"{path.name}.md").write_text(text, encoding="utf-8")
        report[path.name] = {
            "seconds": statistics.median(times) if times and error is None else None,
            "error": error,
        }
    return report


def main(argv: list[str]) -> int:
    out, rounds, files = Path(argv[0]), int(argv[1]), [Path(a) for a in argv[2:]]
    out.mkdir(parents=True, exist_ok=True)
    print(json.dumps(convert(files, out, rounds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
