"""Training and evaluation pairs for the reader: (question, context, sentence) -> answers it?

Reads the sets in ../shared in place and writes JSON lines under train/.work/ (never
committed: the text is theirs). Every row is

    {"q": question, "c": context (a title; may be ""), "s": sentence, "y": 0 or 1,
     "set": source, "group": question id (rows of one question stay together)}

Training sets, each with a licence that lets us ship a model derived from it
(../shared/train/PROVENANCE.md, ../shared/bench/MANIFEST.md):

- PolicyQA dev (MIT): the sentence holding the answer span is positive, the other
  sentences of its segment negative; one sentence of another segment of the same
  policy is a synthetic near-miss.
- SelQA answer-sentence dev (Apache-2.0): labelled candidates of one section; one
  sentence of another section of the same article is a synthetic near-miss.
- QNLI dev (from SQuAD, CC BY-SA 4.0): entailment -> positive.
- ClapNQ dev, the half in ../shared/bench/clapnq (Apache-2.0): selected sentences are
  positive, the rest of the passage negative; every sentence of an unanswerable
  question's passage is negative; the answerable passage with its selected sentences
  deleted is the synthetic "answer removed" near-miss (all its rows negative).
- SciFact claims train (CC BY 4.0): rationale sentences positive, the rest of the cited
  abstract negative.

Evaluation-only sets, never trained on: WikiQA dev/test (research-only licence),
TREC CAsT answerability validation/test (no licence stated), SelQA test, PolicyQA test.

    python train/reader_data.py            # writes train/.work/reader/{train,eval_*}.jsonl
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
WORK = ROOT / "train" / ".work" / "reader"
sys.path.insert(0, str(ROOT / "src"))

from groundqa.text import split_sentences  # noqa: E402

Row = dict[str, Any]
MAX_NEGATIVES = 5  # in-passage negatives kept per question (the rest add little but time)
SEED = 13


def _row(q: str, c: str, s: str, y: int, source: str, group: str) -> Row:
    return {"q": q.strip(), "c": c.strip(), "s": s.strip(), "y": y, "set": source, "group": group}


def _sample(items: list[Any], n: int, rng: random.Random) -> list[Any]:
    return items if len(items) <= n else rng.sample(items, n)


def _spans(text: str) -> list[tuple[int, int, str]]:
    """The sentences of `text` with their character offsets."""
    out: list[tuple[int, int, str]] = []
    at = 0
    for s in split_sentences(text):
        start = text.find(s, at)
        if start < 0:
            continue
        out.append((start, start + len(s), s))
        at = start + len(s)
    return out


def policyqa(split: str, rng: random.Random) -> Iterator[Row]:
    data = json.loads((SHARED / "train" / "policyqa" / f"{split}.json").read_text("utf-8"))
    for policy in data["data"]:
        pool = [
            s for para in policy["paragraphs"] for _, _, s in _spans(para["context"]) if len(s) > 20
        ]
        for para in policy["paragraphs"]:
            spans = _spans(para["context"])
            for qa in para["qas"]:
                hit = set()
                for ans in qa["answers"]:
                    a, b = ans["answer_start"], ans["answer_start"] + len(ans["text"])
                    hit |= {i for i, (s, e, _) in enumerate(spans) if s < b and a < e}
                if not hit:
                    continue
                group = f"policyqa-{qa['id']}"
                q = qa["question"]
                for i in hit:
                    yield _row(q, "", spans[i][2], 1, "policyqa", group)
                negatives = [s for i, (_, _, s) in enumerate(spans) if i not in hit]
                for s in _sample(negatives, MAX_NEGATIVES, rng):
                    yield _row(q, "", s, 0, "policyqa", group)
                if split == "dev":
                    own = {s for _, _, s in spans}
                    other = [s for s in pool if s not in own]
                    if other:
                        yield _row(q, "", rng.choice(other), 0, "policyqa-near", group)


def selqa(split: str, rng: random.Random) -> Iterator[Row]:
    data = json.loads((SHARED / "train" / "selqa" / f"selqa-ass-{split}.json").read_text("utf-8"))
    by_article: dict[str, list[tuple[str, str]]] = {}
    for item in data:
        for s in item["candidates"]:
            by_article.setdefault(item["article"], []).append((item["section"], s))
    for n, item in enumerate(data):
        group = f"selqa-{split}-{n}"
        answers = set(item["answers"])
        q, section = item["question"], item["section"]
        negatives = []
        for i, s in enumerate(item["candidates"]):
            if i in answers:
                yield _row(q, section, s, 1, "selqa", group)
            else:
                negatives.append(s)
        if split == "test":  # evaluation keeps every candidate
            for s in negatives:
                yield _row(q, section, s, 0, "selqa", group)
            continue
        for s in _sample(negatives, MAX_NEGATIVES, rng):
            yield _row(q, section, s, 0, "selqa", group)
        other = [(sec, s) for sec, s in by_article[item["article"]] if sec != section]
        if other:
            sec, s = rng.choice(other)
            yield _row(q, sec, s, 0, "selqa-near", group)


def qnli() -> Iterator[Row]:
    path = SHARED / "train" / "qnli" / "dev.tsv"
    with path.open(encoding="utf-8") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        next(reader)
        for row in reader:
            if len(row) != 4:
                continue
            _, q, s, label = row
            yield _row(q, "", s, int(label == "entailment"), "qnli", f"qnli-{q}")


def _clapnq_text(s: str) -> str:
    """ClapNQ's sentences are tokenised ("Stills ' fellow ... ."): undo the common spacing."""
    for a, b in ((" ,", ","), (" .", "."), (" '", "'"), ("`` ", '"'), (" ''", '"'), (" ;", ";")):
        s = s.replace(a, b)
    return s.replace("( ", "(").replace(" )", ")")


