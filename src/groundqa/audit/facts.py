"""Fact screen: split an answer into claims and check each claim's tokens against its passages.

`split_claims` cuts the answer into sentences, each remembering the `[n]`
markers it ends with or holds. `extract_tokens` pulls out what a machine can
check without understanding prose: quantities with units, percentages, times,
money, years and dates, named standards, EU directives and clause references
(their shapes are in `groundqa.lexicon`). Each token is normalised to one form
(`25,000 tonnes`, `25000 t` and `25 kt` all read `25000000 kg`; `11am`,
`11 a.m.` and `11:00` read `11:00`; `90 per cent` reads `90%`; `ISO-31000`
reads `ISO 31000`) and looked up in the passages, normalised the same way; a
quantity or percentage the claim rounds (`15 hectares` for `15.3 hectares`)
holds within its last written digit. A claim is then:

- NOT_CONTRADICTED: every token is in a passage the claim cites;
- MISATTRIBUTED: every token is in the retrieved passages, one only in a
  passage the claim does not cite (or the claim cites nothing);
- DERIVED: a token is in no passage but is simple arithmetic over numbers in
  the cited passages (a sum, difference, product or quotient of amounts, a
  percentage of one; a percentage as the ratio of two amounts or the change
  between them; a year plus a term), and every other token is found;
- UNSUPPORTED: a token is in no passage and cannot be derived;
- UNVERIFIABLE: the claim has no checkable token.

When tokens disagree the worst wins: UNSUPPORTED, then MISATTRIBUTED, then
DERIVED.

What this screen refuses to do:

- It never judges prose. NOT_CONTRADICTED means no checkable token disagrees
  with the cited passage, not that the sentence is true; a claim without such
  a token is UNVERIFIABLE, and only a `Judge` (an entailment model behind a
  small protocol; none ships offline) is asked about those.
- It never treats a bare number as checkable. `3` or `two` with no unit
  matches too much by accident; a number counts when its unit, its `%`, its
  currency or its form (a time, a date, a clause path) says what it is.
- It never loosens a look-alike into a match: `ISO 31000` is not `ISO 3100`,
  `4.6.1` is not `4.6.1.1`, `11am` is not `11pm`, and `2012/18/EU` is not
  `2012/18/EC` (the suffix names a different act). Each pair is a regression
  test.

Everything here is a pure function over strings; a passage's normalised view is
cached by its text (`passage_facts`).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import cached_property, lru_cache
from typing import Any, Protocol

from groundqa import lexicon as lx
from groundqa.text import split_sentences
from groundqa.verdicts import VERDICTS, ClaimCheck, TokenCheck

METHOD = "token-screen-v1"
# When a claim's tokens disagree, the first verdict in this order wins.
_SEVERITY = ("UNSUPPORTED", "MISATTRIBUTED", "DERIVED", "NOT_CONTRADICTED")
_STATUS_VERDICT = {
    "missing": "UNSUPPORTED",
    "elsewhere": "MISATTRIBUTED",
    "derived": "DERIVED",
    "cited": "NOT_CONTRADICTED",
}


class Judge(Protocol):
    """Reads a claim the token screen cannot, against the text of its cited passages.

    Returns one of `VERDICTS`, or None when it has no opinion. An entailment
    (NLI) model is the intended backend; the audit asks it only about
    UNVERIFIABLE claims and records its answer beside the screen's verdict.
    """

    name: str

    def judge(self, claim: str, evidence: Sequence[str]) -> str | None: ...


# --------------------------------------------------------------------- claims


@dataclass(frozen=True)
class Claim:
    """One sentence of an answer with its markers removed, and the numbers it cites."""

    text: str
    cites: tuple[int, ...]


def _strip_markers(text: str) -> str:
    text = lx.MARKER.sub("", text)
    text = re.sub(r"\s+([.,;:!?])", r"\1", text)
    return " ".join(text.split())


def split_claims(answer_text: str) -> list[Claim]:
    """The answer's sentences, each with the `[n]` numbers that end it or sit in it.

    Sentence splitting puts a marker written after the full stop (`... 30 m. [1]
    Next ...`) at the head of the next sentence; it is moved back to the sentence
    it closes. A marker-only fragment cites for the sentence before it.
    """
    pieces = split_sentences(answer_text)
    raw: list[list[str]] = []
    for piece in pieces:
        lead = lx.LEADING_MARKERS.match(piece)
        if lead and raw:
            raw[-1].append(lead.group(0))
            piece = piece[lead.end() :]
        if piece.strip():
            raw.append([piece])
    claims: list[Claim] = []
    for parts in raw:
        joined = " ".join(parts)
        text = _strip_markers(joined)
        if not text:
            continue
        cites = tuple(dict.fromkeys(lx.marker_numbers(joined)))
        claims.append(Claim(text, cites))
    return claims


# --------------------------------------------------------------------- tokens


@dataclass(frozen=True)
class Token:
    """A checkable fact in a text: what was written, its kind, and its normal form.

    `needs` lists alternative sets of keys; the token is found in a passage that
    holds every key of any one set (a bare `5:30` is 05:30 or 17:30; `1 July 2024`
    is found as itself, or as `1 July` and `2024` in the same passage). `dim` and
    `value` (in canonical units) let quantities be compared across units and used
    in arithmetic; `tol` is half the last written digit, in canonical units.
    `expands` are extra keys a passage holding this token also answers for (a
    passage that says `ISO 31000:2018` answers for `ISO 31000`).
    """

    text: str
    kind: str
    normalised: str
    start: int
    end: int
    needs: tuple[frozenset[str], ...]
    expands: frozenset[str] = frozenset()
    dim: str = ""
    value: Decimal | None = None
    tol: Decimal = Decimal(0)
    unit: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "kind": self.kind, "normalised": self.normalised}


def _dec(text: str) -> Decimal:
    return Decimal(text.replace(",", "").replace(" ", ""))


def _fmt(d: Decimal) -> str:
    """A plain decimal string without exponent or trailing zeros: 25000, 1.5, 0.05."""
    s = format(d.normalize(), "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s or "0"


def _canon(d: Decimal) -> Decimal:
    """A converted value rounded to 15 significant digits, so conversions compare equal."""
    return Decimal(format(d, ".15g"))


def _half_ulp(text: str) -> Decimal:
    """Half the place value of the last digit written: `1.5` -> 0.05, `25,000` -> 0.5."""
    digits = text.replace(",", "")
    decimals = len(digits.split(".", 1)[1]) if "." in digits else 0
    return Decimal(5) * Decimal(10) ** -(decimals + 1)


def _single(key: str) -> tuple[frozenset[str], ...]:
    return (frozenset([key]),)


def _quantity_tokens(m: re.Match[str]) -> list[Token]:
    found = lx.unit_at(m.string, m.start("rest"))
    if found is None:
        return []
    (name, unit, factor), end = found
    groups = m.groupdict()
    if unit in ("year", "month", "s") and re.fullmatch(lx.YEAR, groups.get("num") or ""):
        return []  # `the 2024 year` is a year, not a span of 2024 years
    scale = lx.SCALES[groups["scale"]] if groups.get("scale") else Decimal(1)
    if groups.get("word"):
        written = [(m["word"], Decimal(lx.WORD_NUMBERS[m["word"].lower()]), Decimal("0.5"))]
    else:
        written = [(m["num"], _dec(m["num"]), _half_ulp(m["num"]))]
        if m["lo"]:
            written.insert(0, (m["lo"], _dec(m["lo"]), _half_ulp(m["lo"])))
    surface = m.string[m.start("rest") : end]
    out = []
    for text, value, half in written:
        canon = _canon(value * scale * factor)
        key = f"{_fmt(canon)} {unit}"
        out.append(
            Token(
                text=m.string[m.start() : end] if len(written) == 1 else f"{text} {surface}",
                kind="quantity",
                normalised=key,
                start=m.start(),
                end=end,
                needs=_single(key),
                expands=frozenset({f"{_fmt(canon)} dB"}) if unit == "dBA" else frozenset(),
                dim=f"q:{unit}",
                value=canon,
                tol=half * scale * factor,
                unit=name,
            )
        )
    return out


def _percent_tokens(m: re.Match[str]) -> list[Token]:
    out = []
    for g in ("lo", "num"):
        if m[g]:
            v = _dec(m[g])
            key = f"{_fmt(v)}%"
            out.append(
                Token(
                    text=m.group(0) if g == "num" and not m["lo"] else f"{m[g]}%",
                    kind="percent",
                    normalised=key,
                    start=m.start(),
                    end=m.end(),
                    needs=_single(key),
                    dim="pct",
                    value=v,
                    tol=_half_ulp(m[g]),
                    unit="%",
                )
            )
    return out


def _money_token(m: re.Match[str], currency: str, factor: Decimal = Decimal(1)) -> Token:
    scale_word = (m["scale"] or "").lower()
    scale = {
        "thousand": Decimal(1000),
        "k": Decimal(1000),
        "million": Decimal(10) ** 6,
        "m": Decimal(10) ** 6,
        "billion": Decimal(10) ** 9,
        "bn": Decimal(10) ** 9,
    }.get(scale_word, Decimal(1))
    value = _dec(m["num"]) * scale * factor
    key = f"{currency} {_fmt(value)}"
    return Token(
        text=m.group(0),
        kind="money",
        normalised=key,
        start=m.start(),
        end=m.end(),
        needs=_single(key),
        dim=f"money:{currency}",
        value=value,
        tol=_half_ulp(m["num"]) * scale * factor,
        unit=currency,
    )


def _time_key(h: int, minute: int) -> str:
    return f"{h:02d}:{minute:02d}"


def _time_tokens_12(m: re.Match[str]) -> list[Token]:
    h, minute = int(m["h"]), int(m["m"] or 0)
    pm = m["mer"].lower().startswith("p")
    h24 = (h % 12) + (12 if pm else 0)
    key = _time_key(h24, minute)
    return [Token(m.group(0), "time", key, m.start(), m.end(), _single(key))]


def _time_tokens_24(m: re.Match[str]) -> list[Token]:
    h, minute = int(m["h"]), int(m["m"])
    key = _time_key(h, minute)
    if 1 <= h <= 11:
        # Without a.m./p.m. a clock time under 12 may be either half of the day.
        alt = _time_key(h + 12, minute)
        needs = (frozenset([key]), frozenset([alt]))
        return [Token(m.group(0), "time", key, m.start(), m.end(), needs, frozenset([alt]))]
    return [Token(m.group(0), "time", key, m.start(), m.end(), _single(key))]


def _time_tokens_word(m: re.Match[str]) -> list[Token]:
    key = "00:00" if m["w"].lower() == "midnight" else "12:00"
    return [Token(m.group(0), "time", key, m.start(), m.end(), _single(key))]


def _month(name: str) -> int:
    return lx.MONTHS[name.rstrip(".")]


def _date_tokens(m: re.Match[str]) -> list[Token]:
    groups = m.groupdict()
    month = int(groups["m"]) if groups.get("m") else _month(groups["mon"])
    day = int(re.sub(r"\D", "", groups["d"])) if groups.get("d") else None
    year = groups.get("y")
    needs: tuple[frozenset[str], ...]
    if day is not None and year:
        key = f"{year}-{month:02d}-{day:02d}"
        dm, ym = f"--{month:02d}-{day:02d}", f"{year}-{month:02d}"
        needs = (frozenset([key]), frozenset([dm, year]))
        expands = frozenset([dm, ym, year])
    elif day is not None:
        key = f"--{month:02d}-{day:02d}"
        needs, expands = _single(key), frozenset()
    else:
        key = f"{year}-{month:02d}"
        needs, expands = _single(key), frozenset([str(year)])
    return [Token(m.group(0), "date", key, m.start(), m.end(), needs, expands)]


def _year_tokens(m: re.Match[str]) -> list[Token]:
    key = m.group(0)
    return [
        Token(key, "date", key, m.start(), m.end(), _single(key), dim="year", value=Decimal(key))
    ]


def _standard_tokens(m: re.Match[str]) -> list[Token]:
    body = m["body"]
    base = f"{body} {int(m['num'])}{m['part'] or ''}"
    key = f"{base}:{m['year']}" if m["year"] else base
    expands = {base}
    for joint, parts in (("AS/NZS", ("AS", "NZS")), ("BS EN", ("EN",)), ("ISO/IEC", ("ISO",))):
        if body == joint:
            expands |= {f"{p} {int(m['num'])}{m['part'] or ''}" for p in parts}
    return [
        Token(m.group(0), "standard", key, m.start(), m.end(), _single(key), frozenset(expands))
    ]


def _money_code_tokens(m: re.Match[str]) -> list[Token]:
    code = m["code"]
    if code in lx.CURRENCY_CODES or (m["num"] and ("," in m["num"] or "." in m["num"])):
        return [_money_token(m, code)]
    return []


def _money_symbol_tokens(m: re.Match[str]) -> list[Token]:
    sym = m["sym"]
    currency = (
        lx.DOLLAR_PREFIXES.get(m["pre"] or "", "USD") if sym == "$" else lx.CURRENCY_SYMBOLS[sym]
    )
    return [_money_token(m, currency)]


def _money_word_tokens(m: re.Match[str]) -> list[Token]:
    currency, factor = lx.MONEY_WORDS[m["word"].lower()]
    return [_money_token(m, currency, factor)]


def _directive_tokens(m: re.Match[str]) -> list[Token]:
    sfx = m["sfx"].upper() if m["sfx"].lower() == "euratom" else m["sfx"]
    base = f"{m['y']}/{m['n']}"
    key = f"{base}/{sfx}"
    return [
        Token(m.group(0), "directive", key, m.start(), m.end(), _single(key), frozenset([base]))
    ]


def _directive_bare_tokens(m: re.Match[str]) -> list[Token]:
    key = f"{m['y']}/{m['n']}"
    return [Token(m.group(0), "directive", key, m.start(), m.end(), _single(key))]


def _regulation_tokens(m: re.Match[str]) -> list[Token]:
    key = f"({m['sfx']}) {m['n']}/{m['y']}"
    return [Token(m.group(0), "directive", key, m.start(), m.end(), _single(key))]


def _ref_keys(num: str) -> tuple[str, frozenset[str]]:
    """`4.2(a)` -> key `§4.2(a)`, and the passage also answers for `§4.2`."""
    key = f"§{num.rstrip('.')}"
    bare = re.sub(r"\(.*", "", key)
    return key, frozenset([bare]) if bare != key else frozenset()


def _ref_labelled_tokens(m: re.Match[str]) -> list[Token]:
    out = []
    for num in re.findall(lx.REF_NUM, m["nums"]):
        key, expands = _ref_keys(num)
        out.append(Token(m.group(0), "clause", key, m.start(), m.end(), _single(key), expands))
    return out


def _ref_dotted_tokens(m: re.Match[str]) -> list[Token]:
    key, expands = _ref_keys(m.group(0))
    return [Token(m.group(0), "clause", key, m.start(), m.end(), _single(key), expands)]


@dataclass(frozen=True)
class _Pattern:
    """One token pattern, and cheap tests that let a scan skip it on most texts.

    A pattern runs only on text with a digit (when it needs one) and with one of
    `any_of` (compared lower-cased when `folded`); `in` on a string costs next to
    nothing beside a regex pass, and most passages lack most kinds.
    """

    regex: re.Pattern[str]
    make: Callable[[re.Match[str]], list[Token]]
    digit: bool = True
    any_of: tuple[str, ...] = ()
    folded: bool = True


# Patterns that start with a letter, a bracket or a currency sign, each a pass of its
# own, run first: `2012/18` after `Directive`, `4360` after `AS/NZS`, `19,800` after
# `TRD` and `3.2` after `section` belong to them.
_LEADING: tuple[_Pattern, ...] = (
    _Pattern(lx.DIRECTIVE_BARE, _directive_bare_tokens, any_of=("directive",)),
    _Pattern(lx.EU_REGULATION, _regulation_tokens, any_of=("(e",)),
    _Pattern(lx.STANDARD_KNOWN, _standard_tokens, any_of=tuple(lx.BODIES.split("|")), folded=False),
    _Pattern(lx.MONEY_CODE, _money_code_tokens),
    _Pattern(lx.STANDARD_CODE, _standard_tokens),
    _Pattern(lx.REF_LABELLED, _ref_labelled_tokens),
    _Pattern(lx.MONEY_SYMBOL, _money_symbol_tokens, any_of=tuple(lx.CURRENCY_SYMBOLS)),
)
# Patterns that start with a digit share one pass: a regex that fails at once on
# every non-digit is several times cheaper than a pass per pattern. Where two could
# start at one digit the earlier in this list wins, so `2012/18/EU` is a directive,
# `10:30pm` a 12-hour time and `1 July 2024` a date, not a quantity of joules.
_DIGIT_LED: tuple[_Pattern, ...] = (
    _Pattern(lx.DIRECTIVE, _directive_tokens),
    _Pattern(lx.REF_DOTTED, _ref_dotted_tokens),
    _Pattern(lx.DATE_ISO, _date_tokens),
    _Pattern(lx.TIME_12, _time_tokens_12),
    _Pattern(lx.TIME_24, _time_tokens_24),
    _Pattern(lx.MONEY_WORD, _money_word_tokens),
    _Pattern(lx.DATE_DMY, _date_tokens),
    _Pattern(lx.PERCENT, _percent_tokens),
    _Pattern(lx.QUANTITY, _quantity_tokens),
)
# Then what is left: month-first dates (after `1 March 2023` is taken whole), time
# words, spelled-out quantities, and last a bare year, which any other kind outranks.
_TRAILING_PATTERNS: tuple[_Pattern, ...] = (
    _Pattern(lx.DATE_MDY, _date_tokens, any_of=lx.MONTH_ABBREVIATIONS, folded=False),
    _Pattern(lx.DATE_MY, _date_tokens, any_of=lx.MONTH_ABBREVIATIONS, folded=False),
    _Pattern(lx.TIME_WORD, _time_tokens_word, digit=False, any_of=("noon", "midday", "midnight")),
    _Pattern(lx.QUANTITY_WORD, _quantity_tokens, digit=False),
    _Pattern(lx.YEAR_ALONE, _year_tokens),
)
_DIGIT_ALTERNATIVES = re.compile(
    r"(?=\d)(?:"
    + "|".join(
        f"(?P<a{i}>{re.sub(r'[(][?]P<[a-z0-9_]+>', '(?:', p.regex.pattern)})"
        for i, p in enumerate(_DIGIT_LED)
    )
    + ")"
)
_DIGIT = re.compile(r"\d")


def _take(taken: bytearray, tokens: list[Token], found: list[Token]) -> bool:
    """Keep `tokens` unless they overlap a span already taken; say whether they were kept."""
    # A quantity's unit is read past its match, so the tokens say where they end.
    s, e = min(t.start for t in tokens), max(t.end for t in tokens)
    if taken.find(1, s, e) >= 0:
        return False
    taken[s:e] = b"\x01" * (e - s)
    found.extend(tokens)
    return True


def _run(p: _Pattern, text: str, taken: bytearray, found: list[Token]) -> None:
    for m in p.regex.finditer(text):
        if taken.find(1, m.start(), m.end()) < 0:
            tokens = p.make(m)
            if tokens:
                _take(taken, tokens, found)


def _run_digit_led(text: str, taken: bytearray, found: list[Token]) -> None:
    pos = 0
    while (m := _DIGIT_ALTERNATIVES.search(text, pos)) is not None:
        start, first = m.start(), int((m.lastgroup or "a0")[1:])
        end = start + 1
        # The first alternative that matched may still be refused (a number with no
        # unit is no quantity); the later ones get their turn at the same digit.
        for p in _DIGIT_LED[first:]:
            mm = p.regex.match(text, start)
            if mm is None or taken.find(1, mm.start(), mm.end()) >= 0:
                continue
            tokens = p.make(mm)
            if tokens and _take(taken, tokens, found):
                end = max(mm.end(), end)
                break
        pos = end


def _scan(text: str) -> list[Token]:
    has_digit = _DIGIT.search(text) is not None
    lowered = text.lower()
    # One byte per character marks what an earlier pattern took.
    taken = bytearray(len(text))
    found: list[Token] = []

    def opens(p: _Pattern) -> bool:
        if p.digit and not has_digit:
            return False
        haystack = lowered if p.folded else text
        return not p.any_of or any(a in haystack for a in p.any_of)

    for p in _LEADING:
        if opens(p):
            _run(p, text, taken, found)
    if has_digit:
        _run_digit_led(text, taken, found)
    for p in _TRAILING_PATTERNS:
        if opens(p):
            _run(p, text, taken, found)
    found.sort(key=lambda t: t.start)
    return found


def extract_tokens(text: str) -> list[Token]:
    """The checkable tokens of `text`, in reading order, each normalised."""
    return _scan(text)


# ------------------------------------------------------------------- passages


class PassageFacts:
    """A passage's tokens as keys to look up, its amounts, and (on demand) its numbers.

    `keys` holds every normal form the passage answers for; `amounts` maps a
    dimension (`q:m`, `money:TRD`, `pct`, `year`) to its sorted canonical values;
    `measures` maps a written unit to them, for matching within rounding.
    `numbers` are read only when a claim needs arithmetic, which most never do.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _scan(text)
        keys: set[str] = set()
        amounts: dict[str, list[Decimal]] = {}
        measures: dict[str, list[Decimal]] = {}
        for t in self.tokens:
            keys.add(t.normalised)
            keys |= t.expands
            for need in t.needs:
                if len(need) == 1:
                    keys |= need
            if t.value is not None and t.dim:
                amounts.setdefault(t.dim, []).append(t.value)
                if t.kind in ("quantity", "percent"):
                    measures.setdefault(t.unit, []).append(t.value)
        self._heads: list[tuple[int, int]] = []
        for m in lx.PASSAGE_REF.finditer(text):
            keys.add(f"§{m['n'] or m['d']}")
            if m["n"]:
                self._heads.append(m.span("n"))
        self.keys = frozenset(keys)
        self.amounts = {dim: tuple(sorted(v)) for dim, v in amounts.items()}
        self.measures = {unit: tuple(sorted(v)) for unit, v in measures.items()}

    @cached_property
    def numbers(self) -> tuple[Decimal, ...]:
        """Multipliers for arithmetic: counts and measures as written (`60` penalty
        units, `20` megalitres); not identifiers, clause numbers, dates or times, and
        not money or percentages, which enter the arithmetic as amounts of their own.
        """
        skip = bytearray(len(self.text))
        spans = [(t.start, t.end) for t in self.tokens if t.kind != "quantity"]
        for s, e in [*spans, *self._heads]:
            skip[s:e] = b"\x01" * (e - s)
        found = [
            _dec(m["num"])
            for m in lx.BARE_NUMBER.finditer(self.text)
            if skip.find(1, m.start(), m.end()) < 0
        ]
        found += [Decimal(lx.WORD_NUMBERS[w.lower()]) for w in lx.BARE_WORD.findall(self.text)]
        return tuple(sorted(found))


