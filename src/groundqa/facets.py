"""Facets: which chunks carry which metadata values, for filters and the scope hierarchy.

Filters are pushed into scoring (chunks that do not match score zero before
top-k is taken), so a filter can never starve a result list the way filtering
after top-k does. A filter on a key no chunk has, or a value no chunk carries,
is an error that lists what exists: a typo must not read as "nothing found".

A scope says where the asker is, and applies the jurisdiction hierarchy: a
document is judged by the most specific place it names. A local document (one
with an `area`) applies only when its area is in scope, a state document (a
`state` but no `area`) only when its state is, and a national document (neither)
always. Naming an area brings in the state(s) it lies in, so a scope of one
council area keeps that area's by-laws, its state's acts and the national law.
Other scope keys are softer: a chunk passes when it matches or does not carry
the key. Places can be detected in the question from a gazetteer built from the
corpus's own metadata values; a place given explicitly that the corpus does not
know is an error listing the closest names.

Filter values match any of the values listed for a key; `{"all": [...]}` asks
for chunks that carry every one of them (list-valued metadata such as
`frameworks: [NGER, GHG Protocol]`). Nested metadata is addressed with dotted
keys: `reporting: {scheme: NGER}` is the key `reporting.scheme`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from groundqa.errors import UsageError
from groundqa.models import Chunk

PLACE_KEYS = ("area", "state")
_WORD = re.compile(r"\w+")
# Words that qualify a place name rather than name it: "Fennick City" is asked about as "Fennick".
_GENERIC_PLACE_WORDS = frozenset(
    [
        "city",
        "shire",
        "council",
        "county",
        "town",
        "district",
        "region",
        "municipality",
        "borough",
        "village",
    ]
)


# Nested metadata deeper than this is not indexed as facets (it is still stored).
MAX_FACET_DEPTH = 4


def _values(value: Any) -> list[str]:
    if isinstance(value, list | tuple | set):
        return [str(v).strip().casefold() for v in value]
    return [str(value).strip().casefold()]


def flat_metadata(metadata: Mapping[str, Any], depth: int = 0) -> list[tuple[str, Any]]:
    """(dotted key, value) for every leaf: `{reporting: {scheme: X}}` gives `reporting.scheme`."""
    out: list[tuple[str, Any]] = []
    for key, value in metadata.items():
        if value is None:
            continue
        if isinstance(value, Mapping):
            if depth + 1 < MAX_FACET_DEPTH:
                out.extend((f"{key}.{k}", v) for k, v in flat_metadata(value, depth + 1))
            continue
        if isinstance(value, list | tuple | set):
            value = [v for v in value if v is not None and not isinstance(v, Mapping | list)]
        out.append((str(key), value))
    return out


def _wanted(key: str, wanted: Any) -> tuple[str, list[str]]:
    """("any" | "all", values) from a filter value: a string, a list, or {"all"|"any": [...]}."""
    if isinstance(wanted, Mapping):
        modes = [m for m in ("any", "all") if m in wanted]
        if len(modes) != 1 or len(wanted) != 1:
            raise UsageError(
                f'filter {key!r} takes a value, a list (any of), or {{"all": [...]}} / '
                f'{{"any": [...]}}; got keys {sorted(wanted)}'
            )
        return modes[0], _values(wanted[modes[0]])
    return "any", _values(wanted)


class Facets:
    """Filters, scopes and places over one build's facets: the rules, written once.

    A subclass says where the facets live through five lookups (`keys`, `shown`,
    `_postings`, `carries` and `_states_of`): `FacetIndex` holds them in memory, the
    PostgreSQL store reads them per request. Rows are positions in the build (0..size-1).
    """

    size: int

    def keys(self) -> list[str]:
        """Every metadata key, folded, sorted."""
        raise NotImplementedError

    def shown(self, key: str) -> dict[str, str]:
        """A key's values: folded value -> the value as first written."""
        raise NotImplementedError

    def _postings(self, key: str, values: Sequence[str]) -> dict[str, npt.NDArray[np.int64]]:
        """The rows of each folded value of `key` that some chunk carries (others are left out)."""
        raise NotImplementedError

    def carries(self, key: str) -> npt.NDArray[np.bool_]:
        """Chunks that have any value for `key`."""
        raise NotImplementedError

    def _states_of(self, areas: Sequence[str]) -> list[str]:
        """The folded states carried by chunks that carry one of the folded `areas`."""
        raise NotImplementedError

    def values(self, key: str) -> list[str]:
        return sorted(self.shown(key.casefold()).values())

    def rows(self, key: str, values: Sequence[str]) -> npt.NDArray[np.bool_]:
        rows = np.zeros(self.size, dtype=bool)
        for ids in self._postings(key.casefold(), _values(list(values))).values():
            rows[ids] = True
        return rows

    def scope_mask(self, scope: Mapping[str, Sequence[str]]) -> npt.NDArray[np.bool_] | None:
        """Chunks that apply where the scope says the asker is (see the module docstring).

        Place keys follow the hierarchy: the most specific of `PLACE_KEYS` a chunk
        carries decides, and it must be in scope. Other keys: match, or do not carry it.
        """
        if not scope:
            return None
        allowed = np.ones(self.size, dtype=bool)
        decided = np.zeros(self.size, dtype=bool)
        has_places = any(key in scope for key in PLACE_KEYS)
        for key in PLACE_KEYS if has_places else ():
            carries = self.carries(key) & ~decided
            allowed &= ~carries | self.rows(key, scope.get(key, ()))
            decided |= carries
        for key, values in scope.items():
            if key not in PLACE_KEYS:
                allowed &= self.rows(key, values) | ~self.carries(key)
        return allowed

    def resolve_scope(self, scope: Mapping[str, str | Sequence[str]]) -> dict[str, list[str]]:
        """A given scope checked against the corpus, with the states its areas lie in added.

        A key no chunk carries, or a place the corpus does not know, is a UsageError
        naming the closest known values: a typo must not quietly widen the scope.
        """
        resolved: dict[str, list[str]] = {}
        for key, given in scope.items():
            values = [given] if isinstance(given, str) else list(given)
            self._known_key(key, "scope")
            known = self.shown(key.casefold())
            shown = []
            for value in values:
                folded = _place(known, value.strip().casefold())
                if folded not in known:
                    raise UsageError(f"no document has {key}={value!r}; {self._hint(key, folded)}")
                shown.append(known[folded])
            resolved[key.casefold()] = shown
        return self._with_states(resolved)

    def _known_key(self, key: str, what: str) -> None:
        if key.casefold() not in self.keys():
            known = ", ".join(self.keys()) or "none"
            raise UsageError(f"unknown {what} key {key!r}; this index has: {known}")

    def _hint(self, key: str, folded: str) -> str:
        known = self.shown(key.casefold())
        close = difflib.get_close_matches(folded, list(known), n=3, cutoff=0.6)
        if close:
            return f"did you mean {', '.join(known[c] for c in close)}?"
        return f"known values: {', '.join(sorted(known.values())[:12])}"

    def _with_states(self, places: dict[str, list[str]]) -> dict[str, list[str]]:
        """`places` plus the state(s) its areas lie in, unless it names a state itself."""
        areas = places.get("area")
        if not areas or "state" in places or "state" not in self.keys():
            return places
        known = self.shown("state")
        states = sorted(known[v] for v in self._states_of(_values(areas)) if v in known)
        return {**places, "state": states} if states else places

    def detect_scope(self, question: str, keys: Sequence[str] = PLACE_KEYS) -> dict[str, list[str]]:
        """Places named in the question, by metadata key, with the states that contain a named area.

        A value matches as a whole phrase, or without its generic words ("Fennick"
        for "Fennick City"). Naming an area also scopes to the state(s) its
        documents belong to, so another state's rules drop out too.
        """
        text = " " + " ".join(_WORD.findall(question.casefold())) + " "
        found: dict[str, list[str]] = {}
        present = self.keys()
        for key in keys:
            if key.casefold() not in present:
                continue
            for folded, shown in self.shown(key.casefold()).items():
                words = _WORD.findall(folded)
                core = [w for w in words if w not in _GENERIC_PLACE_WORDS] or words
                if any(f" {' '.join(form)} " in text for form in (words, core) if form):
                    found.setdefault(key, []).append(shown)
        return self._with_states(found)

    def mask(self, filters: Mapping[str, Any]) -> npt.NDArray[np.bool_] | None:
        """Chunks matching every key; None when no filter.

        A key's value is one value, a list (any of them) or `{"all": [...]}` (every one).
        """
        if not filters:
            return None
        allowed = np.ones(self.size, dtype=bool)
        for key, wanted in filters.items():
            self._known_key(key, "filter")
            mode, values = _wanted(key, wanted)
            postings = self._postings(key.casefold(), values)
            key_mask = np.zeros(self.size, dtype=bool) if mode == "any" else np.ones_like(allowed)
            for value in values:
                if value not in postings:
                    raise UsageError(f"no chunk has {key}={value!r}; {self._hint(key, value)}")
                rows = np.zeros(self.size, dtype=bool)
                rows[postings[value]] = True
                key_mask = key_mask | rows if mode == "any" else key_mask & rows
            allowed &= key_mask
        return allowed


