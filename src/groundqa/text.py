"""Text primitives shared by chunking, indexing, the gate and the extractive answerer.

Paragraph and sentence splitting are conservative: a boundary is only placed where
a reader would agree a sentence ends, so that chunking can promise never to cut
mid-sentence. Abbreviations, decimals and clause numbers ("s. 3.2", "e.g.", "1.5 ha")
do not end sentences.

The `Analyzer` is the one place that turns text into index terms (lower-case,
English stopwords removed, British spellings read as American, Snowball stems), so
the lexical index, the gate's coverage feature and the answerer's sentence scoring
all agree on what a term is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from groundqa.errors import IndexVersionError
from groundqa.spelling import american

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n+")

# Words after which a full stop does not end a sentence.
_ABBREVIATIONS = frozenset(
    [
        "e.g",
        "i.e",
        "etc",
        "vs",
        "cf",
        "al",
        "approx",
        "incl",
        "esp",
        "fig",
        "figs",
        "no",
        "nos",
        "p",
        "pp",
        "para",
        "paras",
        "s",
        "ss",
        "cl",
        "cll",
        "reg",
        "regs",
        "sch",
        "art",
        "arts",
        "ch",
        "chap",
        "sec",
        "secs",
        "vol",
        "vols",
        "ed",
        "eds",
        "dr",
        "mr",
        "mrs",
        "ms",
        "st",
        "mt",
        "ft",
        "jr",
        "sr",
        "co",
        "corp",
        "inc",
        "ltd",
        "dept",
        "est",
        "min",
        "max",
        "ca",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "mon",
        "tue",
        "wed",
        "thu",
        "fri",
        "sat",
        "sun",
        "a.m",
        "p.m",
        "u.s",
        "u.k",
        "u.a.e",
    ]
)

# A candidate boundary: terminal punctuation, optional closing quotes/brackets, then space.
_CANDIDATE = re.compile(r"[.!?][\"'”’)\]]*(?=\s+)")
_NEXT_STARTS_SENTENCE = re.compile(r"\s+[\"'“‘(\[]?[A-Z0-9§#*•\-–(]")
# Where a new unit starts whatever the punctuation: a blank line (a paragraph break, or
# a table row or heading that ends without a full stop), or a list item or heading line.
_LIST_LINE = re.compile(r"\n[ \t]*\n\s*|\n(?=[ \t]*(?:[-*•]|\(?[a-z0-9]{1,3}[.)]|#{1,6}\s))")
_TOKEN = re.compile(r"(?u)\b\w\w+\b")

SENTENCE_END = re.compile(r"[.!?:;][\"'”’)\]]*\s*$")


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """`text` with every half of a surrogate pair (which no UTF-8 text can hold) replaced.

    Python writes the bytes of a command-line argument that are not UTF-8 as such
    halves (`ask $'fire \\xff danger'`), and a JSON escape can write one too. Those
    bytes are decoded again, so that a valid character split by the escape comes back,
    and what is still not text becomes U+FFFD, as any other broken character would.
    """
    if not _LONE_SURROGATE.search(text):
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a half that is no escaped byte (a JSON "\\ud800")
        return _LONE_SURROGATE.sub("\ufffd", text)


def split_paragraphs(text: str) -> list[str]:
    """Blocks separated by blank lines, stripped, empty ones dropped."""
    return [p.strip() for p in _PARAGRAPH_BREAK.split(text) if p.strip()]


# Characters before a full stop searched for the word it ends.
_WORD_WINDOW = 200


def _ends_with_abbreviation(before: str) -> bool:
    word = before.rsplit(None, 1)[-1] if before.strip() else ""
    word = word.lstrip("(\"'“‘[").rstrip(".").lower()
    if not word:
        return False
    if word in _ABBREVIATIONS:
        return True
    # Single letters ("J. Smith", "s.") and clause numbers ("3.2.") are not sentence ends.
    return len(word) == 1 or bool(re.fullmatch(r"[\d.]+", word) and "." in word)


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph or passage, in order, whitespace-trimmed.

    Lines that start list items or headings begin a new unit too, since a list
    item ending in ';' reads as a clause of its own, and so does every paragraph: a
    blank line ends a sentence even where no full stop does (a heading, a table row).
    """
    sentences: list[str] = []
    for block in _LIST_LINE.split(text):
        start = 0
        for m in _CANDIDATE.finditer(block):
            end = m.end()
            if not _NEXT_STARTS_SENTENCE.match(block, end):
                continue
            # Only the word before the stop matters: a window, not the whole sentence so
            # far, or a long run of abbreviations costs time quadratic in its length.
            before = block[max(start, m.start() - _WORD_WINDOW) : m.start()]
            if block[m.start()] == "." and _ends_with_abbreviation(before):
                continue
            piece = block[start:end].strip()
            if piece:
                sentences.append(piece)
            start = end
        tail = block[start:].strip()
        if tail:
            sentences.append(tail)
    return sentences


