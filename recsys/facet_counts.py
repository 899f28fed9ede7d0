"""Facet counts: for each facet key, its values over the items a listing shows, with counts.

The items counted are those that match the query (`query_match`: an item whose explanation says
`matched: true`, or every item when the query matches none) and pass the request's exclusions,
candidates and filters. Counts are disjunctive, as Algolia, Elasticsearch and Typesense count:
a key's counts respect every filter but its own, so the other values of a key already filtered
on keep their counts and a shopper can add them (OR within a key).

A value's count is the number of those items that a filter on that value would select
(`Catalog.filter_columns`: "dress" also selects "dresses"), so clicking a value gives that many
results. The keys are the catalogue's own (`Catalog.filter_keys`, by any name a filter takes);
each key's item x value incidence is built on its first count and kept. Counting is numpy over
item codes, only over the selected items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .catalog import Catalog
from .errors import InputError
from .facets import DESCRIPTION, TITLE
from .index import ScoringIndex
from .query import QueryState
from .query_match import QueryMatches

MAX_VALUES = 100  # values listed per key, the most counted first; `more` says how many are left out
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
    """One key's values and which of them each item has: as one code per item (`single`, G for
    none) when no item has two, else as CSR rows (`ptr`, `codes`)."""

    values: list[str]  # (G,)
    ptr: np.ndarray  # (n_items + 1,)
    codes: np.ndarray  # (nnz,) value of each entry
    single: np.ndarray | None  # (n_items,) int32

    def counts(self, items: np.ndarray) -> np.ndarray:
        """(G,) how many of `items` (indices) have each value."""
        g = len(self.values)
        if self.single is not None:
            return np.bincount(self.single[items], minlength=g + 1)[:g]
        lo = self.ptr[items]
        lengths = self.ptr[items + 1] - lo
        pos = np.repeat(lo - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))
        return np.bincount(self.codes[pos], minlength=g)


class FacetCounter:
    """Facet counts over one index's catalogue (see the module's docstring)."""

    def __init__(self, index: ScoringIndex):
        self.catalog: Catalog = index.featurizer.catalog
        self.matches = QueryMatches(index)
        self._tables: dict[str, _KeyTable] = {}

    def is_warm(self, query: str) -> bool:
        """Every word of `query` has its item mask cached (`QueryMatches.is_warm`): counting costs
        passes over the selected items alone."""
        return self.matches.is_warm(self.matches.index.query_state(query))

    def default_keys(self) -> list[str]:
        """The keys `facet_counts: true` counts: every filter key but the text's words, and but a
        facet's name when none of its attributes comes from a key of that name (the `other`
        facet: its values are listed under their own keys, category, brand, ...)."""
        c = self.catalog
        keys = []
        for key in sorted(c.filter_keys()):
            if key in TEXT_KEYS:
                continue
            if key in c.facets and all(c.vocab[f][a].key.lstrip("#") != key for f, a in c.filter_attributes(key)):
                continue
            keys.append(key)
        return keys

    def key(self, name: str) -> str:
        """The catalogue's key `name` names (any spelling a filter takes), or an InputError."""
        key = self.catalog.filter_key(name)
        if key is None:
            raise InputError(f"facet_counts: unknown key {name.strip()!r}; count one of: "
                             f"{', '.join(self.default_keys())} (or any filter key)")
        return key

    def count(self, state: QueryState, keys: Sequence[str] | None, eligible: np.ndarray | None,
              filter_masks: Mapping[str, np.ndarray]) -> FacetCounts:
        """Counts of `keys` (None: `default_keys`) over the items matching `state` that are
        `eligible` (exclusions and candidates; None: all) and pass `filter_masks` (filter key ->
        (n_items,) bool), each key's own filter left out."""
        asked = self.default_keys() if keys is None else list(dict.fromkeys(self.key(k) for k in keys))
        by_key = {self.key(k): m for k, m in filter_masks.items()}
        base = self.matches.mask(state)
        if eligible is not None:
            base &= eligible
        selected: dict[str | None, np.ndarray] = {}  # the filter left out -> selected item indices

        def items(left_out: str | None) -> np.ndarray:
            if left_out not in selected:
                mask = base.copy() if by_key else base
                for k, m in by_key.items():
                    if k != left_out:
                        mask &= m
                selected[left_out] = np.flatnonzero(mask)
            return selected[left_out]

        facets = [self._facet(key, items(key if key in by_key else None)) for key in asked]
        return FacetCounts(len(items(None)), facets)

    def _facet(self, key: str, items: np.ndarray) -> FacetCount:
        table = self._table(key)
        counts = table.counts(items)
        nonzero = np.flatnonzero(counts)
        order = nonzero[np.argsort(-counts[nonzero], kind="stable")]  # values are sorted: ties by value
        listed = [FacetValue(table.values[g], int(counts[g])) for g in order[:MAX_VALUES].tolist()]
        return FacetCount(key, listed, max(len(order) - MAX_VALUES, 0))

    def _table(self, key: str) -> _KeyTable:
        if key not in self._tables:
            self._tables[key] = _key_table(self.catalog, key)
        return self._tables[key]


def _key_table(catalog: Catalog, key: str) -> _KeyTable:
    """Which values of `key` each item has: value g for every item holding an attribute that a
    filter on g selects (`filter_columns`), once however many of them it holds."""
    values = catalog.filter_values(key)
    g_total, n = len(values), catalog.n_items
    pairs: dict[str, tuple[list[int], list[int]]] = {}  # facet -> (attribute, value) pairs
    for g, value in enumerate(values):
        for facet, a_idx in catalog.filter_columns(key, value):
            attrs, groups = pairs.setdefault(facet, ([], []))
            attrs.append(a_idx)
            groups.append(g)
    parts = []
    for facet, (attrs, groups) in pairs.items():
        v = catalog.item_attrs[facet].shape[1]
        to_value = sp.csr_matrix((np.ones(len(attrs), dtype=np.float32), (attrs, groups)), shape=(v, g_total))
        parts.append(catalog.item_attrs[facet] @ to_value)  # (n, G) how many attributes select each
    held = sp.csr_matrix(sum(parts[1:], parts[0]) if parts else sp.csr_matrix(([], ([], [])), shape=(n, g_total)))
    held.eliminate_zeros()
    held.sort_indices()
    ptr, codes = held.indptr.astype(np.int64), held.indices.astype(np.int32)
    single = None
    if np.diff(ptr).max(initial=0) <= 1:
        single = np.full(n, g_total, dtype=np.int32)
        single[np.flatnonzero(np.diff(ptr))] = codes
    return _KeyTable(values, ptr, codes, single)
