"""Follow-up questions made standalone before retrieval.

In a chat, "and in Westhaven?" or "what does it cost?" names no topic of its own:
retrieved alone it finds whatever happens to mention Westhaven or costs. Before
retrieval such a question is made standalone from the conversation's earlier
turns, and the answer says which standalone question it answered.

Two ways, chosen by what the asker configured:

- **With a language model** (an LLM generator backend that can `complete` a
  prompt): the model is shown the last turns and asked to rewrite the last
  question as one that stands alone, or to return it unchanged when it already
  does or changes the subject. A reply that is empty, too long, or leaves out
  a topic word or place of the question (a small model may answer the previous
  question instead) falls back to the rule below, and the answer says so.
- **Without one** (`carry`): a question that names no topic of its own, or that
  opens with a connective ("and", "what about") or points back ("it", "that")
  and names at most three topic words, carries the previous question's topic
  words; so does one that names at most one ("How much is the permit?"). A place it names replaces the places of the previous question; the
  earlier topic is appended in brackets, so the standalone question shows what
  was carried. A question with a topic of its own starts afresh: a topic switch
  drops the history.

The previous question is itself taken in its standalone form: the rule runs
over the user turns of the history in order, so "and in winter?" after "what
about Westhaven?" still carries the first question's topic. Only the last
`MAX_HISTORY_TURNS` turns are read (see `query.Query`).

This module holds no index and no model: the engine hands `resolve` the corpus's
`Vocabulary` (its analyzer's topic terms and its place names) and the query's
generator, whose `complete` rewrites when it is a language model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from groundqa.errors import GroundqaError
from groundqa.facets import Facets
from groundqa.query.request import MAX_QUESTION_CHARS, Query, Turn
from groundqa.text import Analyzer

# A language model's reply to one plain prompt: (system, user, max_tokens) -> text.
Complete = Callable[[str, str, int], str]

REWRITE_MAX_TOKENS = 96
# Assistant turns are shown to a rewriting model shortened: they are long, and the topic
# sits in the question.
MODEL_TURN_CHARS = 400

REWRITE_SYSTEM = (
    "You rewrite the last question of a conversation so that it can be understood without "
    "the conversation. Keep its meaning and wording; bring in only the topic, place or thing "
    "from the earlier turns that it refers to. If it already stands alone, or changes the "
    "subject, return it unchanged. Reply with the question only, on one line."
)


def _words(*lines: str) -> frozenset[str]:
    return frozenset(" ".join(lines).split())


# Openings that make a question lean on the previous one.
CONNECTIVES = (
    "and",
    "also",
    "but",
    "or",
    "so",
    "then",
    "what about",
    "how about",
    "what if",
    "same for",
    "same in",
)
# Words that point back to something said before. "there" and "that" only as the
# question's last word or before a preposition would be exact; as any word they also
# catch relative clauses, which the topic-word limit below keeps harmless.
ANAPHORA = _words(
    "it its it's itself they them their theirs this that these those such he she him her his",
    "same",
)
# "there" points back as a place when the question ends with it or goes on with one of
# these ("the council there have to ...", "is it the same there too?").
THERE_ENDS = _words("have has had too instead as and or but then")
# Question words that carry no topic: asking "what does it cost?" or "when does it
# apply?" names no subject. (The analyzer already drops stopwords and question words.)
GENERIC = _words(
    "cost costs costing price prices pay paid charge fee fees long often time times "
    "apply applies applied allowed allow permitted required require requires rule rules "
    "same else other mean means happen happens ok okay thanks thank case instead too "
    "either exactly again start starts started end ends begin begins say says said "
    "answer question exist exists work works "
    # Prepositions, particles, determiners and light verbs the stopword list keeps.
    "from about than over under after before between during without within into onto "
    "upon via per near across along around up down out off each every "
    "get gets got getting go goes going gone make makes made put puts take takes took "
    "keep keeps kept want wants whether rather anything something nothing everything "
    "anyone anybody someone somebody somewhere anywhere am really actually just usually",
)
# A question with at most this many topic words of its own is elliptical ("How much is
# the permit?"): it names too little to stand alone.
MAX_ELLIPTICAL_WORDS = 1
# A question that opens with a connective or points back, and names at most this many
# topic words, leans on the history; with more it states a topic of its own.
MAX_CARRIED_OWN_WORDS = 3

_WORD = re.compile(r"(?u)\b[\w'-]+\b")


@dataclass(frozen=True)
class Followup:
    """How a question was read against its conversation.

    `standalone` is what retrieval and the answer used; `method` is `none` (no
    history, or the question stands alone), `carry` (the rule above) or `model:NAME`.
    `turns_used` earlier turns were read; `earlier_turns` more were left out.
    """

    question: str
    standalone: str
    method: str = "none"
    turns_used: int = 0
    earlier_turns: int = 0
    note: str | None = None

    @property
    def rewritten(self) -> bool:
        return self.standalone != self.question

    def notes(self) -> tuple[str, ...]:
        """What the answer tells its reader about the rewrite."""
        out: list[str] = []
        if self.rewritten:
            how = (
                "from the previous question" if self.method == "carry" else "by " + self.method[6:]
            )
            out.append(f'Answered as a follow-up, read {how} as: "{self.standalone}"')
        if self.note:
            out.append(self.note)
        if self.earlier_turns:
            out.append(
                f"Only the last {self.turns_used} turns of the conversation were read; "
                f"{self.earlier_turns} earlier turns were left out."
            )
        return tuple(out)


@dataclass(frozen=True)
class Vocabulary:
    """What the rule needs to know of the corpus: a word's topic terms (empty for a
    stopword or question word) and the place names a text mentions (folded words)."""

    topic_terms: Callable[[str], list[str]]
    places: Callable[[str], set[str]]

    @classmethod
    def of(cls, analyzer: Analyzer, facets: Facets) -> Vocabulary:
        """A corpus's vocabulary: its analyzer's query terms, and the folded words of the
        places (metadata values) a text names."""

        def places(text: str) -> set[str]:
            named = facets.detect_scope(text)
            return {w for values in named.values() for v in values for w in v.casefold().split()}

        return cls(analyzer.query_terms, places)

    def topic_words(self, text: str) -> list[str]:
        """The text's words that name a topic (not places, not generic), as written."""
        out: list[str] = []
        place_words = self.places(text)
        for word in _WORD.findall(text):
            folded = word.casefold()
            if folded.endswith("n't"):
                continue  # doesn't, isn't: a verb and a negation, no topic
            if folded.endswith("'s"):
                word, folded = word[:-2], folded[:-2]  # the council's -> council
            if folded in GENERIC or folded in ANAPHORA or folded in place_words:
                continue
            if self.topic_terms(word):
                out.append(word)
        return out