# A passage's first line, when it stands as the passage's title: a short line that ends
# no sentence and holds no label (`Hours: 9 to 5`), above a line that starts one.
_FIRST_LINE = re.compile(r"\A[ \t]*([^\n]+?)[ \t]*\n\s*(?=[\"'“‘(\[]?[A-Z0-9])")
TITLE_WORDS = 12


def leading_title(text: str) -> str | None:
    """The passage's first line, whitespace folded, when it reads as its title ("Opening
    hours" above "The museum opens at nine."); None otherwise. Such a line ends no
    sentence, so `split_sentences` keeps it joined to the sentence below it."""
    m = _FIRST_LINE.match(text)
    if m is None:
        return None
    line = " ".join(m.group(1).split())
    words = line.split()
    if ends_sentence(line) or len(words) > TITLE_WORDS or re.search(r"[:;,\-–]$|[:;]", line):
        return None
    # A line of prose wrapped before its end ("issued by the" above "Council each year.")
    # most often stops on a function word; a title seldom does.
    if words[-1].lower() in _function_words()[0]:
        return None
    return line


def ends_sentence(text: str) -> bool:
    """True when `text` ends where a sentence (or a list clause) can end."""
    return bool(SENTENCE_END.search(text.rstrip())) or text.rstrip().endswith(("```", "|"))


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


_WORD = re.compile(r"[^\W\d_]+")
# Languages whose function words bm25s ships, besides English's.
_OTHER_LANGUAGES = (
    "DANISH",
    "DUTCH",
    "FRENCH",
    "GERMAN",
    "ITALIAN",
    "NORWEGIAN",
    "PORTUGUESE",
    "RUSSIAN",
    "SPANISH",
    "SWEDISH",
    "TURKISH",
)
# The last letter of the Latin scripts (Latin Extended-B); past it, another script.
_LATIN_END = 0x024F


@lru_cache(maxsize=1)
def _function_words() -> tuple[frozenset[str], frozenset[str]]:
    """English function words, and other languages' that are not also English words."""
    import bm25s.stopwords as lists

    english = frozenset(lists.STOPWORDS_EN_PLUS)
    other = {w for name in _OTHER_LANGUAGES for w in getattr(lists, f"STOPWORDS_{name}")}
    return english, frozenset(other - english)


