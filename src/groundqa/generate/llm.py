"""What every language-model backend shares: turning a reply into a `Generation`.

`finish` turns a model's reply into a `Generation`. The exact refusal sentence
(alone, or opening the reply) becomes a refusal with no citations. Otherwise
every `[n]` marker that resolves to `evidence.hits[n - 1]` (the numbering of
the prompt) becomes a citation whose snippet is the sentence of that passage,
verbatim with its whitespace folded, that shares the most words with the claim
the marker closes. It refuses to invent a citation: a marker that names no
passage (`[7]` when three were sent) is left in the text as the model wrote it
and cited nowhere, for the audit to report; the reply's wording is never
changed.

Talking to the server (HTTP, endpoints, keys, error messages) is not here:
it is `groundqa.providers`, which the reranker and the embedders share.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from groundqa.errors import GenerationError
from groundqa.generate import Evidence, Generation, cite
from groundqa.lexicon import MARKER, sentence_spans
from groundqa.models import REFUSAL, Citation

_HEADING_LINE = re.compile(r"^\s*#{1,6}\s")
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'"})


def _fold(text: str) -> str:
    return " ".join(text.translate(_APOSTROPHES).split())


def is_refusal(text: str) -> bool:
    """True when the reply is the refusal sentence, or opens with it."""
    return _fold(text).startswith(REFUSAL)


@dataclass(frozen=True)
class _Claim:
    n: int
    terms: frozenset[str]


def _claims(text: str, evidence: Evidence) -> list[_Claim]:
    """Each marker with the words of the claim it closes.

    The claim is the stretch of its sentence since the previous marker; when that
    is too short to say anything (`[1][2]`), the whole sentence. A marker that
    opens a sentence ("... by 8pm. [1] Bins ...") closes the sentence before it.
    """
    analyzer = evidence.text.analyzer
    spans = sentence_spans(text)
    claims: list[_Claim] = []
    previous = ""
    for start, end in spans:
        sentence = text[start:end]
        sentence_terms = frozenset(analyzer.terms(MARKER.sub(" ", sentence)))
        cursor = 0
        for m in MARKER.finditer(sentence):
            numbers = [int(x) for x in m.group(1).split(",")]
            before = sentence[cursor : m.start()]
            cursor = m.end()
            if not MARKER.sub("", sentence[: m.start()]).strip():
                terms = frozenset(analyzer.terms(previous))
            else:
                segment = frozenset(analyzer.terms(MARKER.sub(" ", before)))
                terms = segment if len(segment) >= 2 else sentence_terms
            claims.extend(_Claim(n, terms) for n in numbers)
        stripped = MARKER.sub(" ", sentence).strip()
        if stripped:
            previous = stripped
    return claims


def _best_sentence(
    claim: frozenset[str], sentences: Iterable[tuple[str, frozenset[str]]]
) -> tuple[str, int]:
    """The passage sentence sharing the most words with the claim (the first on a tie)."""
    best = ""
    best_overlap = -1
    for sentence, terms in sentences:
        if _HEADING_LINE.match(sentence):
            continue
        overlap = len(claim & terms)
        if overlap > best_overlap:
            best, best_overlap = sentence, overlap
    return best, best_overlap


def finish(
    text: str, evidence: Evidence, prompt_version: str, *, backend: str = "the model"
) -> Generation:
    """The Generation for a model's whole reply: a refusal, or the text with its citations."""
    reply = text.strip()
    if not reply:
        raise GenerationError(f"{backend} returned an empty answer")
    if is_refusal(reply):
        return Generation(
            REFUSAL, (), True, "the model said the sources do not answer", prompt_version
        )
    hits = evidence.hits
    supported: dict[int, list[str]] = {}  # sentences sharing words with a claim
    fallback: dict[int, str] = {}  # the passage's first sentence, when none does
    unresolved: list[int] = []
    for claim in _claims(reply, evidence):
        if not 1 <= claim.n <= len(hits):
            if claim.n not in unresolved:
                unresolved.append(claim.n)
            continue
        chunk = hits[claim.n - 1].chunk
        sentences = evidence.text.sentences(chunk.chunk_id, chunk.text)
        snippet, overlap = _best_sentence(claim.terms, sentences)
        picked = supported.setdefault(claim.n, [])
        if overlap > 0 and snippet not in picked:
            picked.append(snippet)
        fallback.setdefault(claim.n, snippet)
    citations: list[Citation] = []
    for n in sorted(supported):
        chunk = hits[n - 1].chunk
        order = [s for s, _ in evidence.text.sentences(chunk.chunk_id, chunk.text)]
        picked = sorted(supported[n], key=order.index) or [fallback[n]]
        citations.append(cite(n, hits[n - 1], " ".join(p for p in picked if p)))
    reason = ""
    if unresolved:
        names = ", ".join(f"[{n}]" for n in unresolved)
        reason = f"{names} names no passage it was given; not cited"
    elif not citations:
        reason = "the reply carries no [n] marker"
    return Generation(reply, tuple(citations), False, reason, prompt_version)


def refuse_without_sources(evidence: Evidence, prompt_version: str) -> Generation | None:
    """A refusal when there is nothing to answer from, so no model is asked for nothing."""
    if evidence.hits:
        return None
    return Generation(REFUSAL, (), True, "no passages to answer from", prompt_version)


def relay(
    evidence: Evidence,
    pieces: Callable[[], Iterable[str]],
    prompt_version: str,
    *,
    backend: str,
) -> Iterator[str | Generation]:
    """A backend's `stream`: each text piece as it arrives, then the Generation of them all.

    `pieces` is only called when there are passages to answer from; with none,
    the one item is a refusal and no model is asked.
    """
    early = refuse_without_sources(evidence, prompt_version)
    if early is not None:
        yield early
        return
    parts: list[str] = []
    for piece in pieces():
        if piece:
            parts.append(piece)
            yield piece
    yield finish("".join(parts), evidence, prompt_version, backend=backend)


__all__ = ["finish", "is_refusal", "refuse_without_sources", "relay"]
