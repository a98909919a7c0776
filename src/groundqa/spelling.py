"""British and Commonwealth spellings read as their American forms, word by word.

A by-law from Ontario fines an "offence"; a question typed in Boston asks about an
"offense". Snowball stems the two apart ("offenc", "offens"), so without this the
lexical index, the gate's coverage and the reader's sentence scores all see two
different words. `american` maps a lower-case word to the American spelling when
it is one of the regular variant families below, and leaves every other word as
it is: the tables name their stems rather than rewrite suffixes wholesale, since
"-ise" and "-our" also end words that have no variant ("promise", "hour").

Only spelling is folded, never vocabulary ("lorry", "pavement" stay as they are).
A British spelling whose American form is another British word stays too: a UK
text that says "metre" for the unit also says "meter" for the device, and folding
would make the two one ("cheque"/"check", "draught"/"draft", "kerb"/"curb",
"programme"/"program", "storey"/"story", "tyre"/"tire"). Compounds that have no
such twin fold ("kilometre"). The fold runs before stemming, so it applies to the
index and to questions alike.
"""

from __future__ import annotations

import re

# colour/color: the stem, then any ending ("colours", "favourite", "neighbourhood").
_OUR = [
    "arbour",
    "ardour",
    "armour",
    "behaviour",
    "candour",
    "clamour",
    "colour",
    "demeanour",
    "endeavour",
    "favour",
    "fervour",
    "flavour",
    "harbour",
    "honour",
    "humour",
    "labour",
    "neighbour",
    "odour",
    "parlour",
    "rancour",
    "rigour",
    "rumour",
    "saviour",
    "savour",
    "splendour",
    "tumour",
    "valour",
    "vapour",
    "vigour",
]

# organise/organize: the stem before "is", with a verb ending (never the bare stem,
# so the noun "emphasis" is left alone while "emphasised" folds).
_ISE = [
    "apolog",
    "author",
    "capital",
    "central",
    "character",
    "civil",
    "colon",
    "commercial",
    "computer",
    "critic",
    "custom",
    "decentral",
    "digit",
    "emphas",
    "energ",
    "equal",
    "familiar",
    "fertil",
    "final",
    "formal",
    "fossil",
    "general",
    "global",
    "harmon",
    "hospital",
    "hypothes",
    "immun",
    "industrial",
    "initial",
    "item",
    "jeopard",
    "legal",
    "local",
    "marginal",
    "maxim",
    "memor",
    "minim",
    "mobil",
    "modern",
    "monet",
    "moral",
    "neutral",
    "normal",
    "optim",
    "organ",
    "penal",
    "personal",
    "polar",
    "popular",
    "priorit",
    "privat",
    "public",
    "rational",
    "real",
    "recogn",
    "revital",
    "sanit",
    "scrutin",
    "special",
    "stabil",
    "standard",
    "steril",
    "subsid",
    "summar",
    "symbol",
    "sympath",
    "synchron",
    "synthes",
    "theor",
    "tranquil",
    "urban",
    "util",
    "visual",
    "vapor",
    "categor",
    "agon",
    "econom",
    "random",
    "oxid",
    "ion",
    "metabol",
    "homogen",
]
_ISE_ENDINGS = ("e", "ed", "es", "ing", "er", "ers", "ation", "ations", "able")

# analyse/analyze; "analyses" stays, since it is also the plural of "analysis".
_YSE = ("anal", "paral", "catal", "dial", "electrol", "hydrol")
_YSE_ENDINGS = ("e", "ed", "ing", "er", "ers")

# centre/center: the stem ends every word it is in ("epicentre", "millilitre").
_RE = (
    *("cent", "lit", "theat", "fib", "calib", "somb", "spect", "lust", "meag", "sab"),
    *("kilomet", "centimet", "millimet", "micromet", "nanomet"),  # not "metre": see above
)
_RE_ENDINGS = {"re": "er", "res": "ers", "red": "ered", "ring": "ering"}

# offence/offense.
_ENCE = ("offen", "defen", "licen", "preten")
_ENCE_ENDINGS = ("ce", "ces", "celess")

# catalogue/catalog.
_OGUE = ("catal", "dial", "anal", "monol", "prol", "epil", "travel", "pedag", "demag")
_OGUE_ENDINGS = {"ogue": "og", "ogues": "ogs", "ogued": "oged", "oguing": "oging"}

# travelled/traveled: the stem doubles its l before these endings in British use.
_LL = [
    "travel",
    "cancel",
    "label",
    "model",
    "fuel",
    "signal",
    "counsel",
    "total",
    "level",
    "channel",
    "marvel",
    "quarrel",
    "tunnel",
    "dial",
    "pedal",
    "panel",
    "shovel",
    "revel",
    "rival",
    "duel",
    "bevel",
    "libel",
    "gravel",
    "jewel",
    "enamel",
    "initial",
    "pencil",
    "stencil",
    "kennel",
]
_LL_ENDINGS = ("ed", "ing", "er", "ers", "or", "ors", "ous")

