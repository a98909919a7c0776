"""Probe sets: questions with the sections that answer them, or none.

One JSON object per line (see DESIGN.md): `question` is required; `expected`
(section ids), `kind` (answerable / out_of_scope / near_miss), `group`
(paraphrase group), `answer_contains` and `scope` (where the asker is, e.g.
`{"area": "Fennick City"}`; see `retrieve`) are optional. A malformed line is an
error naming its line number; nothing is skipped silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groundqa.errors import ProbeError
from groundqa.loaders._common import unpaired_surrogate

KINDS = ("answerable", "out_of_scope", "near_miss")


@dataclass(frozen=True)
class Probe:
    id: str
    question: str
    expected: tuple[str, ...] = ()
    kind: str = "answerable"
    group: str | None = None
    answer_contains: tuple[str, ...] = ()
    scope: dict[str, list[str]] = field(default_factory=dict)

    @property
    def answerable(self) -> bool:
        return self.kind == "answerable"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "question": self.question,
            "expected": list(self.expected),
            "kind": self.kind,
            "group": self.group,
            "answer_contains": list(self.answer_contains),
            **({"scope": {k: list(v) for k, v in self.scope.items()}} if self.scope else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], default_id: str) -> Probe:
        question = d.get("question")
        if not isinstance(question, str) or not question.strip():
            raise ValueError("`question` must be a non-empty string")
        kind = d.get("kind", "answerable")
        if kind not in KINDS:
            raise ValueError(f"`kind` must be one of {', '.join(KINDS)}, got {kind!r}")
        expected = d.get("expected", [])
        contains = d.get("answer_contains", [])
        if not isinstance(expected, list) or not all(isinstance(e, str) for e in expected):
            raise ValueError("`expected` must be a list of section ids")
        if not isinstance(contains, list) or not all(isinstance(e, str) for e in contains):
            raise ValueError("`answer_contains` must be a list of strings")
        if kind != "answerable" and expected:
            raise ValueError(f"a {kind} probe cannot name expected sections")
        group = d.get("group")
        scope = d.get("scope", {})
        if not isinstance(scope, dict) or not all(
            isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v))
            for v in scope.values()
        ):
            raise ValueError(
                '`scope` must map keys to a place or a list of places, e.g. {"area": "X"}'
            )
        return cls(
            id=str(d.get("id", default_id)),
            question=question.strip(),
            expected=tuple(expected),
            kind=kind,
            group=str(group) if group is not None else None,
            answer_contains=tuple(contains),
            scope={str(k): [v] if isinstance(v, str) else list(v) for k, v in scope.items()},
        )


def load_probes(path: str | Path) -> list[Probe]:
    file = Path(path)
    try:
        # split("\n"), not splitlines(): a JSON string may hold U+2028, which splitlines
        # would take for a line end. A leading BOM is dropped, as the loaders drop it.
        lines = file.read_text("utf-8-sig").split("\n")
    except FileNotFoundError:
        raise ProbeError(f"no probe file at {file}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ProbeError(f"cannot read probe file {file}: {exc}") from None
    probes: list[Probe] = []
    seen: dict[str, int] = {}
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            if not isinstance(raw, dict):
                raise ValueError("each line must be a JSON object")
            if unpaired_surrogate(line, raw):
                raise ValueError("it escapes half of a surrogate pair (e.g. \\ud800 alone)")
            probe = Probe.from_dict(raw, default_id=f"line{line_no}")
        except RecursionError:
            raise ProbeError(
                f"{file} line {line_no}: arrays or objects nested too deeply; fix or remove that line"
            ) from None
        except ValueError as exc:
            raise ProbeError(f"{file} line {line_no}: {exc}; fix or remove that line") from None
        if probe.id in seen:
            raise ProbeError(
                f"{file} line {line_no}: probe id {probe.id!r} already used on line {seen[probe.id]}"
            )
        seen[probe.id] = line_no
        probes.append(probe)
    if not probes:
        raise ProbeError(f"{file} has no probes; write one JSON object per line with a `question`")
    return probes
