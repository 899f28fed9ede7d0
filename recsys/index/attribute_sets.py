"""The item side of the index: per facet, its distinct attribute sets, and a word's per-set
head output from its logits.

Items with the same attribute set in a facet get the same head output, so each facet is computed
once per DISTINCT set. The sets' attribute lists form a prefix tree (sets share category, brand,
common words), so a word's per-set numerators and denominators take one add per tree node rather
than per list entry (the compiled path, `kernels._set_ratios`; `AttributeSets.ratios` is the
numpy one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from ..catalog import Catalog
from ..encoding import item_lengths
from ..formula import quantized_length
from ..model import FacetScorer


@dataclass
class FacetTables:
    """One facet's item side: its attributes' keys, values and logit offsets, its distinct
    attribute sets, which one each item has, and each set's share of the prior."""

    keys: torch.Tensor  # (V, K)
    values: np.ndarray  # (V,)
    bias: torch.Tensor  # (V,) logit offset per attribute (`FacetHead.attribute_bias`)
    sets: sp.csr_matrix  # (U, V) distinct attribute sets of this facet
    item_set: np.ndarray  # (n_items,) int32 row of `sets` for each item
    set_prior: np.ndarray | None = None  # (U,) the facet's share of the item prior, per set
    # (U,) the length the set's no-match slot is normalised by (`FacetScorer.slot_lengths`): with
    # one length per item, a set is an attribute list AND a rounded item length
    set_length: np.ndarray | None = None


@dataclass
class ItemRows:
    """Every item's attributes of every facet as columns of the flat vocabulary (facets side by
    side, as in `QueryState.flat_logits`), item after item, facet after facet: segment
    s = item * H + head holds cols[ptr[s]:ptr[s + 1]], in the catalogue's order."""

    ptr: np.ndarray  # (n_items * H + 1,)
    cols: np.ndarray  # (sum of the catalogue's attribute counts,)
    values: np.ndarray  # (sum V,) float32, each attribute's value
    labels: list[str]  # (sum V,) each attribute's display label

    @classmethod
    def build(cls, catalog: Catalog, facets: tuple[str, ...], values: np.ndarray) -> ItemRows:
        mats = [catalog.item_attrs[f].tocsr() for f in facets]
        n, n_heads = catalog.n_items, len(facets)
        lens = np.stack([np.diff(m.indptr) for m in mats], 1).astype(np.int64)  # (n, H)
        total = int(lens.sum())
        dtype = np.int32 if total < 2**31 - 1 else np.int64
        ptr = np.concatenate([[0], np.cumsum(lens.ravel())]).astype(dtype)
        offsets = np.concatenate([[0], np.cumsum([m.shape[1] for m in mats])]).astype(np.int64)
        cols = np.empty(total, dtype=np.int32 if offsets[-1] < 2**31 - 1 else np.int64)
        starts = ptr[:-1].reshape(n, n_heads).astype(np.int64)
        for h, m in enumerate(mats):
            # entry j of item i's row goes to starts[i, h] + (j - indptr[i])
            dest = np.repeat(starts[:, h] - m.indptr[:-1], lens[:, h]) + np.arange(m.indptr[-1])
            cols[dest] = m.indices[: m.indptr[-1]] + offsets[h]
        labels = [label for f in facets for label in catalog.labels(f)]
        return cls(ptr, cols, values, labels)


