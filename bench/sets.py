"""The data sets the benchmarks read, each in one place: where it lies, the corpus as
groundqa ingests it, and its questions with their labels.

    example corpus   examples/regpack and its probe file (in this repository)
    SciFact          ../shared/bench/scifact, BEIR: corpus.jsonl, queries, qrels
    ObliQA dev       ../shared/bench/obliqa: the regulatory documents, dev questions
    Natech           ../shared/corpora/natech: guidance.csv, the seed probes.json
    city guides      ../shared/corpora/city_guides: the guides, our probe file and the
                     seed questions.json
    ClapNQ           ../shared/bench/clapnq: the shared half's passages and questions
    real documents   ../shared/corpora/real_docs and the held-out manuals Debian installs

A set that is not here is None (or left out of `corpora`), with a message on stderr, so
a benchmark reports what it could measure. Nothing here is copied into the project: each
set is read in place, and converted at run time (`seeds` for the seed question files).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import ROOT, WORK, shared_path
from groundqa.evaluate import load_probes
from groundqa.evaluate.probes import Probe

REGPACK = ROOT / "examples" / "regpack"
REGPACK_PROBES = ROOT / "examples" / "regpack.probes.jsonl"
CITY_PROBES = ROOT / "bench" / "city_guides.probes.jsonl"
# Where the ClapNQ passages are written as one BEIR corpus (the gate benchmark's place,
# kept so that builds made over it before are reused).
CLAPNQ_WORK = WORK / "gate" / "clapnq"

# name -> (sources, format, questions): what `ingest` reads and what is asked of it.
Corpora = dict[str, tuple[list[Path], str, list[Probe]]]


def scifact(split: str = "test") -> Any:
    """SciFact's `split` as a `BeirSet` (corpus path, queries, qrels), or None."""
    folder = shared_path("bench", "scifact")
    if folder is None:
        return None
    from groundqa.evaluate.beir import load_beir_set

    return load_beir_set(folder, split)


def scifact_probes(test: Any) -> list[Probe]:
    """A BEIR set's judged queries as answerable probes, in query id order."""
    return [
        Probe(
            id=qid,
            question=text,
            expected=tuple(d for d, g in test.qrels.get(qid, {}).items() if g > 0),
            kind="answerable",
        )
        for qid, text in sorted(test.queries.items())
        if test.qrels.get(qid)
    ]


@dataclass(frozen=True)
class ObliQA:
    """ObliQA dev: the regulatory documents and the dev questions, each with its gold
    passages as BEIR-style qrels (`DocumentID:PassageID`)."""

    folder: Path
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]

    @property
    def documents(self) -> Path:
        return self.folder / "StructuredRegulatoryDocuments"

    def probes(self) -> list[Probe]:
        """The dev questions as answerable probes, in question id order."""
        return [
            Probe(
                id=qid,
                question=self.queries[qid],
                expected=tuple(self.qrels[qid]),
                kind="answerable",
            )
            for qid in sorted(self.queries)
        ]


def obliqa() -> ObliQA | None:
    folder = shared_path("bench", "obliqa")
    if folder is None:
        return None
    dev = json.loads((folder / "ObliQA_dev.json").read_text(encoding="utf-8"))
    queries = {q["QuestionID"]: q["Question"] for q in dev}
    qrels = {
        q["QuestionID"]: {f"{p['DocumentID']}:{p['PassageID']}": 1 for p in q["Passages"]}
        for q in dev
    }
    return ObliQA(folder, queries, qrels)


def natech() -> tuple[Path, list[Probe]] | None:
    """Natech's guidance.csv and its seed probes (answerable, chapters as section ids)."""
    csv = shared_path("corpora", "natech", "guidance.csv")
    probes = shared_path("corpora", "natech", "probes.json")
    if csv is None or probes is None:
        return None
    from seeds import natech_probes

    return csv, natech_probes(probes)


