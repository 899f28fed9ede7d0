"""Facet counts: for each facet key, its values over the items a listing shows, with counts.

The items counted are those that match the query (`query_match`: an item whose explanation says
`matched: true`, or every item when the query matches none) and pass the request's exclusions,
candidates and filters. Counts are disjunctive, as Algolia, Elasticsearch and Typesense count:
a key's counts respect every filter but its own, so the other values of a key already filtered
on keep their counts and a shopper can add them (OR within a key).

A value's count is the number of those items that a filter on that value would select
(`Catalog.filter_columns`: "dress" also selects "dresses"), so clicking a value gives that many
results. The keys are the catalogue's own (`Catalog.filter_keys`, by any name a filter takes);
each key's items per value are found on its first count and kept (`_KeyTable`). Counting
reads the selection as bits, one per item: a value many items hold is counted by AND and
popcount against its own bits (64 items a word, whatever the selection's size), a rarer one by
reading its items' bits (`kernels._value_counts`, compiled; every key counted over one
selection in one pass over their tables joined). A listing's answer is kept
(`FacetCounter.answers`): the same search, its next page or an undone filter is not counted again.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

import numpy as np
import scipy.sparse as sp

from .catalog import Catalog, FilterValues
from .errors import InputError
from .facets import DESCRIPTION, TITLE
from .index.query import CACHE_BYTES, QueryState
from .index.scoring import ScoringIndex
from .item_bits import clear_items, count_items, pack_items
from .kernels import Kernels
from .lru import WordCache
from .query_match import QueryMatches

MAX_VALUES = 100  # values listed per key, the most counted first; `more` says how many are left out
JOINED_KEPT = 8  # tuples of keys kept joined: each copies its keys' tables (every key, a shop's lists)
COUNTS_CACHED = 512  # queries' answers kept (`FacetCounter.answers`): up to MAX_VALUES values a key
NUMPY_SORTED = 512  # a key with more values counted than this is sorted by numpy (`_facets`)
TEXT_KEYS = (TITLE, DESCRIPTION)  # words of the text: filterable, but no listing's facet
# a value held by at least this share of the items is counted on bits: AND + popcount over a
# row of n / 64 words (0.4 us at 100k items) costs about what reading n / 450 items' bits from
# a list does, and the row (n / 8 bytes) is at most 4 times the size of the list it replaces
DENSE_SHARE = 1 / 128


class FacetValue(TypedDict):
    """One value of a key and its count: a dict, which a listing makes 94 of at 100k generated
    items and orjson writes as it is (built, written and freed in 31 against 43 us as a dataclass;
    a slotted dataclass orjson writes 8x slower still)."""

    value: str
    count: int
    # the value as the items file writes it ("Núñez & Hijos" for "núñez & hijos":
    # `Catalog.value_names`; the value where the two are one): what a listing shows, `value` what
    # a filter takes
    name: str


@dataclass
class FacetCount:
    key: str
    values: list[FacetValue]  # count > 0, the most counted first, then by value
    more: int  # values with a count that are not listed (past MAX_VALUES)


@dataclass
class FacetCounts:
    matching: int  # items that match the query and pass every filter, exclusion and candidate list
    facets: list[FacetCount]


@dataclass
class _KeyTable:
    """One key's values and the items holding each. A value held by at least DENSE_SHARE of
    the items keeps them as a row of bits (`bits`, the row's value in `dense`): counting it
    costs a pass over n_items / 64 words, whatever the selection; a rarer value lists its items
    (`items[ptr[g]:ptr[g + 1]]`), the list no longer than the row of bits would be."""

    values: list[str]  # (G,)
    bits: np.ndarray  # (D, W) uint64, as `pack_items` lays out a mask
    dense: np.ndarray  # (D,) int64: the value of each row of `bits`
    ptr: np.ndarray  # (G + 1,) int64; a dense value's range is empty
    items: np.ndarray  # (nnz,) int32
    # (G,) `FacetValue.name`, None where it is the value; empty where every one is
    names: list[str | None] = field(default_factory=list)

    def counts(self, packed: np.ndarray, kernels: Kernels | None) -> np.ndarray:
        """(G,) int64 how many of the items `packed` selects (`pack_items`) hold each value:
        compiled (`kernels._value_counts`), else the same counts in numpy."""
        if kernels is not None:
            return kernels.value_counts(packed, self.bits, self.dense, self.ptr, self.items)
        out = np.zeros(len(self.values), dtype=np.int64)
        out[self.dense] = count_items(self.bits & packed)
        held = (packed[self.items >> 6] >> (self.items & 63).astype(np.uint64)) & np.uint64(1)
        owner = np.repeat(np.arange(len(self.values)), np.diff(self.ptr))
        return out + np.bincount(owner, weights=held, minlength=len(self.values)).astype(np.int64)


def _joined(tables: Sequence[_KeyTable]) -> tuple[_KeyTable, np.ndarray]:
    """The keys' tables end to end, as one table of all their values (so one compiled pass
    counts every key a selection is counted for), and (K + 1,) int64 where each key's values
    start in it."""
    starts = np.cumsum([0] + [len(t.values) for t in tables]).astype(np.int64)
    bits = np.concatenate([t.bits for t in tables])
    dense = np.concatenate([t.dense + s for t, s in zip(tables, starts.tolist())])
    item_starts = np.cumsum([0] + [len(t.items) for t in tables]).tolist()
    ptr = np.concatenate([[0]] + [t.ptr[1:] + s for t, s in zip(tables, item_starts)]).astype(np.int64)
    values = [v for t in tables for v in t.values]
    names = [n for t in tables for n in (t.names or [None] * len(t.values))] if any(t.names for t in tables) else []
    return _KeyTable(values, bits, dense.astype(np.int64), ptr, np.concatenate([t.items for t in tables]),
                     names), starts


class FacetCounter:
    """Facet counts over one index's catalogue (see the module's docstring)."""

    def __init__(self, index: ScoringIndex):
        self.catalog: Catalog = index.featurizer.catalog
        self.index = index
        self.matches = QueryMatches(index)
        self._tables: dict[str, _KeyTable] = {}
        self._default_keys: list[str] | None = None
        # (filter key, its values) -> its items as bits: a listing's filters repeat, and a mask
        # costs a pass over the key's attribute columns (bounded by bytes, as the word caches)
        self.filter_masks: WordCache[np.ndarray] = WordCache(
            "filter masks", max(16, CACHE_BYTES // max(self.catalog.n_items // 8, 1)))
        # a query's counts under its filters: listings repeat (the same search, the next page, a
        # filter undone), and counting passes over every matching item where ranking does not
        # (`count`'s `listing_key`; an answer is at most MAX_VALUES values a key)
        self.answers: WordCache[FacetCounts] = WordCache("facet counts", COUNTS_CACHED)
        # keys' tables joined, per tuple of keys counted over one selection (`_joined`)
        self._joined_tables: WordCache[tuple[_KeyTable, np.ndarray]] = WordCache("joined key tables", JOINED_KEPT)

    def is_warm(self, query: str) -> bool:
        """Every word of `query` has its items cached (`QueryMatches.is_warm`): counting costs
        passes over bits alone."""
        return self.matches.is_warm(self.matches.index.query_state(query))

    def default_keys(self) -> list[str]:
        """The keys `facet_counts: true` counts: every filter key but the text's words, and but a
        facet's name that lists nothing of its own (`Catalog.own_listing`: the `other` facet,
        whose values are listed under their own keys, category, brand, ...)."""
        if self._default_keys is not None:
            return self._default_keys
        c = self.catalog
        keys = []
        for key in sorted(c.filter_keys()):
            if key in TEXT_KEYS:
                continue
            if key in c.facets and not c.own_listing(key):
                continue
            keys.append(key)
        self._default_keys = keys
        return keys

    def filter_name(self, key: str, values: FilterValues) -> str:
        """What `filter_masks` and `answers` know the filter `key` = `values` by."""
        return repr((self.catalog.filter_key(key) or key, values))

    def filter_mask(self, key: str, values: FilterValues,
                    compute: Callable[[str, FilterValues], np.ndarray]) -> np.ndarray:
        """The items filter `key` = `values` selects, as bits (`pack_items`), from `filter_masks`,
        or `compute(key, values)` ((n_items,) bool; it checks them) and kept."""
        name = self.filter_name(key, values)
        bits = self.filter_masks.get(name)
        if bits is None:
            bits = pack_items(compute(key, values))
            self.filter_masks.put(name, bits)
        return bits

    def key(self, name: str) -> str:
        """The catalogue's key `name` names (any spelling a filter takes), or an InputError."""
        key = self.catalog.filter_key(name)
        if key is None:
            raise InputError(f"facet_counts: unknown key {name.strip()!r}; count one of: "
                             f"{', '.join(self.default_keys())} (or any filter key)")
        return key

    def count(self, state: QueryState, keys: Sequence[str] | None, eligible: np.ndarray | None,
              filter_masks: Mapping[str, np.ndarray], listing_key: str | None = None,
              hidden: np.ndarray | None = None) -> FacetCounts:
        """Counts of `keys` (None: `default_keys`) over the items matching `state` that are
        `eligible` ((n_items,) bool: exclusions and candidates; None: all), are not `hidden`
        (item indices: the ones rules hide, which would cost a catalogue's mask a request) and
        pass `filter_masks` (filter key -> its items as bits, `filter_mask`), each key's own
        filter left out.
        `listing_key` names what `eligible` and `filter_masks` select (the caller's
        `filter_name`s, exclusions and hidden items): given, the answer is
        kept in `answers` under it, the query's words in their context and the keys, and read
        from there when they come again (the same object: not to be changed)."""
        asked = self.default_keys() if keys is None else list(dict.fromkeys(self.key(k) for k in keys))
        memo = None
        if listing_key is not None and state.context_keys is not None:
            memo = "\x1d".join(("\x1e".join(state.context_keys), "\x1e".join(asked), listing_key))
            kept = self.answers.get(memo)
            if kept is not None:
                return kept
        counted = self._count(state, asked, eligible, filter_masks, hidden)
        if memo is not None:
            self.answers.put(memo, counted)
        return counted

    def _count(self, state: QueryState, asked: list[str], eligible: np.ndarray | None,
               filter_masks: Mapping[str, np.ndarray], hidden: np.ndarray | None = None) -> FacetCounts:
        by_key = {self.key(k): m for k, m in filter_masks.items()}
        base = self.matches.bits(state)  # a new array
        if eligible is not None:
            base &= pack_items(eligible)
        if hidden is not None and hidden.size:
            clear_items(base, hidden)
        kernels = self.index.kernels()
        selected: dict[str | None, np.ndarray] = {}  # the filter left out -> the items selected

        def bits_of(left_out: str | None) -> np.ndarray:
            if left_out not in selected:
                bits = base
                for k, m in by_key.items():
                    if k != left_out:
                        bits = bits & m  # a new array: `base` serves every filter left out
                selected[left_out] = bits
            return selected[left_out]

        # the keys counted over one selection (those without a filter of their own share it)
        by_selection: dict[str | None, list[str]] = {}
        for key in asked:
            by_selection.setdefault(key if key in by_key else None, []).append(key)
        counted: dict[str, FacetCount] = {}
        for left_out, keys in by_selection.items():
            table, starts = self._joined(tuple(keys))
            counts = table.counts(bits_of(left_out), kernels)
            counted.update(zip(keys, _facets(keys, table.values, counts, starts, table.names)))
        return FacetCounts(int(count_items(bits_of(None))), [counted[key] for key in asked])

    def _table(self, key: str) -> _KeyTable:
        if key not in self._tables:
            self._tables[key] = _key_table(self.index, key)
        return self._tables[key]

    def _joined(self, keys: tuple[str, ...]) -> tuple[_KeyTable, np.ndarray]:
        """`_joined` of the keys' tables, kept per tuple of keys (a listing asks the same keys
        again: every key, or the shop's own list)."""
        if len(keys) == 1:
            table = self._table(keys[0])
            return table, np.array([0, len(table.values)], dtype=np.int64)
        name = "\x1e".join(keys)
        joined = self._joined_tables.get(name)
        if joined is None:
            joined = _joined([self._table(k) for k in keys])
            self._joined_tables.put(name, joined)
        return joined


