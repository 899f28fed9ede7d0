"""The scoring side of the index: facets merged into groups, each scored through one table, and
the exact pruned top-k over them (`GroupTables`); `fast_top_k`, the general top-k over a scores
array.

An item's score is the sum over groups of table[group.ids[item]]: a group's ids are the joint
signatures of its facets' distinct attribute sets, so the tables are small and a score is 1-2
lookups. Which facets to merge is chosen at build to minimise the per-query work
(`_choose_groups`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..item_bits import holds_items, unpack_items
from ..kernels import Kernels


@dataclass
class _Group:
    """Facets scored through one table: an item's part of the score is table[ids[item]]."""

    facets: tuple[int, ...]  # positions in the index's facets
    ids: np.ndarray  # (n_items,) int32 joint signature of the group's facets
    members: np.ndarray | None  # (len(facets), G) global set row of each facet; None = one facet
    size: int  # G, the number of joint signatures (the table's length)
    order: np.ndarray = field(init=False, repr=False)  # (n_items,) int32 items sorted by id
    counts: np.ndarray = field(init=False, repr=False)  # (G,) items per id
    ptr: np.ndarray = field(init=False, repr=False)  # (G + 1,) where each id's items start in order

    def __post_init__(self) -> None:
        self.order = np.argsort(self.ids, kind="stable").astype(np.int32)
        self.counts = np.bincount(self.ids, minlength=self.size).astype(np.int64)
        self.ptr = np.concatenate([[0], np.cumsum(self.counts)])


_NO_FLOATS = np.zeros(0, dtype=np.float64)
_NO_BITS = np.zeros(0, dtype=np.uint64)


@dataclass(frozen=True)
class ItemOffsets:
    """A per-item term added to the score after the groups' tables (a merchandising rule's boosts
    and buries, `recsys.rules`), in float64 (an item's score is then float64(its tables' float32
    sum) + its offset), and what the pruned top-k bounds it by: per table entry of every group
    the largest offset of the entry's items. Built once per set of offsets (`GroupTables.offsets`)."""

    per_item: np.ndarray  # (n_items,) float64
    # (sum G,) float64: groups' entries end to end, as the tables are; empty: every offset is at
    # most 0, which the tables' own values bound (no bound is read per entry)
    entry_max: np.ndarray
    # the largest offset in size (0 without any), derived here once: the bounds' float rounding
    # scales with it and the compiled top-k's histogram is bounded by it (an understated one would
    # write past its bins), so it is never given, and never found again per query (a pass over
    # every entry, 15-20 us at 100k items)
    spread: float = field(init=False)
    # items scored apart from the bounds (`for_matches`), as bits (`pack_items`), and every
    # item's offset there; empty: none
    boosted: np.ndarray = field(default_factory=lambda: _NO_BITS)
    boosted_values: np.ndarray = field(default_factory=lambda: _NO_FLOATS)

    def __post_init__(self) -> None:
        object.__setattr__(self, "spread", float(np.abs(self.entry_max).max()) if self.entry_max.size else 0.0)

    def for_matches(self, lowered: np.ndarray, boosted: np.ndarray) -> ItemOffsets:
        """These offsets for one query whose boosts act only on the items it matches: the items
        `boosted` (bits, `pack_items`) keep their own offsets and are scored apart, before the
        pruned pass, where they raise its bound; every other item takes `lowered` (n_items,)
        float64, at most 0 (buries alone), which needs no bounds per entry. So the items a
        boost raises but the query leaves out no longer inflate the bounds of their entries
        (a colour's boost: tens of thousands of items, most of whose entries the query's
        matches never reach); nothing but the bits is built per query."""
        out = object.__new__(ItemOffsets)
        for name, value in (("per_item", lowered), ("entry_max", _NO_FLOATS), ("spread", 0.0),
                            ("boosted", boosted), ("boosted_values", self.per_item)):
            object.__setattr__(out, name, value)
        return out

    def of(self, items: np.ndarray | None) -> np.ndarray:
        """The offsets of `items` (every item's when None), as the compiled top-k reads them."""
        own: np.ndarray = self.per_item if items is None else self.per_item[items]
        if not self.boosted.size:
            return own
        at = np.arange(len(self.per_item)) if items is None else np.asarray(items, dtype=np.int64)
        out: np.ndarray = np.where(holds_items(self.boosted, at), self.boosted_values[at], own)
        return out

    def boosted_items(self) -> np.ndarray:
        """Sorted indices of the items scored apart (`for_matches`)."""
        if not self.boosted.size:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(unpack_items(self.boosted, len(self.per_item)))

    @property
    def nbytes(self) -> int:
        return int(self.per_item.nbytes + self.entry_max.nbytes)


