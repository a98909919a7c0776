"""Acronyms: query expansion mined from the corpus's own definitions.

Regulatory text defines an abbreviation once, as "National Greenhouse and
Energy Reporting (NGER)", and then uses the short form; people ask with either.
A lexical retriever cannot tell that the two are one thing, so `mine_acronyms`
reads the definitions out of the corpus and `expand_query` appends the full
name to a question that uses only the short form.

A definition is "Full Name (ABBR)". The parenthesis must hold the abbreviation
and nothing else: 2-10 characters of letters, digits, & and -, starting with a
capital. The full name is the shortest run of words ending just before the
parenthesis, within one clause and at most len(ABBR) + 5 words long, that
does not start with a short function word (and, of, the, ...) and spells the
abbreviation (after Schwartz & Hearst 2003):

- an abbreviation with two or more capitals (NGER, LiDAR, R&D) is spelled by
  word initials matching its capitals exactly, in order, ignoring case. Inside
  the name a function word may give its initial or be skipped; a hyphenated
  word gives its own initial or those of all its parts;
- a "syllabic" abbreviation with one capital (Natech, Defra, Ofcom) is spelled
  by its letters in order, taken from words that are not function words: the
  first is the run's first letter and at least one other is the initial of a
  later word. The run has at least two words and no more words than the
  abbreviation has letters.

It refuses to guess: no list of well-known acronyms, nothing from a parenthesis
that holds more than the abbreviation ("(e.g. EPA)"), and no full name whose
words do not spell it. Pure functions; no I/O.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping

FUNCTION_WORDS = frozenset(
    {"and", "of", "the", "for", "in", "on", "to", "&", "a", "an", "at", "by", "with"}
)
EXTRA_WORDS = 5  # a full name may run this many words longer than the abbreviation

_DEFINITION = re.compile(r"\(([A-Z][A-Za-z0-9&-]{1,9})\)")
# A full name never reaches back across these: brackets, quotation marks, ; : ! ?,
# a full stop followed by a space, or a blank line.
_CLAUSE_END = re.compile(r"[()\[\];:!?\"“”]|\.\s|\n\s*\n")
_PART = r"[^\W_]+(?:['’][^\W_]+)*"  # an apostrophe only inside a word: Crohn's, not virus'
_WORD = re.compile(rf"{_PART}(?:-{_PART})*|&")
_WINDOW = 400  # characters looked back from a parenthesis; ample for 15 words


# ------------------------------------------------------------------ mining


def mine_acronyms(texts: Iterable[str]) -> dict[str, str]:
    """{ABBR: full name} from every definition in `texts`.

    An abbreviation defined several ways keeps its most frequent full name
    (compared ignoring case and spacing), the first seen on a tie, spelled as
    it was first seen.
    """
    counts: Counter[tuple[str, str]] = Counter()
    spelling: dict[tuple[str, str], str] = {}  # insertion order is first-seen order
    for text in texts:
        for abbr, name in definitions(text):
            key = (abbr, _normal(name))
            counts[key] += 1
            spelling.setdefault(key, name)
    chosen: dict[str, tuple[str, str]] = {}
    for key in spelling:
        abbr = key[0]
        if abbr not in chosen or counts[key] > counts[chosen[abbr]]:
            chosen[abbr] = key
    return {abbr: spelling[key] for abbr, key in chosen.items()}


def definitions(text: str) -> Iterator[tuple[str, str]]:
    """Every (ABBR, full name) defined in `text`, in order of appearance."""
    for match in _DEFINITION.finditer(text):
        start = max(0, match.start() - _WINDOW)
        before = text[start : match.start()]
        if start > 0:  # the window may begin mid-word; drop that fragment
            before = re.sub(r"^\S*", "", before)
        name = _full_name(match.group(1), before)
        if name is not None:
            yield match.group(1), name


def _full_name(abbr: str, before: str) -> str | None:
    """The shortest run of words at the end of `before` that spells `abbr`."""
    clause = _CLAUSE_END.split(before)[-1]
    words = list(_WORD.finditer(clause))
    for n in range(1, min(len(words), len(abbr) + EXTRA_WORDS) + 1):
        run = words[-n:]
        if _spells(abbr, [m.group() for m in run]):
            return " ".join(clause[run[0].start() : run[-1].end()].split())
    return None


def _spells(abbr: str, run: list[str]) -> bool:
    if run[0].lower() in FUNCTION_WORDS:
        return False
    capitals = "".join(c.lower() for c in abbr if c.isupper())
    if len(capitals) >= 2:
        return _spells_by_initials(capitals, run)
    letters = "".join(c.lower() for c in abbr if c.isalpha())
    return len(capitals) == 1 and len(letters) >= 3 and _spells_by_syllables(letters, run)


def _spells_by_initials(capitals: str, run: list[str]) -> bool:
    """Whether the words' initials can be exactly `capitals`: each word gives
    one of its `_initials` options, and all of `capitals` must be used."""
    reached = {0}  # how much of `capitals` the words so far can spell
    for word in run:
        reached = {
            done + len(option)
            for done in reached
            for option in _initials(word)
            if capitals.startswith(option, done)
        }
        if not reached:
            return False
    return len(capitals) in reached


def _initials(word: str) -> set[str]:
    lower = word.lower()
    if lower in FUNCTION_WORDS:
        return {"", lower[0]}
    parts = lower.split("-")
    return {parts[0][0], "".join(part[0] for part in parts)}


def _spells_by_syllables(letters: str, run: list[str]) -> bool:
    """Whether `letters` appear in order in the run's words other than function
    words, the first as the run's first letter and at least one other as the
    initial of a later word."""
    if not 2 <= len(run) <= len(letters):
        return False
    tokens = " ".join(run).lower().replace("-", " ").split(" ")
    # a function word gives no letter: blanked out, it keeps the positions right
    text = " ".join("_" * len(t) if t in FUNCTION_WORDS else t for t in tokens)
    starts: list[int] = []  # where each later word that is not a function word begins
    at = 0
    for token in tokens:
        if at and token not in FUNCTION_WORDS:
            starts.append(at)
        at += len(token) + 1
    return text[0] == letters[0] and any(
        text[k] == letters[i]
        and _in_order(letters[1:i], text[1:k])
        and _in_order(letters[i + 1 :], text[k + 1 :])
        for i in range(1, len(letters))
        for k in starts
    )


def _in_order(needle: str, haystack: str) -> bool:
    rest = iter(haystack)
    return all(c in rest for c in needle)


# ------------------------------------------------------------------ questions


def detect(question: str, acronyms: Mapping[str, str]) -> list[str]:
    """The abbreviations in `acronyms` that `question` uses, in order of first use.

    An abbreviation counts as a whole token, case-sensitively: "NGER" and
    "NGER's" and "NGER-covered" count, "nger", "NGERS" and "XNGER" do not. A
    plural in lower-case s ("NGERs") counts as the abbreviation; an upper-case
    S does not, since "NGERS" may well be another abbreviation.
    """
    if not acronyms:
        return []
    alternatives = "|".join(re.escape(a) for a in sorted(acronyms, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w&])({alternatives})s?(?![\w&])")
    return list(dict.fromkeys(m.group(1) for m in pattern.finditer(question)))


def expand_query(question: str, acronyms: Mapping[str, str]) -> str:
    """`question` with the full name of each abbreviation it uses appended once,
    as "question (Full Name; Other Name)".

    A full name already in the question (ignoring case and spacing) is not
    appended again, so expanding an expanded question changes nothing. A
    question with nothing to expand comes back unchanged.
    """
    present = _normal(question)
    names: list[str] = []
    for abbr in detect(question, acronyms):
        name = acronyms[abbr]
        if _normal(name) not in present and name not in names:
            names.append(name)
    if not names:
        return question
    return f"{question.rstrip()} ({'; '.join(names)})"


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())
