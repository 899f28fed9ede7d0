"""Facet counts: for each facet key, its values over the items a listing shows, with counts.

The items counted are those that match the query (`query_match`: an item whose explanation says
`matched: true`, or every item when the query matches none) and pass the request's exclusions,
candidates and filters. Counts are disjunctive, as Algolia, Elasticsearch and Typesense count:
a key's counts respect every filter but its own, so the other values of a key already filtered
on keep their counts and a shopper can add them (OR within a key).

A value's count is the number of those items that a filter on that value would select
(`Catalog.filter_columns`: "dress" also selects "dresses"), so clicking a value gives that many
results. The keys are the catalogue's own (`Catalog.filter_keys`, by any name a filter takes);
each key's item x value incidence is built on its first count and kept. Counting runs over
the sets of attributes the selected items have (`QueryMatches.set_counts`, one compiled pass over
the selection), or their codes for a key over several facets.
A listing's answer is kept (`FacetCounter.answers`): the same search, its next
page or an undone filter is not counted again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.sparse as sp

from .catalog import Catalog, FilterValues
from .errors import InputError
from .facets import DESCRIPTION, TITLE
from .index.query import CACHE_BYTES, QueryState, WordCache
from .index.scoring import ScoringIndex
from .query_match import QueryMatches

MAX_VALUES = 100  # values listed per key, the most counted first; `more` says how many are left out
COUNTS_CACHED = 512  # queries' answers kept (`FacetCounter.answers`): up to MAX_VALUES values a key
TEXT_KEYS = (TITLE, DESCRIPTION)  # words of the text: filterable, but no listing's facet


@dataclass
class FacetValue:
    value: str
    count: int


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
    """One key's values and which of them each item has. A key whose attributes all lie in one
    facet is counted per distinct attribute set of that facet (`per_set`: (G, U) whether a set has
    the value; the index's `item_set` says each item's): the selected items' sets are counted
    once per facet and shared by its keys. A key over several facets keeps CSR rows per item
    (`ptr`, `codes`)."""

    values: list[str]  # (G,)
    facet: str | None = None  # the one facet of its attributes, counted per set
    per_set: sp.csr_matrix | None = None  # (G, U) 0/1
    ptr: np.ndarray | None = None  # (n_items + 1,)
    codes: np.ndarray | None = None  # (nnz,) value of each entry

    def counts(self, items_of: Callable[[], np.ndarray], sets_of: Callable[[str], np.ndarray]) -> np.ndarray:
        """(G,) how many of the selected items (`items_of()`: their indices) have each value;
        `sets_of(facet)` is how many of them have each set of the facet."""
        if self.facet is not None:
            assert self.per_set is not None  # set with facet
            return np.asarray(self.per_set @ sets_of(self.facet)).astype(np.int64)
        assert self.ptr is not None and self.codes is not None
        items = items_of()
        lo = self.ptr[items]
        lengths = self.ptr[items + 1] - lo
        pos = np.repeat(lo - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))
        return np.bincount(self.codes[pos], minlength=len(self.values))


class FacetCounter:
    """Facet counts over one index's catalogue (see the module's docstring)."""

    def __init__(self, index: ScoringIndex):
        self.catalog: Catalog = index.featurizer.catalog
        self.index = index
        self.matches = QueryMatches(index)
        self._tables: dict[str, _KeyTable] = {}
        self._default_keys: list[str] | None = None
        # (filter key, its values) -> (n_items,) bool: a listing's filters repeat, and a mask
        # costs a pass over the key's attribute columns (bounded by bytes, as the word caches)
        self.filter_masks: WordCache[np.ndarray] = WordCache(
            "filter masks", max(16, CACHE_BYTES // max(self.catalog.n_items, 1)))
        # a query's counts under its filters: listings repeat (the same search, the next page, a
        # filter undone), and counting passes over every matching item where ranking does not
        # (`count`'s `listing_key`; an answer is at most MAX_VALUES values a key)
        self.answers: WordCache[FacetCounts] = WordCache("facet counts", COUNTS_CACHED)

    def is_warm(self, query: str) -> bool:
        """Every word of `query` has its item mask cached (`QueryMatches.is_warm`): counting costs
        passes over the selected items alone."""
        return self.matches.is_warm(self.matches.index.query_state(query))

    def default_keys(self) -> list[str]:
        """The keys `facet_counts: true` counts: every filter key but the text's words, and but a
        facet's name when none of its attributes comes from a key of that name (the `other`
        facet: its values are listed under their own keys, category, brand, ...)."""
        if self._default_keys is not None:
            return self._default_keys
        c = self.catalog
        keys = []
        for key in sorted(c.filter_keys()):
            if key in TEXT_KEYS:
                continue
            if key in c.facets and all(c.vocab[f][a].key.lstrip("#") != key for f, a in c.filter_attributes(key)):
                continue
            keys.append(key)
        self._default_keys = keys
        return keys

    def filter_name(self, key: str, values: FilterValues) -> str:
        """What `filter_masks` and `answers` know the filter `key` = `values` by."""
        return repr((self.catalog.filter_key(key) or key, values))

    def filter_mask(self, key: str, values: FilterValues,
                    compute: Callable[[str, FilterValues], np.ndarray]) -> np.ndarray:
        """The mask of filter `key` = `values`, from `filter_masks`, or `compute(key, values)` (which
        checks them) and kept."""
        name = self.filter_name(key, values)
        mask = self.filter_masks.get(name)
        if mask is None:
            mask = compute(key, values)
            self.filter_masks.put(name, mask)
        return mask

    def key(self, name: str) -> str:
        """The catalogue's key `name` names (any spelling a filter takes), or an InputError."""
        key = self.catalog.filter_key(name)
        if key is None:
            raise InputError(f"facet_counts: unknown key {name.strip()!r}; count one of: "
                             f"{', '.join(self.default_keys())} (or any filter key)")
        return key

    def count(self, state: QueryState, keys: Sequence[str] | None, eligible: np.ndarray | None,
              filter_masks: Mapping[str, np.ndarray], listing_key: str | None = None) -> FacetCounts:
        """Counts of `keys` (None: `default_keys`) over the items matching `state` that are
        `eligible` (exclusions and candidates; None: all) and pass `filter_masks` (filter key ->
        (n_items,) bool), each key's own filter left out. `listing_key` names what `eligible` and
        `filter_masks` select (the caller's `filter_name`s and exclusions): given, the answer is
        kept in `answers` under it, the query's words in their context and the keys, and read
        from there when they come again (the same object: not to be changed)."""
        asked = self.default_keys() if keys is None else list(dict.fromkeys(self.key(k) for k in keys))
        memo = None
        if listing_key is not None and state.context_keys is not None:
            memo = "\x1d".join(("\x1e".join(state.context_keys), "\x1e".join(asked), listing_key))
            kept = self.answers.get(memo)
            if kept is not None:
                return kept
        counted = self._count(state, asked, eligible, filter_masks)
        if memo is not None:
            self.answers.put(memo, counted)
        return counted

    def _count(self, state: QueryState, asked: list[str], eligible: np.ndarray | None,
               filter_masks: Mapping[str, np.ndarray]) -> FacetCounts:
        by_key = {self.key(k): m for k, m in filter_masks.items()}
        base = self.matches.mask(state)
        if eligible is not None:
            base &= eligible
        masks: dict[str | None, np.ndarray] = {}  # the filter left out -> (n_items,) bool selected
        selected: dict[str | None, np.ndarray] = {}  # ... -> their indices (keys over several facets)
        per_set: dict[str | None, np.ndarray] = {}  # ... -> (sum U,) how many hold each set

        def mask_of(left_out: str | None) -> np.ndarray:
            if left_out not in masks:
                mask = base.copy() if by_key else base
                for k, m in by_key.items():
                    if k != left_out:
                        mask &= m
                masks[left_out] = mask
            return masks[left_out]

        def items(left_out: str | None) -> np.ndarray:
            if left_out not in selected:
                selected[left_out] = np.flatnonzero(mask_of(left_out))
            return selected[left_out]

        def facets_sets(left_out: str | None) -> Callable[[str], np.ndarray]:
            def sets_of(facet: str) -> np.ndarray:
                if left_out not in per_set:
                    per_set[left_out] = self.matches.set_counts(mask_of(left_out))
                h = self.index.facets.index(facet)
                return per_set[left_out][self.index.set_offsets[h] : self.index.set_offsets[h + 1]]
            return sets_of

        facets = []
        for key in asked:
            left_out = key if key in by_key else None
            facets.append(self._facet(key, partial(items, left_out), facets_sets(left_out)))
        return FacetCounts(int(np.count_nonzero(mask_of(None))), facets)

    def _facet(self, key: str, items: Callable[[], np.ndarray], sets_of: Callable[[str], np.ndarray]) -> FacetCount:
        table = self._table(key)
        counts = table.counts(items, sets_of)
        nonzero = np.flatnonzero(counts)
        order = nonzero[np.argsort(-counts[nonzero], kind="stable")]  # values are sorted: ties by value
        listed = [FacetValue(table.values[g], int(counts[g])) for g in order[:MAX_VALUES].tolist()]
        return FacetCount(key, listed, max(len(order) - MAX_VALUES, 0))

    def _table(self, key: str) -> _KeyTable:
        if key not in self._tables:
            self._tables[key] = _key_table(self.index, key)
        return self._tables[key]