class GroupTables:
    """The groups and what top-k reads of them, built once per index: per group its joint
    signature of every item (`ids`, stacked in `_ids`), the items sorted by id (`_order`, with
    `_ptr` and `_counts` saying where each id's items are), its table's place in the groups'
    tables end to end (`_tab_off`), the distinct-set rows its entries sum (`_mem_rows`,
    `_mem_off`, `_mem_count`), and the prior's part of every table (`prior_tab`). Holds no cache:
    the tables of a query come in as arguments."""

    def __init__(self, item_sets: list[np.ndarray], sizes: list[int], set_offsets: np.ndarray,
                 set_prior: np.ndarray, n_items: int, kernels: Kernels | None):
        self.n_items, self.set_offsets = n_items, set_offsets
        self.groups = _choose_groups(item_sets, sizes, set_offsets, n_items)
        # the same, stacked for the compiled top-k: ids and items-by-id of every group
        self._ids = np.stack([g.ids for g in self.groups])  # (n_groups, n_items) int32
        self._order = np.stack([g.order for g in self.groups])
        # (n_groups, n_groups, n_items): [p, q, j] = ids[q, order[p, j]], so that walking the
        # items of a group's ids reads every group's ids sequentially instead of at random
        # (C order, as `kernels._warm_up` compiles for: numpy lays the fancy-indexed rows out
        # transposed, and a layout the warm-up did not compile cost a request seconds of numba)
        self._by_id = np.ascontiguousarray(np.stack([self._ids[:, o] for o in self._order]))
        for row, g in enumerate(self.groups):  # one copy of each array: views of the stack
            g.ids, g.order = self._ids[row], self._order[row]
        self._tab_off = np.concatenate([[0], np.cumsum([g.size for g in self.groups])]).astype(np.int64)
        # every group's member set rows end to end, (facets, G) per group, for the compiled
        # table builder (a one-facet group's members are its facet's rows in order)
        members = [g.members if g.members is not None else
                   np.arange(set_offsets[g.facets[0]], set_offsets[g.facets[0] + 1])[None]
                   for g in self.groups]
        self._mem_rows = np.concatenate([m.ravel() for m in members]).astype(np.int32)
        self._mem_off = np.concatenate([[0], np.cumsum([m.size for m in members])]).astype(np.int64)
        self._mem_count = np.array([m.shape[0] for m in members], dtype=np.int64)
        self.prior_tab = self.tables_of_sets(set_prior[None], kernels)[0]  # (sum G,)
        self.zero_tab = np.zeros_like(self.prior_tab)
        self._counts = np.concatenate([g.counts for g in self.groups])
        self._ptr = np.concatenate([g.ptr for g in self.groups])  # group r's start at _tab_off[r] + r
        self._seed_group = int(np.argmax([g.size for g in self.groups]))
        self._no_mask = np.ones(0, dtype=np.bool_)
        self._no_offsets = np.zeros(0, dtype=np.float64)
        self._no_items = np.zeros(0, dtype=np.int64)

    @property
    def total(self) -> int:
        """sum G: the length of all groups' tables end to end."""
        return int(self._tab_off[-1])

    def place(self, r: int) -> tuple[int, int]:
        """Where group r's table is in the tables end to end."""
        return int(self._tab_off[r]), int(self._tab_off[r + 1])

    def members(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(rows, offsets, counts, table offsets): what the compiled table builders read."""
        return self._mem_rows, self._mem_off, self._mem_count, self._tab_off

    def split(self, flat: np.ndarray) -> list[np.ndarray]:
        """The groups' tables (views) from the tables end to end."""
        return [flat[self._tab_off[r] : self._tab_off[r + 1]] for r in range(len(self.groups))]

    def tables_of_sets(self, per_set: np.ndarray, kernels: Kernels | None) -> np.ndarray:
        """(m, sum G) from (m, sum U): each group's table entry is the sum of its member sets."""
        if kernels is not None:
            return kernels.word_tables(np.ascontiguousarray(per_set, dtype=np.float32), *self.members())
        out = []
        for g in self.groups:
            if g.members is None:
                out.append(per_set[:, self.set_offsets[g.facets[0]] : self.set_offsets[g.facets[0] + 1]])
                continue
            table = per_set[:, g.members[0]]
            for row in g.members[1:]:
                table = table + per_set[:, row]
            out.append(table)
        return np.concatenate(out, axis=1)

    def weighted_tables(self, ratios: np.ndarray, weights: np.ndarray, set_facet: np.ndarray,
                        set_prior: np.ndarray, kernels: Kernels | None) -> np.ndarray:
        """(sum G,) the tables under head weights: the words' per-set ratios (m, sum U) summed,
        times their facet's weight, plus the prior, summed into the groups' entries."""
        if kernels is not None:
            return kernels.weighted_tables(ratios, weights, set_facet, set_prior, *self.members())
        per_set = np.zeros(int(self.set_offsets[-1]), dtype=np.float32)
        for r in ratios:
            per_set += r
        per_set = per_set * weights[set_facet] + set_prior
        flat: np.ndarray = self.tables_of_sets(per_set[None], None)[0]
        return flat

    @staticmethod
    def flat(rows: Sequence[np.ndarray], base: np.ndarray) -> np.ndarray:
        """The tables end to end: the sum of the rows, then base (always in this order: the
        first row is where the sum starts, as 0 + x is x)."""
        if len(rows) == 0:
            return base.copy()
        flat: np.ndarray = rows[0] + rows[1] if len(rows) > 1 else rows[0].copy()
        for r in rows[2:]:
            flat += r
        flat += base
        return flat

    def offsets(self, items: np.ndarray, values: np.ndarray) -> ItemOffsets:
        """The offsets `values` (float64) of `items` (sorted, unique), every other item's 0.
        Each entry's bound is the largest offset of its items, or 0 for an entry of items all
        buried (any upper bound keeps the top-k exact; a tight one prunes more)."""
        per_item = np.zeros(self.n_items)
        per_item[items] = values
        if not values.size or values.max() <= 0:  # buries alone: the tables bound them
            return ItemOffsets(per_item, _NO_FLOATS)
        entry_max = np.zeros(self.total)
        for r, g in enumerate(self.groups):
            lo, hi = self.place(r)
            np.maximum.at(entry_max[lo:hi], g.ids[items], values)
        return ItemOffsets(per_item, entry_max)

    def scores_of(self, rows: Sequence[np.ndarray], base: np.ndarray, items: np.ndarray) -> np.ndarray:
        """(len(items),) float32 scores of `items` from the tables `flat(rows, base)` without
        building them: each item's entries are summed as `flat` sums every entry, then its groups
        as `item_scores` does, so the floats are the same; a few items cost a few lookups per
        row, not a pass over every table entry (sum G: 32k at 100k generated items)."""
        return _group_sum(self.flat([row[at] for row in rows], base[at])
                          for at in (self._tab_off[r] + g.ids[items] for r, g in enumerate(self.groups)))

    def item_scores(self, tables: list[np.ndarray], items: np.ndarray | None) -> np.ndarray:
        """Scores of `items` (all when None); always summed in the same order, so an item's
        score is the same float whichever way it is reached."""
        return _group_sum(np.take(table, g.ids if items is None else g.ids[items])
                          for g, table in zip(self.groups, tables))

    def top_k(self, rows: Sequence[np.ndarray], base: np.ndarray, eligible: np.ndarray | None, k: int,
              kernels: Kernels | None, offsets: ItemOffsets | None = None,
              extra: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(items, scores): the k best eligible items of the tables `flat(rows, base)`, best
        first, ties by catalogue order; the same answer as `fast_top_k` over every score. With
        `offsets`, an item's score is float64(its tables' sum) + its offset. `extra`: (items,
        offsets) ranked besides the eligible ones, each with its own offset (float64) instead;
        `eligible` must leave them out. Scores are float64 with either, float32 without.

        Exact pruning: the k-th best score among a few "seed" items (those of each group's best
        signatures) is a lower bound L of the k-th best overall, and an item can only reach L if,
        in every group, its table entry plus the entry's largest offset is at least L minus the
        other groups' maxima. Only the items of the group with the fewest such entries are
        scored; a query that prunes little falls back to scoring every item."""
        n = self.n_items
        if extra is not None and not extra[0].size:
            extra = None
        if eligible is not None and extra is None and eligible.all():  # with extra items, it is not
            eligible = None
        plain = offsets is None and extra is None
        if k <= 0 or n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32 if plain else np.float64)
        few = eligible is not None and np.count_nonzero(eligible) * 8 < n
        flat = self.flat(rows, base)
        if kernels is not None and not few:
            mask = self._no_mask if eligible is None else np.ascontiguousarray(eligible, dtype=np.bool_)
            if plain:
                return kernels.top_k_plain(flat, self._tab_off, self._ids, self._order, self._by_id, self._ptr,
                                           self._counts, mask, eligible is not None, int(k), self._seed_group)
            per_item, entry_max, spread = (self._no_offsets, self._no_offsets, 0.0) if offsets is None else \
                (offsets.per_item, offsets.entry_max, offsets.spread)
            boosted, boosted_values = (_NO_BITS, _NO_FLOATS) if offsets is None else \
                (offsets.boosted, offsets.boosted_values)
            extra_items, extra_offset = (self._no_items, self._no_offsets) if extra is None else extra
            items, scores = kernels.top_k(flat, self._tab_off, self._ids, self._order, self._by_id,
                                          self._ptr, self._counts, mask, eligible is not None, int(k),
                                          self._seed_group, per_item, entry_max, spread,
                                          np.ascontiguousarray(extra_items, dtype=np.int64),
                                          np.ascontiguousarray(extra_offset, dtype=np.float64),
                                          boosted, boosted_values)
            return items, scores
        tables = self.split(flat)
        if offsets is not None and offsets.boosted.size:
            # the items scored apart join the extra items, out of what the bounds prune
            apart = offsets.boosted_items()
            if eligible is not None:
                apart = apart[eligible[apart]]
            kept = np.ones(n, dtype=bool) if eligible is None else eligible.copy()
            kept[apart] = False
            items, values = (apart, offsets.boosted_values[apart]) if extra is None else \
                (np.concatenate([extra[0], apart]), np.concatenate([extra[1], offsets.boosted_values[apart]]))
            eligible, extra = kept, (items, values)
            few = np.count_nonzero(eligible) * 8 < n
        if few and eligible is not None:  # few: eligible is not None
            found = self._top_of_items(tables, np.flatnonzero(eligible), k, offsets)
        else:
            found = self._top_k_numpy(tables, eligible, k, offsets)
        return found if extra is None else self._merge(tables, found, extra, k, offsets)

    def _merge(self, tables: list[np.ndarray], found: tuple[np.ndarray, np.ndarray],
               extra: tuple[np.ndarray, np.ndarray], k: int,
               offsets: ItemOffsets | None) -> tuple[np.ndarray, np.ndarray]:
        """The k best of `found` (eligible items, best first) and the extra items."""
        items, offset = extra
        s = self.item_scores(tables, items).astype(np.float64) + offset
        both = np.concatenate([found[0], items])
        scores = np.concatenate([found[1].astype(np.float64), s])
        pos = _top_of(both, scores, k)
        return both[pos], scores[pos]

    def _top_k_numpy(self, tables: list[np.ndarray], eligible: np.ndarray | None,
                     k: int, offsets: ItemOffsets | None) -> tuple[np.ndarray, np.ndarray]:
        n = self.n_items
        # what an entry can reach: its table value plus the largest offset of its items
        reach = tables if offsets is None or not offsets.entry_max.size else \
            [t + e for t, e in zip(tables, self.split(offsets.entry_max))]
        bound = -np.inf
        for g, table in zip(self.groups, reach):
            seeds = self._seed_items(g, table)
            if eligible is not None:
                seeds = seeds[eligible[seeds]]
            if len(seeds) >= k:
                s = self._scores(tables, seeds, offsets)
                bound = max(bound, float(np.partition(s, len(s) - k)[len(s) - k]))
        if not np.isfinite(bound):
            return self._full_top_k(tables, eligible, k, offsets)
        maxima = [float(t.max()) for t in tables]
        spread = 0.0 if offsets is None else offsets.spread
        margin = 1e-5 * (abs(bound) + sum(abs(x) for x in maxima) + spread) + 1e-30  # float rounding
        passes = [r >= bound - (sum(maxima) - m) - margin for r, m in zip(reach, maxima)]
        sizes = [int(g.counts @ ok) for g, ok in zip(self.groups, passes)]
        p = int(np.argmin(sizes))
        if sizes[p] * 3 > n:
            return self._full_top_k(tables, eligible, k, offsets)
        g = self.groups[p]
        ids = np.flatnonzero(passes[p])
        cand = _ranges(g.order, g.ptr[ids], g.counts[ids])
        keep = None
        for q, (other, ok) in enumerate(zip(self.groups, passes)):
            if q != p:
                keep = ok[other.ids[cand]] if keep is None else keep & ok[other.ids[cand]]
        if eligible is not None:
            keep = eligible[cand] if keep is None else keep & eligible[cand]
        if keep is not None:
            cand = cand[keep]
        return self._top_of_items(tables, cand, k, offsets)

    def _seed_items(self, g: _Group, table: np.ndarray, want: int = 1024) -> np.ndarray:
        """Items of the group's best-scoring signatures, about `want` of them."""
        per_id = max(1.0, self.n_items / max(len(table), 1))
        r = min(len(table), max(8, int(4 * want / per_id) + 1))
        top = np.argpartition(-table, r - 1)[:r] if r < len(table) else np.arange(len(table))
        top = top[np.argsort(-table[top], kind="stable")]
        m = int(np.searchsorted(np.cumsum(g.counts[top]), want)) + 1
        return _ranges(g.order, g.ptr[top[:m]], g.counts[top[:m]])

    def _scores(self, tables: list[np.ndarray], items: np.ndarray | None,
                offsets: ItemOffsets | None) -> np.ndarray:
        """`item_scores`, plus the items' offsets (float64) when there are any."""
        s = self.item_scores(tables, items)
        if offsets is None:
            return s
        out: np.ndarray = s.astype(np.float64) + offsets.of(items)
        return out

    def _top_of_items(self, tables: list[np.ndarray], items: np.ndarray,
                      k: int, offsets: ItemOffsets | None) -> tuple[np.ndarray, np.ndarray]:
        s = self._scores(tables, items, offsets)
        pos = _top_of(items, s, k)
        return items[pos], s[pos]

    def _full_top_k(self, tables: list[np.ndarray], eligible: np.ndarray | None,
                    k: int, offsets: ItemOffsets | None) -> tuple[np.ndarray, np.ndarray]:
        if eligible is not None:
            return self._top_of_items(tables, np.flatnonzero(eligible), k, offsets)
        scores = self._scores(tables, None, offsets)
        best = fast_top_k(scores, None, k)
        return best, scores[best]


def _group_sum(parts: Iterator[np.ndarray]) -> np.ndarray:
    """Items' scores from their parts, one per group (new arrays), summed in the groups' order:
    every way of scoring an item sums its parts so, to the same float."""
    scores: np.ndarray | None = None
    for part in parts:
        if scores is None:
            scores = part
        else:
            scores += part
    assert scores is not None  # an index has at least one group
    return scores


def fast_top_k(scores: np.ndarray, eligible: np.ndarray | None, k: int) -> np.ndarray:
    """Indices of the k best eligible items, best first; ties broken by catalogue order.

    The same answer as sorting every score (tests/reference.py), without a full partition: the
    k-th best of a
    strided sample is a lower bound of the k-th best overall, so only items at or above it can
    be in the top k (all of them, including every tie with the k-th score)."""
    n = len(scores)
    if eligible is not None and eligible.all():
        eligible = None
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    if eligible is not None:
        n_ok = int(np.count_nonzero(eligible))
        if n_ok * 8 < n or n_ok <= 4 * k:  # few eligible items: look at them only
            idx = np.flatnonzero(eligible)
            best: np.ndarray = idx[_top_of(idx, scores[idx], k)]
            return best
    stride = max(1, n // (64 * k))
    sample = scores[::stride] if eligible is None else scores[::stride][eligible[::stride]]
    if len(sample) <= k:
        idx = np.arange(n) if eligible is None else np.flatnonzero(eligible)
        best = idx[_top_of(idx, scores[idx], k)]
        return best
    threshold = np.partition(sample, len(sample) - k)[len(sample) - k]
    cand = np.flatnonzero(scores >= threshold)
    if eligible is not None:
        cand = cand[eligible[cand]]
    best = cand[_top_of(cand, scores[cand], k)]
    return best


def _top_of(items: np.ndarray, s: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k best of s, best first, ties by the item index `items`."""
    if len(s) > k:
        kth = np.partition(s, len(s) - k)[len(s) - k]
        above = np.flatnonzero(s > kth)
        tied = np.flatnonzero(s == kth)
        need = k - len(above)
        if len(tied) > need:
            tied = tied[np.argpartition(items[tied], need - 1)[:need]]
        pos = np.concatenate([above, tied])
    else:
        pos = np.arange(len(s))
    return pos[np.lexsort((items[pos], -s[pos]))]


def _ranges(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """values[starts[0]:starts[0]+lengths[0]], values[starts[1]:...], ... concatenated."""
    total = int(lengths.sum())
    if total == 0:
        return values[:0]
    shift = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    return values[shift + np.arange(total)]



# ---- groups ------------------------------------------------------------------------------------


def _joint(ids: np.ndarray, size: int, more: np.ndarray, more_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Joint signature of two per-item id arrays: (int32 id per item, first item of each id)."""
    _, first, inv = np.unique(ids.astype(np.int64) * more_size + more, return_index=True,
                              return_inverse=True)
    return inv.ravel().astype(np.int32), first


def _choose_groups(item_sets: list[np.ndarray], sizes: list[int], offsets: np.ndarray,
                   n_items: int) -> list[_Group]:
    """Split the facets into groups scored through one table each, minimising the per-query
    work: a gather over all items per group, plus, for a merged group, building its table
    (joint signatures x facets). Tries every partition of the facets (15 for 4 facets)."""
    h = len(item_sets)
    joint: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}
    if h <= 6 and n_items:
        for r in range(2, h + 1):
            for g in itertools.combinations(range(h), r):
                prev = joint.get(g[:-1])
                prev_ids, prev_size = (item_sets[g[0]], sizes[g[0]]) if prev is None else (prev[0], len(prev[1]))
                if prev is None and r > 2:
                    continue  # its prefix was not worth keeping, neither is this one
                ids, first = _joint(prev_ids, prev_size, item_sets[g[-1]], sizes[g[-1]])
                if len(first) * r < (r - 1) * n_items:  # could beat scoring its facets apart
                    joint[g] = (ids, first)

    def cost(part: list[tuple[int, ...]]) -> float:
        return sum(n_items if len(g) == 1 else n_items + len(joint[g][1]) * len(g) for g in part)

    parts = [p for p in _partitions(list(range(h))) if all(len(g) == 1 or g in joint for g in p)]
    groups = []
    for g in min(parts, key=cost):
        if len(g) == 1:
            groups.append(_Group(g, item_sets[g[0]], None, sizes[g[0]]))
            continue
        ids, first = joint[g]
        members = np.stack([item_sets[i][first] + offsets[i] for i in g]).astype(np.int32)
        groups.append(_Group(g, ids, members, len(first)))
    return groups


def _partitions(items: list[int]) -> Iterator[list[tuple[int, ...]]]:
    if not items:
        yield []
        return
    head, rest = items[0], items[1:]
    for part in _partitions(rest):
        yield [(head,)] + part
        for i in range(len(part)):
            yield part[:i] + [(head,) + part[i]] + part[i + 1 :]  # tuples stay sorted
