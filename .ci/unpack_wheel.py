"""Unpack a wheel with its files' permission bits (a zip keeps them; `zipfile` drops them).

    python .ci/unpack_wheel.py WHEEL DEST
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path


def unpack(wheel: Path, dest: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            path = Path(archive.extract(info, dest))
            mode = (info.external_attr >> 16) & 0o777
            if mode and not info.is_dir():
                path.chmod(mode)


if __name__ == "__main__":
    wheels = sorted(Path().glob(sys.argv[1])) if "*" in sys.argv[1] else [Path(sys.argv[1])]
    if len(wheels) != 1:
        sys.exit(f"expected one wheel at {sys.argv[1]}, found {len(wheels)}")
    unpack(wheels[0], Path(sys.argv[2]))