# Medical and scientific "ae" and "oe" (haemorrhage, oestrogen), anywhere in a word.
_INFIXES = (
    ("aem", "em"),
    ("paed", "ped"),
    ("oestr", "estr"),
    ("oesoph", "esoph"),
    ("oedem", "edem"),
    ("diarrhoe", "diarrhe"),
    ("aetiol", "etiol"),
    ("anaest", "anest"),
    ("palaeo", "paleo"),
    ("homoeo", "homeo"),
    ("foet", "fet"),
)

# Words of their own, with their inflections.
_WORDS = {
    "grey": "gray",
    "greys": "grays",
    "aluminium": "aluminum",
    "sulphur": "sulfur",
    "sulphate": "sulfate",
    "sulphates": "sulfates",
    "sulphide": "sulfide",
    "sulphuric": "sulfuric",
    "sulphurous": "sulfurous",
    "sulphonamide": "sulfonamide",
    "mould": "mold",
    "moulds": "molds",
    "moulded": "molded",
    "moulding": "molding",
    "mouldy": "moldy",
    "plough": "plow",
    "ploughed": "plowed",
    "ploughing": "plowing",
    "judgement": "judgment",
    "judgements": "judgments",
    "acknowledgement": "acknowledgment",
    "acknowledgements": "acknowledgments",
    "ageing": "aging",
    "gaol": "jail",
    "manoeuvre": "maneuver",
    "manoeuvres": "maneuvers",
    "manoeuvred": "maneuvered",
    "manoeuvring": "maneuvering",
    "enrol": "enroll",
    "enrols": "enrolls",
    "enrolment": "enrollment",
    "enrolments": "enrollments",
    "fulfil": "fulfill",
    "fulfils": "fulfills",
    "fulfilment": "fulfillment",
    "instil": "instill",
    "instils": "instills",
    "instalment": "installment",
    "instalments": "installments",
    "skilful": "skillful",
    "skilfully": "skillfully",
    "wilful": "willful",
    "wilfully": "willfully",
    "practise": "practice",
    "practised": "practiced",
    "practises": "practices",
    "practising": "practicing",
    "jewellery": "jewelry",
    "cosy": "cozy",
    "pyjamas": "pajamas",
    "moustache": "mustache",
    "sceptic": "skeptic",
    "sceptical": "skeptical",
    "scepticism": "skepticism",
}


def _alternatives(stems: list[str] | tuple[str, ...]) -> str:
    return "|".join(sorted(stems, key=len, reverse=True))


_OUR_RE = re.compile(rf"({_alternatives(_OUR)})(\w*)")
_ISE_RE = re.compile(rf"({_alternatives(_ISE)})is({'|'.join(_ISE_ENDINGS)})")
_YSE_RE = re.compile(rf"(\w*(?:{_alternatives(_YSE)}))ys({'|'.join(_YSE_ENDINGS)})")
_RE_RE = re.compile(rf"(\w*(?:{_alternatives(_RE)}))({'|'.join(_RE_ENDINGS)})")
_ENCE_RE = re.compile(rf"({_alternatives(_ENCE)})({'|'.join(_ENCE_ENDINGS)})")
_OGUE_RE = re.compile(rf"(\w*(?:{_alternatives(_OGUE)}))({'|'.join(_OGUE_ENDINGS)})")
_LL_RE = re.compile(rf"({_alternatives(_LL)})l({'|'.join(_LL_ENDINGS)})")
_INFIX_RE = re.compile(_alternatives([b for b, _ in _INFIXES]))
_INFIX = dict(_INFIXES)


def american(word: str) -> str:
    """The American spelling of a lower-case word, or the word itself."""
    if found := _WORDS.get(word):
        return found
    if m := _OUR_RE.fullmatch(word):
        return american(m[1][:-2] + "r" + m[2])  # "vapourised" is -ise too
    if m := _ISE_RE.fullmatch(word):
        return f"{m[1]}iz{m[2]}"
    if m := _YSE_RE.fullmatch(word):
        return f"{m[1]}yz{m[2]}"
    if m := _RE_RE.fullmatch(word):
        return m[1] + _RE_ENDINGS[m[2]]
    if m := _ENCE_RE.fullmatch(word):
        return m[1] + "s" + m[2][1:]
    if m := _OGUE_RE.fullmatch(word):
        return m[1] + _OGUE_ENDINGS[m[2]]
    if m := _LL_RE.fullmatch(word):
        return m[1] + m[2]
    if _INFIX_RE.search(word):
        return _INFIX_RE.sub(lambda m: _INFIX[m[0]], word)
    return word