class AttributeSets:
    """Every facet's `FacetTables` (`tables`) and, over all facets, the distinct sets as one
    block-diagonal matrix (`all_sets`: (sum U, sum V), facet h's sets are rows
    set_offsets[h]:set_offsets[h+1]) and as a prefix tree (`tree()`), each set's facet
    (`set_facet`), no-match multiplicity (`slot_count`) and prior (`set_prior`), the attributes'
    values end to end (`values`) and each item's prior (`prior`). Built once; holds no cache."""

    def __init__(self, model: FacetScorer, catalog: Catalog):
        facets = model.cfg.facets
        self.tables: dict[str, FacetTables] = {}
        # BM25's length normalisation of the no-match slot, per head: (b, mean length), and with
        # one length per item (`FacetScorer.slot_lengths`) every item's whole length (the sum of
        # its attributes' lengths over all facets: 1 each, or their words), as it is and rounded
        self._length_norm = {f: (float(model.head(f).length_b().detach()),
                                 float(getattr(model, f"attr_mean_count_{f}"))) for f in facets}
        # the same per head, in facet order: (b, mean) arrays of (H,) (`items_multiplicity`)
        self.head_norms = tuple(np.array(x, dtype=np.float64) for x in zip(*self._length_norm.values()))
        self.per_item = model.cfg.length_per_item
        # (sum V,) what each attribute adds to an item's length, facet after facet
        # (`FacetScorer.facet_length`): what an erased attribute takes off; and per facet, views
        self.attr_length = np.concatenate([getattr(model, f"attr_length_{f}").numpy() for f in facets])
        ends = np.cumsum([model.cfg.vocab_sizes[f] for f in facets])
        self._attr_length = {f: self.attr_length[end - model.cfg.vocab_sizes[f]:end] for f, end in zip(facets, ends)}
        self._total_length = item_lengths(catalog, self._attr_length)  # (n_items,)
        self.item_slot_length = quantized_length(self._total_length)  # (n_items,) used when per_item
        prior = np.zeros(catalog.n_items, dtype=np.float32)
        attr_priors = []
        with torch.no_grad():
            word_vectors = model.attribute_word_vectors()
            for f in facets:
                keys, values, attr_prior, bias = model.head_tables(f, word_vectors[f])
                attr_priors.append(attr_prior.numpy().astype(np.float64))
                sets, item_set = _distinct_rows(catalog.item_attrs[f])
                if self.per_item:
                    sets, item_set, set_length = _split_by_length(sets, item_set, self.item_slot_length)
                else:
                    set_length = sets @ self._attr_length[f]  # each set's own length
                counts = np.maximum(np.diff(sets.indptr), 1)
                set_prior = ((sets @ attr_prior.numpy().astype(np.float64)) / counts).astype(np.float32)
                self.tables[f] = FacetTables(keys, values.numpy(), bias, sets, item_set, set_prior, set_length)
                prior += set_prior[item_set]
        self.prior = prior  # (n_items,)
        # (sum V,) float64 each attribute's prior, facet after facet: an item's prior in a facet is
        # the mean of its attributes' (what erasing one of them changes, `explain`)
        self.attr_prior = np.concatenate(attr_priors) if attr_priors else np.zeros(0)
        self.values = np.concatenate([self.tables[f].values for f in facets]).astype(np.float32)  # (sum V,)
        sets_list = [self.tables[f].sets for f in facets]
        u_sizes = [x.shape[0] for x in sets_list]
        self.set_offsets = np.concatenate([[0], np.cumsum(u_sizes)]).astype(np.int64)
        # one row per distinct set of any facet (block diagonal over the facets' vocabularies),
        # and the no-match slot's multiplicity in its denominator
        self.set_facet = np.repeat(np.arange(len(facets)), u_sizes)  # (sum U,)
        self.slot_count = np.concatenate([self.slot_multiplicity(f, self.set_length(f))
                                          for f in facets]).astype(np.float32)  # (sum U,)
        self.all_sets = sp.block_diag(sets_list, format="csr", dtype=np.float32)  # (sum U, sum V)
        self.all_sets.sort_indices()
        self._tree_parent, self._tree_attr, self._set_node = _prefix_tree(self.all_sets)
        self.set_prior = np.concatenate([self.tables[f].set_prior for f in facets])  # (sum U,)
        self._catalog, self._facets = catalog, facets
        self._item_rows: ItemRows | None = None  # built on first use, then kept (one per index)

    def item_rows(self) -> ItemRows:
        """Every item's attributes as columns of the flat vocabulary: what batched explanations
        read (a few numpy passes over the catalogue; two threads racing here would only build
        the same table twice)."""
        if self._item_rows is None:
            self._item_rows = ItemRows.build(self._catalog, self._facets, self.values)
        return self._item_rows

    def tree(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(parent, attribute, set node, slot count, set facet): what `kernels._set_ratios` reads."""
        return self._tree_parent, self._tree_attr, self._set_node, self.slot_count, self.set_facet

    def slot_multiplicity(self, facet: str, length: np.ndarray) -> np.ndarray:
        """How many slots the no-match alternative counts as for items of this `length` in
        `facet` (`set_lengths`, `item_length`): 1 - b + b * length / mean
        (`FacetHead.slot_log_count`, in numpy: explanations call it per request)."""
        b, mean = self._length_norm[facet]
        return _multiplicity(b, mean, length)

    def items_multiplicity(self, items: np.ndarray, per_head: np.ndarray, removed: np.ndarray | float = 0.0,
                           heads: np.ndarray | None = None) -> np.ndarray:
        """`slot_multiplicity` of `items` (n,) in each of `heads` (n,) (None: every head, (n, H))
        once `removed` (n,) of their length is erased (0: as it is; the batched form of
        `slot_after`), `per_head` their lengths there, of the same shape: what batched
        explanations read, in a few numpy calls."""
        b, mean = self.head_norms
        if heads is not None:
            b, mean = b[heads], mean[heads]
        removed = np.asarray(removed, dtype=np.float64)
        if self.per_item:
            whole = self._total_length[items]
            length = self.item_slot_length[items] if not removed.any() else quantized_length(whole - removed)
            length = length if heads is not None else length[:, None]
        else:
            length = np.asarray(per_head, dtype=np.float64) - removed
        return _multiplicity(b, mean, length)

    def set_length(self, facet: str) -> np.ndarray:
        """(U,) the length each of the facet's sets normalises its no-match slot by."""
        length = self.tables[facet].set_length
        assert length is not None  # set by __init__
        return length

    def attribute_length(self, facet: str) -> np.ndarray:
        """(V,) what each of the facet's attributes adds to an item's length."""
        lengths: np.ndarray = self._attr_length[facet]
        return lengths

    def slot_length(self, own: np.ndarray) -> np.ndarray:
        """The length a slot is normalised by for items whose attributes add up to `own`, in one
        facet, and that have nothing else: itself per head, else rounded
        (`formula.quantized_length`)."""
        return quantized_length(own) if self.per_item else np.asarray(own, dtype=np.float64)

    def total_length(self, items: np.ndarray) -> np.ndarray:
        """(n,) each item's length over every facet (the sum of its attributes')."""
        lengths: np.ndarray = self._total_length[items]
        return lengths

    def slot_after(self, facet: str, item_idx: int, removed: np.ndarray) -> np.ndarray:
        """(S,) the no-match slot's multiplicity for one item in `facet` once each `removed` (S,)
        of its length is erased from it (0: as it is; the erased attributes' lengths added up)."""
        removed = np.asarray(removed, dtype=np.float64)
        if self.per_item:
            return self.slot_multiplicity(facet, quantized_length(self._total_length[item_idx] - removed))
        own = float(self._attr_length[facet][self._catalog.attributes_of(item_idx, facet)].sum())
        return self.slot_multiplicity(facet, own - removed)

    def ratios(self, flat: np.ndarray, flat_nm: np.ndarray, worth: np.ndarray | None = None) -> np.ndarray:
        """(m, sum U) per-set numerator / denominator of m words from their logits, in numpy:
        the sums over each set's attributes of e^l * v and of e^l, the no-match slot's e^l
        times its multiplicity added to the denominator last. `worth` (m, sum V): what each
        attribute is worth to each word (its value times `QueryState.value_share`); None: its
        value."""
        m = flat.shape[0]
        e = np.exp(flat)  # (m, sum V)
        values = self.values if worth is None else worth
        y = self.all_sets @ np.concatenate([(e * values).T, e.T], axis=1)  # (sum U, 2m)
        slot = self.slot_count[:, None] * np.exp(flat_nm).T[self.set_facet]  # (sum U, m)
        ratios: np.ndarray = (y[:, :m] / (y[:, m:] + slot)).T
        return ratios


def _multiplicity(b: Any, mean: Any, length: np.ndarray) -> np.ndarray:
    """1 - b + b * length / mean (`AttributeSets.slot_multiplicity`), for scalars or arrays."""
    out: np.ndarray = 1.0 - b + b * np.asarray(length, dtype=np.float64) / mean
    return out


# ---- distinct sets ----------------------------------------------------------------------------


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: a well-spread 64-bit hash of each uint64."""
    x = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    mixed: np.ndarray = x ^ (x >> np.uint64(31))
    return mixed


def _distinct_rows(x: sp.csr_matrix) -> tuple[sp.csr_matrix, np.ndarray]:
    """Distinct rows (as sets of columns) of a 0/1 CSR matrix and, per original row, the index
    of its distinct row (int32). Distinct rows are numbered in order of first appearance.

    Vectorised: each row gets an order-free 64-bit hash (sum of mixed column ids, with its
    length); rows are grouped by hash, and the grouping is then checked exactly against each
    group's first row, falling back to an exact sort-based grouping if two sets ever collide."""
    x = sp.csr_matrix(x)
    n = x.shape[0]
    x = x.sorted_indices() if not x.has_sorted_indices else x
    counts = np.diff(x.indptr)
    with np.errstate(over="ignore"):
        cum = np.concatenate([[np.uint64(0)], np.cumsum(_mix64(x.indices), dtype=np.uint64)])
        h = (cum[x.indptr[1:]] - cum[x.indptr[:-1]]) ^ _mix64(counts.astype(np.uint64) + np.uint64(1 << 40))
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    item_set, firsts = _renumber_by_first(first, inverse.ravel())
    if not _same_rows(x, item_set, firsts):  # a hash collision: group exactly instead
        width = max(1, int(counts.max(initial=0)))
        padded = np.full((n, width), -1, dtype=np.int64)
        rows = np.repeat(np.arange(n), counts)
        padded[rows, np.arange(x.nnz) - x.indptr[rows]] = x.indices
        _, first, inverse = np.unique(padded, axis=0, return_index=True, return_inverse=True)
        item_set, firsts = _renumber_by_first(first, inverse.ravel())
    sets = x[firsts]
    sets.data[:] = 1.0
    return sets, item_set


def _split_by_length(sets: sp.csr_matrix, item_set: np.ndarray, lengths: np.ndarray
                     ) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """The distinct (attribute set, item length) pairs: their sets (a set's row repeated for each
    length), each item's pair (int32, numbered by first appearance) and each pair's length."""
    levels, level = np.unique(lengths, return_inverse=True)
    key = item_set.astype(np.int64) * len(levels) + level.ravel()
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    pair, firsts = _renumber_by_first(first, inverse.ravel())
    return sets[item_set[firsts]], pair, lengths[firsts]


def _prefix_tree(x: sp.csr_matrix | sp.csr_array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of x (column lists, in stored order) as a prefix tree: (parent, column) of
    each node, int32, numbered depth by depth so that parents come first (-1: the root), and
    the node where each row ends (-1 for an empty row)."""
    lengths = np.diff(x.indptr)
    node_of = np.full(x.shape[0], -1, dtype=np.int64)
    width = max(int(x.shape[1]), 1)
    parents, columns, n_nodes = [], [], 0
    for depth in range(int(lengths.max(initial=0))):
        live = np.flatnonzero(lengths > depth)
        key = (node_of[live] + 1) * width + x.indices[x.indptr[live] + depth]
        nodes, inverse = np.unique(key, return_inverse=True)
        parents.append(nodes // width - 1)
        columns.append(nodes % width)
        node_of[live] = n_nodes + inverse.ravel()
        n_nodes += len(nodes)
    parent = np.concatenate(parents or [np.zeros(0, dtype=np.int64)]).astype(np.int32)
    column = np.concatenate(columns or [np.zeros(0, dtype=np.int64)]).astype(np.int32)
    return parent, column, node_of.astype(np.int32)


def _renumber_by_first(first: np.ndarray, inverse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(first), dtype=np.int32)
    rank[order] = np.arange(len(first), dtype=np.int32)
    return rank[inverse], first[order]


def _same_rows(x: sp.csr_matrix, item_set: np.ndarray, firsts: np.ndarray) -> bool:
    """Whether every row equals the first row of its group (indices sorted)."""
    rep = firsts[item_set]
    counts = np.diff(x.indptr)
    if not np.array_equal(counts[rep], counts):
        return False
    rows = np.repeat(np.arange(x.shape[0]), counts)
    ref = x.indptr[rep[rows]] + (np.arange(x.nnz) - x.indptr[rows])
    return bool(np.array_equal(x.indices[ref], x.indices))


