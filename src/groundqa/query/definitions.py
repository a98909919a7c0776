"""Definition questions: find the term asked about, and the passages that define it.

"What is a Natech accident?" is answered by the sentence that defines the term
("This type of event is called Natech (natural hazard triggered technological)
accident"), which often shares fewer words with the question than sections
that merely use the term do: BM25 ranks the sections that say "Natech
accident" most often, and a sentence embedding ranks the ones about the same
topic. The `+defs` retrieval option moves passages that hold a definitional
sentence for the term up the list (`bench/dense.py` measures it on and off).

A definitional sentence, for a term T (its last word may be plural, and a
parenthetical may sit between its words):

    T means / refers to / is defined as / shall mean / denotes ...
    ... called / termed / known as / defined as / referred to as T
    A T is a ...        (opening a sentence, the term singular)
    "T" means / is / includes ...
"""

from __future__ import annotations

import re
from functools import lru_cache

_ARTICLE = r"(?:an?|the)\s+"
_QUESTIONS = (
    re.compile(
        rf"^\s*(?:what\s+is\s+)?the\s+(?:meaning|definition)\s+of\s+(?:{_ARTICLE})?"
        r"(?P<term>.+?)\s*\??\s*$",
        re.I,
    ),
    re.compile(rf"^\s*what\s+(?:is|are)\s+(?:{_ARTICLE})?(?P<term>.+?)\s*\??\s*$", re.I),
    re.compile(rf"^\s*define\s+(?:{_ARTICLE})?(?P<term>.+?)\s*[.?]?\s*$", re.I),
    re.compile(r"^\s*what\s+does\s+(?:an?\s+|the\s+)?(?P<term>.+?)\s+mean\s*\??\s*$", re.I),
    # "How does the by-law define idle?", "How is a tentative map defined?"
    re.compile(
        rf"^\s*how\s+(?:does|do|did)\s+.+?\s+define\s+(?:{_ARTICLE})?(?P<term>.+?)\s*\??\s*$",
        re.I,
    ),
    re.compile(rf"^\s*how\s+(?:is|are)\s+(?:{_ARTICLE})?(?P<term>.+?)\s+defined\b.*?\??\s*$", re.I),
)
MAX_TERM_WORDS = 5
# Words that make "what is ..." a question about something other than a term.
_NOT_A_TERM = frozenset(
    {
        *("the", "a", "an", "this", "that", "these", "those", "it", "there", "here"),
        *("my", "our", "your", "their", "his", "her", "its"),
        *("how", "when", "where", "why", "who", "which", "whose", "whom", "much", "many"),
    }
)


def defined_term(question: str) -> str | None:
    """The term a definition question asks about, or None for any other question.

    Long phrases ("what is the fine for lodging a report late") are lookups, not
    definitions: a term has at most `MAX_TERM_WORDS` words.
    """
    for pattern in _QUESTIONS:
        m = pattern.match(question)
        if m is None:
            continue
        words = m.group("term").strip(" '\"“”").split()
        if not words or len(words) > MAX_TERM_WORDS or words[0].lower() in _NOT_A_TERM:
            return None
        return " ".join(words)
    return None


@lru_cache(maxsize=256)
def definition_pattern(term: str) -> re.Pattern[str]:
    """What a sentence that defines `term` looks like (see the module's docstring)."""
    words = [re.escape(w) for w in term.split()]
    if len(words[-1]) > 3 and words[-1].endswith("s"):  # "protected trees" defines "tree"
        words[-1] = words[-1][:-1]
    singular = r"(?:\s*\([^()]{0,120}\))?\s+".join(words)
    plural = singular + r"(?:s|es)?"
    # A parenthetical may follow the term or sit between its words: "Natech (natural ...) accident".
    paren = r"(?:\s*\([^()]{0,120}\))?"
    verb = r"\s*,?\s+(?:means|refers?\s+to|(?:is|are)\s+defined\s+as|shall\s+mean|denotes?)\b"
    named = r"\b(?:called|termed|known\s+as|defined\s+as|referred\s+to\s+as)\s+(?:an?\s+|the\s+)?"
    # "A T is a ...", only opening a sentence: "... of T is the main cause" defines nothing.
    copula = r"(?:^|[.!?:]\s+)(?:an?\s+|the\s+)?" + singular + paren + r"\s+is\s+(?:an?|the)\s"
    quoted = r"[\"“‘']" + plural + r"[\"”’']\s+(?:means|is|includes)\b"
    return re.compile(rf"\b{plural}{paren}{verb}|{named}{plural}\b|{copula}|{quoted}", re.I | re.M)


def defines(text: str, term: str) -> bool:
    """True when `text` holds a sentence that defines `term`."""
    return definition_pattern(term).search(text) is not None
