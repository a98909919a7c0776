"""The query stage: what was typed, with its conversation, made one standalone `Query`.

    request       the frozen `Query` (every argument of an ask, checked once) and `Turn`
    intent        the question's intent and the generation preset it picks
    conversation  a follow-up made standalone from earlier turns (`resolve`)
    acronyms      acronyms a corpus defines, mined at ingest and expanded in questions
    definitions   "what does X mean" questions and the sentences that define X

Retrieval, reading and generation take the Query this stage hands them; nothing
here reads an index or runs a model. The engine hands `resolve` the corpus's
vocabulary and, where one is configured, a language model's `complete`.
"""

from groundqa.query.request import (
    MAX_HISTORY_TURNS,
    MAX_K,
    MAX_QUESTION_CHARS,
    MAX_TEMPERATURE,
    MAX_TOKENS,
    MAX_TURN_CHARS,
    Filters,
    Query,
    Scope,
    Turn,
    check_k,
    check_question,
)

__all__ = [
    "MAX_HISTORY_TURNS",
    "MAX_K",
    "MAX_QUESTION_CHARS",
    "MAX_TEMPERATURE",
    "MAX_TOKENS",
    "MAX_TURN_CHARS",
    "Filters",
    "Query",
    "Scope",
    "Turn",
    "check_k",
    "check_question",
]