def city_guides() -> tuple[Path, list[Probe], list[Probe]] | None:
    """The guides folder, our probe file's probes, and the seed questions as probes."""
    guides = shared_path("corpora", "city_guides")
    if guides is None:
        return None
    from seeds import city_guides_probes

    own = load_probes(CITY_PROBES)
    return guides, own, city_guides_probes(guides / "questions.json", guides)


def clapnq_corpus(folder: Path, work: Path = CLAPNQ_WORK) -> tuple[Path, list[Probe]]:
    """A ClapNQ half (`folder`) as corpus.jsonl under `work` (one line per distinct
    passage) and its questions: answerable with their passages, unanswerable as near
    misses. The file is rewritten only when its text changes, so builds over it stay."""
    lines: dict[str, str] = {}
    probes: list[Probe] = []
    for name, kind in (("answerable", "answerable"), ("unanswerable", "near_miss")):
        path = folder / f"clapnq_dev_{name}.jsonl"
        for raw in path.read_text(encoding="utf-8").splitlines():
            if not raw.strip():
                continue
            item = json.loads(raw)
            ids = []
            for passage in item["passages"]:
                key = f"{passage['title']}\n{passage['text']}"
                pid = "clapnq-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
                record = {"_id": pid, "title": passage["title"], "text": passage["text"]}
                lines.setdefault(pid, json.dumps(record, ensure_ascii=False))
                ids.append(pid)
            probes.append(
                Probe(
                    id=f"clapnq-{item['id']}",
                    question=item["input"],
                    expected=tuple(ids) if kind == "answerable" else (),
                    kind=kind,
                )
            )
    corpus = work / "corpus.jsonl"
    text = "".join(line + "\n" for line in lines.values())
    if not corpus.is_file() or corpus.read_text(encoding="utf-8") != text:
        corpus.parent.mkdir(parents=True, exist_ok=True)
        corpus.write_text(text, encoding="utf-8")
    return corpus, probes


def clapnq() -> tuple[Path, list[Probe]] | None:
    """The shared half of ClapNQ (see `clapnq_corpus`), or None."""
    folder = shared_path("bench", "clapnq")
    return None if folder is None else clapnq_corpus(folder)


def corpora() -> Corpora:
    """name -> (sources, format, real questions), for each corpus with real questions
    whose data is here: the example corpus, the city guides (our probes and the seed
    questions), Natech, ObliQA dev and ClapNQ's shared half."""
    out: Corpora = {"example corpus": ([REGPACK], "auto", load_probes(REGPACK_PROBES))}
    if (guides := city_guides()) is not None:
        folder, own, seeds = guides
        out["city guides"] = ([folder], "auto", own + seeds)
    if (nt := natech()) is not None:
        csv, probes = nt
        out["Natech"] = ([csv], "auto", probes)
    if (ob := obliqa()) is not None:
        out["ObliQA dev"] = ([ob.documents], "obliqa", ob.probes())
    if (cq := clapnq()) is not None:
        corpus, probes = cq
        out["ClapNQ shared half"] = ([corpus], "beir", probes)
    return out


def real_documents() -> Corpora:
    """The real documents in ../shared with their questions, and the held-out manuals
    that Debian packages install (`real_docs.HELD_OUT_FILES`) with theirs: name ->
    (the files, format, questions), for those that are here."""
    from real_docs import HELD_OUT_FILES, HELD_OUT_PROBES, PROBES, load_real_probes

    out: Corpora = {}
    folder = shared_path("corpora", "real_docs")
    held = [p for p in HELD_OUT_FILES if p.exists()]
    for name, files, path in (
        ("real documents", sorted(folder.iterdir()) if folder else [], PROBES),
        ("real documents, held out", held, HELD_OUT_PROBES),
    ):
        names = {f.name for f in files}
        probes = [
            Probe(id=p.id, question=p.question, kind="answerable", answer_contains=(p.answer,))
            for p in load_real_probes(path)
            if p.doc in names
        ]
        if probes:
            out[name] = (
                [f for f in files if f.name in {p.doc for p in load_real_probes(path)}],
                "auto",
                probes,
            )
    return out
