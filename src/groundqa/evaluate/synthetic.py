"""Probes made from a corpus's own text, labelled by how they were made.

A user with no probe set still has a corpus, and a corpus holds questions whose
answers are known: every sentence answers something. `make_probes` samples
sentences and turns each into a question-like query, then labels it by what it
does to the index the gate will be fitted on:

- **answerable**: the sentence stays in the corpus, and its section is `expected`;
- **near miss**: the query of a sentence that is then removed from the corpus, with
  every other sentence that states the same fact (the same figures, or most of the
  same words), so the topic is still there and the answer is not;
- **out of scope**: the same kind of query made from text about other things
  (`OUTSIDE`, written for this module), kept only where most of its words are ones
  the corpus never uses.

The corpus to index comes back with the probes (`SyntheticProbes.documents`): a
gate fitted on these probes must be fitted over that corpus, not the original.

Real users do not copy a sentence's words, so a query must not either. Two makers:

- `keywords`: a few of the sentence's content words, weighted by rarity, with the
  answer held out (its figures, or the word it ends on), about a third of them swapped
  for a corpus neighbour (the word that keeps them company most often in other
  sentences), and a word of the heading now and then, after a question word that
  fits what was held out ("How many", "When", "What");
- `heading`: the section's heading as the topic and one or two of the sentence's
  words as the focus, in one of a few question frames, with the same swaps;
- `mixed`: one of the two, chosen at random for each sentence.

What it refuses to do: it never reads a probe set or anything outside the corpus and
`OUTSIDE`, so a gate fitted on its probes is fitted on nothing a benchmark scores. It
is deterministic under `seed`. It does not write fluent questions: how close its
queries come to real ones is measured (`bench/synthetic.py`), not assumed.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from groundqa.errors import UsageError
from groundqa.evaluate.probes import Probe
from groundqa.models import Document, Section
from groundqa.text import DEFAULT_ANALYZER, QUESTION_WORDS, Analyzer, split_sentences

METHODS = ("keywords", "heading", "mixed")
# Shares of the probes made: answerable, near miss, out of scope.
SHARES = (0.5, 0.25, 0.25)
# A sentence worth asking about: this many words, at least this many content words.
MIN_WORDS, MAX_WORDS, MIN_CONTENT = 6, 45, 4
# Another sentence states the same fact when it shares this share of the sentence's
# content terms (or all of its figures and half of its terms).
SAME_FACT = 0.6
SAME_FIGURES = 0.5
# Out-of-scope queries: at most this share of their terms may be ones the corpus uses.
OUTSIDE_KNOWN = 0.34
SWAP = 0.3
HEADING_WORD = 0.5

# Words that carry no topic, which a query made of keywords leaves out (the Analyzer's
# stopword list is shorter: it keeps words that BM25 can still use).
FUNCTION_WORDS = (
    frozenset(
        [
            "a",
            "about",
            "above",
            "across",
            "after",
            "again",
            "against",
            "all",
            "almost",
            "along",
            "also",
            "although",
            "always",
            "am",
            "among",
            "an",
            "and",
            "another",
            "any",
            "anyone",
            "anything",
            "are",
            "around",
            "as",
            "at",
            "away",
            "be",
            "because",
            "been",
            "before",
            "being",
            "below",
            "beside",
            "besides",
            "between",
            "both",
            "but",
            "by",
            "can",
            "cannot",
            "could",
            "did",
            "do",
            "does",
            "doing",
            "done",
            "down",
            "during",
            "each",
            "either",
            "else",
            "enough",
            "even",
            "ever",
            "every",
            "few",
            "for",
            "from",
            "further",
            "had",
            "has",
            "have",
            "having",
            "he",
            "her",
            "here",
            "hers",
            "herself",
            "him",
            "himself",
            "his",
            "how",
            "however",
            "i",
            "if",
            "in",
            "including",
            "into",
            "is",
            "it",
            "its",
            "itself",
            "just",
            "least",
            "less",
            "let",
            "like",
            "many",
            "may",
            "me",
            "might",
            "more",
            "most",
            "much",
            "must",
            "my",
            "myself",
            "near",
            "neither",
            "never",
            "no",
            "nor",
            "not",
            "now",
            "of",
            "off",
            "often",
            "on",
            "once",
            "one",
            "only",
            "onto",
            "or",
            "other",
            "others",
            "otherwise",
            "our",
            "ours",
            "out",
            "over",
            "own",
            "per",
            "perhaps",
            "quite",
            "rather",
            "really",
            "same",
            "shall",
            "she",
            "should",
            "since",
            "so",
            "some",
            "something",
            "sometimes",
            "still",
            "such",
            "than",
            "that",
            "the",
            "their",
            "theirs",
            "them",
            "themselves",
            "then",
            "there",
            "therefore",
            "these",
            "they",
            "this",
            "those",
            "though",
            "through",
            "throughout",
            "thus",
            "to",
            "together",
            "too",
            "toward",
            "towards",
            "under",
            "unless",
            "until",
            "up",
            "upon",
            "us",
            "usually",
            "very",
            "via",
            "was",
            "we",
            "well",
            "were",
            "what",
            "whatever",
            "when",
            "whenever",
            "where",
            "whereas",
            "wherever",
            "whether",
            "which",
            "while",
            "who",
            "whoever",
            "whom",
            "whose",
            "why",
            "will",
            "with",
            "within",
            "without",
            "would",
            "yet",
            "you",
            "your",
            "yours",
            "yourself",
            "first",
            "second",
            "third",
            "also",
        ]
    )
    | QUESTION_WORDS
)
NUMBER_WORDS = frozenset(
    [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
        "thirty",
        "forty",
        "fifty",
        "sixty",
        "seventy",
        "eighty",
        "ninety",
        "hundred",
        "thousand",
        "million",
        "billion",
        "half",
        "quarter",
        "dozen",
    ]
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*[A-Za-z]|\d[\d.,:/]*(?:[A-Za-z%]+)?")
_FIGURE = re.compile(r"\d")
_TIME = re.compile(r"\b\d{1,2}(?:[:.]\d\d)?\s?(?:am|pm|a\.m\.|p\.m\.)|\b\d{1,2}:\d\d\b", re.I)
_MONEY = re.compile(r"[£$€]\s?\d|\d[\d.,]*\s?(?:pounds?|dollars?|euros?|cents?|pence)\b", re.I)
_YEAR = re.compile(r"^(?:1[6-9]|20)\d\d$")
_FRAMES = (
    "{wh} {focus} for {topic}?",
    "{topic}: {wh_lower} {focus}?",
    "{wh} does {topic} say about {focus}?",
)

# Sentences about things no groundqa corpus is likely to hold, written for this module;
# out-of-scope queries are made from them and then checked against the corpus.
OUTSIDE = (
    "The violinist tuned her instrument twice before the concerto began.",
    "Sourdough starter needs feeding with flour and water every day.",
    "The goalkeeper saved three penalties in the semi-final shootout.",
    "Jupiter's largest moon, Ganymede, is bigger than the planet Mercury.",
    "A soufflé collapses when the oven door is opened too early.",
    "The chess grandmaster resigned after forty moves of the endgame.",
    "Octopuses have three hearts and blue copper-based blood.",
    "The marathon route passes the cathedral twice before the finish.",
    "Origami cranes are folded from a single square sheet of paper.",
    "The jazz quartet recorded the album live in one evening.",
    "Honeybees communicate the direction of flowers through a waggle dance.",
    "The sculptor carved the statue from a block of Carrara marble.",
    "A ripe avocado yields slightly when pressed near the stem.",
    "The tennis final lasted almost five hours under the stadium roof.",
    "Comets grow tails of dust and gas as they approach the sun.",
    "The novelist wrote the trilogy longhand in green ink.",
    "Penguins huddle together to survive the Antarctic winter storms.",
    "The orchestra's conductor dropped his baton during the overture.",
    "Espresso is brewed by forcing hot water through finely ground coffee.",
    "The cyclist wore the yellow jersey for eleven stages of the tour.",
    "Volcanic glass called obsidian was once used for surgical blades.",
    "The ballet company toured the opera houses of northern Italy.",
    "Chameleons change colour through cells that reflect light.",
    "The baker glazes the croissants with beaten egg before baking.",
    "The astronaut photographed the aurora from the space station.",
    "The poet's sonnets were published only after her death.",
    "Kangaroos cannot walk backwards because of their tails.",
    "The quarterback threw the winning pass in the final seconds.",
    "Saffron comes from the dried stigmas of crocus flowers.",
    "The painter mixed ultramarine from ground lapis lazuli.",
    "Dolphins sleep with one half of the brain at a time.",
    "The drummer broke two sticks during the encore.",
    "Matcha is a powdered green tea whisked into hot water.",
    "The rowing crew trained on the river before dawn each morning.",
    "A total solar eclipse darkens the sky for a few minutes.",
    "The puppeteer voiced every character in the children's show.",
    "Flamingos turn pink from pigments in the shrimp they eat.",
    "The chef seared the scallops in brown butter and sage.",
    "The rugby team sang their anthem before the kickoff.",
    "Saturn's rings are made mostly of ice and rock.",
    "The mystery novel's detective solved the case on a train.",
    "Sloths descend from their trees about once a week.",
    "The pianist memorised the whole sonata for the recital.",
    "Kimchi is fermented cabbage seasoned with chilli and garlic.",
    "The ski jumper landed beyond the hill record.",
    "Neutron stars spin hundreds of times every second.",
    "The choir rehearsed the oratorio in the old chapel.",
    "Owls turn their heads almost all the way around.",
    "The pastry chef piped meringue onto the lemon tart.",
    "The boxer won the title by a split decision.",
    "A rainbow forms when sunlight is refracted by raindrops.",
    "The playwright revised the third act during rehearsals.",
    "Giraffes need only a few hours of sleep a day.",
    "The sommelier recommended a dry riesling with the fish.",
    "The sprinter false-started and was disqualified from the final.",
    "The telescope's mirror was polished for two years.",
    "The film's soundtrack was composed for a string quartet.",
    "Hummingbirds beat their wings dozens of times a second.",
    "The gardener pruned the roses back to three buds.",
    "The golfer sank a long putt on the eighteenth green.",
)


@dataclass(frozen=True)
class SyntheticProbes:
    """Probes made from a corpus, and the corpus to fit a gate over (near-miss
    sentences removed). `removed` holds each (section id, sentence) taken out."""

    method: str
    seed: int
    documents: tuple[Document, ...]
    probes: tuple[Probe, ...]
    removed: tuple[tuple[str, str], ...]
    sources: tuple[tuple[str, str], ...] = ()  # (probe id, the sentence it was made from)

    def source(self, probe_id: str) -> str:
        return dict(self.sources)[probe_id]

    def counts(self) -> dict[str, int]:
        return dict(Counter(p.kind for p in self.probes))


@dataclass(frozen=True)
class _Sentence:
    """One sentence of the corpus: where it is, its words and its content terms."""

    index: int
    doc: int
    section: int
    text: str
    words: tuple[str, ...]  # surface words, in order
    terms: frozenset[str]  # stems of its content words
    figures: frozenset[str]


class _Corpus:
    """Sentences of a corpus with what the makers need: document frequencies of terms
    across sentences, and which sentences hold each term."""

    def __init__(self, documents: Sequence[Document], analyzer: Analyzer) -> None:
        self.analyzer = analyzer
        self.stop = FUNCTION_WORDS
        self.sentences: list[_Sentence] = []
        self.holding: defaultdict[str, list[int]] = defaultdict(list)
        self.surface: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.vocabulary: set[str] = set()  # every index term, as the gate's unknown_share sees it
        # word -> (a content word, a figure, its stem): a corpus writes a few thousand
        # words millions of times, and each is judged once
        self._words: dict[str, tuple[bool, bool, str]] = {}
        self._facts: dict[tuple[frozenset[str], frozenset[str]], list[int]] = {}
        for d, doc in enumerate(documents):
            for s, section in enumerate(doc.sections):
                self.vocabulary.update(
                    analyzer.terms(f"{doc.title} {section.heading} {section.text}")
                )
                for text in split_sentences(section.text):
                    words = tuple(_WORD.findall(text))
                    judged = [self._judge(w) for w in words]
                    terms = frozenset(stem for content, _, stem in judged if content)
                    pairs = list(zip(words, judged, strict=True))
                    sentence = _Sentence(
                        len(self.sentences),
                        d,
                        s,
                        text,
                        words,
                        terms,
                        frozenset(w.lower() for w, (_, figure, _) in pairs if figure),
                    )
                    self.sentences.append(sentence)
                    for term in terms:
                        self.holding[term].append(sentence.index)
                    for w, (content, _, stem) in pairs:
                        if content:
                            self.surface[stem][w.lower()] += 1
        self.n = len(self.sentences)

    def known_share(self, question: str) -> float:
        """The share of the question's topic terms the corpus uses (1 with none: no
        question without topic words is out of scope by its words)."""
        terms = self.analyzer.query_terms(question)
        return sum(t in self.vocabulary for t in terms) / len(terms) if terms else 1.0

    def _judge(self, word: str) -> tuple[bool, bool, str]:
        judged = self._words.get(word)
        if judged is None:
            figure = _figure(word)
            content = len(word) > 2 and not figure and word.lower() not in self.stop
            terms = self.analyzer.terms(word)
            judged = self._words[word] = (content, figure, terms[0] if terms else word.lower())
        return judged

    def content(self, word: str) -> bool:
        return self._judge(word)[0]

    def stem(self, word: str) -> str:
        return self._judge(word)[2]

    def idf(self, term: str) -> float:
        return math.log((self.n + 1) / (len(self.holding.get(term, ())) + 0.5))

    def eligible(self, sentence: _Sentence) -> bool:
        return (
            MIN_WORDS <= len(sentence.words) <= MAX_WORDS
            and len(sentence.terms) >= MIN_CONTENT
            and not sentence.text.rstrip().endswith("?")
            and not sentence.text.isupper()
        )

    def neighbour(self, term: str, away_from: frozenset[str]) -> str | None:
        """The word that keeps `term` company most often across sentences, relative to
        how common both are, as it is most often written; none in `away_from`."""
        rows = self.holding.get(term, [])
        if len(rows) < 2:
            return None
        together: Counter[str] = Counter()
        for row in rows[:400]:  # enough to find a term's company; bounded for common terms
            together.update(self.sentences[row].terms)
        best, score = None, 0.0
        for other, count in sorted(together.items()):  # sorted: ties fall the same way in every run
            if count < 2 or other == term or other in away_from:
                continue
            s = count / math.sqrt(len(rows) * len(self.holding[other]))
            if s > score:
                best, score = other, s
        return self.surface[best].most_common(1)[0][0] if best else None

    def same_fact(self, sentence: _Sentence) -> list[int]:
        """Other sentences that state what `sentence` states: most of its terms, or its
        figures and half of its terms."""
        return [row for row in self._stating(sentence) if row != sentence.index]

    def _stating(self, sentence: _Sentence) -> list[int]:
        """Every sentence, `sentence` among them, that states what it states, in order.
        It depends on its terms and figures alone, so a fact the corpus repeats (a
        boilerplate clause, a line written a thousand times) is looked up once."""
        key = _fact(sentence)
        rows = self._facts.get(key)
        if rows is not None:
            return rows
        # A sentence that shares at least a share q of n terms holds one of any
        # n - ceil(q * n) + 1 of them: the rarest are the cheapest to look through.
        n = len(sentence.terms)
        least = min(SAME_FACT, SAME_FIGURES if sentence.figures else SAME_FACT)
        rare = sorted(sentence.terms, key=lambda t: (len(self.holding[t]), t))
        rare = rare[: n - math.ceil(least * n - 1e-9) + 1]
        rows = []
        for row in sorted({row for t in rare for row in self.holding[t]}):
            other = self.sentences[row]
            shared = len(sentence.terms & other.terms) / n
            figures = bool(sentence.figures) and sentence.figures <= other.figures
            if shared >= SAME_FACT or (figures and shared >= SAME_FIGURES):
                rows.append(row)
        self._facts[key] = rows
        return rows


def _fact(sentence: _Sentence) -> tuple[frozenset[str], frozenset[str]]:
    """What decides which sentences state the same fact as `sentence`."""
    return sentence.terms, sentence.figures


def _figure(word: str) -> bool:
    """A number, written in figures or in words."""
    return bool(_FIGURE.search(word)) or word.lower() in NUMBER_WORDS


def _question_word(held_out: Sequence[str], sentence: str) -> str:
    """What kind of answer was held out, as the question word for it: a time or a year
    ("When"), a sum of money ("How much"), another figure ("How many"), else "What"."""
    if not held_out or not all(_figure(w) for w in held_out):
        return "What"
    if _TIME.search(sentence) or any(_YEAR.match(w) for w in held_out):
        return "When"
    if _MONEY.search(sentence):
        return "How much"
    return "How many"


def _weighted_sample(
    rng: random.Random, items: Sequence[str], weights: Sequence[float], k: int
) -> list[str]:
    """`k` distinct items, each drawn with chance in proportion to its weight."""
    keyed = sorted(
        ((rng.random() ** (1.0 / max(w, 1e-6)), i) for i, w in enumerate(weights)), reverse=True
    )
    return [items[i] for _, i in sorted(keyed[:k], key=lambda pair: pair[1])]


def _content_words(corpus: _Corpus, sentence: _Sentence) -> list[str]:
    seen: dict[str, str] = {}
    for w in sentence.words:
        if corpus.content(w):
            seen.setdefault(corpus.stem(w), w)
    return list(seen.values())


def _held_out(corpus: _Corpus, sentence: _Sentence, words: Sequence[str]) -> list[str]:
    """The answer a question about `sentence` must not give away: its figures, or else
    the last content word it ends on."""
    figures = [w for w in sentence.words if _figure(w)]
    return figures or list(words[-1:])


def _heading_words(corpus: _Corpus, section: Section) -> list[str]:
    return [w for w in _WORD.findall(section.heading) if corpus.content(w)]


def _swapped(
    corpus: _Corpus, words: Sequence[str], away_from: frozenset[str], rng: random.Random
) -> list[str]:
    """`words` lower-cased, each swapped for its corpus neighbour with chance SWAP."""
    out = []
    for w in words:
        swap = corpus.neighbour(corpus.stem(w), away_from) if rng.random() < SWAP else None
        out.append((swap or w).lower())
    return out


def keywords_query(
    corpus: _Corpus, sentence: _Sentence, section: Section, rng: random.Random
) -> str | None:
    words = _content_words(corpus, sentence)
    held = _held_out(corpus, sentence, words)
    kept = [w for w in words if w not in held]
    if len(kept) < 2:
        return None
    k = min(len(kept), rng.randint(3, 5))
    chosen = _weighted_sample(rng, kept, [corpus.idf(corpus.stem(w)) for w in kept], k)
    out = _swapped(corpus, chosen, sentence.terms, rng)
    heading = [w for w in _heading_words(corpus, section) if corpus.stem(w) not in sentence.terms]
    if heading and rng.random() < HEADING_WORD:
        out.insert(0, rng.choice(heading).lower())
    return f"{_question_word(held, sentence.text)} {' '.join(out)}?"


def heading_query(
    corpus: _Corpus, sentence: _Sentence, section: Section, rng: random.Random
) -> str | None:
    named = _heading_words(corpus, section)[:4]
    named_terms = {corpus.stem(w) for w in named}
    topic = " ".join(_swapped(corpus, named, frozenset(named_terms), rng))
    words = _content_words(corpus, sentence)
    held = _held_out(corpus, sentence, words)
    kept = [w for w in words if w not in held and corpus.stem(w) not in named_terms]
    if not kept:
        return None
    if not topic:
        topic, kept = kept[0].lower(), kept[1:] or kept
    chosen = _weighted_sample(
        rng, kept, [corpus.idf(corpus.stem(w)) for w in kept], min(len(kept), rng.randint(1, 2))
    )
    focus = " ".join(_swapped(corpus, chosen, sentence.terms, rng))
    wh = _question_word(held, sentence.text)
    frame = rng.choice(_FRAMES if wh == "What" else _FRAMES[:2])
    return frame.format(wh=wh, wh_lower=wh.lower(), focus=focus, topic=topic)


_Maker = Callable[[_Corpus, _Sentence, Section, random.Random], str | None]


def mixed_query(
    corpus: _Corpus, sentence: _Sentence, section: Section, rng: random.Random
) -> str | None:
    """One of the other makers, chosen at random for each sentence."""
    return (keywords_query if rng.random() < 0.5 else heading_query)(corpus, sentence, section, rng)


_MAKERS: dict[str, _Maker] = {
    "keywords": keywords_query,
    "heading": heading_query,
    "mixed": mixed_query,
}


def _without(
    documents: Sequence[Document], gone: dict[tuple[int, int], list[str]]
) -> list[Document]:
    """`documents` with the sentences in `gone` ((document, section) -> sentences) cut out."""
    out = []
    for d, doc in enumerate(documents):
        sections = []
        for s, section in enumerate(doc.sections):
            text = section.text
            # A sentence cut n times is cut at its first n places in one pass, not n.
            for sentence, times in Counter(gone.get((d, s), [])).items():
                text = text.replace(sentence, "", times)
            sections.append(replace(section, text=re.sub(r"[ \t]{2,}", " ", text).strip()))
        out.append(replace(doc, sections=tuple(sections)))
    return out


def make_probes(
    documents: Sequence[Document],
    *,
    n: int = 400,
    method: str = "keywords",
    seed: int = 0,
    analyzer: str = DEFAULT_ANALYZER,
) -> SyntheticProbes:
    """About `n` probes made from `documents` by `method` (one of METHODS), half of
    them answerable, a quarter near misses and a quarter out of scope, and the corpus to
    index with them. Fewer come back when the corpus has fewer sentences to ask about."""
    if method not in _MAKERS:
        raise UsageError(f"a probe method is one of {', '.join(METHODS)}, not {method!r}")
    make = _MAKERS[method]
    rng = random.Random(f"{seed}:{method}")
    corpus = _Corpus(documents, Analyzer(analyzer))
    pool = [s for s in corpus.sentences if corpus.eligible(s)]
    rng.shuffle(pool)
    want_answerable, want_near = round(n * SHARES[0]), round(n * SHARES[1])
    probes: list[Probe] = []
    answer_rows: set[int] = set()
    taken: set[int] = set()  # removed sentences
    gone: defaultdict[tuple[int, int], list[str]] = defaultdict(list)
    removed: list[tuple[str, str]] = []
    sources: list[tuple[str, str]] = []
    left_in_section = Counter((s.doc, s.section) for s in corpus.sentences)
    near = 0
    # Facts that can no longer be cut: one of their sentences answers a question, or the
    # cut would empty a section. Both only grow, so each such fact is judged once.
    uncuttable: set[tuple[frozenset[str], frozenset[str]]] = set()
    for sentence in pool:
        section = documents[sentence.doc].sections[sentence.section]
        if sentence.index in taken:
            continue
        fact = _fact(sentence)
        if near < want_near and sentence.index not in answer_rows and fact not in uncuttable:
            same = [sentence.index, *corpus.same_fact(sentence)]
            # Each section keeps at least one sentence after the cut.
            cut = Counter((corpus.sentences[r].doc, corpus.sentences[r].section) for r in same)
            if not answer_rows.isdisjoint(same) or any(
                left_in_section[place] <= count for place, count in cut.items()
            ):
                uncuttable.add(fact)
            else:
                question = make(corpus, sentence, section, rng)
                if question:
                    near += 1
                    for row in same:
                        if row in taken:
                            continue
                        other = corpus.sentences[row]
                        taken.add(row)
                        left_in_section[(other.doc, other.section)] -= 1
                        gone[(other.doc, other.section)].append(other.text)
                        removed.append(
                            (documents[other.doc].sections[other.section].section_id, other.text)
                        )
                    sources.append((f"syn-near-{near}", sentence.text))
                    probes.append(
                        Probe(
                            id=f"syn-near-{near}",
                            question=question,
                            kind="near_miss",
                            group=f"syn:{section.section_id}",
                        )
                    )
                    continue
        if len(answer_rows) < want_answerable:
            question = make(corpus, sentence, section, rng)
            if question:
                answer_rows.add(sentence.index)
                sources.append((f"syn-ans-{len(answer_rows)}", sentence.text))
                probes.append(
                    Probe(
                        id=f"syn-ans-{len(answer_rows)}",
                        question=question,
                        expected=(section.section_id,),
                        group=f"syn:{section.section_id}",
                    )
                )
        if near >= want_near and len(answer_rows) >= want_answerable:
            break
    outside = _outside(
        corpus.known_share, corpus.analyzer, make, rng, n - want_answerable - want_near
    )
    probes.extend(probe for probe, _ in outside)
    sources.extend((probe.id, text) for probe, text in outside)
    return SyntheticProbes(
        method=method,
        seed=seed,
        documents=tuple(_without(documents, gone)),
        probes=tuple(probes),
        removed=tuple(removed),
        sources=tuple(sources),
    )


def out_of_scope_questions(
    known: Callable[[str], float],
    *,
    n: int = 100,
    method: str = "keywords",
    seed: int = 0,
    analyzer: str = DEFAULT_ANALYZER,
) -> list[Probe]:
    """About `n` out-of-scope probes made from `OUTSIDE` by `method`, kept where `known`
    (question -> the share of its topic terms the corpus uses) is at most OUTSIDE_KNOWN.
    Needs no documents: an index can judge `known` itself (see `evaluate.selffit`)."""
    if method not in _MAKERS:
        raise UsageError(f"a probe method is one of {', '.join(METHODS)}, not {method!r}")
    rng = random.Random(f"{seed}:{method}:outside")
    return [probe for probe, _ in _outside(known, Analyzer(analyzer), _MAKERS[method], rng, n)]


def _outside(
    known: Callable[[str], float], analyzer: Analyzer, make: _Maker, rng: random.Random, want: int
) -> list[tuple[Probe, str]]:
    """Out-of-scope queries made from OUTSIDE, kept where the corpus knows few of their
    terms (`known`: question -> the share of its topic terms the corpus uses)."""
    outside = _Corpus(
        [
            Document(
                doc_id="outside",
                title="",
                source="",
                format="text",
                sections=(Section("outside", "", text),),
            )
            for text in OUTSIDE
        ],
        analyzer,
    )
    # Out-of-scope questions are scored against the corpus's own rarity, as a user's are.
    made: list[tuple[Probe, str]] = []
    seen: set[str] = set()
    for _ in range(4):
        order = list(range(len(outside.sentences)))
        rng.shuffle(order)
        for row in order:
            if len(made) >= want:
                return made
            sentence = outside.sentences[row]
            section = Section("outside", "", sentence.text)
            question = make(outside, sentence, section, rng)
            if not question or question in seen:
                continue
            if known(question) > OUTSIDE_KNOWN:
                continue
            seen.add(question)
            probe = Probe(
                id=f"syn-out-{len(made) + 1}",
                question=question,
                kind="out_of_scope",
                group=f"syn:outside:{row}",
            )
            made.append((probe, sentence.text))
    return made