def _place(known: Mapping[str, str], folded: str) -> str:
    """`folded`, or the one known value it names without generic words ("fennick")."""
    if folded in known:
        return folded
    named = [
        v
        for v in known
        if " ".join(w for w in _WORD.findall(v) if w not in _GENERIC_PLACE_WORDS) == folded
    ]
    return named[0] if len(named) == 1 else folded


class FacetIndex(Facets):
    """The facets of chunks held in memory: for each key and value, the rows that carry it
    (list values count each item)."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.size = len(chunks)
        postings: dict[str, dict[str, list[int]]] = {}
        self._display: dict[str, dict[str, str]] = {}
        for i, chunk in enumerate(chunks):
            for key, value in flat_metadata(chunk.metadata):
                by_value = postings.setdefault(key.casefold(), {})
                display = self._display.setdefault(key.casefold(), {})
                raw = value if isinstance(value, list | tuple | set) else [value]
                for folded, shown in zip(_values(value), raw, strict=True):
                    by_value.setdefault(folded, []).append(i)
                    display.setdefault(folded, str(shown))
        self._rows = {
            key: {v: np.asarray(ids, dtype=np.int64) for v, ids in by_value.items()}
            for key, by_value in postings.items()
        }

    @classmethod
    def from_records(
        cls,
        size: int,
        records: Sequence[tuple[str, str | None, str | None, Sequence[int], Any]],
    ) -> FacetIndex:
        """The index `records` describe (what another `FacetIndex.records` gave)."""
        out = cls([])
        out.size = size
        for key, value, shown, rows, _ in records:
            if value is None or shown is None:
                continue  # a key's carriers: the union of its values' rows
            out._rows.setdefault(key, {})[value] = np.asarray(rows, dtype=np.int64)
            out._display.setdefault(key, {})[value] = shown
        return out

    def keys(self) -> list[str]:
        return sorted(self._rows)

    def shown(self, key: str) -> dict[str, str]:
        return self._display.get(key, {})

    def _postings(self, key: str, values: Sequence[str]) -> dict[str, npt.NDArray[np.int64]]:
        by_value = self._rows.get(key, {})
        return {v: by_value[v] for v in values if v in by_value}

    def carries(self, key: str) -> npt.NDArray[np.bool_]:
        rows = np.zeros(self.size, dtype=bool)
        for ids in self._rows.get(key.casefold(), {}).values():
            rows[ids] = True
        return rows

    def _states_of(self, areas: Sequence[str]) -> list[str]:
        in_area = self.rows("area", areas)
        return [v for v, ids in self._rows.get("state", {}).items() if in_area[ids].any()]

    def records(self) -> list[tuple[str, str | None, str | None, list[int], list[str] | None]]:
        """(key, folded value, shown value, rows, states) for every value, and for each key
        one record with no value whose rows are every chunk that carries the key; an area's
        states are those `_states_of` gives for it alone. For a store to keep."""
        out: list[tuple[str, str | None, str | None, list[int], list[str] | None]] = []
        for key, by_value in self._rows.items():
            out.append((key, None, None, np.flatnonzero(self.carries(key)).tolist(), None))
            for value, ids in by_value.items():
                states = self._states_of([value]) if key == "area" else None
                out.append((key, value, self._display[key][value], ids.tolist(), states))
        return out