@lru_cache(maxsize=4096)
def passage_facts(text: str) -> PassageFacts:
    """The facts of a passage's text, read once: the same few passages come back question
    after question."""
    return PassageFacts(text)


def _holds(token: Token, facts: PassageFacts) -> bool:
    if any(need <= facts.keys for need in token.needs):
        return True
    # A claim that rounds (`15 hectares` for `15.3 hectares`, `76%` for `76.3%`) holds
    # when the passage's value, in the same unit, lies within the claim's last written
    # digit. Other units match only exactly (`1.5 km` is `1,500 metres`; `2 days` is
    # not `36 hours`), and money only exactly (`£2` is not `£2.40`).
    if token.kind in ("quantity", "percent") and token.value is not None:
        return _near(facts.measures.get(token.unit, ()), token.value, token.tol)
    return False


def _near(values: Sequence[Decimal], target: Decimal, tol: Decimal) -> bool:
    i = bisect.bisect_left(values, target - tol)
    return i < len(values) and values[i] <= target + tol


# ----------------------------------------------------------------- arithmetic


def _find(values: Sequence[Decimal], lo: Decimal, hi: Decimal, skip: int = -1) -> Decimal | None:
    """A value in [lo, hi] other than the one at index `skip` (the operand itself)."""
    i = bisect.bisect_left(values, lo)
    j = bisect.bisect_right(values, hi)
    for k in range(i, min(j, i + 2)):
        if k != skip:
            return values[k]
    return None


