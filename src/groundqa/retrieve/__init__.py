"""Retrieval: from a Query to ranked hits, and everything later stages need from the index.

    plan        `METHOD[+OPTION...]`: the method, fusion and query-understanding steps
    retriever   the `Retriever` (the only place that searches) and its `Retrieval`
    rerank      optional rerankers (cross-encoder, a chat model's ratings)

Acronym expansion and definition lifting are shared with ingestion and live in
`groundqa.query.acronyms` and `groundqa.query.definitions`; fusion rules are pure functions
in `groundqa.fusion`, which the stores use too; metadata filters, the jurisdiction
scope hierarchy and place detection are in `groundqa.facets`, which the stores
answer from memory or SQL.
"""

from groundqa.facets import PLACE_KEYS, FacetIndex, flat_metadata
from groundqa.retrieve.plan import (
    DEFAULT_DENSE_PLAN,
    DEFAULT_LEXICAL_PLAN,
    DEFINITION_BOOST,
    PLACE_BOOST,
    PLAN_FORMS,
    POOL,
    RETRIEVERS,
    Plan,
    check_retriever,
    describe_fit,
    fitted_plan,
    parse_plan,
)
from groundqa.retrieve.retriever import RERANK_DEPTH, SIGNAL_DEPTH, Retrieval, Retriever

__all__ = [
    "DEFAULT_DENSE_PLAN",
    "DEFAULT_LEXICAL_PLAN",
    "DEFINITION_BOOST",
    "PLACE_BOOST",
    "PLACE_KEYS",
    "PLAN_FORMS",
    "POOL",
    "RERANK_DEPTH",
    "RETRIEVERS",
    "SIGNAL_DEPTH",
    "FacetIndex",
    "Plan",
    "Retrieval",
    "Retriever",
    "check_retriever",
    "describe_fit",
    "fitted_plan",
    "flat_metadata",
    "parse_plan",
]
