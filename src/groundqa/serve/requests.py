"""The request bodies of the HTTP API, as pydantic models.

Pydantic refuses unknown fields, wrong types and out-of-range values before a
route runs; what is left for the library to refuse is what only the index can
judge (a filter key it does not have, a retriever it cannot serve).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from groundqa.providers import GeneratorOptions
from groundqa.query import MAX_HISTORY_TURNS, MAX_K, MAX_QUESTION_CHARS, Query, Turn
from groundqa.serve.errors import ApiError

MAX_FILTER_KEYS = 20
# Turns a request may send; only the last MAX_HISTORY_TURNS are read (the body size
# limit bounds the rest), and the answer's notes say how many were left out.
MAX_SENT_TURNS = 10_000

Question = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_QUESTION_CHARS),
]
Name = Annotated[str, StringConstraints(min_length=1, max_length=200)]
FacetValue = Annotated[str, StringConstraints(max_length=500)]
FacetValues = FacetValue | Annotated[list[FacetValue], Field(max_length=100)]
Facets = Annotated[
    dict[Annotated[str, StringConstraints(max_length=200)], FacetValues],
    Field(max_length=MAX_FILTER_KEYS),
]
# A filter value may also ask for every one of several values: {"all": [...]}.
FilterValues = (
    FacetValues | Annotated[dict[Literal["any", "all"], FacetValues], Field(max_length=1)]
)
FilterFacets = Annotated[
    dict[Annotated[str, StringConstraints(max_length=200)], FilterValues],
    Field(max_length=MAX_FILTER_KEYS),
]


class TurnModel(BaseModel):
    """One earlier message of the conversation."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"]
    content: Annotated[str, StringConstraints(max_length=100_000)]


class QueryRequest(BaseModel):
    """A question and how to answer it. Unknown fields are an error, not ignored."""

    model_config = ConfigDict(extra="forbid")

    question: Question = Field(description="The question, 1 to 2000 characters.")
    k: int | None = Field(
        None,
        ge=1,
        le=MAX_K,
        description="Passages to retrieve; by default the preset for the question's intent.",
    )
    retriever: Name | None = Field(
        None,
        description="bm25, dense or hybrid, with options (e.g. hybrid+cap=2); by default "
        "the index's plan (hybrid+weighted=0.5/0.5+defs where it has vectors, else bm25+defs).",
    )
    generator: Name | None = Field(
        None,
        description="One of the generators the server was started with (`groundqa serve "
        "--generator` and `--allow-generator`); by default the first, `--generator`.",
    )
    temperature: float | None = Field(None, ge=0, le=2, description="Sampling temperature.")
    max_tokens: int | None = Field(None, ge=1, le=8192, description="Longest answer in tokens.")
    filters: FilterFacets = Field(
        default_factory=dict,
        description="Metadata that every passage must match; a list means any of its values, "
        '{"all": [...]} every one of them. Nested metadata is addressed as `key.subkey`.',
    )
    scope: Facets = Field(
        default_factory=dict,
        description='Where the asker is (e.g. {"area": "Fennick City"}): national documents '
        "apply, state documents only for the scope's state(s), local ones only for its area(s).",
    )
    as_of: dt.date | None = Field(
        None,
        description="The day whose versions are in force (default today); answers citing "
        "another version say so in `notes`.",
    )
    auto_location: bool = Field(
        False, description="Also scope to the places the question names (e.g. a council area)."
    )
    explain: bool = Field(
        False,
        description="For a refusal, also list the closest sections under `closest_matches` "
        "(never cited: they did not answer the question).",
    )
    history: list[TurnModel] = Field(
        default_factory=list,
        max_length=MAX_SENT_TURNS,
        description="The conversation's earlier turns, oldest first: a follow-up such as "
        '"and in winter?" is made standalone from them before retrieval, and the answer\'s '
        f"`standalone_question` says how it was read. Only the last {MAX_HISTORY_TURNS} "
        "are read.",
    )

    def query(self, options: GeneratorOptions) -> Query:
        """The Query this request asks; `options` are the server's backend settings.
        (`explain` shapes the response, not the answer, so it is not part of it.)"""
        return Query(
            self.question,
            k=self.k,
            filters=self.filters,
            scope=self.scope,
            auto_scope=self.auto_location,
            retriever=self.retriever,
            generator=self.generator or "extractive",
            options=options,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            as_of=self.as_of,
            history=tuple(Turn(t.role, t.content) for t in self.history),
        )


def with_generator(request: QueryRequest, served: Sequence[str]) -> QueryRequest:
    """`request`, asking for the first of the generators this server `served` when it
    names none. One that names another is refused, in the same words whatever it named:
    a generator spec is a file path or a host to connect to, so the server must neither
    open it nor let the answer say whether it exists."""
    if not request.generator:
        return request.model_copy(update={"generator": served[0]})
    if request.generator.strip() in served:
        return request
    raise ApiError(
        400,
        "this server answers only with the generators it was started with ("
        + ", ".join(served)
        + "); name one of them as `generator`, or leave it out for the first",
        code="generator_not_served",
        param="generator",
    )


class EvalRequest(BaseModel):
    """A probe set in the probe file format, one object per probe."""

    model_config = ConfigDict(extra="forbid")

    probes: list[dict[str, Any]] = Field(min_length=1)
    k: list[Annotated[int, Field(ge=1, le=MAX_K)]] = Field(
        default_factory=lambda: [1, 3, 5, 10], min_length=1, max_length=20
    )
    retriever: Name | None = None