def reads_as_english(text: str) -> bool:
    """Whether `text` reads as English: False only on evidence of another language, that
    is when most of its letters are of another script, or when at least two of its words
    are another language's function words ("der", "les", "una") and they outnumber the
    English ones ("the", "of", "is"). Text with no such evidence reads as English: a
    short question, or a passage of names and figures, lacks function words in any
    language, so their absence says nothing."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return True
    if sum(ord(c) > _LATIN_END for c in letters) > len(letters) / 2:
        return False
    english, other = _function_words()
    words = _WORD.findall(text.lower())
    theirs = sum(w in other for w in words)
    return theirs < 2 or theirs <= sum(w in english for w in words)


# Words that shape a question but say nothing about its topic. The index keeps them
# (they cost little in BM25); coverage measures ignore them, since an unseen "what"
# in a small corpus would otherwise read as a topic the corpus lacks.
QUESTION_WORDS = frozenset(
    [
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "how",
        "do",
        "does",
        "did",
        "can",
        "could",
        "should",
        "would",
        "shall",
        "may",
        "might",
        "must",
        "will",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "has",
        "have",
        "had",
        "i",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "there",
        "here",
        "any",
        "some",
        "much",
        "many",
        "get",
        "got",
        "need",
        "needs",
        "tell",
        "know",
        "please",
        "about",
        "also",
        "ever",
        "still",
        "thing",
        "things",
        "way",
        "someone",
        "anyone",
        "one",
        "ones",
    ]
)


# Every analyzer an index may have been built with, oldest first. An index records its
# analyzer's name and is always read with that one, so a build made before a newer
# analyzer keeps answering exactly as it did until it is rebuilt.
#   en-snowball-v1   lower-case, English stopwords out, Snowball stems
#   en-snowball-v2   the same, with British and Commonwealth spellings read as American
#                    first (`groundqa.spelling`): "offence" and "offense" are one term
ANALYZERS = ("en-snowball-v1", "en-snowball-v2")
DEFAULT_ANALYZER = ANALYZERS[-1]


class Analyzer:
    """Lower-case, split on word characters, drop English stopwords, Snowball-stem.

    `name` is one of `ANALYZERS`; one that is not (an index from a newer groundqa)
    is an IndexVersionError. Stems are cached per surface form: corpora repeat words
    far more than they introduce them, which makes stemming a small share of
    indexing time. The cache is bounded: a server's questions can bring new words
    without end, so past `CACHE_WORDS` entries it starts again empty.
    """

    CACHE_WORDS = 200_000

    def __init__(self, name: str = DEFAULT_ANALYZER) -> None:
        import Stemmer

        if name not in ANALYZERS:
            raise IndexVersionError(
                f"the index's terms were made by the {name!r} analyzer, which this groundqa "
                f"does not have ({', '.join(ANALYZERS)}); rebuild the index with "
                "`groundqa ingest`, or upgrade groundqa"
            )
        self.name = name
        self._fold = name != "en-snowball-v1"
        self._stemmer = Stemmer.Stemmer("english")
        self._stop = _stopwords()
        self._cache: dict[str, str] = {}

    def _stem(self, word: str) -> str:
        stem = self._cache.get(word)
        if stem is None:
            stem = self._stemmer.stemWord(american(word) if self._fold else word)
            if len(self._cache) >= self.CACHE_WORDS:
                self._cache.clear()
            self._cache[word] = stem
        return stem

    def terms(self, text: str) -> list[str]:
        stop = self._stop
        return [self._stem(w) for w in _TOKEN.findall(text.lower()) if w not in stop]

    def term_set(self, text: str) -> set[str]:
        return set(self.terms(text))

    def query_terms(self, question: str) -> list[str]:
        """Distinct topic terms of a question, in order: index terms less question words."""
        stop = self._stop
        seen: dict[str, None] = {}
        for w in _TOKEN.findall(question.lower()):
            if w in stop or w in QUESTION_WORDS:
                continue
            seen.setdefault(self._stem(w), None)
        return list(seen)

    def many(self, texts: Iterable[str]) -> list[list[str]]:
        return [self.terms(t) for t in texts]


def shorten(text: str, limit: int = 240) -> str:
    """One line of at most `limit` characters, cut at a word boundary."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1].rsplit(" ", 1)[0]
    return cut + "…"


class PassageTerms:
    """Term sets of passages and of their sentences, cached by passage id.

    The gate and the extractive answerer look at the same few top passages again
    and again across questions; analysing each once keeps `ask` close to the
    cost of retrieval itself. The cache is bounded and simply cleared when full.
    """

    def __init__(self, analyzer: Analyzer, max_entries: int = 20_000) -> None:
        self.analyzer = analyzer
        self._max = max_entries
        self._terms: dict[str, frozenset[str]] = {}
        self._sentences: dict[str, tuple[tuple[str, frozenset[str]], ...]] = {}

    def clear(self) -> None:
        self._terms.clear()
        self._sentences.clear()

    def terms(self, key: str, text: str) -> frozenset[str]:
        found = self._terms.get(key)
        if found is None:
            if len(self._terms) >= self._max:
                self._terms.clear()
            found = self._terms[key] = frozenset(self.analyzer.terms(text))
        return found

    def sentences(self, key: str, text: str) -> tuple[tuple[str, frozenset[str]], ...]:
        """Each sentence with its whitespace folded, and its term set, in order."""
        found = self._sentences.get(key)
        if found is None:
            if len(self._sentences) >= self._max:
                self._sentences.clear()
            found = tuple(
                (flat, frozenset(self.analyzer.terms(flat)))
                for flat in (" ".join(s.split()) for s in split_sentences(text))
            )
            self._sentences[key] = found
        return found


# A passage is found again by its first words, up to these many characters.
OPENING_WORDS = 8
OPENING_CHARS = 80


def find_opening(text: str, passage: str, start: int = 0) -> int:
    """Where `passage`'s first words begin in `text` from `start`, whatever the spacing
    between them; -1 where they are not there."""
    words = passage[:OPENING_CHARS].split()[:OPENING_WORDS]
    if not words:
        return -1
    match = re.compile(r"\s+".join(re.escape(w) for w in words)).search(text, start)
    return match.start() if match else -1