def _facets(keys: Sequence[str], values: Sequence[str], counts: np.ndarray, starts: np.ndarray,
            names: Sequence[str | None] = ()) -> list[FacetCount]:
    """Per key, its values with a count (values[starts[k]:starts[k + 1]], counts alike), the most
    counted first and ties by value (the values are sorted), at most MAX_VALUES of them.

    Sorted in Python, key by key, over the values with a count: a listing's few dozen values
    cost 39 us so at 100k items, against 67 us for numpy's half-dozen calls on arrays this small
    (their fixed costs, cold between requests); a key with many values counted is sorted by numpy.
    """
    shown = np.flatnonzero(counts).tolist()
    counted = counts.tolist()
    ends = starts.tolist()
    out = []
    lo = 0
    for k, key in enumerate(keys):
        hi = bisect_left(shown, ends[k + 1], lo)
        if hi - lo <= NUMPY_SORTED:
            mine = shown[lo:hi]
            mine.sort(key=counted.__getitem__, reverse=True)  # stable: ties keep the values' order
            listed = mine[:MAX_VALUES]
        else:
            at = np.asarray(shown[lo:hi], dtype=np.int64)
            listed = at[np.argsort(-counts[at], kind="stable")[:MAX_VALUES]].tolist()
        said: list[FacetValue] = [{"value": values[g], "count": counted[g], "name": (names[g] if names else None)
                                   or values[g]} for g in listed]
        out.append(FacetCount(key, said, hi - lo - len(listed)))
        lo = hi
    return out


