"""The compiled parts of the production scorer (numba), each the same computation as the numpy
code of the index (`recsys.index.query`, `recsys.index.attribute_sets`, `recsys.index.topk`) that
serves when numba cannot compile here.

Per query the index makes a handful of operations on arrays of a few hundred to a few thousand
floats; numpy spends most of such a call in dispatch, so the steps that run on every query
(logits, per-set ratios of new words, the groups' tables, the pruned top-k) are compiled loops,
one call each. Arithmetic is float32 throughout and follows the numpy code's order of operations,
so the two paths agree to float rounding (tests/recsys/test_index.py checks both). The
explanations, facet counts and the start's pair evidence (`recsys.evidence`) compile here too,
which is why this module sits beside the index and not in it: in it, the index's package
imported the evidence (through the featurizer) and the evidence the index's.

Module-level functions, so that numba's on-disk cache serves them to every later process."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from .formula import ASSOC, EXACT, LENGTH_LEVELS, LENGTH_STEPS, MIN_LENGTH_STEP, N_KINDS, NEAR

try:
    import numba
except Exception:  # noqa: BLE001 - not installed (or broken): the numpy path does the same work
    numba = None  # type: ignore[assignment]


A = np.ndarray  # the kernels' arrays (numba reads no annotations: it compiles for the arguments)

SEEDS = 512  # items scored first to bound the k-th best score (k is ten or so)


F = TypeVar("F", bound=Callable[..., Any])


def _jit(fn: F) -> F:
    """numba's compiled dispatcher, called like `fn` (the plain function without numba: only
    `compiled()` hands the kernels out, and it does so only with numba)."""
    # numba types njit(fn) as a Dispatcher, which it calls like fn
    return numba.njit(cache=True, nogil=True)(fn) if numba is not None else fn  # type: ignore[return-value]


@dataclass
class Kernels:
    query_logits: Callable[..., tuple[np.ndarray, np.ndarray]]
    offset_unlinked: Callable[..., None]
    word_record: Callable[..., np.ndarray]
    word_tables: Callable[..., np.ndarray]
    weighted_tables: Callable[..., np.ndarray]
    top_k: Callable[..., tuple[np.ndarray, np.ndarray]]
    top_k_plain: Callable[..., tuple[np.ndarray, np.ndarray]]
    pair_evidence: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]]
    explain_pass: Callable[..., tuple[np.ndarray, ...]]
    word_items: Callable[..., np.ndarray]
    value_counts: Callable[..., np.ndarray]


_KERNELS: list[Kernels | None] = []


def compiled() -> Kernels | None:
    """The compiled kernels, or None without a working numba (the numpy path gives the same
    answers). Compiled on first use, or loaded from numba's cache."""
    if not _KERNELS:
        kernels = None
        if numba is not None:
            try:
                kernels = Kernels(_query_logits, _offset_unlinked, _word_record, _word_tables, _weighted_tables,
                                  _top_k_kernel, _top_k_plain, _pair_evidence, _explain_pass, _word_items,
                                  _value_counts)
                _warm_up(kernels)
            except Exception as exc:  # noqa: BLE001 - it cannot compile here: numpy does the work
                warnings.warn(f"recsys.kernels: compiled scoring unavailable ({exc}); using numpy",
                              stacklevel=2)
                kernels = None
        _KERNELS.append(kernels)
    return _KERNELS[0]


def _warm_up(kernels: Kernels) -> None:
    """Compiles for the argument types `ScoringIndex` passes, on a two-item catalogue."""
    f32, i32, i64 = np.float32, np.int32, np.int64
    rows = np.zeros((1, 1 + N_KINDS, 3), dtype=f32)
    v = np.ones(2, dtype=f32)
    kernels.query_logits(rows, 2, np.ones((N_KINDS, 2), dtype=f32), v, v, v, True, True, np.zeros(1, dtype=f32),
                         np.arange(2, dtype=i64))
    kernels.offset_unlinked(np.zeros((1, 3), dtype=f32), np.zeros((1, 2), dtype=f32), rows, v,
                            np.arange(2, dtype=i64))
    set_facet = np.zeros(1, dtype=i64)
    members = (np.zeros(1, dtype=i32), np.array([0, 1], dtype=i64), np.ones(1, dtype=i64),
               np.array([0, 1], dtype=i64))
    ratios = np.ones((1, 1), dtype=f32)
    kernels.word_record(np.array([-1], dtype=i32), np.zeros(1, dtype=i32), np.zeros(1, dtype=i32),
                        np.ones(1, dtype=f32), set_facet, np.zeros((1, 1), dtype=f32),
                        np.zeros((1, 1), dtype=f32), v[:1], *members, np.zeros(1, dtype=i64))
    kernels.word_tables(ratios, *members)
    kernels.weighted_tables(ratios, np.ones(1, dtype=f32), set_facet, np.zeros(1, dtype=f32), *members)
    one = np.zeros((1, 2), dtype=i32)
    one[0, 1] = 1
    kernels.top_k(np.array([1.0, 2.0], dtype=f32), np.array([0, 2], dtype=i64), one, one.copy(),
                  one[None].copy(), np.array([0, 1, 2], dtype=i64), np.ones(2, dtype=i64),
                  np.ones(0, dtype=np.bool_), False, 1, 0, np.zeros(0, dtype=np.float64),
                  np.zeros(0, dtype=np.float64), 0.0, np.zeros(0, dtype=i64), np.zeros(0, dtype=np.float64),
                  np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.float64))
    kernels.top_k_plain(np.array([1.0, 2.0], dtype=f32), np.array([0, 2], dtype=i64), one, one.copy(),
                        one[None].copy(), np.array([0, 1, 2], dtype=i64), np.ones(2, dtype=i64),
                        np.ones(0, dtype=np.bool_), False, 1, 0)
    ids = np.zeros((1, 1), dtype=i64)
    kernels.pair_evidence(ids, ids[..., None], np.ones((1, 1, 1), dtype=f32), ids[..., None],
                          np.full((2, 1), -1, dtype=i64), np.zeros((2, 1), dtype=f32), v[:1], v[:1], True,
                          np.zeros(2, dtype=i64), np.zeros(0, dtype=i64))
    span = np.array([0, 1], dtype=i64)
    kernels.word_items(np.zeros((1, 1), dtype=f32), np.zeros(2, dtype=i64), np.zeros(0, dtype=i64),
                       np.zeros((1, 1), dtype=f32), set_facet,
                       np.ones(1, dtype=np.float64), span, np.zeros(1, dtype=i32), span, np.zeros(1, dtype=i32),
                       np.ones(1, dtype=np.float64), set_facet, 0.5, span, np.zeros(1, dtype=i32), 1)
    u64 = np.uint64
    kernels.value_counts(np.ones(1, dtype=u64), np.ones((1, 1), dtype=u64), np.zeros(1, dtype=i64),
                         np.array([0, 0, 1], dtype=i64), np.zeros(1, dtype=i32))
    f64 = np.float64
    ones = np.ones(1, dtype=f64)
    # the query state's flat logits are column views of one array: of one word numba sees them
    # as contiguous, of more as strided; both are compiled here, not on a request
    for words in (1, 2):
        logits = np.zeros((words, 3), dtype=f32)
        kernels.explain_pass(logits[:, :2], logits[:, 2:], np.zeros(1, dtype=i64), np.array([0, 1], dtype=i32),
                             np.zeros(1, dtype=i32), v, np.zeros((0, 0), dtype=f32), True, ones, ones,
                             np.ones(2, dtype=f64), np.zeros(2, dtype=f64), LENGTH_LEVELS,
                             ones, ones, v[:1], 0.1)


