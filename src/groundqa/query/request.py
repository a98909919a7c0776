"""The request: one frozen `Query` carries every argument of an ask, checked in one place.

The CLI, the HTTP API, the evaluation harness and the Python API each build a
Query and hand it to the engine; none of them checks or forwards arguments of
its own, so a new field reaches every shell at once. The result cache's key is
derived from the whole Query (`cache_key`), so a field cannot be left out of it.

A Query holds what the asker said, not what the engine decided: `k`,
`temperature` and `max_tokens` stay None until `settings` fills them from the
preset for the question's intent (see `intent`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from groundqa.errors import UsageError
from groundqa.providers import GeneratorOptions
from groundqa.query.intent import GenerationSettings, preset_for
from groundqa.text import well_formed

MAX_K = 100
MAX_QUESTION_CHARS = 2000
MAX_TEMPERATURE = 2.0
MAX_TOKENS = 8192
# Earlier turns of a conversation a follow-up is read against: the last three exchanges.
# A longer history is accepted and cut to these, and the answer says how many were left out.
MAX_HISTORY_TURNS = 6
# An earlier turn is read up to this many characters (an assistant's answer can be long).
MAX_TURN_CHARS = 2000
ROLES = ("user", "assistant")

FacetValue = str | Sequence[str]
# A filter value: one value, a list (any of them), or {"all": [...]} / {"any": [...]}.
Filters = Mapping[str, FacetValue | Mapping[Any, FacetValue]]
Scope = Mapping[str, FacetValue]


def check_question(question: str) -> str:
    """The question stripped, and repaired where it holds bytes that are not text (see
    `text.well_formed`); UsageError when it is empty or too long."""
    q = well_formed(question).strip()
    if not q:
        raise UsageError('the question is empty; ask something, e.g. groundqa ask "What is ...?"')
    if len(q) > MAX_QUESTION_CHARS:
        raise UsageError(f"the question is {len(q)} characters; the limit is {MAX_QUESTION_CHARS}")
    return q


def check_k(k: int) -> int:
    if not 1 <= k <= MAX_K:
        raise UsageError(f"k must be between 1 and {MAX_K}, got {k}")
    return k


def _plain(value: Any) -> Any:
    """Facet values as plain dicts and lists (a Mapping or tuple given by a caller is copied),
    so a Query never shares a mutable value with its caller."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence | set | frozenset):
        return [_plain(v) for v in value]
    return value


def _normal(value: Any) -> Any:
    """Facet values in one spelling for the cache key: a value is a sorted list."""
    if isinstance(value, Mapping):
        return {k: _normal(v) for k, v in sorted(value.items())}
    return sorted([value] if isinstance(value, str) else value)


@dataclass(frozen=True)
class Turn:
    """One earlier message of a conversation: who said it (`user` or `assistant`) and what."""

    role: str
    content: str

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise UsageError(f"a turn's role must be user or assistant, got {self.role!r}")
        content = " ".join(well_formed(str(self.content)).split())[:MAX_TURN_CHARS]
        object.__setattr__(self, "content", content)

    @classmethod
    def of(cls, turn: Turn | Mapping[str, Any]) -> Turn:
        """A Turn, or one from a `{"role", "content"}` mapping (the chat APIs' shape)."""
        if isinstance(turn, Turn):
            return turn
        if not isinstance(turn, Mapping) or "role" not in turn or "content" not in turn:
            raise UsageError(
                'each turn of a history is {"role": "user"|"assistant", "content": "..."}'
            )
        return cls(str(turn["role"]), str(turn["content"]))


def _history(turns: Sequence[Turn | Mapping[str, Any]]) -> tuple[Turn, ...]:
    """Turns as Turns, without empty ones, oldest first."""
    return tuple(t for t in (Turn.of(x) for x in turns) if t.content)