def _key_table(index: ScoringIndex, key: str, dense_share: float = DENSE_SHARE) -> _KeyTable:
    """Which items hold each value `key` lists (`Catalog.listed_values`): those with an attribute
    that a filter on the value selects (`filter_columns`), once however many they hold; kept as
    bits for a value held by at least `dense_share` of the items, as a list for the others."""
    catalog = index.featurizer.catalog
    values = catalog.listed_values(key)
    g_total, n = len(values), catalog.n_items
    pairs: dict[str, tuple[list[int], list[int]]] = {}  # facet -> (attribute, value) pairs
    names: list[str | None] = [None] * g_total
    for g, value in enumerate(values):
        for facet, a_idx in catalog.filter_columns(key, value):
            attrs, groups = pairs.setdefault(facet, ([], []))
            attrs.append(a_idx)
            groups.append(g)
            if names[g] is None:
                names[g] = catalog.value_names.get(catalog.vocab[facet][a_idx].label)
    parts = [catalog.item_attrs[f] @ sp.csr_matrix((np.ones(len(a), dtype=np.float32), (a, g)),
                                                   shape=(catalog.item_attrs[f].shape[1], g_total))
             for f, (a, g) in pairs.items()]  # (n, G) each: which values each item's attributes give
    none = np.zeros(0, dtype=np.int64)  # a facet no item has an attribute of: no value held
    held = sum(parts[1:], parts[0]) if parts else sp.csr_matrix((none.astype(np.float32), (none, none)),
                                                                shape=(n, g_total))
    per_value = _binary(sp.csr_matrix(held.T))  # (G, n): each value's items, sorted
    sizes = np.diff(per_value.indptr)
    is_dense = (sizes > 0) & (sizes >= dense_share * n)
    dense = np.flatnonzero(is_dense)
    bits = np.zeros((len(dense), -(-n // 64)), dtype=np.uint64)
    for r, g in enumerate(dense.tolist()):
        row = np.zeros(n, dtype=bool)
        row[per_value.indices[per_value.indptr[g] : per_value.indptr[g + 1]]] = True
        bits[r] = pack_items(row)
    listed = np.where(is_dense, 0, sizes)
    keep = np.repeat(~is_dense, sizes)
    return _KeyTable(values, bits, dense.astype(np.int64), np.concatenate([[0], np.cumsum(listed)]).astype(np.int64),
                     per_value.indices[keep].astype(np.int32), names if any(n is not None for n in names) else [])


def _binary(m: sp.csr_matrix) -> sp.csr_matrix:
    """`m` as 0/1 float64 CSR (how many attributes select a value does not matter), sorted."""
    out: sp.csr_matrix = m.tocsr().astype(np.float64)
    out.eliminate_zeros()
    out.data[:] = 1.0
    out.sort_indices()
    return out