def _key_table(index: ScoringIndex, key: str) -> _KeyTable:
    """Which values of `key` each item (or each attribute set) has: value g for every one holding
    an attribute that a filter on g selects (`filter_columns`), once however many it holds."""
    catalog = index.featurizer.catalog
    values = catalog.filter_values(key)
    g_total, n = len(values), catalog.n_items
    pairs: dict[str, tuple[list[int], list[int]]] = {}  # facet -> (attribute, value) pairs
    for g, value in enumerate(values):
        for facet, a_idx in catalog.filter_columns(key, value):
            attrs, groups = pairs.setdefault(facet, ([], []))
            attrs.append(a_idx)
            groups.append(g)
    to_value = {f: sp.csr_matrix((np.ones(len(a), dtype=np.float32), (a, g)),
                                 shape=(catalog.item_attrs[f].shape[1], g_total))
                for f, (a, g) in pairs.items()}  # (V, G) which values each attribute gives
    if len(to_value) == 1:
        ((facet, attr_value),) = to_value.items()
        held = _binary(index.tables[facet].sets @ attr_value)  # (U, G)
        return _KeyTable(values, facet=facet, per_set=sp.csr_matrix(held.T))
    if not to_value:  # a facet no item has an attribute of
        return _KeyTable(values, ptr=np.zeros(n + 1, dtype=np.int64), codes=np.zeros(0, dtype=np.int32))
    parts = [catalog.item_attrs[f] @ m for f, m in to_value.items()]  # (n, G) each
    held = _binary(sum(parts[1:], parts[0]))
    return _KeyTable(values, ptr=held.indptr.astype(np.int64), codes=held.indices.astype(np.int32))


def _binary(m: sp.csr_matrix) -> sp.csr_matrix:
    """`m` as 0/1 float64 CSR (how many attributes select a value does not matter), sorted."""
    out: sp.csr_matrix = m.tocsr().astype(np.float64)
    out.eliminate_zeros()
    out.data[:] = 1.0
    out.sort_indices()
    return out
