"""Which items match a query: the one definition facet counts and "did you mean" share.

An item *matches* a query when its explanation says `matched: true`: some query word holds at
least MATCH_THRESHOLD of its attention on one of the item's attributes, in some head
(`explain.Explanation.matched`). The ranking scores every item; these are the ones a shop's
listing would call its results. A query no item of the catalogue matches (every word unmatched,
or only stop words) is answered by prior over the whole catalogue, and then every item counts
as matching: the listing is the ranking.

A word's attention weight on attribute m of an item is e^{l_m} / (sum of e^l over the item's
attributes of that facet + the no-match slot), so whether the word matches depends on the
item's attribute set in each facet alone: it is found once per distinct set
(`AttributeSets.all_sets`, its largest e^l against its denominator, in float64 as
`explain.explain_items` computes weights) and read per item through each facet's set ids. A
word's items are cached by word, as bits (`pack_items`), when no other query word couples to
it (`QueryState.context_free`), as the index caches its ratios.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .explain import MATCH_THRESHOLD
from .index.query import CACHE_BYTES, QueryState
from .index.scoring import ScoringIndex
from .item_bits import pack_items, unpack_items
from .lru import WordCache
from .match_evidence import countable_grid


class QueryMatches:
    """Item masks of queries over one index's catalogue (see the module's docstring)."""

    def __init__(self, index: ScoringIndex):
        self.index = index
        sets = index.sets
        self._sets = sets.all_sets  # (sum U, sum V), indices sorted
        counts = np.diff(self._sets.indptr)
        self._filled = np.flatnonzero(counts > 0)  # sets with attributes: reduceat needs them
        self._starts = self._sets.indptr[:-1][self._filled]
        # (sum U,) float64 multiplicity of each set's no-match slot, as explanations compute it
        self._slot = np.concatenate([sets.slot_multiplicity(f, sets.set_length(f)) for f in index.facets])
        self._set_facet = sets.set_facet
        # per facet: where its sets start among all sets, and each item's set
        self._item_sets = [(int(sets.set_offsets[h]), index.tables[f].item_set)
                           for h, f in enumerate(index.facets)]
        # the items of each set of any facet, for the compiled pass: global set s holds
        # _set_items[_set_ptr[s]:_set_ptr[s + 1]] (int32), so a word marks its matched items alone
        global_sets = np.concatenate([offset + item_set for offset, item_set in self._item_sets])
        self._set_items = (np.argsort(global_sets, kind="stable") % max(index.n_items, 1)).astype(np.int32)
        self._set_ptr = np.concatenate([[0], np.cumsum(np.bincount(global_sets, minlength=len(self._slot)))])
        # for the compiled pass, which sums only the sets holding an attribute that could be
        # their best (`kernels._word_items`): the sets holding each attribute, each attribute's
        # facet, and per facet the least e^l / e^l_slot a set's best attribute needs (its share
        # e^l / (e^l + e^l_slot * slot) reaches MATCH_THRESHOLD only above it), a hair lower so
        # that rounding never drops a set the exact test would keep
        by_attr = sp.csc_matrix(self._sets)
        by_attr.sort_indices()
        self._attr_ptr, self._attr_sets = by_attr.indptr.astype(np.int64), by_attr.indices.astype(np.int32)
        self._set_attr_ptr, self._set_attrs = self._sets.indptr.astype(np.int64), self._sets.indices.astype(np.int32)
        self._attr_facet = np.repeat(np.arange(len(index.facets)),
                                     [len(sets.tables[f].values) for f in index.facets])  # (sum V,)
        least_slot = np.full(len(index.facets), np.inf)
        np.minimum.at(least_slot, self._set_facet[self._filled], self._slot[self._filled])  # an empty set never matches
        share = MATCH_THRESHOLD / (1.0 - MATCH_THRESHOLD)  # MATCH_THRESHOLD is below 1
        self._candidate = np.where(np.isfinite(least_slot), share * least_slot * (1.0 - 1e-9), 0.0)
        self.word_items: WordCache[np.ndarray] = WordCache(  # each word's items as bits
            "word items", max(16, CACHE_BYTES // max(index.n_items // 8, 1)))
        self._every = pack_items(np.ones(index.n_items, dtype=bool))
        self._last: tuple[QueryState, bool, np.ndarray] | None = None  # `matching`'s last state, path, items

    def is_warm(self, state: QueryState) -> bool:
        """Every word's items are cached: `bits` costs an OR per word."""
        free = state.context_free
        return all(free is not None and bool(free[i]) and t.cache_key in self.word_items
                   for i, t in enumerate(state.tokens))

    def bits(self, state: QueryState) -> np.ndarray:
        """(W,) uint64 (`pack_items`): the items matching the query (every item when none does),
        a new array. Words' items are kept as bits: an OR of 64 items an operation, and eight
        times the words in a cache's bytes."""
        out = self.matching(state)
        return out if out.any() else self._every.copy()

    def matching(self, state: QueryState) -> np.ndarray:
        """(W,) uint64: the items some word of the query matches, none when no word matches
        any (`bits` then counts every item), a new array. The last state's are kept: a request
        asks for one query's three times (its ranking's rules, its explanations, its facet
        counts), and the index gives the same state again for the same query."""
        last, path = self._last, self.index.use_kernel
        if last is not None and last[0] is state and last[1] == path:
            return last[2].copy()
        out = np.zeros(-(-self.index.n_items // 64), dtype=np.uint64)
        for word in self._word_bits(state):
            out |= word
        self._last = (state, path, out.copy())  # one assignment: threads see all or none
        return out

    def mask(self, state: QueryState) -> np.ndarray:
        """(n_items,) bool: `bits` item by item."""
        return unpack_items(self.bits(state), self.index.n_items)

    def _word_bits(self, state: QueryState) -> list[np.ndarray]:
        t = len(state.tokens)
        free = state.context_free if state.context_free is not None else np.zeros(t, dtype=bool)
        found: list[np.ndarray | None] = [self.word_items.get(tok.cache_key) if free[i] else None
                                          for i, tok in enumerate(state.tokens)]
        missing = [i for i in range(t) if found[i] is None]
        if missing:
            flat, flat_nm = state.flat_logits, state.flat_no_match
            if flat is None:  # a state built by hand
                flat = np.concatenate([state.logits[f] for f in self.index.facets], axis=1)
                flat_nm = np.stack([state.no_match[f] for f in self.index.facets], axis=1)
            assert flat_nm is not None  # set with flat_logits
            new = self._word_items(flat[missing], state.lexical and [state.lexical[i] for i in missing],
                                   flat_nm[missing])  # (m, W)
            for j, i in enumerate(missing):
                bits = found[i] = new[j]
                if free[i]:
                    self.word_items.put(state.tokens[i].cache_key, bits)
        return [m for m in found if m is not None]

    def _word_items(self, flat: np.ndarray, lexical: list[np.ndarray] | None, flat_nm: np.ndarray) -> np.ndarray:
        """(m, W) uint64 the items each of m words matches as bits (`pack_items`), from its
        logits (m, sum V), the columns where each is said (`QueryState.lexical`: its matches count
        only there when it has any, `match_evidence.countable`; None: everywhere) and its
        no-match logits (m, H); compiled when numba is here
        (`kernels._word_items`: the same floats, summed over the sets a word could match
        alone), else through `_matched_sets`."""
        kernels = self.index.kernels()
        if kernels is not None:
            said = lexical or [np.zeros(0, dtype=np.int64)] * len(flat)
            ptr = np.concatenate([[0], np.cumsum([len(cols) for cols in said])]).astype(np.int64)
            cols = np.concatenate([np.zeros(0, dtype=np.int64), *said]).astype(np.int64)
            return kernels.word_items(np.ascontiguousarray(flat), ptr, cols, np.ascontiguousarray(flat_nm),
                                      self._attr_facet,
                                      self._candidate, self._attr_ptr, self._attr_sets, self._set_attr_ptr,
                                      self._set_attrs, self._slot, self._set_facet, MATCH_THRESHOLD,
                                      self._set_ptr, self._set_items, len(self._every))
        countable = countable_grid(lexical, list(range(len(flat))), 0, flat.shape[1])  # (m, sum V)
        matched_sets = self._matched_sets(flat, countable, flat_nm)  # (m, sum U)
        out = np.zeros((len(flat), len(self._every)), dtype=np.uint64)
        for j in range(len(flat)):
            mask = np.zeros(self.index.n_items, dtype=bool)
            for offset, item_set in self._item_sets:
                mask |= matched_sets[j, offset + item_set]
            out[j] = pack_items(mask)
        return out

    def _matched_sets(self, flat: np.ndarray, countable: np.ndarray, flat_nm: np.ndarray) -> np.ndarray:
        """(m, sum U) bool: whether each of m words matches an attribute of each set where its
        match counts, from its logits (m, sum V), `countable` (m, sum V) and no-match logits (m, H)."""
        e = np.exp(flat.astype(np.float64))[:, self._sets.indices]  # (m, nnz) each entry's e^l
        out = np.zeros((len(flat), len(self._slot)), dtype=bool)
        if not len(self._filled):
            return out
        den = np.add.reduceat(e, self._starts, axis=1)  # (m, filled) sum over each set
        best = np.maximum.reduceat(e * countable[:, self._sets.indices], self._starts, axis=1)  # (m, filled)
        slot = np.exp(flat_nm.astype(np.float64))[:, self._set_facet[self._filled]]  # (m, filled)
        den = den + slot * self._slot[self._filled]
        out[:, self._filled] = best / den >= MATCH_THRESHOLD
        return out
