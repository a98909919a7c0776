"""Lexicon: what a citation marker, a sentence, a fact and an instruction look like in text.

Every stage that reads text for one of these asks here, so that they agree:

- citation markers: `[3]` or a group such as `[1, 3]`, as the generators write
  them and the audit, the streaming API and the citation snippets read them;
- sentence spans: where each sentence of `text.split_sentences` sits in the text;
- legal units: the words and abbreviations that name a division of an
  instrument (`Part`, `s.`, `reg.`), for clause references, PDF headings and
  clause tokens in prose;
- facts: numbers and number words, units of measure, percentages, money, times,
  dates and years, named standards, EU directives and regulations, and clause
  references, as the audit's token screen reads them; and the looser tests the
  extractive answerer ranks sentences by (does it mention a time, an amount?);
- instructions: the sentences of a passage addressed to the model that answers
  from it rather than to a reader (`find_instructions`).

What this module refuses to do: it describes text and judges nothing. It does
not normalise a token, decide a verdict, rank a sentence or flag an answer; the
stages that do import it, and it imports no stage.

The instruction rules (`find_instructions`), all case-insensitive:

- override: `ignore` / `disregard` / `forget` / `override` / `bypass` followed by
  `previous`, `prior`, `above`, `earlier`, `original`, `system` ... and
  `instructions`, `prompt`, `messages`, `context`, `commands` (`rules` and
  `guidelines` only after `all`: "ignore all previous rules"); or `your
  instructions` / `your programming`; or "ignore everything above";
- role: "you are now (an unrestricted) assistant", "you are no longer an AI",
  "from now on you will answer ...", "act as / pretend to be an AI ...", "if you
  are an AI", "as a language model, you ...", "note to the AI";
- answer-with: "instead, say that ...", "respond only with ...", "always reply
  with ...", "tell the user that ..." (as a command, not "the app will tell the
  user that ...");
- no-citation: "do not cite the sources", "never mention this instruction",
  "do not include citations in your answer";
- reveal: "reveal your system prompt", "print the hidden instructions",
  `system prompt:`;
- verbatim: "print the following text verbatim", "output this:";
- chat-markup: chat-template tokens (`<|im_start|>`, `[INST]`, `<<SYS>>`), a
  `### Instruction` heading, or text posing as one of our own source fences;
- role-marker: a line that opens with `Assistant:`, `System:` or `Developer:`
  and speaks to or as the model (`you`, `your`, `I`, `me`, `my` on that line).

Each rule names what a model is given or is (instructions, prompt, AI; a bare
`assistant` is also a job, so it counts only in "note to the assistant" or a
chat line), or a command to say something in a form only a model is asked for, so
ordinary imperatives are not instructions: "Apply for a permit before you start
work", "Do not feed the animals", "Disregard the previous guidance issued in
2019", "You are now entering the old town", "Print the following form" and
"System: a set of connected parts" are each a regression test. What an
instruction asks to be said (its payload: the words after `say`, `answer`,
`reply with`, or the quotation there) is kept with it.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from groundqa.text import split_sentences

# ------------------------------------------------------------------ citation markers

# `[3]` or a group such as `[1, 3]`; group 1 holds the numbers.
MARKER = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")
# The markers a piece of text opens with: `[1] Next ...` after a sentence split.
LEADING_MARKERS = re.compile(r"^(?:\s*\[\d{1,3}(?:\s*,\s*\d{1,3})*\])+")


def marker_numbers(text: str) -> list[int]:
    """Every number the markers in `text` name, in order, repeats kept: `[1, 3] [1]` -> 1, 3, 1."""
    return [int(n) for m in MARKER.finditer(text) for n in m.group(1).split(",")]


# ------------------------------------------------------------------ sentences


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """`(start, end)` in `text` of each sentence `split_sentences` finds, in order."""
    spans: list[tuple[int, int]] = []
    cursor = 0
    for piece in split_sentences(text):
        # split_sentences only strips its pieces, so each is found; a miss is skipped.
        at = text.find(piece, cursor)
        if at < 0:
            continue
        spans.append((at, at + len(piece)))
        cursor = at + len(piece)
    return spans


# ------------------------------------------------------------------ legal units

# The divisions of a legal instrument, by the word or abbreviation that names them
# in a heading ("Part 2", "reg 12"), and the prefix a clause reference writes for each.
LEGAL_UNITS: dict[str, str] = {
    "part": "Pt ",
    "pt": "Pt ",
    "division": "Div ",
    "div": "Div ",
    "chapter": "Ch ",
    "ch": "Ch ",
    "schedule": "Sch ",
    "sch": "Sch ",
    "section": "s.",
    "sec": "s.",
    "s": "s.",
    "clause": "cl.",
    "cl": "cl.",
    "regulation": "reg.",
    "reg": "reg.",
    "rule": "r.",
    "r": "r.",
    "article": "art.",
    "art": "art.",
    "paragraph": "para.",
    "para": "para.",
    "annex": "Annex ",
    "appendix": "App ",
}
# The words a heading line of a PDF without an outline may open with, written out.
HEADING_UNITS = ("chapter", "part", "division", "subdivision", "schedule", "section")
# A division heading line: its unit, its number ("4", "2A", "IV") and its title, as in
# "Part 2 — Obligations" or "SCHEDULE 1 Fees" (PDF and plain-text loaders).
DIVISION_HEADING = re.compile(
    rf"^({'|'.join(HEADING_UNITS)})\s+(\d{{1,3}}[A-Z]?|[IVXLC]{{1,7}})"
    r"(?:\s*[-–—:.]\s*|\s+|$)(.*)$",
    re.IGNORECASE,
)
# What names a clause number in running text ("section 3.2", "ss. 4 and 5", "reg. 12",
# "§ 7"): the words, singular or plural, and the abbreviations, each with its full
# stop, by their singular. Divisions, annexes and appendices are not read there.
CITING_WORDS = (
    "section",
    "clause",
    "regulation",
    "rule",
    "article",
    "paragraph",
    "chapter",
    "schedule",
    "part",
)
CITING_ABBREVIATIONS: dict[str, tuple[str, ...]] = {
    "s": ("ss",),
    "sec": ("secs",),
    "cl": ("cll",),
    "reg": ("regs",),
    "r": (),
    "art": ("arts",),
    "para": ("paras",),
    "ch": (),
    "sch": (),
}
_CITING = (
    *(f"{w}s?" for w in CITING_WORDS),
    *(rf"{re.escape(a)}\." for s, plural in CITING_ABBREVIATIONS.items() for a in (s, *plural)),
    "§§?",
)
# The alternatives cannot both match before a number, so their order does not matter.
_REF_LABEL = "(?i:" + "|".join(_CITING) + ")"
_REF_FIRST = "".join(sorted({c for w in _CITING for c in (w[0].lower(), w[0].upper())}))

# ------------------------------------------------------------------ facts

# A number as written: grouped thousands or plain digits, with an optional decimal part.
# It must not continue another number or identifier (`4.6.1`, `2012/18`, `11:00`, `H2`).
NUM = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
NUM_START = r"(?<![\w.,/:°-])"
NUM_END = r"(?!\d|[.,]\d)"

WORD_NUMBERS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
}
SCALES = {"thousand": Decimal(1000), "million": Decimal(10) ** 6, "billion": Decimal(10) ** 9}


def _plural(*words: str) -> tuple[str, ...]:
    return tuple(w for word in words for w in (word, word + "s"))


def _spellings(stem: str) -> tuple[str, ...]:
    """`kilomet` -> kilometre(s), kilometer(s)."""
    return _plural(stem + "re", stem + "er")


# Each unit: its name, the canonical unit it converts to, the factor, then the
# spellings matched in any case and those matched only as written, which keeps
# `ML` (megalitres) apart from `mL` (millilitres), and `5 M` (million) or `5G` (a
# network) from metres and grams.
UNITS: tuple[tuple[str, str, Decimal, tuple[str, ...], tuple[str, ...]], ...] = (
    ("km2", "m2", Decimal(10) ** 6, ("km2", "km²", "sq km", *_spellings("square kilomet")), ()),
    ("m2", "m2", Decimal(1), ("m2", "m²", "sq m", "sq. m", *_spellings("square met")), ()),
    ("ha", "m2", Decimal(10_000), _plural("hectare"), ("ha",)),
    ("acre", "acre", Decimal(1), _plural("acre"), ()),
    ("m3", "L", Decimal(1000), ("m3", "m³", *_spellings("cubic met")), ()),
    ("km/h", "km/h", Decimal(1), ("km/h", "kph", "kilometres per hour"), ()),
    ("mph", "mph", Decimal(1), ("mph", "miles per hour"), ()),
    ("m/s", "m/s", Decimal(1), ("m/s",), ()),
    ("mg/kg", "mg/kg", Decimal(1), ("mg/kg",), ()),
    ("mg/L", "mg/L", Decimal(1), ("mg/l",), ()),
    ("ug/m3", "ug/m3", Decimal(1), ("µg/m3", "μg/m3", "ug/m3", "µg/m³", "μg/m³"), ()),
    ("mg/m3", "mg/m3", Decimal(1), ("mg/m3", "mg/m³"), ()),
    ("mg/day", "mg/day", Decimal(1), ("mg/day", "mg/d"), ()),
    ("g/day", "g/day", Decimal(1), ("g/day", "g/d"), ()),
    ("mg/dL", "mg/dL", Decimal(1), ("mg/dl",), ()),
    ("mmol/L", "mmol/L", Decimal(1), ("mmol/l",), ()),
    ("mmHg", "mmHg", Decimal(1), ("mmhg", "mm hg"), ()),
    ("km", "m", Decimal(1000), ("km", *_spellings("kilomet")), ()),
    ("cm", "m", Decimal("0.01"), ("cm", *_spellings("centimet")), ()),
    ("mm", "m", Decimal("0.001"), _spellings("millimet"), ("mm",)),
    ("m", "m", Decimal(1), _spellings("met"), ("m",)),
    ("mi", "mi", Decimal(1), _plural("mile"), ()),
    ("Mt", "kg", Decimal(10) ** 9, _plural("megatonne"), ("Mt",)),
    ("kt", "kg", Decimal(10) ** 6, _plural("kilotonne"), ("kt",)),
    ("t", "kg", Decimal(1000), _plural("tonne", "metric ton"), ("t",)),
    ("kg", "kg", Decimal(1), ("kg", *_plural("kilogram", "kilogramme")), ()),
    ("mg", "kg", Decimal(10) ** -6, ("mg", *_plural("milligram")), ()),
    ("ug", "kg", Decimal(10) ** -9, ("µg", "μg", "ug", *_plural("microgram")), ()),
    ("g", "kg", Decimal("0.001"), _plural("gram", "gramme"), ("g",)),
    ("GL", "L", Decimal(10) ** 9, _spellings("gigalit"), ("GL",)),
    ("ML", "L", Decimal(10) ** 6, _spellings("megalit"), ("ML",)),
    ("kL", "L", Decimal(1000), _spellings("kilolit"), ("kL",)),
    ("mL", "L", Decimal("0.001"), _spellings("millilit"), ("mL", "ml")),
    ("L", "L", Decimal(1), _spellings("lit"), ("L", "l")),
    ("PJ", "GJ", Decimal(10) ** 6, _plural("petajoule"), ("PJ",)),
    ("TJ", "GJ", Decimal(1000), _plural("terajoule"), ("TJ",)),
    ("GJ", "GJ", Decimal(1), _plural("gigajoule"), ("GJ",)),
    ("MJ", "GJ", Decimal("0.001"), _plural("megajoule"), ("MJ",)),
    ("kJ", "GJ", Decimal(10) ** -6, _plural("kilojoule"), ("kJ",)),
    ("J", "GJ", Decimal(10) ** -9, _plural("joule"), ("J",)),
    ("GWh", "GJ", Decimal(3600), (), ("GWh",)),
    ("MWh", "GJ", Decimal("3.6"), (), ("MWh",)),
    ("kWh", "GJ", Decimal("0.0036"), (), ("kWh",)),
    ("GW", "kW", Decimal(10) ** 6, _plural("gigawatt"), ("GW",)),
    ("MW", "kW", Decimal(1000), _plural("megawatt"), ("MW",)),
    ("kW", "kW", Decimal(1), _plural("kilowatt"), ("kW",)),
    ("W", "kW", Decimal("0.001"), _plural("watt"), ("W",)),
    ("kV", "kV", Decimal(1), _plural("kilovolt"), ("kV",)),
    ("Hz", "Hz", Decimal(1), ("hz", "hertz"), ()),
    ("kHz", "Hz", Decimal(1000), ("khz",), ()),
    ("kPa", "Pa", Decimal(1000), ("kpa",), ()),
    ("MPa", "Pa", Decimal(10) ** 6, (), ("MPa",)),
    ("Pa", "Pa", Decimal(1), _plural("pascal"), ("Pa",)),
    ("kDa", "kDa", Decimal(1), ("kda", "kd"), ()),
    # Molar concentrations, written as written: `mM` is not `mm`, nor `nM` `nm`.
    ("mM", "mol/L", Decimal("0.001"), (), ("mM",)),
    ("uM", "mol/L", Decimal(10) ** -6, (), ("µM", "μM", "uM")),
    ("nM", "mol/L", Decimal(10) ** -9, (), ("nM",)),
    ("dBA", "dBA", Decimal(1), ("db(a)", "db (a)", "dba"), ()),
    ("dB", "dB", Decimal(1), ("db", *_plural("decibel")), ()),
    ("degC", "degC", Decimal(1), ("°c", "° c", "degrees celsius", "degrees c"), ()),
    ("degF", "degF", Decimal(1), ("°f", "° f", "degrees fahrenheit", "degrees f"), ()),
    ("deg", "deg", Decimal(1), ("°", *_plural("degree")), ()),
    ("ppm", "ppm", Decimal(1), ("ppm",), ()),
    ("ppb", "ppb", Decimal(1), ("ppb",), ()),
    ("bday", "business day", Decimal(1), _plural("business day", "working day"), ()),
    ("s", "s", Decimal(1), ("sec", "secs", *_plural("second")), ()),
    ("min", "s", Decimal(60), ("min", "mins", *_plural("minute")), ()),
    ("h", "s", Decimal(3600), ("hr", "hrs", *_plural("hour")), ("h",)),
    ("day", "s", Decimal(86_400), _plural("day"), ()),
    ("week", "s", Decimal(604_800), ("wk", "wks", *_plural("week")), ()),
    ("month", "month", Decimal(1), _plural("month"), ()),
    ("year", "year", Decimal(1), ("yr", "yrs", *_plural("year")), ()),
    ("penalty unit", "penalty unit", Decimal(1), _plural("penalty unit"), ()),
    ("fold", "fold", Decimal(1), ("fold",), ()),
    ("star", "star", Decimal(1), _plural("star"), ()),
)
_UNIT_EXACT: dict[str, tuple[str, str, Decimal]] = {}
_UNIT_FOLDED: dict[str, tuple[str, str, Decimal]] = {}
for _name, _canonical, _factor, _any_case, _as_written in UNITS:
    for _s in _any_case:
        _UNIT_FOLDED[_s.lower()] = (_name, _canonical, _factor)
    for _s in _as_written:
        _UNIT_EXACT[_s] = (_name, _canonical, _factor)
_UNIT_MAX_WORDS = max(len(s.split()) for u in UNITS for s in (*u[3], *u[4]))
# The first word of every spelling: most numbers are followed by no unit at all, and
# one set lookup says so before any longer spelling is tried.
_FIRST_EXACT = frozenset(s.split()[0] for u in UNITS for s in u[4])
_FIRST_FOLDED = frozenset(s.split()[0].lower() for u in UNITS for s in u[3])
_TRAILING = ".,;:!?\"'”’"


def _unit_variants(raw: str) -> tuple[str, str, str]:
    """`metres.` -> metres; `dB(A).` keeps its bracket; `metres).` loses both."""
    once = raw.rstrip(_TRAILING)
    return raw, once, once.rstrip(")").rstrip(_TRAILING)


def unit_at(text: str, pos: int) -> tuple[tuple[str, str, Decimal], int] | None:
    """The unit written at `text[pos:]` (longest spelling first) and where it ends."""
    line = text[pos : pos + 48].split("\n", 1)[0]
    words = line.split(" ", _UNIT_MAX_WORDS)[:_UNIT_MAX_WORDS]
    if not any(v in _FIRST_EXACT or v.lower() in _FIRST_FOLDED for v in _unit_variants(words[0])):
        return None
    for k in range(len(words), 0, -1):
        for cand in _unit_variants(" ".join(words[:k])):
            unit = _UNIT_EXACT.get(cand) or _UNIT_FOLDED.get(cand.lower())
            if unit is not None and cand:
                return unit, pos + len(cand)
    return None


_WORD_NUM = "|".join(WORD_NUMBERS)
_WORD_START = "(?=[" + "".join(sorted({w[0] + w[0].upper() for w in WORD_NUMBERS})) + "])"
# A number, then what follows it: the unit is read from `rest` in Python, since one
# dictionary lookup is far cheaper than a regex alternation over every spelling.
_UNIT_REST = r"(?:\s?-\s?|\s)?(?=(?P<rest>[^\s\d,;:!?(][^\n]{0,47}))"
QUANTITY = re.compile(
    rf"(?=\d){NUM_START}(?:(?P<lo>{NUM})\s?(?:-|–|to)\s?)?(?P<num>{NUM}){NUM_END}"
    rf"(?:\s(?P<scale>thousand|million|billion))?{_UNIT_REST}"
)
QUANTITY_WORD = re.compile(rf"{_WORD_START}(?<!\w)(?P<word>(?i:{_WORD_NUM})){_UNIT_REST}")
PERCENT = re.compile(
    rf"(?=\d){NUM_START}(?:(?P<lo>{NUM})\s?(?:%|per ?cent|percent)?\s?(?:-|–|to)\s?)?"
    rf"(?P<num>{NUM}){NUM_END}\s?(?:%|(?i:per ?cent|percent)\b)"
)

CURRENCY_SYMBOLS = {"£": "GBP", "€": "EUR", "¥": "JPY", "$": "USD"}
DOLLAR_PREFIXES = {"US": "USD", "A": "AUD", "AU": "AUD", "NZ": "NZD", "C": "CAD", "CA": "CAD"}
# ISO 4217 codes common in regulatory text, and TRD, the currency of the bundled
# example pack. Other three-letter codes before a number read as standards
# (`ARS 4282`, `TRS 6011`) unless the number is grouped or decimal, which a
# standard's never is.
CURRENCY_CODES = frozenset(
    [
        "USD",
        "EUR",
        "GBP",
        "AUD",
        "NZD",
        "CAD",
        "CHF",
        "JPY",
        "CNY",
        "INR",
        "SGD",
        "HKD",
        "ZAR",
        "SEK",
        "NOK",
        "DKK",
        "TRD",
    ]
)
MONEY_WORDS = {
    "pound": ("GBP", Decimal(1)),
    "pounds": ("GBP", Decimal(1)),
    "pence": ("GBP", Decimal("0.01")),
    "dollar": ("USD", Decimal(1)),
    "dollars": ("USD", Decimal(1)),
    "euro": ("EUR", Decimal(1)),
    "euros": ("EUR", Decimal(1)),
}
_MONEY_SCALE = r"(?:\s?(?P<scale>thousand|million|billion|bn|m|k)\b)?"
MONEY_SYMBOL = re.compile(
    rf"(?=[£€¥$UANC])(?<![\w$£€¥])(?P<pre>US|AU|NZ|CA|A|C)?(?P<sym>[£€¥$])\s?(?P<num>{NUM}){NUM_END}{_MONEY_SCALE}"
)
MONEY_CODE = re.compile(
    rf"(?=[A-Z])\b(?P<code>[A-Z]{{3}})\s?(?P<num>{NUM}){NUM_END}{_MONEY_SCALE}(?![\w/.-]\w)"
)
MONEY_WORD = re.compile(
    rf"(?=\d){NUM_START}(?P<num>{NUM}){NUM_END}(?:\s(?P<scale>thousand|million|billion))?\s"
    rf"(?P<word>(?i:pounds?|pence|dollars?|euros?))\b"
)

# `a.m.` keeps its last stop; `am.` at a sentence end leaves the full stop alone.
_AMPM = r"(?P<mer>(?i:[ap]\.\s?m\b\.?|[ap]m\b))"
TIME_12 = re.compile(rf"(?=\d)(?<![\w.:])(?P<h>1[0-2]|0?\d)(?:[:.](?P<m>[0-5]\d))?\s?{_AMPM}")
TIME_24 = re.compile(r"(?=\d)(?<![\w.:])(?P<h>[01]?\d|2[0-3]):(?P<m>[0-5]\d)(?![\d:])")
TIME_WORD = re.compile(r"(?=[nNmM])\b(?P<w>(?i:noon|midday|midnight))\b")

MONTHS = {
    m: i
    for i, names in enumerate(
        (
            ("January", "Jan"),
            ("February", "Feb"),
            ("March", "Mar"),
            ("April", "Apr"),
            ("May",),
            ("June", "Jun"),
            ("July", "Jul"),
            ("August", "Aug"),
            ("September", "Sept", "Sep"),
            ("October", "Oct"),
            ("November", "Nov"),
            ("December", "Dec"),
        ),
        start=1,
    )
    for m in names
}
MONTH_ABBREVIATIONS = (
    "Jan",
    "Feb",
    "Mar",
    "Apr",
    "May",
    "Jun",
    "Jul",
    "Aug",
    "Sep",
    "Oct",
    "Nov",
    "Dec",
)
_MONTH = "(?:" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\b\.?"
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
YEAR = r"(?:1[5-9]\d\d|20\d\d|2100)"
DATE_DMY = re.compile(
    rf"(?=\d)(?<![\w.,/])(?P<d>{_DAY})\s(?:of\s)?(?P<mon>{_MONTH})(?:,?\s(?P<y>{YEAR})(?!\d))?"
)
DATE_MDY = re.compile(
    rf"(?=[JFMASOND])\b(?P<mon>{_MONTH})\s(?P<d>{_DAY})\b(?:,?\s(?P<y>{YEAR})(?!\d))?"
)
DATE_MY = re.compile(rf"(?=[JFMASOND])\b(?P<mon>{_MONTH})\s(?P<y>{YEAR})(?!\d)")
DATE_ISO = re.compile(
    r"(?=\d)(?<![\w/.-])(?P<y>\d{4})-(?P<m>0[1-9]|1[0-2])-(?P<d>[0-2]\d|3[01])(?![\w-])"
)
# A day of a month, which "on what date" asks for: "20th day of March 1992", "30th DAY
# OF MAY, 2011", "March 20", "2011-05-30", "30/05/2011" (a bare year, "the Order 1988",
# is not one). The month is capitalised, or all in capitals: "section 5 may apply" is no date.
_MONTH_CASED = (
    "(?:"
    + "|".join(m for name in sorted(MONTHS, key=len, reverse=True) for m in (name, name.upper()))
    + r")\b\.?"
)
MENTIONS_CALENDAR_DATE = re.compile(
    rf"\b{_DAY}\s(?:(?i:day)\s)?(?:(?i:of)\s)?{_MONTH_CASED}|\b{_MONTH_CASED}\s{_DAY}\b"
    rf"|{DATE_ISO.pattern}|\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b"
)
YEAR_ALONE = re.compile(rf"(?=[12])(?<![\w.,/:-]){YEAR}(?![\w]|[.,]\d|/\d)")

# Standards: a known body before any number, or any 2-5 capital code before a
# number of 3+ digits that is not a year (`NGER 2007` is a scheme and a year),
# set apart by a space or hyphen (`CYP450`, `H2AK119` are names, not standards).
BODIES = r"AS/NZS|ISO/IEC|BS EN|ISO|IEC|EN|BS|DIN|ANSI|ASTM|NFPA|IEEE|API|AS|NZS|ARS"
_STD_TAIL = r"(?P<part>(?:-\d{1,3})*)(?::\s?(?P<year>\d{4}))?(?![\w.]\w|\d)"
STANDARD_KNOWN = re.compile(
    rf"(?=[AIEBDN])(?<![\w/])(?P<body>{BODIES})[\s-]?(?P<num>\d{{1,6}}){_STD_TAIL}"
)
STANDARD_CODE = re.compile(
    rf"(?=[A-Z])(?<![\w/])(?P<body>[A-Z]{{2,5}})[\s-](?!{YEAR}\b)(?P<num>\d{{3,6}}){_STD_TAIL}"
)

DIRECTIVE = re.compile(
    r"(?=\d)(?<![\w/])(?P<y>\d{2,4})/(?P<n>\d{1,4})/(?P<sfx>EU|EC|EEC|Euratom|EURATOM)\b"
)
DIRECTIVE_BARE = re.compile(
    r"(?=[dD])(?i:directive)\s(?:No\.?\s)?(?P<y>\d{2,4})/(?P<n>\d{1,4})(?![\w/])"
)
EU_REGULATION = re.compile(
    r"(?=\()\((?P<sfx>EU|EC|EEC)\)\s?(?:No\.?\s?)?(?P<n>\d{1,5})/(?P<y>\d{4})(?!\d)"
)

# Not followed by a digit or `,ddd`, so `section 3, 25,000 tonnes` leaves the tonnes alone.
REF_NUM = r"\d+[A-Za-z]?(?:\.\d+[A-Za-z]?)*(?:\([a-z0-9]{1,4}\))*(?!\d|,\d)"
REF_LABELLED = re.compile(
    rf"(?=[{_REF_FIRST}])(?<![\w.]){_REF_LABEL}\s?(?P<nums>{REF_NUM}(?:(?:,\s?|\s(?:and|or|to)\s){REF_NUM})*)"
    r"(?![\w.]\w)"
)
REF_DOTTED = re.compile(r"(?=\d)(?<![\w.])\d+(?:\.\d+){2,}(?:\([a-z0-9]{1,4}\))*(?![\w]|\.\d)")
# In a passage, a number that heads a line or a breadcrumb step is a clause number
# (`4.2 A wind turbine ...`, `Act > 6 Penalties`), and any dotted number may be one.
PASSAGE_REF = re.compile(
    r"(?=[\n>\d])(?:^|\n|> )\s*(?P<n>\d+(?:\.\d+)*)(?=\s)|(?<![\w.,])(?P<d>\d+(?:\.\d+)+)(?![\w]|\.\d)"
)

BARE_NUMBER = re.compile(rf"(?=\d){NUM_START}(?P<num>{NUM}){NUM_END}")
BARE_WORD = re.compile(rf"{_WORD_START}(?<!\w)(?P<word>(?i:{_WORD_NUM}))\b")


# ------------------------------------------------------------------ mentions

# Looser tests than the token patterns above, for ranking sentences: whether one
# mentions a time, a date or a day, an amount of money, a number, or a name. A
# false match costs a sentence a little rank, never a verdict, so these may
# over-match (`ISO 9001` mentions money here, `May` a date).
MENTIONS_TIME = re.compile(
    r"\b\d{1,2}(?::\d{2})?\s?(?:am|pm|a\.m\.|p\.m\.)|\b\d{1,2}:\d{2}\b|\bmidnight\b|\bnoon\b", re.I
)
MENTIONS_DATE = re.compile(
    r"\b(?:19|20)\d{2}\b|\b(?:"
    + "|".join(m.lower() for m in MONTH_ABBREVIATIONS)
    + r")[a-z]*\b|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day",
    re.I,
)
MENTIONS_MONEY = re.compile(
    "["
    + "".join(CURRENCY_SYMBOLS)
    + r"]\s?\d|\b[A-Z]{3}\s?\d[\d,.]*|\b\d[\d,.]*\s?(?:pounds|dollars|euros|penalty units?)\b"
)
# A digit, or a number word. The words here beside WORD_NUMBERS only mark a sentence as
# holding a number ("thirty feet", "a hundred"): the audit reads values from WORD_NUMBERS.
_MORE_NUMBER_WORDS = (
    *("thirteen", "fourteen", "sixteen", "seventeen", "eighteen", "nineteen"),
    *("seventy", "eighty", "ninety", "hundred"),
)
NUMBER_WORDS = (*WORD_NUMBERS, *_MORE_NUMBER_WORDS, *SCALES)
MENTIONS_NUMBER = re.compile(r"\d|\b(?:" + "|".join(NUMBER_WORDS) + r")\b", re.I)
# A length of time, which answers "when" as often as a date does: "two years after its
# approval", "within 30 days", "five (5) minutes", "six calendar months".
MENTIONS_DURATION = re.compile(
    r"\b(?:\d+|"
    + "|".join((*WORD_NUMBERS, *_MORE_NUMBER_WORDS))
    + r")\s*(?:\(\d+\)\s*)?(?:(?:calendar|business|working|clear|consecutive|full)\s+)?"
    r"(?:minutes?|hours?|days?|weeks?|months?|years?)\b",
    re.I,
)
# A name: a capitalised word inside a sentence (after a lower-case word), not its first word.
MENTIONS_NAME = re.compile(r"(?<=[a-z,;:] )[A-Z][a-z]+")

# ------------------------------------------------------------------ instructions to the model

# What an override sets aside: only words for what a model is given, never `guidance`,
# `rules` or `guidelines` alone, which regulations withdraw and replace all the time.
_EARLIER = r"(?:previous|prior|above|earlier|preceding|foregoing|original|initial|system|developer)"
_GIVEN = r"(?:instructions?|prompts?|messages?|context|commands?|directives?)"
# What a model is called. A bare `assistant` is also a job (an assistant harbour
# master), so it counts only where nothing else could be meant: "note to the assistant".
_MACHINE = (
    r"(?:ai|a\.i\.|artificial\s+intelligence|(?:large\s+)?language\s+model|llm|chatbot|"
    r"ai\s+assistant|gpt)"
)
_NOT = r"(?:do\s+not|don['’]t|never)"


@dataclass(frozen=True)
class _Rule:
    """One way text addresses the model, and the words without which it cannot match.

    `any_of` is tested on the passage lowercased, with line breaks read as spaces, so
    the pattern runs only on the few passages that could hold it.
    """

    name: str
    pattern: re.Pattern[str]
    any_of: tuple[str, ...]


def _rule(name: str, pattern: str, any_of: tuple[str, ...], flags: int = 0) -> _Rule:
    return _Rule(name, re.compile(pattern, re.IGNORECASE | flags), any_of)


_OVERRIDE_VERBS = ("ignore", "disregard", "forget", "overrid", "overrul", "bypass")
_SAY_AFTER = ("say", "answer", "reply", "respond")

# Each rule finds, anywhere in a passage, text addressed to the model that answers
# from it. The module docstring lists them with examples.
_INSTRUCTION_RULES: tuple[_Rule, ...] = (
    _rule(
        "override",
        rf"\b(?:ignore|disregard|forget|override|overrule|bypass)\s+"
        rf"(?:(?:all|any|every)\s+(?:of\s+)?)?(?:(?:the|your|my|these|those)\s+)?"
        rf"(?:{_EARLIER}\s+)+{_GIVEN}\b"
        rf"|\b(?:ignore|disregard|forget|override|overrule|bypass)\s+all\s+(?:of\s+)?(?:the\s+)?"
        rf"(?:{_EARLIER}\s+)+(?:rules|guidelines)\b"
        rf"|\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+(?:of\s+)?)?your\s+"
        rf"(?:{_GIVEN}|rules|guidelines|programming|training|system\s+prompt)\b"
        rf"|\b(?:ignore|disregard|forget)\s+(?:everything|anything|all)\s+(?:you\s+"
        rf"(?:were|have\s+been)\s+(?:told|given)|(?:(?:said|written|stated)\s+)?"
        rf"(?:above|before|earlier|previously))\b",
        _OVERRIDE_VERBS,
    ),
    _rule(
        "role",
        rf"\byou\s+are\s+(?:now|no\s+longer)\s+(?:(?:an?|the|my|in)\s+)?(?:[\w-]+\s+){{0,2}}?"
        rf"(?:{_MACHINE}|bot|jailbroken|unrestricted|unfiltered|developer\s+mode)\b"
        rf"|\bfrom\s+now\s+on\s*,?\s+(?:you\s+)?(?:will\s+|must\s+|shall\s+|should\s+|are\s+to\s+)?"
        rf"(?:only\s+|always\s+)?(?:answer|respond|reply|say|act|behave|ignore|pretend)\b",
        ("you are now", "you are no longer", "from now on"),
    ),
    _rule(
        "role",
        rf"\b(?:act|behave)\s+as\s+(?:if\s+you\s+(?:are|were)\s+)?(?:an?\s+|the\s+)?"
        rf"(?:[\w-]+\s+){{0,2}}?{_MACHINE}\b"
        rf"|\bpretend\s+(?:to\s+be|(?:that\s+)?you\s+are)\s+(?:an?\s+|the\s+)?"
        rf"(?:[\w-]+\s+){{0,2}}?{_MACHINE}\b"
        rf"|\bif\s+you\s+are\s+an?\s+{_MACHINE}\b"
        rf"|\bas\s+an?\s+{_MACHINE}\s*,\s*you\b"
        rf"|\b(?:note|message|instructions?|attention)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+)?"
        rf"(?:{_MACHINE}|assistant|(?:ai\s+|language\s+)?models?)\b",
        (
            *(f" ai{end}" for end in " ,.:;'"),
            "a.i.",
            "intelligence",
            " model",
            "llm",
            "chatbot",
            "assistant",
            "gpt",
        ),
    ),
    _rule(
        "answer-with",
        r"\binstead\s*,?\s+(?:just\s+|only\s+|simply\s+)?(?:say|answer|reply|respond|state|"
        r"tell\s+(?:the\s+)?(?:users?|readers?))\b\s*(?:that\b|with\b|:|[\"“'‘])",
        ("instead",),
    ),
    _rule(
        "answer-with",
        r"\b(?:respond|reply|answer)\s+(?:only|solely|exclusively|always)\s+with\b"
        r"|\b(?:always|only)\s+(?:respond|reply|answer|say)\s+(?:with\b|that\b|[\"“'‘:])",
        (
            *(f"{a} {b}" for a in ("only", "always") for b in ("with", *_SAY_AFTER)),
            "solely with",
            "exclusively with",
        ),
    ),
    _rule(
        "answer-with",
        # Only as a command (opening a sentence or clause): "the app will tell the user
        # that the file is saved" describes software, it does not instruct.
        r"(?:^|(?<=[.!?;:,]\s)|(?<=\band\s)|(?<=\bthen\s)|(?<=\bplease\s)|(?<=\balways\s))"
        r"(?:tell|inform)\s+(?:the\s+|all\s+|any\s+)?(?:users?|readers?|askers?)\s+that\b",
        ("user", "reader", "asker"),
        re.MULTILINE,
    ),
    _rule(
        "no-citation",
        rf"\b{_NOT}\s+(?:cite|mention|reference|disclose)\s+(?:this|these|the|your)\s+"
        r"(?:sources?|passages?|source\s+numbers?|instructions?)"
        r"(?=\s*(?:[.!;,]|$)|\s+(?:in|when|above|below)\b)"
        rf"|\b{_NOT}\s+(?:include|add|use)\s+(?:any\s+)?(?:citations?|source\s+markers?)\s+"
        r"(?:in|to)\s+(?:your|the)\s+(?:answer|response|reply)\b",
        (
            *(
                f"{no} {verb}"
                for no in ("not", "n't", "never")
                for verb in ("cite", "mention", "reference", "disclose")
            ),
            "citation",
            "source marker",
        ),
    ),
    _rule(
        "reveal",
        r"\b(?:reveal|disclose|leak|recite|repeat|output|print|show|display)\s+(?:me\s+)?"
        r"(?:your|the)\s+(?:(?:full|entire|complete|original|initial|hidden|secret)\s+)*"
        r"(?:system\s+(?:prompt|message|instructions)|hidden\s+instructions|initial\s+prompt)\b"
        r"|\b(?:reveal|disclose|leak|recite|repeat|output)\s+your\s+(?:prompt|instructions|rules)\b"
        r"|\bsystem\s+prompt\s*:",
        (
            "system prompt",
            "system message",
            "system instructions",
            "hidden instructions",
            "initial prompt",
            "your prompt",
            "your instructions",
            "your rules",
        ),
    ),
    _rule(
        "verbatim",
        r"\b(?:print|output|echo|repeat)\s+(?:out\s+)?(?:the\s+following|this|these\s+words)\s+"
        r"(?:(?:text|message|sentence|string|words|phrase|line)\s+)?"
        r"(?:verbatim|exactly|word[\s-]+for[\s-]+word)\b"
        r"|\b(?:output|echo)\s+(?:the\s+following|this)\s*(?:text|message|sentence|string|"
        r"words|phrase)?\s*:",
        ("verbatim", "exactly", "word for word", "word-for-word", "output", "echo"),
    ),
    _rule(
        "chat-markup",
        r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id)\|>"
        r"|\[/?INST\]|<<\s*/?\s*SYS\s*>>|\bSOURCE\s+\d+\s*>{2,}|<{2,}\s*SOURCE\b"
        r"|^[ \t]*#{2,3}\s*(?:instruction|system)\s*:?[ \t]*$",
        ("<|", "inst]", "<<", ">>", "## instruction", "## system"),
        re.MULTILINE,
    ),
    # A line that opens a chat turn and speaks to or as the model; `System:` in a list
    # of definitions (`System: a set of connected parts`) does neither.
    _rule(
        "role-marker",
        r"^[ \t>*_-]*(?:assistant|system|developer)[ \t*_]*:[ \t*_]*"
        r"(?=[^\n]*\b(?:you|your|I|I['’]m|I['’]ll|me|my)\b)",
        ("assistant", "system", "developer"),
        re.MULTILINE,
    ),
)

# What an instruction asks to be said: the words after `say`, `answer`, `reply with`
# and the like, to the end of its sentence, or the quotation that follows them.
_SAY = re.compile(
    r"\b(?:say|answer|reply|respond|state|claim|write|output|print|echo|tell\s+(?:the\s+|all\s+|"
    r"any\s+)?(?:users?|readers?|askers?|them|everyone|people|you))\b"
    r"(?:\s+(?:only|exactly|instead|just|simply|always|back|with|that|the\s+following"
    r"(?:\s+(?:text|message|sentence|words|string|phrase))?|verbatim|word\s+for\s+word|to\s+"
    r"(?:the\s+)?(?:users?|questions?|readers?)))*\s*[:,–-]?\s*(?P<said>\S.*)",
    re.IGNORECASE | re.DOTALL,
)
_QUOTED = re.compile(r"(?:^|(?<=[\s:(]))[\"“'‘](?P<q>[^\"“”\n]{1,300}?)[\"”'’](?!\w)")
_PAYLOAD_END = re.compile(r"[\s.!?;:,\"”'’)]+$")


@dataclass(frozen=True)
class Instruction:
    """A sentence of a passage addressed to the model that answers from it.

    `text` is the whole sentence (or chat line), for a reader; `directive` runs from
    where the rule matched to the end of it, which is what an answer that obeys it
    would echo; `payload` is what it asks to be said, or "" when it asks nothing.
    """

    rule: str
    text: str
    directive: str
    payload: str
    start: int
    end: int

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "text": self.text, "payload": self.payload}


def _payload(directive: str) -> str:
    m = _SAY.search(directive)
    # A note to the model (`Note to the AI: the ferry is free.`) says it after a colon.
    said = m["said"] if m else directive.partition(":")[2]
    quoted = _QUOTED.search(said)
    if quoted:
        return quoted["q"].strip()
    return _PAYLOAD_END.sub("", said).strip()


def find_instructions(text: str) -> list[Instruction]:
    """The sentences of `text` that address the model rather than a reader, in order.

    One Instruction per sentence, under the first rule that matched it; a chat line
    (`Assistant: ...`, `<|im_start|>`) is taken as its line.
    """
    # Line breaks read as spaces, so a keyword wrapped across two lines is still seen.
    flat = " " + text.lower().replace("\n", " ").replace("\t", " ").replace("’", "'") + " "
    hits: list[tuple[int, int, str]] = []
    for rule in _INSTRUCTION_RULES:
        if any(word in flat for word in rule.any_of):
            hits += [(m.start(), m.end(), rule.name) for m in rule.pattern.finditer(text)]
    if not hits:
        return []
    hits.sort()
    spans = sentence_spans(text)
    found: dict[tuple[int, int], Instruction] = {}
    for start, end, name in hits:
        if name in ("role-marker", "chat-markup"):
            s = text.rfind("\n", 0, start) + 1
            e = text.find("\n", end)
            span = (s, len(text) if e < 0 else e)
        else:
            i = bisect.bisect_right(spans, (start, len(text))) - 1
            span = spans[i] if i >= 0 and spans[i][1] > start else (start, end)
        if span in found:
            continue
        sentence = " ".join(text[span[0] : span[1]].split())
        directive = " ".join(text[start : span[1]].split())
        found[span] = Instruction(name, sentence, directive, _payload(directive), *span)
    return sorted(found.values(), key=lambda i: i.start)
