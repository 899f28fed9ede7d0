"""Exact, fast scoring of a whole catalogue: the production path.

Keys and values depend on the attribute alone, so a query is scored once against each facet's
attribute vocabulary (T x V logits); an item's head output then only needs sums over its own
attributes:  out = sum_t  (sum_m e^{l_tm} v_m) / (e^{l_t,none} + sum_m e^{l_tm}).
Logits are soft-capped by the model, so the exponentials need no max-shift.

Every step below is an exact rewrite: scores equal `FacetScorer.forward` up to float rounding, and
the top k equals sorting every score (tests/recsys/test_index.py against tests/reference.py).

The index is three parts with one job each, put together by `ScoringIndex`:

- `recsys.index.query.QueryTables` (the query side): per query word, one (D,) @ (D, sum V + H) product
  gives every facet's q.k / sqrt(d_k) and no-match pre-activation, and its evidence rows are read
  straight from the CSR tables; its `word_rows` cache keeps them per word. A query's logits are
  a `QueryState`.
- `recsys.index.attribute_sets.AttributeSets` (the item side): each facet is computed once per DISTINCT
  attribute set, the sets' attribute lists forming a prefix tree, so a word's per-set ratios take
  one add per tree node.
- `recsys.index.topk.GroupTables` (scoring and top-k): facets whose sets combine into few joint
  signatures are merged into groups, so an item's score is a sum of 1-2 lookups in small tables,
  and `top_k` rules out whole table entries from a lower bound of the k-th best score.

A word's per-set ratios depend on that word alone unless another query word matches the same
multi-word attribute (coverage), so `ScoringIndex` caches them per word (with the words it is
coupled to, when it is) with their sums into the groups' tables (`word_parts`); a score is the
sum of the query words' cached table parts plus the prior's. Head weights other than 1 are
applied per set before the tables are built.

What runs per query is compiled with numba (`recsys.kernels`: a numpy call on arrays this small is
mostly dispatch); the numpy code does the same, in the same order of operations, when numba cannot
compile (`use_kernel = False` forces it; tests run both).
"""

from __future__ import annotations

from typing import cast

import numpy as np

from ..encoding import Featurizer
from ..kernels import Kernels, compiled
from ..lru import WordCache
from ..model import FacetScorer
from ..synonyms import SynonymBook
from .attribute_sets import AttributeSets
from .query import CACHE_BYTES, QueryState, QueryTables
from .topk import GroupTables, ItemOffsets, _Group