def clapnq(rng: random.Random) -> Iterator[Row]:
    folder = SHARED / "bench" / "clapnq"
    for name in ("answerable", "unanswerable"):
        for raw in (folder / f"clapnq_dev_{name}.jsonl").read_text("utf-8").splitlines():
            if not raw.strip():
                continue
            item = json.loads(raw)
            q = item["input"]
            group = f"clapnq-{item['id']}"
            selected = {
                s for out in item.get("output") or [] for s in out.get("selected_sentences") or []
            }
            for passage in item["passages"]:
                title = passage["title"]
                sentences = passage["sentences"]
                if name == "unanswerable" or not selected:
                    for s in _sample(sentences, MAX_NEGATIVES + 1, rng):
                        yield _row(q, title, _clapnq_text(s), 0, "clapnq-unanswerable", group)
                    continue
                for s in sentences:
                    if s in selected:
                        yield _row(q, title, _clapnq_text(s), 1, "clapnq", group)
                rest = [s for s in sentences if s not in selected]
                for s in _sample(rest, MAX_NEGATIVES, rng):
                    yield _row(q, title, _clapnq_text(s), 0, "clapnq-removed", group)


def scifact(rng: random.Random) -> Iterator[Row]:
    folder = SHARED / "bench" / "scifact" / "claims"
    abstracts: dict[int, tuple[str, list[str]]] = {}
    for raw in (folder / "corpus_sentences.jsonl").read_text("utf-8").splitlines():
        if raw.strip():
            d = json.loads(raw)
            abstracts[int(d["doc_id"])] = (d["title"], d["abstract"])
    for raw in (folder / "claims_train.jsonl").read_text("utf-8").splitlines():
        if not raw.strip():
            continue
        claim = json.loads(raw)
        group = f"scifact-{claim['id']}"
        for doc in claim["cited_doc_ids"]:
            if int(doc) not in abstracts:
                continue
            title, sentences = abstracts[int(doc)]
            rationale = {i for ev in claim["evidence"].get(str(doc), []) for i in ev["sentences"]}
            for i in rationale:
                if i < len(sentences):
                    yield _row(claim["claim"], title, sentences[i], 1, "scifact", group)
            rest = [s for i, s in enumerate(sentences) if i not in rationale]
            for s in _sample(rest, 3, rng):
                yield _row(claim["claim"], title, s, 0, "scifact", group)


def wikiqa(split: str) -> Iterator[Row]:
    path = SHARED / "train" / "wikiqa" / f"WikiQA-{split}.tsv.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        lines = f.read().replace("\r", "").splitlines()
    header = lines[0].split("\t")
    for line in lines[1:]:
        d = dict(zip(header, line.split("\t"), strict=False))
        yield _row(
            d["Question"],
            d["DocumentTitle"],
            d["Sentence"],
            int(d["Label"]),
            "wikiqa",
            d["QuestionID"],
        )


def cast(split: str) -> Iterator[Row]:
    """CAsT answerability sentences of one topic split ("train", "validation", "test")."""
    folder = SHARED / "train" / "cast-answerability"
    for sub in ("CAsT-snippets", "CAsT-unanswerable"):
        with (folder / sub / "training_data.csv").open(encoding="utf-8") as f:
            for d in csv.DictReader(f):
                if d["partition"] != split:
                    continue
                q, _, s = d["sentences"].partition(" [SEP] ")
                if s:
                    yield _row(q, "", s, int(float(d["labels"])), "cast", f"cast-{q}")


def _held_out(group: str) -> bool:
    return int(hashlib.sha256(group.encode("utf-8")).hexdigest()[:8], 16) % 10 == 0


def write(path: Path, rows: Iterator[Row] | list[Row]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            if row["q"] and row["s"]:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
                n += 1
    return n


def main() -> int:
    if not (SHARED / "train").is_dir():
        print(f"skipped: {SHARED / 'train'} is missing (the training sets live there)")
        return 0
    rng = random.Random(SEED)
    train: list[Row] = [
        *policyqa("dev", rng),
        *selqa("dev", rng),
        *qnli(),
        *clapnq(rng),
        *scifact(rng),
    ]
    rng.shuffle(train)
    # A tenth of the questions (whole groups) is held out: it picks the decline threshold.
    valid = [r for r in train if _held_out(r["group"])]
    train = [r for r in train if not _held_out(r["group"])]
    print(f"valid: {write(WORK / 'valid.jsonl', valid)} pairs (held out by question)")
    counts: dict[str, list[int]] = {}
    for row in train:
        c = counts.setdefault(row["set"], [0, 0])
        c[row["y"]] += 1
    print(f"train: {write(WORK / 'train.jsonl', train)} pairs")
    for name, (neg, pos) in sorted(counts.items()):
        print(f"  {name:22} {pos:6} positive {neg:6} negative")
    evals = {
        "wikiqa_dev": wikiqa("dev"),
        "wikiqa_test": wikiqa("test"),
        "selqa_test": selqa("test", rng),
        "policyqa_test": policyqa("test", rng),
        "cast_test": cast("test"),
    }
    for name, rows in evals.items():
        print(f"{name}: {write(WORK / f'eval_{name}.jsonl', rows)} pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