@_jit
def _query_logits(rows: A, v_total: int, weights: A, bias: A, attr_words: A, phrase: A, partial: bool,
                  presence: bool, nm_bias: A, cols: A) -> tuple[A, A]:
    """From a query's stacked word rows (T, 1 + N_KINDS, sum V + H) [q.k, then each evidence kind
    of `formula.EVIDENCE_KINDS`], weights (N_KINDS, sum V) and bias (sum V,) (the heads'
    `formula.LogitTables` side by side): (T, sum V + H) match then no-match pre-activations
    (before the soft cap: numpy's vectorised tanh is ten times faster than a compiled loop's) and
    (T, sum V) exact evidence after coverage (`formula.covered`, `partial` and `phrase` (sum V,)
    as there); the logit
    reads it as `formula.logit_evidence` (`presence`: 1 wherever it is above 0).

    `cols` (in any order, repeats allowed) holds every attribute where some word has evidence of
    some kind; everywhere else every evidence value is 0, so the sum below is q.k + 0 * w ... + bias, which is
    q.k + bias (adding a zero changes no float but the sign of a zero, and e^(+0) = e^(-0)), and
    exact evidence is 0: one vectorised pass over the vocabulary, then the full sum on `cols`
    only (Home Depot's 20k attributes: 114 us -> a tenth of that per word)."""
    t_count, width = rows.shape[0], rows.shape[2]
    n_kinds = weights.shape[0]
    raw = np.empty((t_count, width), dtype=np.float32)
    exact = np.zeros((t_count, v_total), dtype=np.float32)
    for t in range(t_count):
        z, out = rows[t, 0, :v_total], raw[t, :v_total]
        for a in range(v_total):
            out[a] = z[a] + bias[a]
    for a in cols:
        matched = np.float32(0.0)  # words of the attribute the query has (their sum: partial=False)
        for t in range(t_count):
            stored = rows[t, 1 + EXACT, a]
            if not partial:
                matched += stored
            elif stored > 0:
                matched += np.float32(1.0)
        whole = partial and matched >= attr_words[a] and phrase[a] > 0
        share = matched / attr_words[a]
        for t in range(t_count):
            stored = rows[t, 1 + EXACT, a]
            if whole:
                e = np.float32(1.0) if stored > 0 else np.float32(0.0)
            elif partial:
                e = stored
            else:
                e = stored * share
            exact[t, a] = e
            if presence and e > 0:
                e = np.float32(1.0)
            r = rows[t, 0, a]
            for k in range(n_kinds):  # in kind order, as the numpy path adds them
                r += (e if k == EXACT else rows[t, 1 + k, a]) * weights[k, a]
            raw[t, a] = r + bias[a]
    for t in range(t_count):
        for h in range(width - v_total):
            raw[t, v_total + h] = rows[t, 0, v_total + h] + nm_bias[h]
    return raw, exact


@_jit
def _set_ratios(parent: A, attr: A, set_node: A, slot_count: A, set_facet: A, flat: A, flat_nm: A,
                values: A) -> A:
    """(m, U) per-set head output of each of m words: the sum over the set's attributes of
    e^l * v, over the same sum of e^l plus the no-match slot's e^l times its multiplicity.

    The sets' attribute lists (in index order) form a prefix tree: node n adds attribute
    attr[n] to its parent's sums, parents come first, and set s ends at node set_node[s] (-1
    when empty). Sets share long prefixes (category, brand, common words), so the tree has a
    third of the nodes the lists have entries; the sums are the same floats in the same order
    as `ScoringIndex._set_ratios` (numpy) adds them."""
    m, v_total = flat.shape
    n_nodes, n_sets = len(parent), len(set_node)
    out = np.empty((m, n_sets), dtype=np.float32)
    e_num = np.empty(v_total, dtype=np.float32)
    e_den = np.empty(v_total, dtype=np.float32)
    e_nm = np.empty(flat_nm.shape[1], dtype=np.float32)
    num = np.empty(n_nodes, dtype=np.float32)
    den = np.empty(n_nodes, dtype=np.float32)
    for t in range(m):
        row = flat[t]
        for a in range(v_total):
            x = np.exp(row[a])
            e_num[a] = x * values[a]
            e_den[a] = x
        for h in range(flat_nm.shape[1]):
            e_nm[h] = np.exp(flat_nm[t, h])
        for n in range(n_nodes):
            a, p = attr[n], parent[n]
            if p < 0:
                num[n] = e_num[a]
                den[n] = e_den[a]
            else:
                num[n] = num[p] + e_num[a]
                den[n] = den[p] + e_den[a]
        o = out[t]
        for s in range(n_sets):
            n = set_node[s]
            top = num[n] if n >= 0 else np.float32(0.0)
            bottom = den[n] if n >= 0 else np.float32(0.0)
            o[s] = top / (bottom + slot_count[s] * e_nm[set_facet[s]])
    return out


