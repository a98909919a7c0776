"""The seed systems' own question files, converted to probes at run time.

The natech and city-guide seed systems each shipped a question file. Their text
stays in ../shared; benchmarks read it from there and convert it here, so none
of it is copied into the project.

The city-guide questions carry a short expected answer (`expects`) rather than
section ids. The ground truth is derived, not guessed: a question's expected
sections are those whose text contains its `expects` string (case-insensitive,
whitespace runs collapsed), narrowed to the guide of a town the question names
when that guide has a match. A string found nowhere leaves `expected` empty, so
the probe still counts for answer checks but not for retrieval.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from groundqa.evaluate.probes import Probe
from groundqa.loaders import load
from groundqa.models import Document

__all__ = [
    "city_guides_probes",
    "expected_sections",
    "natech_probes",
    "normalise",
    "write_probes",
]

_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Casefolded, with every whitespace run (line wraps included) as one space."""
    return _SPACE.sub(" ", text).strip().casefold()


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise FileNotFoundError(
            f"seed question file not found: {path} (benchmarks read ../shared beside the project)"
        )
    try:
        return json.loads(path.read_text("utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from None


def _field(item: Any, key: str, path: Path, where: str) -> Any:
    if not isinstance(item, dict) or key not in item:
        raise ValueError(f"{path}: {where} has no `{key}`")
    return item[key]


def _text(value: Any, path: Path, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{path}: {where} must be a non-empty string")
    return value.strip()


def natech_probes(path: Path) -> list[Probe]:
    """The natech probes.json items as answerable probes; chapters are section ids."""
    items = _read_json(path)
    if not isinstance(items, list):
        raise ValueError(f"{path}: expected a JSON list of question objects")
    probes: list[Probe] = []
    for n, item in enumerate(items, start=1):
        where = f"item {n}"
        question = _text(_field(item, "question", path, where), path, f"{where} `question`")
        chapters = _field(item, "expected_chapters", path, where)
        if not isinstance(chapters, list) or not chapters:
            raise ValueError(f"{path}: {where} `expected_chapters` must be a non-empty list")
        probes.append(
            Probe(
                id=f"natech-{n:02d}",
                question=question,
                expected=tuple(str(c) for c in chapters),
                kind="answerable",
            )
        )
    return probes


def expected_sections(
    expects: str, question: str, documents: Iterable[Document]
) -> tuple[str, ...]:
    """Section ids whose text contains `expects`, preferring a town the question names.

    A document is "named" when its title (the guide's `# ` heading) occurs in the
    question. If any named document has a matching section, only those sections
    are kept; otherwise every matching section is. Order follows the documents.
    """
    needle = normalise(expects)
    asked = normalise(question)
    if not needle:
        return ()
    found: list[str] = []
    preferred: list[str] = []
    for doc in documents:
        named = bool(doc.title.strip()) and normalise(doc.title) in asked
        for section in doc.sections:
            if needle in normalise(section.text):
                found.append(section.section_id)
                if named:
                    preferred.append(section.section_id)
    return tuple(preferred or found)


def _load_guides(guides: Path) -> list[Document]:
    if not guides.is_dir():
        raise FileNotFoundError(
            f"city guides folder not found: {guides} (benchmarks read ../shared beside the project)"
        )
    documents = list(load([guides], fmt="markdown").documents)
    if not documents:
        raise FileNotFoundError(f"no Markdown guides found in {guides}")
    return documents


def _strings(data: dict[str, Any], key: str, path: Path) -> list[str]:
    values = data.get(key, [])
    if not isinstance(values, list):
        raise ValueError(f"{path}: `{key}` must be a list")
    return [_text(v, path, f"`{key}` item {i}") for i, v in enumerate(values, start=1)]


def city_guides_probes(questions: Path, guides: Path) -> list[Probe]:
    """questions.json as probes: answerable ones mapped to sections, then near misses, then out of scope."""
    data = _read_json(questions)
    if not isinstance(data, dict):
        raise ValueError(f"{questions}: expected a JSON object")
    documents = _load_guides(guides)
    probes: list[Probe] = []
    answerable: list[tuple[str, int, Any]] = []
    for key in ("questions", "alt_questions_other_student"):
        items = data.get(key, [])
        if not isinstance(items, list):
            raise ValueError(f"{questions}: `{key}` must be a list")
        answerable.extend((key, i, item) for i, item in enumerate(items, start=1))
    for n, (key, i, item) in enumerate(answerable, start=1):
        where = f"`{key}` item {i}"
        question = _text(_field(item, "question", questions, where), questions, where)
        expects = _text(_field(item, "expects", questions, where), questions, f"{where} `expects`")
        probes.append(
            Probe(
                id=f"city-a{n:02d}",
                question=question,
                expected=expected_sections(expects, question, documents),
                kind="answerable",
                answer_contains=(expects,),
            )
        )
    for key, kind, prefix in (
        ("near_miss", "near_miss", "city-n"),
        ("out_of_scope_starter", "out_of_scope", "city-o"),
    ):
        for n, question in enumerate(_strings(data, key, questions), start=1):
            probes.append(Probe(id=f"{prefix}{n:02d}", question=question, kind=kind))
    return probes


def write_probes(probes: Sequence[Probe], path: Path) -> None:
    """Write probes as JSONL in the probe file format, one object a line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(p.to_dict(), ensure_ascii=False) for p in probes]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