def _show(d: Decimal) -> str:
    return _fmt(Decimal(format(d, ".6g")))


def _derive(token: Token, cited: Sequence[PassageFacts]) -> str | None:
    """How `token` follows from numbers in the cited passages, or None.

    An amount (a quantity or money) may be the sum or difference of two amounts
    in its unit, a same-unit amount times or divided by a number written in the
    passages (`60` penalty units at `TRD 330` is `TRD 19800`), or a written
    percentage of one. It must come out to the precision it is written with and
    within 0.5% (`$5 billion` is not any product between 4.5 and 5.5 billion). A
    percentage may only be the ratio of two amounts in one unit, or the change
    from one to the other: sums and multiples of percentages agree with a claimed
    figure by accident too often to count. A year may be a year plus or minus a
    number of years.
    """
    if token.value is None or not token.dim or not cited:
        return None
    if token.dim == "pct":
        return _derive_percentage(token, cited)
    if token.dim == "year":
        return _derive_year(token, cited)
    t = token.value
    tol = min(token.tol, abs(t) / 200)
    same = sorted(v for f in cited for v in f.amounts.get(token.dim, ()))
    numbers = sorted(v for f in cited for v in f.numbers if v not in (0, 1))
    percents = sorted(v for f in cited for v in f.amounts.get("pct", ()))
    for i, a in enumerate(same):
        if (b := _find(same, t - a - tol, t - a + tol, i)) is not None:
            return f"{_show(a)} + {_show(b)}"
        if a > t and (b := _find(same, a - t - tol, a - t + tol, i)) is not None:
            return f"{_show(a)} − {_show(b)}"
        if a <= 0:
            continue
        if (c := _find(numbers, (t - tol) / a, (t + tol) / a)) is not None:
            return f"{_show(a)} × {_show(c)}"
        if t - tol > 0 and (c := _find(numbers, a / (t + tol), a / (t - tol))) is not None:
            return f"{_show(a)} ÷ {_show(c)}"
        if (p := _find(percents, 100 * (t - tol) / a, 100 * (t + tol) / a)) is not None:
            return f"{_show(p)}% of {_show(a)}"
    return None