@_jit
def _fill_tables(row: A, out: A, mem_rows: A, mem_off: A, mem_count: A, tab_off: A) -> None:
    """out[:sum G] = one word's part of every group's table from its per-set ratios `row`: per
    entry the sum of its member sets' ratios (group r's member i of entry j at
    mem_rows[mem_off[r] + i * size_r + j]). Loops run over 1-d slices: numba then keeps them
    tight (3x faster than 2-d indexing)."""
    for r in range(len(tab_off) - 1):
        lo, size, base = tab_off[r], tab_off[r + 1] - tab_off[r], mem_off[r]
        o = out[lo : lo + size]
        first = mem_rows[base : base + size]
        for j in range(size):
            o[j] = row[first[j]]
        for i in range(1, mem_count[r]):
            more = mem_rows[base + i * size : base + (i + 1) * size]
            for j in range(size):
                o[j] += row[more[j]]


@_jit
def _offset_unlinked(capped: A, exact: A, rows: A, unmatched: A, cols: A) -> None:
    """Subtracts unmatched (sum V,) from each word's capped logits (T, sum V + H) where
    `formula.unlinked` (no exact, association or near evidence), in place: the numpy path's
    `QueryTables._subtract_offsets` in one call. Only `cols` (as `_query_logits` takes them) can be
    linked; each cell is changed once, by one float32 subtraction, as there."""
    t_count, v_total = exact.shape
    linked = np.zeros((t_count, v_total), dtype=np.bool_)
    for a in cols:
        for t in range(t_count):
            linked[t, a] = exact[t, a] > 0 or rows[t, 1 + ASSOC, a] > 0 or rows[t, 1 + NEAR, a] > 0
    for t in range(t_count):
        for a in range(v_total):
            if not linked[t, a]:
                capped[t, a] -= unmatched[a]


@_jit
def _word_tables(ratios: A, mem_rows: A, mem_off: A, mem_count: A, tab_off: A) -> A:
    """(m, sum G) each word's part of every group's table (`_fill_tables`)."""
    m = ratios.shape[0]
    out = np.empty((m, tab_off[-1]), dtype=np.float32)
    for t in range(m):
        _fill_tables(ratios[t], out[t], mem_rows, mem_off, mem_count, tab_off)
    return out


@_jit
def _word_record(parent: A, attr: A, set_node: A, slot_count: A, set_facet: A, flat: A, flat_nm: A, values: A,
                 mem_rows: A, mem_off: A, mem_count: A, tab_off: A, merged: A) -> A:
    """(sum G + len(merged),) one word's cached record from its logits flat (1, sum V) and
    flat_nm (1, H): its part of every group's table (`_fill_tables` of its `_set_ratios`), then
    its ratios of the sets `merged` (`ScoringIndex._word_parts`), written in place: no copy."""
    ratios = _set_ratios(parent, attr, set_node, slot_count, set_facet, flat, flat_nm, values)[0]
    g_total = tab_off[-1]
    out = np.empty(g_total + len(merged), dtype=np.float32)
    _fill_tables(ratios, out, mem_rows, mem_off, mem_count, tab_off)
    for j in range(len(merged)):
        out[g_total + j] = ratios[merged[j]]
    return out


@_jit
def _word_items(flat: A, said_ptr: A, said_cols: A, flat_nm: A, attr_facet: A, candidate: A, attr_ptr: A,
                attr_sets: A, set_ptr: A, set_attrs: A, slot: A, set_facet: A, threshold: float, item_ptr: A,
                set_items: A, n_words: int) -> A:
    """(m, n_words) uint64 the items each of m words matches, as bits (`query_match.pack_items`;
    `QueryMatches`): some attribute of the item's set in some facet where the word's match
    counts (`match_evidence.countable`: word t's said columns said_cols[said_ptr[t]:said_ptr[t +
    1]], sorted; none: every column) holds at least `threshold`
    of the word's attention there, its e^l over the sum of e^l over the set plus the no-match
    slot's e^l times `slot` (float64, (sum U,)), summed in the set's order as numpy's reduceat
    adds them. Only sets holding a candidate are summed: an attribute whose e^l is at least
    `candidate` (per facet) times the slot's e^l. The set's best attribute must be one (its
    share is at most e^l / (e^l + e^l_slot * slot)), and a word has few. A set's attributes are
    set_attrs[set_ptr[s]:set_ptr[s + 1]], the sets holding attribute a attr_sets[attr_ptr[a]:
    attr_ptr[a + 1]], and set s's items set_items[item_ptr[s]:item_ptr[s + 1]]."""
    m, v_total = flat.shape
    n_sets = len(set_ptr) - 1
    out = np.zeros((m, n_words), dtype=np.uint64)
    e = np.empty(v_total, dtype=np.float64)
    e_nm = np.empty(flat_nm.shape[1], dtype=np.float64)
    seen = np.full(n_sets, -1, dtype=np.int64)  # the word that last summed each set
    said = np.full(v_total, -1, dtype=np.int64)  # the word that last said each column
    one = np.uint64(1)
    for t in range(m):
        for a in range(v_total):
            e[a] = np.exp(np.float64(flat[t, a]))
        for h in range(flat_nm.shape[1]):
            e_nm[h] = np.exp(np.float64(flat_nm[t, h]))
        row = out[t]
        lo, hi = said_ptr[t], said_ptr[t + 1]
        every = lo == hi  # a word no attribute says: each of its matches counts
        for j in range(lo, hi):
            said[said_cols[j]] = t
        for c in range(v_total if every else hi - lo):
            a = c if every else said_cols[lo + c]
            h = attr_facet[a]
            if not e[a] >= candidate[h] * e_nm[h]:
                continue
            for j in range(attr_ptr[a], attr_ptr[a + 1]):
                s = attr_sets[j]
                if seen[s] == t:
                    continue
                seen[s] = t
                best = np.float64(0.0)
                den = np.float64(0.0)
                for k in range(set_ptr[s], set_ptr[s + 1]):
                    x = e[set_attrs[k]]
                    den += x
                    if every or said[set_attrs[k]] == t:
                        best = max(best, x)
                if best / (den + e_nm[set_facet[s]] * slot[s]) >= threshold:
                    for j2 in range(item_ptr[s], item_ptr[s + 1]):
                        i = set_items[j2]
                        row[i >> 6] |= one << np.uint64(i & 63)
    return out


