"""Exact, fast scoring of a whole catalogue: the production path.

Keys and values depend on the attribute alone, so a query is scored once against each facet's
attribute vocabulary (T x V logits); an item's head output then only needs sums over its own
attributes:  out = sum_t  (sum_m e^{l_tm} v_m) / (e^{l_t,none} + sum_m e^{l_tm}).
Logits are soft-capped by the model, so the exponentials need no max-shift.

Every step below is an exact rewrite: scores equal `FacetScorer.forward` up to float rounding, and
the top k equals `recsys.recommender.top_k` over those scores (tests/test_index.py).

- `query_state` runs in numpy on tables folded at build time: per query word, one (D,) @ (D,
  sum V + H) product gives every facet's q.k / sqrt(d_k) and no-match pre-activation, and its
  evidence rows are read straight from the CSR tables (what `Evidence.dense_rows` returns); both
  are cached per word. No torch call is made per query: on a busy 2-core machine torch's intra-op
  thread pool waits ~20 ms per operation, and for these shapes numpy is faster anyway.
- Items with the same attribute set in a facet get the same head output, so each facet is
  computed once per DISTINCT set: one sparse product of all facets' distinct sets (block
  diagonal, plus a column per facet for the no-match slot) with [e^l * v | e^l]. A word's
  per-set ratios (numerator / denominator) depend on that word alone unless another query word
  matches the same multi-word attribute (coverage), so they are cached per word too.
- The head weight and the set's share of the prior are folded into the per-set number, and
  facets whose sets combine into few joint signatures are merged ("groups", chosen at build to
  minimise the work), so an item's score is a sum of 1-2 lookups in small tables (`score`).
- `top_k` does not score every item: a lower bound of the k-th best score from a few "seed"
  items, and the tables' maxima, rule out whole table entries; only the items of the group with
  the fewest surviving entries are scored (a numba kernel when numba is installed, the same
  algorithm in numpy otherwise). `fast_top_k` is the general top-k over a scores array.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import torch

from .encoding import Featurizer
from .facets import FACETS
from .model import FacetScorer
from .words import QueryToken, query_tokens


CACHE_BYTES = 32 << 20  # bound of each per-word cache of an index (rows of floats per word)


@dataclass
class FacetTables:
    keys: torch.Tensor  # (V, K)
    values: np.ndarray  # (V,)
    sets: sp.csr_matrix  # (U, V) distinct attribute sets of this facet
    item_set: np.ndarray  # (n_items,) int32 row of `sets` for each item
    set_prior: np.ndarray | None = None  # (U,) the facet's share of the item prior, per set


@dataclass
class QueryState:
    """Everything about one query that explanations and scoring share."""

    tokens: list[QueryToken]
    logits: dict[str, np.ndarray]  # facet -> (T, V) match logits against the whole vocabulary
    no_match: dict[str, np.ndarray]  # facet -> (T,)
    evidence: Mapping[str, np.ndarray]  # facet -> (T, V, 3) exact, assoc, near
    # all facets side by side: (T, sum V) logits and (T, H) no-match logits (views of these are
    # what `logits` / `no_match` hold); None when the state was built by hand
    flat_logits: np.ndarray | None = field(default=None, repr=False, compare=False)
    flat_no_match: np.ndarray | None = field(default=None, repr=False, compare=False)
    # (T,) whether a token's logits are the same in any query (no other query word shares an
    # exact-match attribute with it, so coverage does not couple them): its per-set ratios can
    # then be cached under its key
    context_free: np.ndarray | None = field(default=None, repr=False, compare=False)


class _LazyEvidence(Mapping):
    """facet -> (T, V, 3) exact, assoc, near evidence, stacked only when asked for: ranking
    never reads it, and on a large vocabulary it is the biggest array a query would build."""

    def __init__(self, exact: np.ndarray, assoc: np.ndarray, near: np.ndarray, offsets: np.ndarray):
        self._parts, self._offsets, self._done = (exact, assoc, near), offsets, {}

    def __getitem__(self, facet: str) -> np.ndarray:
        if facet not in self._done:
            if facet not in FACETS:
                raise KeyError(facet)
            h = FACETS.index(facet)
            lo, hi = self._offsets[h], self._offsets[h + 1]
            self._done[facet] = np.stack([p[:, lo:hi] for p in self._parts], -1)  # (T, V, 3)
        return self._done[facet]

    def __iter__(self):
        return iter(FACETS)

    def __len__(self) -> int:
        return len(FACETS)


@dataclass
class _Group:
    """Facets scored through one table: an item's part of the score is table[ids[item]]."""

    facets: tuple[int, ...]  # positions in FACETS
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


