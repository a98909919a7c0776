"""Check the pinned dependencies (constraints.txt) against known vulnerabilities with pip-audit.

Prints one summary line, then each vulnerability found. Exits 1 when any pinned
package has a known vulnerability. When the vulnerability service cannot be
reached, pip-audit skips every package: that is said plainly, never shown as clean.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    audit = Path(sys.executable).with_name("pip-audit")
    done = subprocess.run(
        [
            str(audit),
            "--requirement",
            str(ROOT / "constraints.txt"),
            "--no-deps",
            "--disable-pip",
            "--progress-spinner",
            "off",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        print(f"pip-audit failed (exit {done.returncode}): {done.stderr.strip()[-800:]}")
        return 1
    deps = report.get("dependencies", [])
    skipped = [d for d in deps if d.get("skip_reason")]
    vulnerable = [d for d in deps if d.get("vulns")]
    audited = len(deps) - len(skipped)
    print(
        f"pip-audit: {len(deps)} pinned packages, {audited} audited, {len(skipped)} not "
        f"audited, {sum(len(d['vulns']) for d in vulnerable)} known vulnerabilities "
        f"in {len(vulnerable)} packages"
    )
    if skipped:
        reasons = Counter(d["skip_reason"].split(":")[0] for d in skipped)
        for reason, count in reasons.most_common():
            print(f"  not audited ({count}): {reason}")
        if not audited:
            print(
                "  the vulnerability service (pypi.org's per-release JSON) was not reachable "
                "from this machine, so nothing was checked"
            )
    for dep in vulnerable:
        for vuln in dep["vulns"]:
            fixed = ", ".join(vuln.get("fix_versions", [])) or "no fixed release"
            print(f"  {dep['name']} {dep['version']}: {vuln['id']} (fixed in {fixed})")
    return 1 if vulnerable else 0


if __name__ == "__main__":
    raise SystemExit(main())