class ScoringIndex:
    """A model's exact fast scorer over one catalogue. Holds the three parts (`queries`, `sets`,
    `grouped`; see the module's docstring), the model and featurizer they were built from, and
    one cache of its own, `word_parts`: per query word in its context
    (`QueryState.context_keys`), its record (its table parts (sum G,), then the per-set ratios
    of the facets in merged groups), at most `CACHE_BYTES` of them. `use_kernel` picks the
    compiled or the numpy path."""

    def __init__(self, model: FacetScorer, featurizer: Featurizer):
        self.model, self.featurizer = model.eval(), featurizer
        self.use_kernel = True  # compiled scoring when numba works here; False = numpy only
        # the shop's synonyms every query state applies (`recsys.synonyms`); None: none. Set by
        # whoever serves (`Recommender.use_synonyms`): a reference, swapped whole
        self.synonyms: SynonymBook | None = None
        # the last query's state, with what made it (`query_state`): a request reads its query's
        # state up to three times (the ranking, its facet counts, whether their words are warm)
        self._last_state: tuple[str, SynonymBook | None, bool, QueryState] | None = None
        compiled()  # compile (or load from numba's cache) now, not on the first request
        catalog = featurizer.catalog
        self.facets = model.cfg.facets  # the heads, in order
        if catalog.facets != self.facets:
            raise ValueError(f"the catalogue has the facets {list(catalog.facets)}, the model the "
                             f"heads {list(self.facets)}: build both from one schema")
        self.n_items = catalog.n_items
        self.sets = AttributeSets(model, catalog)
        self.tables, self.prior, self.set_offsets = self.sets.tables, self.sets.prior, self.sets.set_offsets
        self.queries = QueryTables(model, featurizer, {f: t.keys for f, t in self.tables.items()},
                                   {f: t.bias for f, t in self.tables.items()}, self._compiled)
        self.vocab_offsets = self.queries.vocab_offsets
        self._fold_item_tables()

    # ---- build ---------------------------------------------------------------------------------

    def _fold_item_tables(self) -> None:
        """The scoring groups, and where a word's cached record keeps what."""
        u_sizes = [t.sets.shape[0] for t in self.tables.values()]
        self.grouped = GroupTables([self.tables[f].item_set for f in self.facets], u_sizes,
                                   self.set_offsets, self.sets.set_prior, self.n_items, self._compiled())
        for g in self.grouped.groups:  # a one-facet group's ids are its facet's set rows: one copy
            if g.members is None:
                self.tables[self.facets[g.facets[0]]].item_set = g.ids
        # a word's cached record is its table parts (sum G,) then the per-set ratios of the facets
        # in merged groups: a one-facet group's table part IS its facet's ratios, stored once
        self._ratio_place: list[tuple[int, int]] = []  # facet -> its ratios in the record
        merged, at = [], self.grouped.total
        for h in range(len(self.facets)):
            r = next(r for r, g in enumerate(self.groups) if h in g.facets)
            if self.groups[r].members is None:
                self._ratio_place.append(self.grouped.place(r))
            else:
                lo, hi = int(self.set_offsets[h]), int(self.set_offsets[h + 1])
                merged.append(np.arange(lo, hi))
                self._ratio_place.append((at, at + hi - lo))
                at += hi - lo
        self._merged_sets = np.concatenate(merged or [np.zeros(0, dtype=np.int64)])
        # per query word: its record (table parts, then merged facets' ratios), bounded by bytes
        self.word_parts: WordCache[np.ndarray] = WordCache("word parts", max(16, CACHE_BYTES // (4 * max(at, 1))))

    def slot_multiplicity(self, facet: str, length: np.ndarray) -> np.ndarray:
        """The no-match slot's multiplicity at an item's length (`AttributeSets.slot_multiplicity`)."""
        return self.sets.slot_multiplicity(facet, length)

    @property
    def length_unit(self) -> str:
        """What an item's length counts (`ModelOptions.length_unit`): what explanations say."""
        return self.model.cfg.length_unit

    def clear_caches(self) -> None:
        """Forget every per-word row and ratio: the next queries start cold."""
        self.queries.word_rows.clear()
        self.word_parts.clear()
        self._last_state = None

    def query_state(self, query: str) -> QueryState:
        """The query's tokens and logits (`QueryTables.query_state`), with the synonyms in force;
        the last query's again when it comes again under the same synonyms and path (a state
        is read, never changed: its arrays are filled once, on first read)."""
        last, synonyms = self._last_state, self.synonyms
        if last is not None and last[0] == query and last[1] is synonyms and last[2] == self.use_kernel:
            return last[3]
        state = self.queries.query_state(query, synonyms)
        self._last_state = (query, synonyms, self.use_kernel, state)  # one assignment: threads see all or none
        return state

    # ---- scoring -------------------------------------------------------------------------------

    def set_outputs(self, state: QueryState) -> np.ndarray:
        """(sum U,) unweighted head output of every distinct set of every facet (facet h's sets
        are rows set_offsets[h]:set_offsets[h+1]): the sum over tokens of numerator /
        denominator."""
        out = np.zeros(int(self.set_offsets[-1]), dtype=np.float32)
        for record in self._word_parts(state):
            out += self._record_ratios(record)
        return out

    def _record_ratios(self, record: np.ndarray) -> np.ndarray:
        """(sum U,) a word's per-set ratios, in facet order, from its cached record."""
        return np.concatenate([record[lo:hi] for lo, hi in self._ratio_place])

    def _word_parts(self, state: QueryState) -> list[np.ndarray]:
        """Per token, its record: (sum G,) its per-set numerators / denominators summed into the
        groups' table entries, then the ratios of the facets in merged groups (see
        `_record_ratios`). A token's parts depend on its logits alone, so they are cached
        (bounded) under its context key (`QueryState.context_keys`: the word, and the words it
        shares an exact-match attribute with, if any); the floats are the same either way."""
        t, keys = len(state.tokens), state.context_keys  # None: a state built by hand
        parts: list[np.ndarray | None] = [None if keys is None else self.word_parts.get(keys[i]) for i in range(t)]
        missing = [i for i in range(t) if parts[i] is None]
        if missing:  # only now are the logits needed (a lazy state computes them on this read)
            flat, flat_nm = state.flat_logits, state.flat_no_match
            if flat is None:  # a state built by hand
                flat = np.concatenate([state.logits[f] for f in self.facets], axis=1)
                flat_nm = np.stack([state.no_match[f] for f in self.facets], axis=1)
            assert flat_nm is not None  # set with flat_logits
            shares = state.value_share
            for i, part in zip(missing, self._new_word_parts(flat[missing], flat_nm[missing],
                                                             None if shares is None else shares[missing])):
                parts[i] = part
                if keys is not None:
                    self.word_parts.put(keys[i], part)
        return cast(list[np.ndarray], parts)  # every token's part is filled in now

    def _new_word_parts(self, flat: np.ndarray, flat_nm: np.ndarray, shares: np.ndarray | None = None
                        ) -> list[np.ndarray]:
        """The records of m words from their logits (m, sum V) and (m, H), and the shares of
        the values each is worth (m, sum V) (`QueryState.value_share`; None: 1): per word, its
        (sum G,) table parts then its ratios of the sets in merged groups. Compiled, one array
        per word written in place (a word's record is cached alone, so it keeps no other word
        alive)."""
        values = self.sets.values  # (sum V,)
        worth = None if shares is None else values * shares  # (m, sum V)
        kernels = self._compiled()
        if kernels is not None:
            tree, members = self.sets.tree(), self.grouped.members()
            return [kernels.word_record(*tree, np.ascontiguousarray(flat[j : j + 1]),
                                        np.ascontiguousarray(flat_nm[j : j + 1]),
                                        values if worth is None else worth[j], *members, self._merged_sets)
                    for j in range(len(flat))]
        ratios = self.sets.ratios(flat, flat_nm, worth)
        tables = self._tables_of_sets(ratios)
        return [np.concatenate([tables[j], ratios[j, self._merged_sets]]) for j in range(len(flat))]

    def _tables_of_sets(self, per_set: np.ndarray) -> np.ndarray:
        """(m, sum G) from (m, sum U): each group's table entry is the sum of its member sets."""
        return self.grouped.tables_of_sets(per_set, self._compiled())

    @property
    def groups(self) -> list[_Group]:
        """The scoring groups (`GroupTables.groups`)."""
        return self.grouped.groups

    def _compiled(self) -> Kernels | None:
        return compiled() if self.use_kernel else None

    def kernels(self) -> Kernels | None:
        """The compiled kernels, or None for the numpy path (`use_kernel` False, or no numba)."""
        return self._compiled()

    def head_outputs(self, state: QueryState) -> np.ndarray:
        """(n_items, H) unweighted head outputs for every item."""
        out = np.zeros((self.n_items, len(self.facets)), dtype=np.float32)
        if not state.tokens:
            return out
        per_set = self.set_outputs(state)
        for h, f in enumerate(self.facets):
            lo, hi = self.set_offsets[h], self.set_offsets[h + 1]
            out[:, h] = per_set[lo:hi][self.tables[f].item_set]
        return out

    def group_tables(self, state: QueryState, head_weights: np.ndarray | None = None) -> list[np.ndarray]:
        """Per group, the weighted head outputs plus prior of each of its joint signatures:
        an item's score is the sum over groups of table[group.ids[item]]."""
        return self.grouped.split(self.grouped.flat(*self._table_parts(state, head_weights)))

    def _table_parts(self, state: QueryState, head_weights: np.ndarray | None) -> tuple[list[np.ndarray], np.ndarray]:
        """(rows, base): the groups' tables end to end are the sum of the rows, then base.
        Unweighted, the rows are the words' cached parts (views: a query copies none of them)
        and base the prior; under head weights the one row is the weighted tables and base is
        zero (0 + x is x)."""
        parts = self._word_parts(state)
        weights = None if head_weights is None else np.asarray(head_weights, dtype=np.float32)
        g_total = self.grouped.total
        if weights is None or (weights == 1).all():  # x * 1 is x: the same floats either way
            return [record[:g_total] for record in parts], self.grouped.prior_tab
        ratios = (np.stack([self._record_ratios(record) for record in parts]) if parts
                  else np.zeros((0, int(self.set_offsets[-1])), dtype=np.float32))
        flat = self.grouped.weighted_tables(ratios, weights, self.sets.set_facet, self.sets.set_prior,
                                            self._compiled())
        return [flat], self.grouped.zero_tab

    def score(self, state: QueryState, head_weights: np.ndarray | None = None) -> np.ndarray:
        """(n_items,) float32: prior + head_outputs(state) @ head_weights (up to rounding)."""
        return self.grouped.item_scores(self.group_tables(state, head_weights), None)

    def score_items(self, state: QueryState, head_weights: np.ndarray | None, items: np.ndarray) -> np.ndarray:
        """(len(items),) float32: `score(state, head_weights)[items]`, the same floats, from the
        words' cached parts at those items' table entries alone (`GroupTables.scores_of`):
        what re-ranking a query's best few with more words costs, instead of a pass over the
        tables."""
        rows, base = self._table_parts(state, head_weights)
        return self.grouped.scores_of(rows, base, np.asarray(items, dtype=np.int64))

    def top_k(self, state: QueryState, head_weights: np.ndarray | None, eligible: np.ndarray | None,
              k: int, offsets: ItemOffsets | None = None,
              extra: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(items, scores): the k best eligible items, best first, ties by catalogue order;
        the same answer as `fast_top_k(self.score(state, head_weights), eligible, k)`
        (`GroupTables.top_k`), or with `offsets` (`offsets`) as
        `fast_top_k(self.score(...).astype(np.float64) + offsets.per_item, eligible, k)`; `extra`
        (items `eligible` leaves out, their offsets) are ranked too, each with its own offset."""
        if k <= 0 or self.n_items == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        rows, base = self._table_parts(state, head_weights)
        return self.grouped.top_k(rows, base, eligible, k, self._compiled(), offsets, extra)

    def offsets(self, items: np.ndarray, values: np.ndarray) -> ItemOffsets:
        """A per-item term of the score as `top_k` takes it: `values` for `items` (sorted), 0 for
        the others, bounded per table entry (`GroupTables.offsets`). Built once per set of
        merchandising rules, not per query."""
        return self.grouped.offsets(items, values)

    def nbytes(self) -> int:
        """Bytes of the arrays serving keeps per catalogue (not the model's embedding tables nor
        the per-word caches), the explanations' among them: every item's length as it is and
        rounded, each attribute's (`kernels._explain_pass`), and its attributes' columns once
        built (`AttributeSets.item_rows`; a `Recommender` builds them at load).
        Each block of memory counts once, however many arrays view it."""
        sets, grouped = self.sets, self.grouped
        arrays: list[np.ndarray | None] = [
            self.prior, self.vocab_offsets, self._merged_sets, sets.set_prior, sets.values, sets.set_offsets,
            *sets.tree(), sets.all_sets.data, sets.all_sets.indices, sets.all_sets.indptr, *sets.head_norms,
            sets._total_length, sets.item_slot_length, sets.attr_length, sets.attr_prior]
        if sets._item_rows is not None:
            arrays += [sets._item_rows.ptr, sets._item_rows.cols, sets._item_rows.values]
        for f in self.facets:
            t = self.tables[f]
            arrays += [t.item_set, t.sets.data, t.sets.indices, t.sets.indptr, t.values, t.set_prior,
                       sets.set_length(f)]
        arrays += [grouped.set_offsets, grouped._ids, grouped._order, grouped._by_id, grouped._tab_off,
                   grouped._mem_rows, grouped._mem_off, grouped._mem_count, grouped.prior_tab, grouped.zero_tab,
                   grouped._counts, grouped._ptr, grouped._no_mask]
        for g in self.groups:
            arrays += [g.ids, g.order, g.counts, g.ptr, *([] if g.members is None else [g.members])]
        owners = {id(owner): owner for owner in (_memory_owner(a) for a in arrays if a is not None)}
        return int(sum(a.nbytes for a in owners.values()))


def _memory_owner(a: np.ndarray) -> np.ndarray:
    """The array whose memory `a` views (`a` itself when it owns it)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a