def _opens_with_connective(question: str) -> bool:
    folded = " ".join(_WORD.findall(question.casefold()))
    return any(folded == c or folded.startswith(c + " ") for c in CONNECTIVES)


def _points_back(question: str) -> bool:
    """Whether the question refers to something said before: a pronoun, or "there" as a
    place ("the council there?") rather than "is there"."""
    words = _WORD.findall(question.casefold())
    for i, word in enumerate(words):
        if word in ANAPHORA:
            return True
        if word == "there" and (i == len(words) - 1 or words[i + 1] in THERE_ENDS):
            return True
    return False


def leans_on_history(question: str, vocabulary: Vocabulary) -> bool:
    """Whether `question` needs the conversation: it names at most one topic word of its
    own, or it opens with a connective or points back and names at most three."""
    own = vocabulary.topic_words(question)
    if len(own) <= MAX_ELLIPTICAL_WORDS:
        return True
    return len(own) <= MAX_CARRIED_OWN_WORDS and (
        _opens_with_connective(question) or _points_back(question)
    )


def carry(question: str, previous: str, vocabulary: Vocabulary) -> str:
    """`question` with the previous question's topic words appended in brackets; the
    previous places come along only when `question` names none of its own."""
    carried: list[str] = []
    own = {w.casefold() for w in vocabulary.topic_words(question)}
    for word in vocabulary.topic_words(previous):
        if word.casefold() not in own and word not in carried:
            carried.append(word)
    if not vocabulary.places(question):
        places = vocabulary.places(previous)
        for word in _WORD.findall(previous):
            if word.casefold() in places and word not in carried:
                carried.append(word)
    if not carried:
        return question
    stem = question.rstrip().rstrip("?").rstrip()
    return f"{stem} ({' '.join(carried)})?"


def _carried(question: str, history: Sequence[Turn], vocabulary: Vocabulary) -> str:
    """`question` made standalone by the rule, against the user turns before it, each
    taken in its own standalone form."""
    previous: str | None = None
    for turn in history:
        if turn.role == "user":
            previous = _standalone_by_rule(turn.content, previous, vocabulary)
    return _standalone_by_rule(question, previous, vocabulary)


