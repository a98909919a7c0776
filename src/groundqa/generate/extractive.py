"""The extractive answerer: the offline default, which needs no model.

It answers with sentences copied verbatim from the retrieved passages, each
followed by the `[n]` of the passage it came from. It never writes a word of
its own, so every claim in its answer is checkable against its citation.

It quotes from the reader's `Reading` (see `read`). When the answer model read
the passages (the default), it quotes the sentences the model scores as answering,
best first, at most `model_sentences` of them, and declines when none reaches
`min_answer`. Without the model it quotes the sentences that cover most of the
question's topic, the one carrying the kind of fact asked for first, and refuses
when no sentence covers enough of the question. It quotes the best sentence (with the
one after it when that holds the kind of fact asked for and the best does not) and the
sentences scoring within `keep_ratio` of it. `extractive:concise` quotes a further
sentence only where it holds a word of the question's topic that none of those quoted
holds (a second part of the question, not a rewording of the first answer), or where it
ties with the best, so that the reader could not choose between them. It is not the
default: word coverage often ranks the sentence that names the topic above the one that
answers, and the runners-up it cuts are where the answer then is (bench/concise.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from groundqa.generate import Evidence, Generation, cite
from groundqa.models import REFUSAL, Citation, Hit
from groundqa.read import Reader, Reading, Sentence, wanted
from groundqa.read.model import MIN_ANSWER

# Scores closer than this to the best are the reader's tie: it cannot choose between them.
TIE = 1e-9


@dataclass(frozen=True)
class ExtractiveGenerator:
    max_sentences: int = 3
    max_passages: int = 5
    min_coverage: float = 0.3
    keep_ratio: float = 0.75
    type_bonus: float = 0.25
    # With the answer model: the least P(answers) worth quoting, and how many to quote.
    min_answer: float = MIN_ANSWER
    model_sentences: int = 2
    answer_ratio: float = 0.8
    # `extractive:concise`: quote a further sentence only for a topic word the quoted ones
    # lack, or a tie with the best (False, the default: any sentence within `keep_ratio`
    # of the best, up to `max_sentences`).
    concise: bool = False
    quote_ties: bool = True  # with `concise`: quote the sentences tied with the best too

    name = "extractive"
    streams = False

    def reading(self, evidence: Evidence) -> Reading:
        """The evidence's Reading, or one made here when the caller brought none."""
        if evidence.reading is not None:
            return evidence.reading
        reader = Reader(evidence.text, max_passages=self.max_passages, type_bonus=self.type_bonus)
        return reader.read(evidence.question, evidence.weights, evidence.hits)

    def stream(self, evidence: Evidence) -> Iterator[str | Generation]:
        """One piece per cited sentence (`sentence [n]`), then the Generation."""
        result = self.generate(evidence)
        pieces = re.split(r"(?<=\]) (?=\S)", result.text) if not result.refused else [result.text]
        for i, piece in enumerate(pieces):
            yield piece if i == 0 else f" {piece}"
        yield result

    def generate(self, evidence: Evidence) -> Generation:
        reading = self.reading(evidence)
        ranked = reading.ranked()
        if not ranked:
            return Generation(
                REFUSAL, (), True, "no sentence in the passages mentions the question's topic"
            )
        if reading.scored:
            return self._answered(evidence, ranked)
        best = ranked[0]
        if best.coverage < self.min_coverage:
            return Generation(
                REFUSAL,
                (),
                True,
                f"the best sentence covers {best.coverage:.0%} of the question (needs {self.min_coverage:.0%})",
            )
        chosen = [best]
        if wanted(evidence.question) and not best.holds:
            # The fact asked for often sits in the sentence right after the one that
            # names the topic ("... a wind farm. The limit is 35 dB(A)."): take it along.
            follow = reading.following(best)
            if follow is not None and follow.holds:
                chosen.append(follow)
        quoted = {t for c in chosen for t in c.topic}
        for cand in ranked[1:]:
            if len(chosen) >= self.max_sentences or cand.score < self.keep_ratio * best.score:
                break
            # Concise: a further sentence is quoted for a part of the question the
            # quoted ones leave out (a topic word none of them holds), or where the
            # reader cannot tell it from the best (the same score: their passage's title
            # holds the topic, and neither adds to it), never because it scores nearly
            # as well by repeating what the quoted ones already say.
            tied = self.quote_ties and cand.score >= best.score - TIE
            if self.concise and not tied and not set(cand.topic) - quoted:
                continue
            if any(cand.text == c.text for c in chosen):
                continue
            chosen.append(cand)
            quoted.update(cand.topic)
        return _quoted(evidence, chosen)

    def _answered(self, evidence: Evidence, ranked: list[Sentence]) -> Generation:
        """The model's answering sentences, best first; a decline when none answers."""
        best = ranked[0]
        top = best.answer or 0.0
        if top < self.min_answer:
            return Generation(
                REFUSAL,
                (),
                True,
                f"no sentence answers the question: the reader's best scores {top:.2f} "
                f"(needs {self.min_answer:.2f})",
            )
        chosen = [best]
        for cand in ranked[1:]:
            if len(chosen) >= self.model_sentences:
                break
            score = cand.answer or 0.0
            if score < max(self.min_answer, self.answer_ratio * top):
                break
            if all(cand.text != c.text for c in chosen):
                chosen.append(cand)
        return _quoted(evidence, chosen)


def _quoted(evidence: Evidence, chosen: list[Sentence]) -> Generation:
    """The chosen sentences, each followed by its passage's [n], and their citations.
    Best evidence first; a sentence taken along for the asked-for fact stays after it."""
    numbers: dict[int, int] = {}
    snippets: dict[int, list[str]] = {}
    parts: list[str] = []
    for cand in chosen:
        n = numbers.setdefault(cand.hit_index, len(numbers) + 1)
        snippets.setdefault(cand.hit_index, []).append(cand.text)
        parts.append(f"{cand.text} [{n}]")
    hits: tuple[Hit, ...] = evidence.hits
    citations: list[Citation] = [
        cite(n, hits[i], " ".join(snippets[i])) for i, n in numbers.items()
    ]
    return Generation(" ".join(parts), tuple(citations), False, "")