@dataclass(frozen=True)
class Query:
    """One question and everything the asker said about how to answer it.

    `filters` keep only chunks that match; `scope` says where the asker is (see
    `facets`), and `auto_scope` adds the places the question names.
    `retriever` is a plan such as `hybrid+cap=2` (None: the index's default),
    `reranker` a reranker spec, `generator` a generator spec; `options` reach a
    network backend. `as_of` picks the version of a document in force that day
    (None: today). `history` holds the conversation's earlier turns, oldest first:
    a follow-up is made standalone from them before retrieval (see `conversation`).
    Only the last MAX_HISTORY_TURNS are kept; `earlier_turns` counts those left out.
    """

    question: str
    k: int | None = None
    filters: Filters = field(default_factory=dict)
    scope: Scope = field(default_factory=dict)
    auto_scope: bool = False
    retriever: str | None = None
    reranker: str | None = None
    generator: str = "extractive"
    options: GeneratorOptions = field(default_factory=GeneratorOptions)
    temperature: float | None = None
    max_tokens: int | None = None
    as_of: dt.date | None = None
    history: Sequence[Turn] = ()
    earlier_turns: int = 0

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # a frozen dataclass normalises itself through here
        set_(self, "question", check_question(self.question))
        if self.k is not None:
            check_k(self.k)
        if self.temperature is not None and not 0.0 <= self.temperature <= MAX_TEMPERATURE:
            raise UsageError(
                f"temperature must be between 0 and {MAX_TEMPERATURE:g}, got {self.temperature}"
            )
        if self.max_tokens is not None and not 1 <= self.max_tokens <= MAX_TOKENS:
            raise UsageError(
                f"max_tokens must be between 1 and {MAX_TOKENS}, got {self.max_tokens}"
            )
        if not self.generator.strip():
            raise UsageError("the generator is empty; name one, e.g. extractive")
        set_(self, "filters", _plain(self.filters or {}))
        set_(self, "scope", _plain(self.scope or {}))
        set_(self, "retriever", self.retriever.strip() or None if self.retriever else None)
        set_(self, "reranker", self.reranker.strip() or None if self.reranker else None)
        history = _history(self.history or ())
        kept = history[-MAX_HISTORY_TURNS:]
        set_(self, "history", kept)
        set_(self, "earlier_turns", max(0, self.earlier_turns) + len(history) - len(kept))

    @classmethod
    def of(cls, query: Query | str, **overrides: Any) -> Query:
        """`query` itself, a Query for a bare question, or a copy with `overrides` applied."""
        if isinstance(query, str):
            return cls(query, **overrides)
        return replace(query, **overrides) if overrides else query

    def settings(self) -> tuple[str, GenerationSettings]:
        """The question's intent and its preset, with what the asker gave taking precedence."""
        intent, preset = preset_for(self.question)
        return intent, preset.merged(
            k=self.k, temperature=self.temperature, max_tokens=self.max_tokens
        )

    @property
    def day(self) -> dt.date:
        """The day the answer is for: `as_of`, or today."""
        return self.as_of or dt.date.today()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, GeneratorOptions):
                value = {"base_url": value.base_url, "timeout_s": value.timeout_s}
            elif isinstance(value, dt.date):
                value = value.isoformat()
            elif f.name == "history":
                value = [{"role": t.role, "content": t.content} for t in value]
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Query:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise UsageError(f"unknown query field(s) {', '.join(unknown)}; known: {sorted(known)}")
        args = dict(d)
        if isinstance(args.get("options"), Mapping):
            args["options"] = GeneratorOptions(**args["options"])
        if isinstance(args.get("as_of"), str):
            args["as_of"] = dt.date.fromisoformat(args["as_of"])
        return cls(**args)

    def cache_key(self, fingerprint: str) -> str:
        """Equal for queries that must get the same answer from the same index build.

        Every field takes part (a new one cannot be forgotten): the question with its
        case and spacing folded, facet values sorted, and `as_of` as the day it resolves
        to. `fingerprint` names the build and its gate (`Engine.fingerprint`).
        """
        key = self.to_dict()
        key["question"] = " ".join(self.question.split()).casefold()
        key["filters"] = _normal(self.filters)
        key["scope"] = _normal(self.scope)
        key["as_of"] = (self.as_of or dt.date.today()).isoformat()
        key["index"] = fingerprint
        text = json.dumps(key, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


__all__ = [
    "MAX_HISTORY_TURNS",
    "MAX_K",
    "MAX_QUESTION_CHARS",
    "Filters",
    "Query",
    "Scope",
    "Turn",
    "check_k",
    "check_question",
]