def _standalone_by_rule(question: str, previous: str | None, vocabulary: Vocabulary) -> str:
    if previous is None or not leans_on_history(question, vocabulary):
        return question
    return carry(question, previous, vocabulary)


def rewrite_prompt(question: str, history: Sequence[Turn]) -> str:
    """The user message that asks a model for the standalone question."""
    lines = []
    for turn in history:
        text = turn.content
        if turn.role == "assistant" and len(text) > MODEL_TURN_CHARS:
            text = text[:MODEL_TURN_CHARS].rsplit(" ", 1)[0] + " ..."
        lines.append(f"{turn.role}: {text}")
    return (
        "Conversation so far:\n"
        + "\n".join(lines)
        + f"\n\nLast question: {question}\n\nThe last question, standing alone:"
    )


def model_reply(text: str) -> str | None:
    """The question a model's reply gives, or None for a reply that is not one line of
    question (empty, a refusal to help, or longer than any question may be)."""
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    for prefix in ("standalone question:", "the last question, standing alone:", "question:"):
        if line.casefold().startswith(prefix):
            line = line[len(prefix) :].strip()
    line = line.strip("\"'` ").strip()
    if not line or len(line) > MAX_QUESTION_CHARS:
        return None
    return line


def dropped_words(question: str, rewrite: str, vocabulary: Vocabulary) -> list[str]:
    """The question's own topic words and places that a rewrite leaves out. A standalone
    form may add to the question but must keep what it asks: a model that answers the
    previous question instead, or swaps the topic, loses the asker's words."""
    kept = set(vocabulary.topic_terms(rewrite))
    places = vocabulary.places(question)
    asked = [
        w
        for w in _WORD.findall(question)
        if w.casefold() in places or w in vocabulary.topic_words(question)
    ]
    return [w for w in dict.fromkeys(asked) if not set(vocabulary.topic_terms(w)) <= kept]


def standalone(
    question: str,
    history: Sequence[Turn],
    vocabulary: Vocabulary,
    *,
    complete: Complete | None = None,
    model: str = "",
    earlier_turns: int = 0,
) -> Followup:
    """`question` read against `history` (oldest first): by `complete`, the configured
    model's plain reply, when given, else by the rule. A model that fails or replies
    with no question falls back to the rule, and the Followup's note says so."""
    if not history:
        return Followup(question, question, earlier_turns=earlier_turns)
    used = len(history)
    if complete is not None:
        try:
            reply = model_reply(
                complete(REWRITE_SYSTEM, rewrite_prompt(question, history), REWRITE_MAX_TOKENS)
            )
        except GroundqaError as exc:
            reply, why = None, exc.message
        else:
            why = "it gave no question"
        if reply is not None:
            lost = dropped_words(question, reply, vocabulary)
            if not lost:
                return Followup(question, reply, f"model:{model}", used, earlier_turns)
            why = f"its rewrite {reply!r} leaves out {', '.join(lost)}"
        note = f"The follow-up was read by the rule, not by {model}: {why}."
        return Followup(
            question, _carried(question, history, vocabulary), "carry", used, earlier_turns, note
        )
    rewritten = _carried(question, history, vocabulary)
    method = "carry" if rewritten != question else "none"
    return Followup(question, rewritten, method, used, earlier_turns)


def resolve(query: Query, vocabulary: Vocabulary, generator: Any = None) -> tuple[Query, Followup]:
    """The query to retrieve and answer for, and how it was read: a follow-up made
    standalone, without its history, by `generator` when that is a language model (it
    has `complete`), else by the rule. A query without history is itself."""
    if not query.history:
        return query, Followup(query.question, query.question, earlier_turns=query.earlier_turns)
    followup = standalone(
        query.question,
        query.history,
        vocabulary,
        complete=getattr(generator, "complete", None),
        model=getattr(generator, "name", ""),
        earlier_turns=query.earlier_turns,
    )
    return replace(query, question=followup.standalone, history=(), earlier_turns=0), followup


__all__ = [
    "Complete",
    "Followup",
    "Vocabulary",
    "carry",
    "dropped_words",
    "leans_on_history",
    "model_reply",
    "resolve",
    "rewrite_prompt",
    "standalone",
]
