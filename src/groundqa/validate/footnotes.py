"""Footnote and citation numbers welded onto the word before them, as text extraction
leaves them ("(2012/18/EC)1", "ISO-310002", "situations3"): found by four rules, each
narrow enough that unit, gene and product names stay out, and a fourth kind (an
acronym glued to a number) only where it continues a footnote sequence already found.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# After the marker digits: end, whitespace, or closing punctuation that is not glued
# to more word characters ("20,000", "allele1:allele2" and "suppressor1-2" stay out).
_AFTER = r"(?=\Z|\s|[.,;:!?)\]\"'”’](?!\w))"
# The marker: a footnote number, or a citation list or range ("6,7", "1–4").
_NUMBER = r"(?P<n>[1-9]\d?(?:[,–][1-9]\d?(?!\d))*)"

# (a) A standard number one digit too long. ISO, IEC and EN numbers have at most
# five digits (ISO 31000, ISO/IEC 27001, EN 62305), so digits past the fifth are a
# marker: `ISO-310002` is ISO 31000 with footnote 2.
_STANDARD = re.compile(
    r"(?<![\w/])(?:ISO|IEC|EN|BS|DIN|CEN|CENELEC)(?:/(?:ISO|IEC|EN|ASTM))?[ \-‐]?\d{5}"
    r"(?P<n>[1-9]\d?)(?!\d)" + _AFTER
)
# (b) A closing parenthesis glued to a number, when the parenthesis holds a legal act
# number or a year: `(2012/18/EC)1`, `(Smith, 2012)3`. Gene and unit notation glues
# digits to parentheses too, `(MMP)2`, `(CAG)20`, `Article 3(1)`, but never to those.
_REFERENCE = re.compile(
    r"\([^()\n]{0,60}?(?:(?<![\w/])\d{2,4}/\d{1,4}(?:/[A-Z]{2,5})?|(?<!\w)(?:1[6-9]|20)\d\d[a-z]?)"
    r"\)" + _NUMBER + _AFTER
)
# (c) A lower-case word of five or more letters glued to a number: `situations3`.
# Four letters or fewer is where unit and gene symbols live (m2, km2, x2, disc1,
# polo1, sox2); capitalised and mixed-case tokens are names (Tier2, Scope1, CO2,
# PM10, MP3, ABC123). The word must also read as prose: see `FootnoteVocabulary`.
_WORD_MARKER = re.compile(r"(?<![\w.:\-/\\@])(?P<stem>[a-z]{5,})" + _NUMBER + _AFTER)
# (d) An acronym-like name (two capitals or more) glued to a number: `RAPID-N4`,
# `(eNATECH5)`. Never evidence on its own, only as the next number of a footnote
# sequence (`continue_footnote_sequence`). Title-case words glued to a number are
# category labels far more often than footnotes (Tier4, Scope3, Phase2), so never.
_NAME_MARKER = re.compile(
    r"(?<![\w.\-/\\@])(?P<stem>[A-Za-z][A-Za-z\-]{2,}[A-Za-z])" + _NUMBER + _AFTER
)

# Subunit and allele names glue a number to a Greek letter (alpha1, epsilon4, sigma1);
# only names of five letters or more can reach rule (c).
_GREEK = frozenset(
    {"alpha", "gamma", "delta", "epsilon", "theta", "kappa", "lambda", "sigma", "omega"}
    | {"omicron", "upsilon"}
)
# Cheap pre-scans: a letter glued to a digit (found digit-first, which the regex
# engine can skip to), a parenthesis glued to one, and a run of six digits.
_GLUE = re.compile(r"[1-9](?<=[a-z][1-9])")
_PAREN_GLUE = re.compile(r"\)[1-9]")
_LONG_NUMBER = re.compile(r"\d(?<=\d{6})")
_EDGE_PUNCTUATION = "\"'“”‘’()[]{}<>.,;:!?*"
_NUMBERED_TOKEN = re.compile(r"([a-z]{5,})[\-‐–]\d")


@dataclass(frozen=True)
class Marker:
    """A footnote or citation number welded onto the token before it.

    `start:end` is the marker digits; `token_start` is where the token it is welded
    to begins; `first`/`last` are its numbers (equal unless it is a list or range).
    """

    start: int
    end: int
    token_start: int
    first: int
    last: int
    rule: str

    def token(self, text: str) -> str:
        return text[self.token_start : self.end]


def _numbers(marker: str) -> tuple[int, int]:
    parts = [int(p) for p in re.split(r"[,–]", marker)]
    return parts[0], parts[-1]


def _marker(m: re.Match[str], rule: str) -> Marker:
    first, last = _numbers(m.group("n"))
    return Marker(m.start("n"), m.end("n"), m.start(), first, last, rule)


class FootnoteVocabulary:
    """How a corpus uses the words that carry a candidate marker (rule (c)).

    `situations3` is a welded marker when the corpus also uses `situations` as a
    word, uses `situations3` only this once (a name recurs; a footnote number is
    used once), and never writes `situations 3` or `situations-3` (which would
    make the number part of a name, as in `caspase-3` beside `caspase3`).
    The counts are taken on first use, so a corpus with no candidate pays nothing.
    """

    def __init__(self, texts: Iterable[str]) -> None:
        self._texts = list(texts)
        self._words: Counter[str] | None = None
        self._numbered: set[str] = set()

    def _build(self) -> Counter[str]:
        tokens = "\n".join(self._texts).lower().split()
        counts = Counter(tokens)
        words: Counter[str] = Counter()
        numbers = set()
        for token, n in counts.items():
            words[token.strip(_EDGE_PUNCTUATION)] += n
            if token[:1].isdigit():
                numbers.add(token)
            elif m := _NUMBERED_TOKEN.match(token.lstrip(_EDGE_PUNCTUATION)):
                self._numbered.add(m.group(1))  # caspase-3
        before_number = {a for a, b in itertools.pairwise(tokens) if b in numbers}
        self._numbered.update(t.strip(_EDGE_PUNCTUATION) for t in before_number)  # caspase 3
        self._words = words
        return words

    def is_prose_marker(self, stem: str, number: int) -> bool:
        words = self._words if self._words is not None else self._build()
        return (
            stem not in _GREEK
            and words[stem] >= 1
            and words[f"{stem}{number}"] <= 1
            and stem not in self._numbered
        )


def welded_markers(text: str, vocabulary: FootnoteVocabulary | None = None) -> list[Marker]:
    """Footnote markers welded onto a token in `text`, in order. The rules:

    (a) a standard number one digit too long: ISO, IEC and EN numbers have at most
        five digits, so `ISO-310002` is ISO 31000 + marker 2 (`ISO 31000`,
        `ISO/IEC 27001`, `EN 62305` are not);
    (b) a closing parenthesis around a legal act number or a year, glued to 1-2
        digits: `(2012/18/EC)1` (`(2012/18/EU) `, `Article 3(1)`, `(MMP)2` are not);
    (c) a lower-case word of at least five letters glued to 1-2 digits, such as
        `situations3`, when `vocabulary` shows the word is prose: the bare word occurs
        in the corpus, this glued form occurs once, the word is never written with
        a separate number, and it is not a Greek letter (`alpha1`). Shorter words
        and capitalised tokens are units, chemicals, genes and names (`m2`, `km2`,
        `CO2`, `PM10`, `Tier2`, `Scope1`, `MP3`, `disc1`).

    In every rule the digits must end the token: followed by whitespace, the end, or
    closing punctuation not glued to more text, so `20,000`, `allele1:allele2`,
    `COVID-19`, `PM2.5`, `sha256` and `4.6.1.1` stay out. A marker may be a citation
    list or range (`fetus6,7`, `acids1–4`). Without a vocabulary, `text` alone is the
    corpus.
    """
    vocab = vocabulary if vocabulary is not None else FootnoteVocabulary([text])
    found: list[Marker] = []
    if _LONG_NUMBER.search(text):
        found += [_marker(m, "standard-number") for m in _STANDARD.finditer(text)]
    if _PAREN_GLUE.search(text):
        found += [_marker(m, "reference") for m in _REFERENCE.finditer(text)]
    for glue in _GLUE.finditer(text):
        start = glue.start()
        while start > 0 and "a" <= text[start - 1] <= "z":
            start -= 1
        m = _WORD_MARKER.match(text, start)
        if m is not None and m.start("n") == glue.start():
            marker = _marker(m, "word")
            if vocab.is_prose_marker(m.group("stem"), marker.first):
                found.append(marker)
    return sorted(found, key=lambda mk: mk.start)


def continue_footnote_sequence(
    texts: Sequence[str], markers: Sequence[Sequence[Marker]]
) -> list[list[Marker]]:
    """Markers on names (`RAPID-N4`, `(eNATECH5)`) that continue a proven footnote sequence.

    `texts` are one source's texts in reading order and `markers` what
    `welded_markers` found in each. A name glued to a number is no evidence on its
    own (`CO2`, `MP3`, `ABC123`), but when the source's markers read exactly 1, 2,
    ..., k in order (k >= 2: the source runs one footnote sequence), a name with two
    or more capitals glued to exactly k+1 after marker k is footnote k+1, and so on.
    Title-case labels (`Tier4`, `Scope4`) never count. Sources whose markers do not
    form that sequence, such as a file of independent BEIR abstracts, get nothing.
    Returns the new markers per text.
    """
    extra: list[list[Marker]] = [[] for _ in texts]
    ordered = [(i, mk) for i, ms in enumerate(markers) for mk in ms]
    if len(ordered) < 2:
        return extra
    expected = 1
    for _, mk in ordered:
        if mk.first != expected:
            return extra
        expected = mk.last + 1
    last_text, last_marker = ordered[-1]
    for i in range(last_text, len(texts)):
        for m in _NAME_MARKER.finditer(texts[i]):
            if sum(c.isupper() for c in m.group("stem")) < 2:
                continue
            mk = _marker(m, "sequence")
            if i == last_text and mk.start <= last_marker.start:
                continue
            if mk.first != expected:
                continue
            extra[i].append(mk)
            expected = mk.last + 1
    return extra