def _derive_percentage(token: Token, cited: Sequence[PassageFacts]) -> str | None:
    assert token.value is not None
    t, tol = token.value, token.tol
    if t - tol <= 0:
        return None
    dims = sorted({d for f in cited for d in f.amounts if d not in ("pct", "year")})
    for dim in dims:
        values = sorted(v for f in cited for v in f.amounts.get(dim, ()))
        for i, a in enumerate(values):
            if a <= 0:
                continue
            # a is t% of b
            if (b := _find(values, 100 * a / (t + tol), 100 * a / (t - tol), i)) is not None:
                return f"{_show(a)} ÷ {_show(b)}"
            # a change of t% from b to a: a = b(1 ± t/100)
            for sign in (1, -1):
                ends = (1 + sign * (t - tol) / 100, 1 + sign * (t + tol) / 100)
                lo, hi = min(ends), max(ends)
                if lo > 0 and (b := _find(values, a / hi, a / lo, i)) is not None:
                    return f"change from {_show(b)} to {_show(a)}"
    return None


def _derive_year(token: Token, cited: Sequence[PassageFacts]) -> str | None:
    assert token.value is not None
    t = token.value
    durations = sorted({v for f in cited for v in f.amounts.get("q:year", ())})
    for y in sorted({v for f in cited for v in f.amounts.get("year", ())}):
        for d in durations:
            if y + d == t:
                return f"{_show(y)} + {_show(d)} years"
            if y - d == t:
                return f"{_show(y)} − {_show(d)} years"
    return None


