"""The OCR word-accuracy measure, and the reference it is measured against.

The reference is a transcription made by hand of one scanned page of a document in
../shared, whose text must not be copied into this repository. So only a hash of each
of its words is kept (`bench/real_docs.ocr_reference.json`): a word is lower-cased with
its punctuation dropped ("5(4)" is "54") and stored as the first 12 hex digits of its
sha256. The OCR text is hashed the same way, and the word error rate is the word-level
Levenshtein distance between the two sequences over the reference's length, which is
what it would be on the words themselves.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

_NOT_WORD = re.compile(r"[^\w\s]")


def words(text: str) -> list[str]:
    """The words of `text` as compared: lower case, punctuation dropped."""
    cleaned = (_NOT_WORD.sub("", word) for word in text.casefold().split())
    return [w for w in cleaned if w]


def word_hashes(text: str) -> list[str]:
    return [hashlib.sha256(w.encode("utf-8")).hexdigest()[:12] for w in words(text)]


def edit_distance(reference: Sequence[str], hypothesis: Sequence[str]) -> int:
    """Levenshtein distance over words: substitutions, insertions and deletions."""
    previous = list(range(len(hypothesis) + 1))
    for i, ref in enumerate(reference, 1):
        current = [i]
        for j, hyp in enumerate(hypothesis, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ref != hyp)))
        previous = current
    return previous[-1]


def word_accuracy(reference: Sequence[str], hypothesis: str) -> float:
    """1 - word error rate of the text `hypothesis` against the hashed `reference`
    (below 0 when it adds many words)."""
    if not reference:
        raise ValueError("the reference has no words")
    return 1 - edit_distance(reference, word_hashes(hypothesis)) / len(reference)


def bag_accuracy(reference: Sequence[str], hypothesis: str) -> float:
    """The share of the reference's words found in `hypothesis` in any order (a word as
    often as the reference has it): reading errors without reading-order errors."""
    ref = Counter(reference)
    found = ref & Counter(word_hashes(hypothesis))
    return sum(found.values()) / sum(ref.values())


def load_reference(path: Path) -> tuple[str, int, list[str]] | None:
    """(document file name, page, word hashes) of a reference, or None without one."""
    if not path.exists():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return str(data["doc"]), int(data["page"]), [str(h) for h in data["word_sha256_12"]]