class ScoringIndex:
    def __init__(self, model: FacetScorer, featurizer: Featurizer):
        self.model, self.featurizer = model.eval(), featurizer
        catalog = featurizer.catalog
        self.n_items = n = catalog.n_items
        self.tables: dict[str, FacetTables] = {}
        self._length_weight = {f: float(model.heads[f].length_weight.detach()) for f in FACETS}
        prior = np.zeros(n, dtype=np.float32)
        with torch.no_grad():
            for f in FACETS:
                keys, values, attr_prior = model.head_tables(f)
                x = catalog.item_attrs[f]
                sets, item_set = _distinct_rows(x)
                counts = np.maximum(np.diff(sets.indptr), 1)
                set_prior = ((sets @ attr_prior.numpy().astype(np.float64)) / counts).astype(np.float32)
                self.tables[f] = FacetTables(keys, values.numpy(), sets, item_set, set_prior)
                prior += set_prior[item_set]
        self.prior = prior  # (n_items,)
        self._fold_query_tables()
        self._fold_item_tables()

    # ---- build ---------------------------------------------------------------------------------

    def _fold_query_tables(self) -> None:
        """Per-query work as a few whole-vocabulary numpy operations."""
        m, cfg = self.model, self.model.cfg
        ev = self.featurizer.evidence
        sizes = [len(self.tables[f].values) for f in FACETS]
        self.vocab_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        v_total = int(self.vocab_offsets[-1])
        with torch.no_grad():
            # views of the model's own embedding tables: no copy
            self._word_emb = m.word_emb.weight.detach().numpy()
            self._ngram_emb = m.ngram_emb.weight.detach().numpy()
            proj = np.zeros((cfg.dim, v_total + len(FACETS)), dtype=np.float64)
            nm_bias = np.zeros(len(FACETS), dtype=np.float32)
            nm_specific = np.zeros(len(FACETS), dtype=np.float32)
            w_exact = np.zeros(v_total, dtype=np.float32)
            w_assoc = np.zeros(v_total, dtype=np.float32)
            w_near = np.zeros(v_total, dtype=np.float32)
            w_rare = np.zeros(v_total, dtype=np.float32)  # rare_weight x the attribute's IDF
            bias = np.zeros(v_total, dtype=np.float32)
            for h, f in enumerate(FACETS):
                head = m.heads[f]
                lo, hi = self.vocab_offsets[h], self.vocab_offsets[h + 1]
                wq = head.q_proj.weight.double().numpy()  # (K, D)
                keys = self.tables[f].keys.double().numpy()  # (V, K)
                proj[:, lo:hi] = (wq.T @ keys.T) * head.scale
                proj[:, v_total + h] = head.no_match.weight.double().numpy()[0]
                nm_bias[h] = float(head.no_match.bias)
                nm_specific[h] = float(head.specific_weight)
                w_exact[lo:hi], w_assoc[lo:hi], w_near[lo:hi] = head.evidence_weight.numpy()
                w_rare[lo:hi] = float(head.rare_weight) * getattr(m, f"attr_idf_{f}").numpy()
                bias[lo:hi] = float(head.match_bias)
        self._proj = proj.astype(np.float32)  # (D, sum V + H)
        self._nm_bias, self._w_exact, self._w_assoc, self._bias = nm_bias, w_exact, w_assoc, bias
        self._nm_specific = nm_specific
        self._w_near, self._w_exact_all = w_near, w_exact + w_rare
        self._cap = float(cfg.logit_cap)
        self._values_flat = np.concatenate([self.tables[f].values for f in FACETS]).astype(np.float32)
        # evidence tables side by side over all facets (n_words, sum V), and the number of words
        # of each attribute (exact evidence is scaled by the share of them the query has)
        self._exact = sp.hstack([ev.exact[f] for f in FACETS], format="csr", dtype=np.float32)
        self._assoc = sp.hstack([ev.assoc[f] for f in FACETS], format="csr", dtype=np.float32)
        for t in (self._exact, self._assoc):
            t.sum_duplicates()
        self._attr_words = np.maximum(np.asarray(self._exact.sum(axis=0)).ravel(), 1.0).astype(np.float32)
        self._token_cache: dict[str, np.ndarray] = {}
        self._token_cache_size = max(16, CACHE_BYTES // (12 * (v_total + len(FACETS))))

    def _fold_item_tables(self) -> None:
        """Distinct sets of all facets as one block-diagonal matrix, and the scoring groups."""
        sets = [self.tables[f].sets for f in FACETS]
        u_sizes = [s.shape[0] for s in sets]
        self.set_offsets = np.concatenate([[0], np.cumsum(u_sizes)]).astype(np.int64)
        # one row per distinct set of any facet: its attributes, then the no-match slot's
        # multiplicity in the column of its facet's slot, so one product gives numerators and
        # full denominators
        self._set_facet = np.repeat(np.arange(len(FACETS)), u_sizes)  # (sum U,)
        multiplicity = np.concatenate([
            self.slot_multiplicity(f, np.diff(s.indptr)) for f, s in zip(FACETS, sets)
        ]).astype(np.float32)  # (sum U,)
        slots = sp.csr_matrix((multiplicity,
                               (np.arange(len(self._set_facet)), self._set_facet)),
                              shape=(len(self._set_facet), len(FACETS)))
        self._all_sets = sp.hstack([sp.block_diag(sets, format="csr", dtype=np.float32), slots],
                                   format="csr", dtype=np.float32)
        self._all_sets.sort_indices()
        self._set_prior = np.concatenate([self.tables[f].set_prior for f in FACETS])
        self.groups = _choose_groups([self.tables[f].item_set for f in FACETS], u_sizes,
                                     self.set_offsets, self.n_items)
        # the same, stacked for the compiled top-k: ids and items-by-id of every group
        self._ids = np.stack([g.ids for g in self.groups])  # (n_groups, n_items) int32
        self._order = np.stack([g.order for g in self.groups])
        # (n_groups, n_groups, n_items): [p, q, j] = ids[q, order[p, j]], so that walking the
        # items of a group's ids reads every group's ids sequentially instead of at random
        self._by_id = np.stack([self._ids[:, o] for o in self._order])
        for row, g in enumerate(self.groups):  # one copy of each array: views of the stack
            g.ids, g.order = self._ids[row], self._order[row]
            if g.members is None:
                self.tables[FACETS[g.facets[0]]].item_set = g.ids
        self._tab_off = np.concatenate([[0], np.cumsum([g.size for g in self.groups])]).astype(np.int64)
        self._counts = np.concatenate([g.counts for g in self.groups])
        self._ptr = np.concatenate([g.ptr for g in self.groups])  # group r's start at _tab_off[r] + r
        self._seed_group = int(np.argmax([g.size for g in self.groups]))
        self._no_mask = np.ones(0, dtype=np.bool_)
        self._ratio_cache: dict[str, np.ndarray] = {}
        self._ratio_cache_size = max(16, CACHE_BYTES // (4 * max(int(self.set_offsets[-1]), 1)))
        self.use_kernel = True  # the compiled top-k when numba works here; False = numpy only
        if self.use_kernel:
            _kernels()  # compile (or load from numba's cache) now, not on the first request

    def slot_multiplicity(self, facet: str, n_attributes: np.ndarray) -> np.ndarray:
        """How many slots the no-match alternative counts as for items with `n_attributes`
        attributes in `facet`: max(n, 1) ** length_weight (`FacetHead.slot_log_count`)."""
        n = np.maximum(np.asarray(n_attributes, dtype=np.float64), 1.0)
        return n ** self._length_weight[facet]

    def clear_caches(self) -> None:
        """Forget every per-word row and ratio: the next queries start cold."""
        self._token_cache.clear()
        self._ratio_cache.clear()

    # ---- queries -------------------------------------------------------------------------------

    def query_state(self, query: str) -> QueryState:
        tokens = query_tokens(query)
        v_total = int(self.vocab_offsets[-1])
        if tokens:
            rows = np.stack([self._token_rows(t.key) for t in tokens])  # (T, 4, sum V + H)
        else:
            rows = np.zeros((0, 4, v_total + len(FACETS)), dtype=np.float32)
        z, assoc, exact_raw = rows[:, 0], rows[:, 2, :v_total], rows[:, 1, :v_total]
        near = rows[:, 3, :v_total]
        matched = exact_raw.sum(axis=0)
        exact = exact_raw * (matched / self._attr_words)  # coverage, as Evidence.dense_rows
        context_free = ~((exact_raw > 0) & (matched > exact_raw)).any(axis=1)
        raw = (z[:, :v_total] + exact * self._w_exact_all + assoc * self._w_assoc + near * self._w_near
               + self._bias)
        cap = self._cap
        flat = np.tanh(raw / cap) * cap
        flat_nm = np.tanh((z[:, v_total:] + self._nm_bias) / cap) * cap
        logits, no_match = {}, {}
        for h, f in enumerate(FACETS):
            lo, hi = self.vocab_offsets[h], self.vocab_offsets[h + 1]
            logits[f], no_match[f] = flat[:, lo:hi], flat_nm[:, h]
        evidence = _LazyEvidence(exact, assoc, near, self.vocab_offsets)
        return QueryState(tokens, logits, no_match, evidence, flat, flat_nm, context_free)

    def _token_rows(self, key: str) -> np.ndarray:
        """(4, sum V + H) for one query word: q.k / sqrt(d_k) against every attribute then the
        no-match pre-activations; its exact evidence (before coverage); its association
        evidence; its near-spelling evidence. The same features as `Featurizer.encode_queries` and `Evidence.dense_rows`.
        Words recur across queries, so rows are cached (bounded, cleared when full)."""
        rows = self._token_cache.get(key)
        if rows is not None:
            return rows
        bucket, grams = self.featurizer.token_features(key)
        n_grams = np.float32(max(int((grams > 0).sum()), 1))
        tok = self._word_emb[bucket] + self._ngram_emb[grams].sum(0) / n_grams  # (D,)
        width = self._proj.shape[1]
        rows = np.zeros((4, width), dtype=np.float32)
        rows[0] = tok @ self._proj
        word = self.featurizer.words.id(key)
        if word >= 0:
            rows[0, width - len(FACETS):] += self._nm_specific * self.featurizer.word_specificity()[word]
            for r, table in ((1, self._exact), (2, self._assoc)):
                lo, hi = table.indptr[word], table.indptr[word + 1]
                rows[r, table.indices[lo:hi]] = table.data[lo:hi]
        for near_word, sim in self.featurizer.near_words(key):
            lo, hi = self._exact.indptr[near_word], self._exact.indptr[near_word + 1]
            cols = self._exact.indices[lo:hi]
            rows[3, cols] = np.maximum(rows[3, cols], sim)
        if len(self._token_cache) >= self._token_cache_size:
            self._token_cache.clear()
        self._token_cache[key] = rows
        return rows

    # ---- scoring -------------------------------------------------------------------------------

    def _set_inputs(self, flat: np.ndarray, flat_nm: np.ndarray) -> np.ndarray:
        """(sum V + H, 2T) from (T, sum V) logits and (T, H) no-match logits: per attribute
        e^l * v then e^l for each token, and per facet's no-match slot 0 then e^l. A distinct
        set's row of `_all_sets` times this gives its numerators and full denominators."""
        t, v_total = flat.shape
        x = np.zeros((v_total + len(FACETS), 2 * t), dtype=np.float32)
        e = np.exp(flat)  # (T, sum V)
        x[:v_total, :t] = (e * self._values_flat).T  # the no-match slot is worth 0
        x[:v_total, t:] = e.T
        x[v_total:, t:] = np.exp(flat_nm).T
        return x

    def set_outputs(self, state: QueryState) -> np.ndarray:
        """(sum U,) unweighted head output of every distinct set of every facet (facet h's sets
        are rows set_offsets[h]:set_offsets[h+1]): the sum over tokens of numerator /
        denominator. A token's ratios depend on that token alone unless another query word
        shares an exact-match attribute with it, so they are cached by word (bounded); the
        floats are the same either way."""
        if not state.tokens:
            return np.zeros(int(self.set_offsets[-1]), dtype=np.float32)
        flat, flat_nm = state.flat_logits, state.flat_no_match
        if flat is None:  # a state built by hand
            flat = np.concatenate([state.logits[f] for f in FACETS], axis=1)
            flat_nm = np.stack([state.no_match[f] for f in FACETS], axis=1)
        t = flat.shape[0]
        cacheable = state.context_free if state.context_free is not None else np.zeros(t, dtype=bool)
        ratios = [self._ratio_cache.get(tok.key) if cacheable[i] else None
                  for i, tok in enumerate(state.tokens)]
        missing = [i for i in range(t) if ratios[i] is None]
        if missing:
            m = len(missing)
            y = self._all_sets @ self._set_inputs(flat[missing], flat_nm[missing])  # (sum U, 2m)
            for j, i in enumerate(missing):
                ratios[i] = y[:, j] / y[:, m + j]
                if cacheable[i]:
                    if len(self._ratio_cache) >= self._ratio_cache_size:
                        self._ratio_cache.clear()
                    self._ratio_cache[state.tokens[i].key] = ratios[i]
        out = ratios[0].copy()
        for r in ratios[1:]:
            out += r
        return out

    def head_outputs(self, state: QueryState) -> np.ndarray:
        """(n_items, H) unweighted head outputs for every item."""
        out = np.zeros((self.n_items, len(FACETS)), dtype=np.float32)
        if not state.tokens:
            return out
        per_set = self.set_outputs(state)
        for h, f in enumerate(FACETS):
            lo, hi = self.set_offsets[h], self.set_offsets[h + 1]
            out[:, h] = per_set[lo:hi][self.tables[f].item_set]
        return out

    def group_tables(self, state: QueryState, head_weights: np.ndarray | None = None) -> list[np.ndarray]:
        """Per group, the weighted head outputs plus prior of each of its joint signatures:
        an item's score is the sum over groups of table[group.ids[item]]."""
        flat = self._flat_tables(state, head_weights)
        return [flat[self._tab_off[r] : self._tab_off[r + 1]] for r in range(len(self.groups))]

    def _flat_tables(self, state: QueryState, head_weights: np.ndarray | None) -> np.ndarray:
        """All groups' tables end to end (group r at _tab_off[r]:_tab_off[r+1])."""
        per_set = self.set_outputs(state)
        if head_weights is not None:
            per_set = per_set * np.asarray(head_weights, dtype=np.float32)[self._set_facet]
        per_set += self._set_prior
        tables = []
        for g in self.groups:
            if g.members is None:
                tables.append(per_set[self.set_offsets[g.facets[0]] : self.set_offsets[g.facets[0] + 1]])
                continue
            table = per_set[g.members[0]]
            for row in g.members[1:]:
                table += per_set[row]
            tables.append(table)
        return np.concatenate(tables)

    def score(self, state: QueryState, head_weights: np.ndarray | None = None) -> np.ndarray:
        """(n_items,) float32: prior + head_outputs(state) @ head_weights (up to rounding)."""
        return self._item_scores(self.group_tables(state, head_weights), None)

    def _item_scores(self, tables: list[np.ndarray], items: np.ndarray | None) -> np.ndarray:
        """Scores of `items` (all when None); always summed in the same order, so an item's
        score is the same float whichever way it is reached."""
        scores = None
        for g, table in zip(self.groups, tables):
            part = np.take(table, g.ids if items is None else g.ids[items])
            if scores is None:
                scores = part
            else:
                scores += part
        return scores

    def top_k(self, state: QueryState, head_weights: np.ndarray | None, eligible: np.ndarray | None,
              k: int) -> tuple[np.ndarray, np.ndarray]:
        """(items, scores): the k best eligible items, best first, ties by catalogue order;
        the same answer as `fast_top_k(self.score(state, head_weights), eligible, k)`.

        Exact pruning: the k-th best score among a few "seed" items (those of each group's best
        signatures) is a lower bound L of the k-th best overall, and an item can only reach L if,
        in every group, its table entry is at least L minus the other groups' maxima. Only the
        items of the group with the fewest such entries are scored; a query that prunes little
        falls back to scoring every item."""
        n = self.n_items
        if eligible is not None and eligible.all():
            eligible = None
        if k <= 0 or n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        flat = self._flat_tables(state, head_weights)
        tables = [flat[self._tab_off[r] : self._tab_off[r + 1]] for r in range(len(self.groups))]
        if eligible is not None and np.count_nonzero(eligible) * 8 < n:
            return self._top_of_items(tables, np.flatnonzero(eligible), k)
        kernels = _kernels() if self.use_kernel else None
        if kernels is not None:
            mask = self._no_mask if eligible is None else np.ascontiguousarray(eligible, dtype=np.bool_)
            items, scores = kernels.top_k(flat, self._tab_off, self._ids, self._order, self._by_id,
                                          self._ptr, self._counts, mask, eligible is not None,
                                          int(k), self._seed_group)
            best = np.lexsort((items, -scores))
            return items[best], scores[best]
        return self._top_k_numpy(tables, eligible, k)

    def _top_k_numpy(self, tables, eligible, k):
        n = self.n_items
        bound = -np.inf
        for g, table in zip(self.groups, tables):
            seeds = self._seed_items(g, table)
            if eligible is not None:
                seeds = seeds[eligible[seeds]]
            if len(seeds) >= k:
                s = self._item_scores(tables, seeds)
                bound = max(bound, float(np.partition(s, len(s) - k)[len(s) - k]))
        if not np.isfinite(bound):
            return self._full_top_k(tables, eligible, k)
        maxima = [float(t.max()) for t in tables]
        margin = 1e-5 * (abs(bound) + sum(abs(x) for x in maxima)) + 1e-30  # float rounding
        passes = [t >= bound - (sum(maxima) - m) - margin for t, m in zip(tables, maxima)]
        sizes = [int(g.counts @ ok) for g, ok in zip(self.groups, passes)]
        p = int(np.argmin(sizes))
        if sizes[p] * 3 > n:
            return self._full_top_k(tables, eligible, k)
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
        return self._top_of_items(tables, cand, k)

    def _seed_items(self, g: _Group, table: np.ndarray, want: int = 1024) -> np.ndarray:
        """Items of the group's best-scoring signatures, about `want` of them."""
        per_id = max(1.0, self.n_items / max(len(table), 1))
        r = min(len(table), max(8, int(4 * want / per_id) + 1))
        top = np.argpartition(-table, r - 1)[:r] if r < len(table) else np.arange(len(table))
        top = top[np.argsort(-table[top], kind="stable")]
        m = int(np.searchsorted(np.cumsum(g.counts[top]), want)) + 1
        return _ranges(g.order, g.ptr[top[:m]], g.counts[top[:m]])

    def _top_of_items(self, tables, items, k):
        s = self._item_scores(tables, items)
        pos = _top_of(items, s, k)
        return items[pos], s[pos]

    def _full_top_k(self, tables, eligible, k):
        if eligible is not None:
            return self._top_of_items(tables, np.flatnonzero(eligible), k)
        scores = self._item_scores(tables, None)
        best = fast_top_k(scores, None, k)
        return best, scores[best]

    def nbytes(self) -> int:
        """Bytes of the arrays serving keeps per catalogue (not the model's embedding tables)."""
        arrays = [self.prior, self._set_prior, self._values_flat, self._set_facet,
                  self._all_sets.data, self._all_sets.indices, self._all_sets.indptr]
        for f in FACETS:
            t = self.tables[f]
            arrays += [t.item_set, t.sets.data, t.sets.indices, t.sets.indptr, t.values, t.set_prior]
        arrays += [self._order, self._by_id, self._ptr, self._counts]
        for g in self.groups:
            if g.members is not None:
                arrays += [g.ids, g.members]
        return int(sum(a.nbytes for a in arrays))


# ---- the compiled top-k ----------------------------------------------------------------------------
# Module-level functions, so that numba's on-disk cache can serve them to every later process.

try:
    import numba
except Exception:  # not installed (or broken): the numpy path does the same work
    numba = None


def _jit(fn):
    return numba.njit(cache=True, nogil=True)(fn) if numba is not None else None


_KERNELS: list = []


@dataclass
class _Kernels:
    top_k: object


def _kernels() -> _Kernels | None:
    """The numba-compiled pruned top-k, or None without a working numba (the numpy path gives
    the same answers). Compiled on first use, or loaded from numba's cache."""
    if not _KERNELS:
        kernels = None
        if numba is not None:
            try:
                kernels = _Kernels(_top_k_kernel)
                _warm_up(kernels)
            except Exception as exc:  # it cannot compile here: numpy does the work
                warnings.warn(f"recsys.index: compiled top-k unavailable ({exc}); using numpy", stacklevel=2)
                kernels = None
        _KERNELS.append(kernels)
    return _KERNELS[0]


def _warm_up(kernels: _Kernels) -> None:
    """Compiles for the argument types `ScoringIndex.top_k` passes, on a two-item catalogue."""
    tables = np.array([1.0, 2.0], dtype=np.float32)
    one = np.zeros((1, 2), dtype=np.int32)
    one[0, 1] = 1
    kernels.top_k(tables, np.array([0, 2], dtype=np.int64), one, one.copy(), one[None].copy(),
                  np.array([0, 1, 2], dtype=np.int64), np.ones(2, dtype=np.int64),
                  np.ones(0, dtype=np.bool_), False, 1, 0)


@_jit
def _worse(s_a, i_a, s_b, i_b):
    """Whether item a ranks below item b: lower score, or the same score and a later index."""
    return s_a < s_b or (s_a == s_b and i_a > i_b)


@_jit
def _offer(heap_s, heap_i, size, s, i):
    """Keeps the `len(heap_s)` best items offered so far in a heap whose root is the worst
    of them; returns the new size."""
    k = len(heap_s)
    if size < k:
        c = size
        size += 1
    elif _worse(heap_s[0], heap_i[0], s, i):
        # replace the root, then sift the hole down
        c = 0
        while True:
            left = 2 * c + 1
            if left >= k:
                break
            child = left
            if left + 1 < k and _worse(heap_s[left + 1], heap_i[left + 1], heap_s[left], heap_i[left]):
                child = left + 1
            if _worse(heap_s[child], heap_i[child], s, i):
                heap_s[c], heap_i[c] = heap_s[child], heap_i[child]
                c = child
            else:
                break
        heap_s[c], heap_i[c] = s, i
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
def _top_k_kernel(tables, tab_off, ids, order, by_id, ptr, counts, eligible, use_eligible, k, seed_group):
    """The k best eligible items (unsorted; the caller sorts them): what
    `ScoringIndex._top_k_numpy` finds, with the same pruning, in one pass of compiled code.

    Items go through a heap of the k best (score, then lower index), so ties are exact.
    Seeds first: the items of the seed group's best ids (about 1024, found with a histogram
    of its table weighted by items per id); the heap's worst score is then a lower bound L.
    Then only the items of the pivot group's ids that can still reach L (given every other
    group's maximum) are scored, or every item if that prunes too little. Scores are summed
    group by group in float32, in the same order as `ScoringIndex.score`."""
    n_groups, n = ids.shape
    maxima = np.empty(n_groups)
    for g in range(n_groups):
        maxima[g] = tables[tab_off[g] : tab_off[g + 1]].max()
    total_max = maxima.sum()
    heap_s = np.empty(k, dtype=np.float32)
    heap_i = np.empty(k, dtype=np.int64)
    size = 0

    g = seed_group
    lo, n_ids = tab_off[g], tab_off[g + 1] - tab_off[g]
    top, low = maxima[g], tables[lo : lo + n_ids].min()
    cut = low
    if top > low:
        n_bins = 256
        hist = np.zeros(n_bins, dtype=np.int64)
        scale = (n_bins - 1) / (top - low)
        for c in range(n_ids):
            hist[int((tables[lo + c] - low) * scale)] += counts[lo + c]
        total = 0
        for b in range(n_bins - 1, -1, -1):
            total += hist[b]
            if total >= 1024:
                cut = low + b / scale
                break
    for c in range(n_ids):
        if tables[lo + c] >= cut:
            for j in range(ptr[lo + g + c], ptr[lo + g + c + 1]):
                i = order[g, j]
                if use_eligible and not eligible[i]:
                    continue
                s = tables[tab_off[0] + by_id[g, 0, j]]
                for q in range(1, n_groups):
                    s += tables[tab_off[q] + by_id[g, q, j]]
                size = _offer(heap_s, heap_i, size, s, i)

    pivot = -1
    thresholds = np.full(n_groups, -np.inf)
    if size == k:
        bound = heap_s[0]
        margin = 1e-5 * (abs(bound) + np.abs(maxima).sum()) + 1e-30  # float rounding
        fewest = n // 3  # scanning more than this, a plain pass over every item is cheaper
        for q in range(n_groups):
            thresholds[q] = bound - (total_max - maxima[q]) - margin
            items = 0
            for c in range(tab_off[q], tab_off[q + 1]):
                if tables[c] >= thresholds[q]:
                    items += counts[c]
            if items < fewest:
                pivot, fewest = q, items

    if pivot < 0:
        for i in range(n):
            if tables[lo + ids[g, i]] >= cut or (use_eligible and not eligible[i]):
                continue  # a seed: offered already
            s = tables[tab_off[0] + ids[0, i]]
            for q in range(1, n_groups):
                s += tables[tab_off[q] + ids[q, i]]
            if size < k or not _worse(s, i, heap_s[0], heap_i[0]):
                size = _offer(heap_s, heap_i, size, s, i)
    else:
        p, base = pivot, tab_off[pivot]
        for c in range(tab_off[p + 1] - base):
            if tables[base + c] < thresholds[p]:
                continue
            for j in range(ptr[base + p + c], ptr[base + p + c + 1]):
                if tables[lo + by_id[p, g, j]] >= cut:
                    continue  # a seed: offered already
                s = tables[tab_off[0] + by_id[p, 0, j]]
                for q in range(1, n_groups):
                    s += tables[tab_off[q] + by_id[p, q, j]]
                if s < heap_s[0]:
                    continue
                i = order[p, j]
                if use_eligible and not eligible[i]:
                    continue
                if not _worse(s, i, heap_s[0], heap_i[0]):
                    size = _offer(heap_s, heap_i, size, s, i)
    return heap_i[:size], heap_s[:size]



# ---- top-k ---------------------------------------------------------------------------------------


def fast_top_k(scores: np.ndarray, eligible: np.ndarray | None, k: int) -> np.ndarray:
    """Indices of the k best eligible items, best first; ties broken by catalogue order.

    The same answer as `recsys.recommender.top_k`, without a full partition: the k-th best of a
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
            return idx[_top_of(idx, scores[idx], k)]
    stride = max(1, n // (64 * k))
    sample = scores[::stride] if eligible is None else scores[::stride][eligible[::stride]]
    if len(sample) <= k:
        idx = np.arange(n) if eligible is None else np.flatnonzero(eligible)
        return idx[_top_of(idx, scores[idx], k)]
    threshold = np.partition(sample, len(sample) - k)[len(sample) - k]
    cand = np.flatnonzero(scores >= threshold)
    if eligible is not None:
        cand = cand[eligible[cand]]
    return cand[_top_of(cand, scores[cand], k)]


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


# ---- distinct sets and groups --------------------------------------------------------------------


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: a well-spread 64-bit hash of each uint64."""
    x = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


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


def _partitions(items: list[int]):
    if not items:
        yield []
        return
    head, rest = items[0], items[1:]
    for part in _partitions(rest):
        yield [(head,)] + part
        for i in range(len(part)):
            yield part[:i] + [(head,) + part[i]] + part[i + 1 :]  # tuples stay sorted