@_jit
def _popcount(x: np.uint64) -> np.uint64:
    """The set bits of a 64-bit word (LLVM makes it the popcnt instruction)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)


@_jit
def _value_counts(packed: A, bits: A, dense: A, ptr: A, items: A) -> A:
    """(G,) int64 how many of the items selected by `packed` ((W,) uint64, item i at bit i % 64
    of word i // 64) hold each of a key's G values (`facet_counts._KeyTable`): value dense[r]'s
    items are the bits of row r of bits (D, W), counted by AND and popcount a word at a time;
    value g's other items are items[ptr[g]:ptr[g + 1]] (int32), each one's bit read."""
    n_values = len(ptr) - 1
    out = np.zeros(n_values, dtype=np.int64)
    for r in range(bits.shape[0]):
        row = bits[r]
        held = np.uint64(0)
        for w in range(len(packed)):
            held += _popcount(row[w] & packed[w])
        out[dense[r]] += np.int64(held)
    one = np.uint64(1)
    for g in range(n_values):
        held = np.uint64(0)
        for j in range(ptr[g], ptr[g + 1]):
            i = items[j]
            held += (packed[i >> 6] >> np.uint64(i & 63)) & one
        out[g] += np.int64(held)
    return out


@_jit
def _weighted_tables(ratios: A, weights: A, set_facet: A, set_prior: A, mem_rows: A, mem_off: A,
                     mem_count: A, tab_off: A) -> A:
    """All groups' tables end to end under head weights, from (T, U) per-set ratios: per set
    the sum over words times its facet's weight plus its prior; per entry the sum of its
    member sets."""
    t_count, n_sets = ratios.shape
    per_set = np.empty((1, n_sets), dtype=np.float32)
    for s in range(n_sets):
        acc = np.float32(0.0)  # 0 + x is x: the same floats as summing from the first word
        for t in range(t_count):
            acc += ratios[t, s]
        per_set[0, s] = acc * weights[set_facet[s]] + set_prior[s]
    tables: A = _word_tables(per_set, mem_rows, mem_off, mem_count, tab_off)[0]
    return tables


@_jit
def _worse(s_a: float, i_a: int, s_b: float, i_b: int) -> bool:
    """Whether item a ranks below item b: lower score, or the same score and a later index."""
    return s_a < s_b or (s_a == s_b and i_a > i_b)


@_jit
def _sift_down(heap_s: A, heap_i: A, size: int, s: float, i: int) -> None:
    """Puts item (s, i) at the root of the heap's first `size` entries and sifts it down."""
    c = 0
    while True:
        left = 2 * c + 1
        if left >= size:
            break
        child = left
        if left + 1 < size and _worse(heap_s[left + 1], heap_i[left + 1], heap_s[left], heap_i[left]):
            child = left + 1
        if _worse(heap_s[child], heap_i[child], s, i):
            heap_s[c], heap_i[c] = heap_s[child], heap_i[child]
            c = child
        else:
            break
    heap_s[c], heap_i[c] = s, i


@_jit
def _offer(heap_s: A, heap_i: A, size: int, s: float, i: int) -> int:
    """Keeps the `len(heap_s)` best items offered so far in a heap whose root is the worst
    of them; returns the new size."""
    k = len(heap_s)
    if size < k:
        c = size
        size += 1
    elif _worse(heap_s[0], heap_i[0], s, i):  # replace the root, then sift it down
        _sift_down(heap_s, heap_i, k, s, i)
        return size
    else:
        return size
    while c > 0:  # sift up a new leaf
        parent = (c - 1) // 2
        if _worse(s, i, heap_s[parent], heap_i[parent]):
            heap_s[c], heap_i[c] = heap_s[parent], heap_i[parent]
            c = parent
        else:
            break
    heap_s[c], heap_i[c] = s, i
    return size


@_jit
def _sum_f32(maxima: A) -> np.float32:
    """The groups' maxima summed in float32, in the order an item's score sums its groups: as
    float32 addition rounds monotonically, no item's score is above it (the top-k's exact stop)."""
    total = np.float32(maxima[0])
    for q in range(1, len(maxima)):
        total += np.float32(maxima[q])
    return total


@_jit
def _max_of(a: A) -> float:
    """a.max() of a non-empty float32 array without NaN, in eight running maxima: numba's own
    max checks every element for NaN in one dependent chain, 3x slower on a table of 30k."""
    lanes = np.full(8, a[0], dtype=np.float32)
    whole = len(a) // 8 * 8
    for c in range(0, whole, 8):
        for lane in range(8):
            x = a[c + lane]
            if x > lanes[lane]:
                lanes[lane] = x
    top: float = lanes.max()
    for c in range(whole, len(a)):
        if a[c] > top:
            top = a[c]
    return top


@_jit
def _reach(tables: A, entry_max: A, has_bounds: bool, at: int) -> float:
    """What the items of table entry `at` can reach in it: the entry, plus their largest
    offset (`ItemOffsets.entry_max`) when there are bounds (without, offsets are at most 0)."""
    return tables[at] + entry_max[at] if has_bounds else np.float64(tables[at])


# a power of two times this de Bruijn constant has its exponent's own pattern in its top six
# bits: the table gives the exponent back (a set bit's place in two operations, where testing
# the 64 bits of every word of a few thousand scattered items cost 60 us at 100k items)
_DE_BRUIJN_MUL = np.uint64(0x03F79D71B4CB0A89)
_DE_BRUIJN_64 = np.zeros(64, dtype=np.int64)
_DE_BRUIJN_64[[((1 << b) * int(_DE_BRUIJN_MUL) & (2**64 - 1)) >> 58 for b in range(64)]] = np.arange(64)


@_jit
def _holds(bits: A, i: int) -> bool:
    """Whether `bits` (`pack_items`; empty: none) selects item i."""
    return len(bits) > 0 and ((bits[i >> 6] >> np.uint64(i & 63)) & np.uint64(1)) == 1


@_jit
def _top_k_plain(tables: A, tab_off: A, ids: A, order: A, by_id: A, ptr: A, counts: A,
                  eligible: A, use_eligible: bool, k: int, seed_group: int) -> tuple[A, A]:
    """`_top_k_kernel` without offsets or extra items, its scores float32: the same answer
    (both are held to sorting every score by tests/recsys/test_index.py), kept apart because the
    offsets' branches and float64 heap cost a query without rules 35% of its time (the
    generated 100k catalogue, `Recommender.rank` p50 0.175 -> 0.24 ms). What it does:
    what `GroupTables._top_k_numpy` finds, with the same pruning, in one pass of compiled code.

    `tables` are the groups' tables end to end (group r's at tab_off[r]:tab_off[r+1]), summed as
    `GroupTables.flat` sums them. Items go through a heap of the k best
    (score, then lower index), so ties are exact. Seeds first: the items of the seed group's
    best ids (about SEEDS of them, the cut found on a sample of its table weighted by items per
    id); the heap's worst score is then a lower bound L. Then only the items of the pivot
    group's ids that can still reach L (given every other group's maximum) are scored, or every
    item if that prunes too little. Scores are summed group by group in float32, in the same
    order as `ScoringIndex.score`. Any choice of seeds or pivot gives the same answer; the
    samples only decide how fast."""
    n_groups, n = ids.shape
    maxima = np.empty(n_groups)
    for g in range(n_groups):
        maxima[g] = _max_of(tables[tab_off[g] : tab_off[g + 1]])
    total_max = maxima.sum()
    heap_s = np.empty(k, dtype=np.float32)
    heap_i = np.empty(k, dtype=np.int64)
    size = 0
    g = seed_group
    lo, n_ids = tab_off[g], tab_off[g + 1] - tab_off[g]
    tseed = tables[lo:lo + n_ids]
    cseed = counts[lo:lo + n_ids]
    pseed = ptr[lo + g: lo + g + n_ids + 1]
    # the cut comes from a sample of the seed group's entries (any cut gives a valid bound), so
    # only the sample's minimum is needed
    step = max(1, n_ids // 2048)
    top, low = maxima[g], tseed[0]
    for c in range(0, n_ids, step):
        low = min(low, tseed[c])
    cut = low
    if top > low:
        n_bins = 256
        hist = np.zeros(n_bins, dtype=np.int64)
        scale = (n_bins - 1) / (top - low)
        for c in range(0, n_ids, step):
            hist[int((tseed[c] - low) * scale)] += cseed[c] * step
        total = 0
        for b in range(n_bins - 1, -1, -1):
            total += hist[b]
            if total >= SEEDS:
                cut = low + b / scale
                break
    og = order[g]
    bg0 = by_id[g]
    # seeds: the items of the entries at or above the cut, up to the entry that brings them to
    # SEEDS (where the start ties thousands exactly, a cut cannot split them): an item is a seed,
    # offered already, iff its entry e has tseed[e] >= cut and e <= last_seed
    last_seed = n_ids - 1
    offered = 0
    for c in range(n_ids):
        if tseed[c] >= cut:
            for j in range(pseed[c], pseed[c + 1]):
                i = og[j]
                if use_eligible and not eligible[i]:
                    continue
                s = tables[tab_off[0] + bg0[0, j]]
                for q in range(1, n_groups):
                    s += tables[tab_off[q] + bg0[q, j]]
                size = _offer(heap_s, heap_i, size, s, i)
            offered += pseed[c + 1] - pseed[c]
            if offered >= SEEDS and size == k:
                last_seed = c
                break
    pivot = -1
    thresholds = np.full(n_groups, -np.inf)
    if size == k:
        bound = heap_s[0]
        margin = 1e-5 * (abs(bound) + np.abs(maxima).sum()) + 1e-30  # float rounding
        fewest = n // 3  # scanning more than this, a plain pass over every item is cheaper
        for q in range(n_groups):
            thresholds[q] = bound - (total_max - maxima[q]) - margin
            tq = tables[tab_off[q]:tab_off[q + 1]]
            cq = counts[tab_off[q]:tab_off[q + 1]]
            step = max(1, len(tq) // 2048)
            items = 0
            thr = thresholds[q]
            for c in range(0, len(tq), step):
                if tq[c] >= thr:
                    items += cq[c] * step
            if items < fewest:
                pivot, fewest = q, items
    if pivot < 0:
        # the most any item can score, summed in the items' order (float32 addition rounds
        # monotonically): once the heap's worst reaches it and comes before the scan, no later
        # item can enter, so the scan in index order stops. A start that ties thousands of items
        # exactly at the top (no leak onto unmatched attributes) finds its k in the first few
        top_sum = _sum_f32(maxima)
        for i in range(n):
            if size == k and heap_s[0] >= top_sum and heap_i[0] < i:
                break
            e = ids[g, i]
            if (tseed[e] >= cut and e <= last_seed) or (use_eligible and not eligible[i]):
                continue  # a seed: offered already
            s = tables[tab_off[0] + ids[0, i]]
            for q in range(1, n_groups):
                s += tables[tab_off[q] + ids[q, i]]
            if size < k or not _worse(s, i, heap_s[0], heap_i[0]):
                size = _offer(heap_s, heap_i, size, s, i)
    else:
        p, start = pivot, tab_off[pivot]
        tp = tables[start:tab_off[p + 1]]
        pp = ptr[start + p: tab_off[p + 1] + p + 1]
        bp = by_id[p]
        op = order[p]
        thr = thresholds[p]
        for c in range(len(tp)):
            if tp[c] < thr:
                continue
            for j in range(pp[c], pp[c + 1]):
                e = bp[g, j]
                if tseed[e] >= cut and e <= last_seed:
                    continue  # a seed: offered already
                s = tables[tab_off[0] + bp[0, j]]
                for q in range(1, n_groups):
                    s += tables[tab_off[q] + bp[q, j]]
                if s < heap_s[0]:
                    continue
                i = op[j]
                if use_eligible and not eligible[i]:
                    continue
                if not _worse(s, i, heap_s[0], heap_i[0]):
                    size = _offer(heap_s, heap_i, size, s, i)
    # heap sort: the worst goes to the end, and so on, leaving the k best best first
    for end in range(size - 1, 0, -1):
        s, i = heap_s[end], heap_i[end]
        heap_s[end], heap_i[end] = heap_s[0], heap_i[0]
        _sift_down(heap_s, heap_i, end, s, i)
    return heap_i[:size], heap_s[:size]


@_jit
def _top_k_kernel(tables: A, tab_off: A, ids: A, order: A, by_id: A, ptr: A, counts: A,
                  eligible: A, use_eligible: bool, k: int, seed_group: int, offset: A,
                  entry_max: A, spread: float, extra_items: A, extra_offset: A,
                  boosted: A, boosted_offset: A) -> tuple[A, A]:
    """The k best eligible items, best first (ties by index), and their scores (float64):
    what `GroupTables._top_k_numpy` finds, with the same pruning, in one pass of compiled code.

    `tables` are the groups' tables end to end (group r's at tab_off[r]:tab_off[r+1]), summed as
    `GroupTables.flat` sums them. `offset` (n,) float64, when not empty, is added to each item's
    float32 sum (`ItemOffsets`: a rule's boosts and buries), and `entry_max` (sum G,) bounds it
    per table entry (`spread`: the largest of those in size, `ItemOffsets.spread`); empty, the
    offsets are at most 0, and the tables alone bound them (no bound is read per entry).
    `extra_items`, outside `eligible`, are ranked too, each with its `extra_offset` instead (a
    query's own rules' items: few, scored right after the seeds, so a boosted one raises the
    bound); so are the eligible items `boosted` selects (bits; empty: none), each with
    `boosted_offset[i]`, which `entry_max` need not bound (`ItemOffsets.for_matches`). Items
    go through a heap of the k best (score, then lower index), so ties are exact.
    Seeds first: the items of the seed group's best ids (about SEEDS of them, the cut found on a
    sample of its entries, each its table value plus its largest offset, weighted by items per
    id); the heap's worst score is then a lower bound L. Then only the items of the
    pivot group's ids that can still reach L (given every other group's maximum and the id's
    largest offset) are scored, or every item if that prunes too little. Scores are summed group
    by group in float32, in the same order as `ScoringIndex.score`. Any choice of seeds or pivot
    gives the same answer; the samples only decide how fast."""
    n_groups, n = ids.shape
    has_offset = len(offset) > 0
    has_bounds = len(entry_max) > 0  # offsets without bounds are at most 0 (`ItemOffsets.for_matches`)
    has_boosted = len(boosted) > 0
    maxima = np.empty(n_groups)
    for g in range(n_groups):
        maxima[g] = _max_of(tables[tab_off[g] : tab_off[g + 1]])
    total_max = maxima.sum()
    heap_s = np.empty(k, dtype=np.float64)
    heap_i = np.empty(k, dtype=np.int64)
    size = 0
    g = seed_group
    lo, n_ids = tab_off[g], tab_off[g + 1] - tab_off[g]
    cseed = counts[lo:lo + n_ids]
    pseed = ptr[lo + g: lo + g + n_ids + 1]
    # the cut comes from a sample of the seed group's entries (any cut gives a valid bound), so
    # only the sample's minimum is needed
    step = max(1, n_ids // 2048)
    # an entry reaches at most the group's maximum plus the largest offset: a bound that needs
    # no pass over the entries (it only sets the bins' width)
    top, low = maxima[g] + spread, _reach(tables, entry_max, has_bounds, lo)
    for c in range(0, n_ids, step):
        low = min(low, _reach(tables, entry_max, has_bounds, lo + c))
    cut = low
    if top > low:
        n_bins = 256
        hist = np.zeros(n_bins, dtype=np.int64)
        scale = (n_bins - 1) / (top - low)
        for c in range(0, n_ids, step):
            hist[int((_reach(tables, entry_max, has_bounds, lo + c) - low) * scale)] += cseed[c] * step
        total = 0
        for b in range(n_bins - 1, -1, -1):
            total += hist[b]
            if total >= SEEDS:
                cut = low + b / scale
                break
    og = order[g]
    bg0 = by_id[g]
    # seeds: the items of the entries at or above the cut, up to the entry that brings them to
    # SEEDS (as `_top_k_plain`: a cut cannot split thousands of exact ties); an item is a seed,
    # offered already, iff its entry e reaches the cut and e <= last_seed
    last_seed = n_ids - 1
    offered = 0
    for c in range(n_ids):
        if _reach(tables, entry_max, has_bounds, lo + c) >= cut:
            cap = entry_max[lo + c] if has_bounds else 0.0
            for j in range(pseed[c], pseed[c + 1]):
                i = og[j]
                if (use_eligible and not eligible[i]) or (has_boosted and _holds(boosted, i)):
                    continue
                s = tables[tab_off[0] + bg0[0, j]]
                for q in range(1, n_groups):
                    s += tables[tab_off[q] + bg0[q, j]]
                if size == k and np.float64(s) + cap < heap_s[0]:
                    continue  # not even its entry's largest offset brings it into the heap
                size = _offer(heap_s, heap_i, size, np.float64(s) + offset[i] if has_offset else s, i)
            offered += pseed[c + 1] - pseed[c]
            if offered >= SEEDS and size == k:
                last_seed = c
                break
    for j in range(len(extra_items)):
        i = extra_items[j]
        s = tables[tab_off[0] + ids[0, i]]
        for q in range(1, n_groups):
            s += tables[tab_off[q] + ids[q, i]]
        size = _offer(heap_s, heap_i, size, np.float64(s) + extra_offset[j], i)
    for w in range(len(boosted)):
        word = boosted[w]
        while word != 0:
            low = word & (~word + np.uint64(1))  # the lowest bit set
            word ^= low
            i = w * 64 + _DE_BRUIJN_64[(low * _DE_BRUIJN_MUL) >> np.uint64(58)]
            if use_eligible and not eligible[i]:
                continue
            s = tables[tab_off[0] + ids[0, i]]
            for q in range(1, n_groups):
                s += tables[tab_off[q] + ids[q, i]]
            s64 = np.float64(s) + boosted_offset[i]
            if size < k or not _worse(s64, i, heap_s[0], heap_i[0]):
                size = _offer(heap_s, heap_i, size, s64, i)
    pivot = -1
    thresholds = np.full(n_groups, -np.inf)
    if size == k:
        bound = heap_s[0]
        margin = 1e-5 * (abs(bound) + np.abs(maxima).sum() + spread) + 1e-30  # float rounding
        fewest = n // 3  # scanning more than this, a plain pass over every item is cheaper
        for q in range(n_groups):
            thresholds[q] = bound - (total_max - maxima[q]) - margin
            q_lo = tab_off[q]
            tq = tables[q_lo:tab_off[q + 1]]
            cq = counts[q_lo:tab_off[q + 1]]
            step = max(1, len(tq) // 2048)
            items = 0
            thr = thresholds[q]
            for c in range(0, len(tq), step):
                if _reach(tables, entry_max, has_bounds, q_lo + c) >= thr:
                    items += cq[c] * step
            if items < fewest:
                pivot, fewest = q, items
    if pivot < 0:
        # the most any item can score: the float32 sum of the group maxima in the items' order,
        # plus the largest offset (float32 and float64 addition round monotonically); once the
        # heap's worst reaches it and comes before the scan, no later item can enter
        top_all = np.float64(_sum_f32(maxima))
        if has_bounds:
            off_max = -np.inf
            for c in range(tab_off[g], tab_off[g + 1]):  # every item is in one entry of each group
                off_max = max(off_max, entry_max[c])
            top_all = top_all + off_max
        for i in range(n):
            if size == k and heap_s[0] >= top_all and heap_i[0] < i:
                break
            e = ids[g, i]
            if (_reach(tables, entry_max, has_bounds, lo + e) >= cut and e <= last_seed) or \
                    (use_eligible and not eligible[i]) or (has_boosted and _holds(boosted, i)):
                continue  # a seed or a boosted item: offered already
            s = tables[tab_off[0] + ids[0, i]]
            for q in range(1, n_groups):
                s += tables[tab_off[q] + ids[q, i]]
            s64 = np.float64(s) + offset[i] if has_offset else np.float64(s)
            if size < k or not _worse(s64, i, heap_s[0], heap_i[0]):
                size = _offer(heap_s, heap_i, size, s64, i)
    else:
        p, start = pivot, tab_off[pivot]
        tp = tables[start:tab_off[p + 1]]
        pp = ptr[start + p: tab_off[p + 1] + p + 1]
        bp = by_id[p]
        op = order[p]
        thr = thresholds[p]
        for c in range(len(tp)):
            if _reach(tables, entry_max, has_bounds, start + c) < thr:
                continue
            cap = entry_max[start + c] if has_bounds else 0.0
            for j in range(pp[c], pp[c + 1]):
                e = bp[g, j]
                if _reach(tables, entry_max, has_bounds, lo + e) >= cut and e <= last_seed:
                    continue  # a seed: offered already
                s = tables[tab_off[0] + bp[0, j]]
                for q in range(1, n_groups):
                    s += tables[tab_off[q] + bp[q, j]]
                # no item's offset is above its entry's largest (and float64 addition rounds
                # monotonically): most items are left here without reading where they are
                if np.float64(s) + cap < heap_s[0]:
                    continue
                i = op[j]
                if has_boosted and _holds(boosted, i):
                    continue  # offered already
                s64 = np.float64(s) + offset[i] if has_offset else np.float64(s)
                if s64 < heap_s[0]:
                    continue
                if use_eligible and not eligible[i]:
                    continue
                if not _worse(s64, i, heap_s[0], heap_i[0]):
                    size = _offer(heap_s, heap_i, size, s64, i)
    # heap sort: the worst goes to the end, and so on, leaving the k best best first
    for end in range(size - 1, 0, -1):
        last_s, last_i = heap_s[end], heap_i[end]
        heap_s[end], heap_i[end] = heap_s[0], heap_i[0]
        _sift_down(heap_s, heap_i, end, last_s, last_i)
    return heap_i[:size], heap_s[:size]


@_jit
def _pair_evidence(word_id: A, near_id: A, near_sim: A, attrs: A, attr_words: A, attr_worth: A, n_words: A,
                   phrase: A, partial: bool, assoc_indptr: A, assoc_indices: A) -> tuple[A, A, A]:
    """A training batch's evidence for one facet, pair by pair (what `Evidence.locate` and
    `Evidence.near_values` compute on the broadcast arrays): word_id (B, T), near_id and
    near_sim (B, T, J) of the query tokens (-1 unknown or padding), attrs (B, I, M) of the items
    (-1 padding), each attribute's words (V + 1, K) and their stored exact values
    (`Evidence._attribute_words`, `_attribute_worth`), its word count (V,), whether a query
    with all of them matches it whole (V,) (`Evidence.phrase`, `formula.covered`), whether those are
    partial worths (`formula.covered`) and the association table's row pointers and sorted
    columns -> exact evidence after coverage, the association value's position (-1 none) and
    near evidence, each (B, I, T, M). Padding costs nothing here: most of a batch's (B, I, T, M)
    cells are padding (Home Depot: a title has 10 words on average, the longest in a batch
    about 30)."""
    n_b, n_i, n_m = attrs.shape
    n_t, n_j, n_k = word_id.shape[1], near_id.shape[2], attr_words.shape[1]
    exact = np.zeros((n_b, n_i, n_t, n_m), dtype=np.float32)
    assoc = np.full((n_b, n_i, n_t, n_m), -1, dtype=np.int64)
    near = np.zeros((n_b, n_i, n_t, n_m), dtype=np.float32)
    for b in range(n_b):
        for i in range(n_i):
            for m in range(n_m):
                a = attrs[b, i, m]
                if a < 0:
                    continue
                matched = 0
                for t in range(n_t):
                    w = word_id[b, t]
                    if w >= 0:
                        for k in range(n_k):
                            if attr_words[a, k] == w:
                                exact[b, i, t, m] = attr_worth[a, k] if partial else np.float32(1.0)
                                matched += 1
                                break
                        lo, hi = assoc_indptr[w], assoc_indptr[w + 1]
                        while lo < hi:  # the row's columns are sorted
                            mid = (lo + hi) // 2
                            if assoc_indices[mid] < a:
                                lo = mid + 1
                            else:
                                hi = mid
                        if lo < assoc_indptr[w + 1] and assoc_indices[lo] == a:
                            assoc[b, i, t, m] = lo
                    best = np.float32(0.0)
                    for j in range(n_j):
                        u = near_id[b, t, j]
                        if u < 0:
                            continue
                        for k in range(n_k):
                            if attr_words[a, k] == u:
                                best = max(best, near_sim[b, t, j])
                                break
                    near[b, i, t, m] = best
                if matched and partial and matched >= n_words[a]:
                    if phrase[a] > 0:
                        for t in range(n_t):
                            if exact[b, i, t, m] > 0:
                                exact[b, i, t, m] = np.float32(1.0)
                elif matched and not partial:
                    share = np.float32(matched) / n_words[a]
                    for t in range(n_t):
                        exact[b, i, t, m] *= share
    return exact, assoc, near


@_jit
def _level(length: float, levels: A) -> float:
    """`formula.quantized_length` of one length, read off the same table (`LENGTH_LEVELS`)."""
    step = np.int64(np.round(np.log2(max(length, 0.25)) * LENGTH_STEPS)) - MIN_LENGTH_STEP
    return float(levels[min(step, levels.shape[0] - 1)])


@_jit
def _explain_pass(flat: A, flat_nm: A, items: A, ptr: A, cols: A, values: A, share: A, per_item: bool, length: A,
                  raw_length: A, col_length: A, col_prior: A, levels: A, b: A, mean: A, head_weights: A,
                  threshold: float) -> tuple[A, A, A, A, A, A]:
    """The numbers of `explain.explain_items` in one pass (its numpy path, `_explain_numpy`, does
    the same in the same order of operations): from a query's flat logits (T, sum V) and
    no-match logits (T, H), the items (n,), the catalogue's item rows (`ItemRows`: ptr, cols,
    values), the query's `value_share` (T, sum V) (or (0, 0): 1 everywhere; a word's worth of an
    attribute is its value times its share, in float32), what the no-match slot's multiplicity
    reads (`AttributeSets.items_multiplicity`: whether an item's whole length counts, every
    item's slot length rounded and as it is, each attribute's length (sum V,), the rounded
    lengths' table, each head's b and mean length), each attribute's prior (sum V,) and the head
    weights (H,) -> each item's head outputs before their weights (n, H), then per listed match
    (attention share >= threshold, token after token, then in the items' attribute order): its
    token, segment (item * H + head), flat column, attention weight and erasure worth (what the
    item's score loses without the attribute, `explain.erasure_elsewhere`: its head's output
    (`HeadAttention.without`) times the head's weight, the other heads' where the item's one
    length falls with it, and its prior, a mean over the facet's attributes)."""
    t_count, n_heads, n = flat.shape[0], flat_nm.shape[1], items.shape[0]
    n_seg = n * n_heads
    lo = np.empty(n_seg, dtype=np.int64)
    hi = np.empty(n_seg, dtype=np.int64)
    own = np.zeros(n_seg)  # each segment's own length (the head's, when not per item)
    prior_sum = np.zeros(n_seg)  # the sum of each segment's attribute priors
    before = np.empty((n, n_heads))
    total = 0
    for s in range(n_seg):
        i, h = s // n_heads, s % n_heads
        first = items[i] * n_heads + h
        lo[s], hi[s] = ptr[first], ptr[first + 1]
        total += hi[s] - lo[s]
        for p in range(lo[s], hi[s]):
            own[s] += col_length[cols[p]]
            prior_sum[s] += col_prior[cols[p]]
        whole = length[items[i]] if per_item else own[s]
        before[i, h] = 1.0 - b[h] + b[h] * whole / mean[h]  # `attribute_sets._multiplicity`
    exps = np.empty((t_count, total))
    den = np.empty((t_count, n_seg))
    numer = np.empty((t_count, n_seg))
    e_slot = np.empty((t_count, n_heads))
    for t in range(t_count):
        for h in range(n_heads):
            e_slot[t, h] = np.exp(np.float64(flat_nm[t, h]))
    outputs = np.zeros(n_seg)
    shared = share.shape[0] > 0
    for t in range(t_count):
        g = 0
        for s in range(n_seg):
            d, u = 0.0, 0.0
            for p in range(lo[s], hi[s]):
                e = np.exp(np.float64(flat[t, cols[p]]))
                exps[t, g] = e
                d += e
                u += e * (values[cols[p]] * share[t, cols[p]] if shared else values[cols[p]])
                g += 1
            den[t, s] = d + e_slot[t, s % n_heads] * before[s // n_heads, s % n_heads]
            numer[t, s] = u
    for s in range(n_seg):
        o = 0.0
        for t in range(t_count):
            o += numer[t, s] / den[t, s]
        outputs[s] = o
    hit_t = np.empty(t_count * total, dtype=np.int64)
    hit_seg = np.empty(t_count * total, dtype=np.int64)
    hit_col = np.empty(t_count * total, dtype=np.int64)
    hit_w = np.empty(t_count * total)
    hit_worth = np.empty(t_count * total)
    found = 0
    for t in range(t_count):
        g = 0
        for s in range(n_seg):
            i, h = s // n_heads, s % n_heads
            for p in range(lo[s], hi[s]):
                w = exps[t, g] / den[t, s]
                if w >= threshold:
                    if per_item:
                        left = _level(raw_length[items[i]] - col_length[cols[p]], levels)
                    else:
                        left = own[s] - col_length[cols[p]]
                    change = (1.0 - b[h] + b[h] * left / mean[h]) - before[i, h]
                    erased = 0.0
                    for r in range(t_count):
                        e = exps[r, g]
                        v = values[cols[p]] * share[r, cols[p]] if shared else values[cols[p]]
                        erased += (numer[r, s] - e * v) / (den[r, s] - e + e_slot[r, h] * change)
                    elsewhere = 0.0  # the other heads, when the item's one length falls with it
                    if per_item:
                        for h2 in range(n_heads):
                            s2 = i * n_heads + h2
                            change2 = (1.0 - b[h2] + b[h2] * left / mean[h2]) - before[i, h2]
                            if h2 != h:
                                other = 0.0
                                for r in range(t_count):
                                    other += numer[r, s2] / (den[r, s2] + e_slot[r, h2] * change2)
                                elsewhere += head_weights[h2] * (outputs[s2] - other)
                    count = hi[s] - lo[s]  # the prior: a mean over the facet's attributes
                    kept = (prior_sum[s] - col_prior[cols[p]]) / (count - 1) if count > 1 else 0.0
                    hit_t[found], hit_seg[found], hit_col[found] = t, s, cols[p]
                    hit_w[found] = w
                    hit_worth[found] = head_weights[h] * (outputs[s] - erased) + elsewhere + (
                        prior_sum[s] / count - kept)
                    found += 1
                g += 1
    return (outputs.reshape(n, n_heads), hit_t[:found], hit_seg[:found], hit_col[:found], hit_w[:found],
            hit_worth[:found])
