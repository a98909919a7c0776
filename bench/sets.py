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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import ROOT, WORK, shared_path
from groundqa.engine import Engine
from groundqa.evaluate import load_probes
from groundqa.evaluate.probes import Probe
from groundqa.ingestion import ingest

# The default builds of the shared sets (SciFact, ObliQA dev and others), kept between runs
# outside WORK, which bench/retrieval.py clears: an unchanged corpus is not embedded
# again, and a build's own timings come from its manifest.
BUILDS = WORK.parent / ".work-dense"
REGPACK = ROOT / "examples" / "regpack"
REGPACK_PROBES = ROOT / "examples" / "regpack.probes.jsonl"
CITY_PROBES = ROOT / "bench" / "city_guides.probes.jsonl"
# The default builds the gate benchmarks read (bench/gate.py, bench/default_training.py),
# and where the ClapNQ passages are written as one BEIR corpus, so that builds made over
# it before are reused.
GATE_BUILDS = WORK / "gate"
CLAPNQ_WORK = GATE_BUILDS / "clapnq"
# The real documents' labelled questions (bench/real_docs.py says how they are scored).
REAL_PROBES = ROOT / "bench" / "real_docs.probes.jsonl"
# Questions on documents that Debian packages install, read where the packages put them
# (each file skipped where it is not installed): the held-out check of REAL_PROBES's figures.
# - Two PDF manuals (12 questions, ids mime-*, asn1-*): written after the loader's rules
#   and changed none of them. The manuals were looked at before: libtasn1's, which the
#   real-documents issue names, led to the outline-title matching and one rule of the
#   heading finder; shared-mime-info's to none.
# - Two HTML pages (16 questions, ids passwd-*, pypolicy-*): written by someone who saw
#   neither the loaders' and the reader's rules nor any other question set, after the
#   reader's fact-kind and document-name rules were fixed (commit 10c1ca8), and first
#   run at 4a28244. One reader rule changed after that (e5da96f: a definition is ranked
#   first but no longer counts for the gate), for the gate's false refusals on ClapNQ,
#   not for these questions; nothing was changed for their results.
HELD_OUT_PROBES = ROOT / "bench" / "real_docs.heldout.jsonl"
HELD_OUT_FILES = (
    Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"),
    Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf"),
    Path("/usr/share/doc/base-passwd/users-and-groups.html"),
    Path("/usr/share/doc/python3/python-policy.html"),
)
REAL_KINDS = ("text", "table", "ocr")
DOC_FORMATS = {".pdf": "pdf", ".html": "html", ".htm": "html", ".docx": "docx"}

# name -> (sources, format, questions): what `ingest` reads and what is asked of it.
Corpora = dict[str, tuple[list[Path], str, list[Probe]]]


def build(sources: Sequence[Path], name: str, fmt: str = "auto", reader: str = "model") -> Engine:
    """The default build (BM25 and MiniLM vectors) of `sources` under GATE_BUILDS, read
    with the answer model unless `reader` says otherwise; ingest skips a corpus that has
    not changed."""
    index = GATE_BUILDS / name
    ingest(list(sources), index, fmt=fmt)
    return Engine.open(index, reader=reader)


def scifact(split: str = "test") -> Any:
    """SciFact's `split` as a `BeirSet` (corpus path, queries, qrels), or None."""
    folder = shared_path("bench", "scifact")
    if folder is None:
        return None
    from groundqa.evaluate.beir import load_beir_set

    return load_beir_set(folder, split)


def scifact_claims(split: str = "train") -> tuple[dict[str, dict[str, Any]], list[Any]] | None:
    """SciFact's abstracts by id and the claims of `split` (claims/claims_<split>.jsonl,
    each with the abstracts it cites and their evidence), or None."""
    folder = shared_path("bench", "scifact")
    if folder is None:
        return None
    corpus: dict[str, dict[str, Any]] = {}
    with (folder / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            corpus[str(doc["_id"])] = doc
    claims = (folder / "claims" / f"claims_{split}.jsonl").read_text(encoding="utf-8")
    return corpus, [json.loads(line) for line in claims.splitlines() if line.strip()]


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


@dataclass(frozen=True)
class RealProbe:
    """One labelled question: where its answer is and a string a right answer holds."""

    id: str
    doc: str
    question: str
    page: int | None
    section: str
    answer: str
    kind: str

    @property
    def format(self) -> str:
        return doc_format(self.doc)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RealProbe:
        """A probe from one JSON line; ValueError naming the field that is wrong."""
        for key in ("id", "doc", "question", "section", "answer"):
            if not isinstance(d.get(key), str) or not d[key].strip():
                raise ValueError(f"`{key}` must be a non-empty string")
        if d.get("kind") not in REAL_KINDS:
            raise ValueError(
                f"`kind` must be one of {', '.join(REAL_KINDS)}, got {d.get('kind')!r}"
            )
        page = d.get("page")
        paged = doc_format(d["doc"]) == "pdf"
        if paged and (not isinstance(page, int) or isinstance(page, bool) or page < 1):
            raise ValueError("`page` must be the 1-based physical page for a PDF")
        if not paged and page is not None:
            raise ValueError("`page` must be null for a document without pages")
        return cls(d["id"], d["doc"], d["question"], page, d["section"], d["answer"], d["kind"])


def load_real_probes(path: Path = REAL_PROBES) -> list[RealProbe]:
    """Every probe in `path`; ValueError naming the line of a malformed one or a repeated id."""
    probes: list[RealProbe] = []
    seen: set[str] = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip():
            continue
        try:
            probe = RealProbe.from_dict(json.loads(line))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path.name}:{n}: {exc}") from None
        if probe.id in seen:
            raise ValueError(f"{path.name}:{n}: id {probe.id!r} is used twice")
        seen.add(probe.id)
        probes.append(probe)
    return probes


def doc_format(name: str) -> str:
    return DOC_FORMATS.get(Path(name).suffix.lower(), "other")


def built_corpora() -> dict[str, tuple[str, list[Path], str, list[Probe]]]:
    """name -> (the build's name under BUILDS, sources, format, answerable questions), for
    each corpus with real questions (`corpora`) and SciFact test.

    The build names are `bench/dense.py`'s where it builds the same corpus, so its
    vectors are reused rather than embedded again."""
    index_names = {
        "example corpus": "regpack",
        "city guides": "city_guides",
        "Natech": "natech",
        "ObliQA dev": "obliqa",
        "ClapNQ shared half": "clapnq",
    }
    out = {
        name: (index_names[name], sources, fmt, [p for p in probes if p.answerable])
        for name, (sources, fmt, probes) in corpora().items()
    }
    if (test := scifact("test")) is not None:
        out["SciFact test"] = ("scifact", [test.corpus], "beir", scifact_probes(test))
    return out


def real_documents() -> Corpora:
    """The real documents in ../shared with their questions, and the held-out manuals
    that Debian packages install (HELD_OUT_FILES) with theirs: name -> (the files,
    format, questions), for those that are here."""
    out: Corpora = {}
    folder = shared_path("corpora", "real_docs")
    held = [p for p in HELD_OUT_FILES if p.exists()]
    for name, files, path in (
        ("real documents", sorted(folder.iterdir()) if folder else [], REAL_PROBES),
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