# ---------------------------------------------------------------- claim verdicts


def check_claim(
    claim: Claim, positions: dict[int, int], facts: Sequence[PassageFacts]
) -> ClaimCheck:
    """Each token of the claim looked up in the passages, and the verdict they give.

    `positions` maps a citation number to the 1-based position of the passage it
    names; `facts` are the retrieved passages' facts, in that order.
    """
    cited = sorted({positions[n] for n in claim.cites if n in positions})
    cited_facts = [facts[p - 1] for p in cited]
    rows: list[TokenCheck] = []
    for tok in extract_tokens(claim.text):
        found_in = tuple(i for i, f in enumerate(facts, start=1) if _holds(tok, f))
        how = None
        if any(p in cited for p in found_in):
            status = "cited"
        elif found_in:
            status = "elsewhere"
        else:
            how = _derive(tok, cited_facts)
            status = "derived" if how else "missing"
        rows.append(TokenCheck(tok.text, tok.kind, tok.normalised, found_in, status, how))
    if not rows:
        verdict = "UNVERIFIABLE"
    else:
        found = {_STATUS_VERDICT[r.status] for r in rows}
        verdict = next(v for v in _SEVERITY if v in found)
    return ClaimCheck(claim.text, claim.cites, tuple(cited), tuple(rows), verdict)


def ask_judge(judge: Judge, claim: ClaimCheck, texts: Sequence[str]) -> ClaimCheck:
    """The claim with the judge's verdict on it, read against its cited passages.

    A claim that cites nothing is read against every retrieved passage, and a
    judge's NOT_CONTRADICTED there becomes MISATTRIBUTED: the support exists,
    the citation does not.
    """
    cited = claim.passages
    evidence = [texts[p - 1] for p in cited] if cited else list(texts)
    verdict = judge.judge(claim.claim, evidence)
    if verdict is not None and verdict not in VERDICTS:
        raise ValueError(f"judge {judge.name!r} returned {verdict!r}; expected one of {VERDICTS}")
    if verdict == "NOT_CONTRADICTED" and not cited:
        verdict = "MISATTRIBUTED"
    return replace(claim, judge_verdict=verdict, judged=True)
