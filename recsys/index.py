"""Exact, fast scoring of a whole catalogue: the production path.

Keys and values depend on the attribute alone, so a query is scored once against each facet's
attribute vocabulary (T x V logits); an item's head output then only needs sums over its own
attributes:  out = sum_t  (sum_m e^{l_tm} v_m) / (e^{l_t,none} + sum_m e^{l_tm}).
Logits are soft-capped by the model, so the exponentials need no max-shift.

Every step below is an exact rewrite: scores equal `FacetScorer.forward` up to float rounding, and
the top k equals `recsys.recommender.top_k` over those scores (tests/test_index.py).

- `query_state` works on tables folded at build time: per query word, one (D,) @ (D, sum V + H)
  product gives every facet's q.k / sqrt(d_k) and no-match pre-activation, and its evidence rows
  are read straight from the CSR tables (what `Evidence.dense_rows` returns); both are cached per
  word. No torch call is made per query: on a busy 2-core machine torch's intra-op thread pool
  waits ~20 ms per operation, and for these shapes numpy is faster anyway.
- Items with the same attribute set in a facet get the same head output, so each facet is
  computed once per DISTINCT set. The sets' attribute lists form a prefix tree (sets share
  category, brand, common words), so a word's per-set numerators and denominators take one add
  per tree node rather than per list entry. A word's per-set ratios depend on that word alone
  unless another query word matches the same multi-word attribute (coverage), so they are
  cached per word, together with their sums into the groups' tables (below).
- Facets whose sets combine into few joint signatures are merged ("groups", chosen at build to
  minimise the work), so an item's score is a sum of 1-2 lookups in small tables: the sum of the
  query words' cached table parts plus the prior's (`score`). Head weights other than 1 are
  applied per set before the tables are built.
- `top_k` does not score every item: a lower bound of the k-th best score from a few "seed"
  items, and the tables' maxima, rule out whole table entries; only the items of the group with
  the fewest surviving entries are scored. `fast_top_k` is the general top-k over a scores array.
- What runs per query is compiled with numba (`recsys.kernels`: a numpy call on arrays this
  small is mostly dispatch); the numpy code here does the same, in the same order of operations,
  when numba cannot compile (`use_kernel = False` forces it; tests run both).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

import numpy as np
import scipy.sparse as sp
import torch

from .encoding import Featurizer
from .formula import ASSOC, EXACT, N_KINDS, NEAR, covered
from .kernels import Kernels, compiled
from .model import FacetScorer
from .words import QueryToken, query_tokens

CACHE_BYTES = 32 << 20  # bound of each per-word cache of an index (rows of floats per word)
V = TypeVar("V")  # what a WordCache holds per word


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
    evidence: Mapping[str, np.ndarray]  # facet -> (T, V, N_KINDS), `formula.EVIDENCE_KINDS` order
    # all facets side by side: (T, sum V) logits and (T, H) no-match logits (views of these are
    # what `logits` / `no_match` hold); None when the state was built by hand
    flat_logits: np.ndarray | None = field(default=None, repr=False, compare=False)
    flat_no_match: np.ndarray | None = field(default=None, repr=False, compare=False)
    # (T,) whether a token's logits are the same in any query (no other query word shares an
    # exact-match attribute with it, so coverage does not couple them): its per-set ratios can
    # then be cached under its key
    context_free: np.ndarray | None = field(default=None, repr=False, compare=False)


class _LazyEvidence(Mapping[str, np.ndarray]):
    """facet -> (T, V, N_KINDS) evidence (`formula.EVIDENCE_KINDS` order), stacked only when asked
    for: ranking never reads it, and on a large vocabulary it is the biggest array a query would
    build. `parts`: (T, sum V) per kind."""

    def __init__(self, parts: list[np.ndarray], offsets: np.ndarray, facets: tuple[str, ...]):
        self._parts, self._offsets, self._facets = parts, offsets, facets
        self._done: dict[str, np.ndarray] = {}

    def __getitem__(self, facet: str) -> np.ndarray:
        if facet not in self._done:
            if facet not in self._facets:
                raise KeyError(facet)
            h = self._facets.index(facet)
            lo, hi = self._offsets[h], self._offsets[h + 1]
            self._done[facet] = np.stack([p[:, lo:hi] for p in self._parts], -1)  # (T, V, N_KINDS)
        stacked: np.ndarray = self._done[facet]
        return stacked

    def __iter__(self) -> Iterator[str]:
        return iter(self._facets)

    def __len__(self) -> int:
        return len(self._facets)


class _LazyQueryState(QueryState):
    """A `QueryState` whose logits, no-match logits and evidence are computed by `fill` (which
    returns them by name) when one of them is first read."""

    def __init__(self, tokens: list[QueryToken], context_free: np.ndarray,
                 fill: Callable[[], dict[str, Any]]):
        self.tokens, self.context_free = tokens, context_free
        self._fill = fill
        self._values: dict[str, Any] | None = None

    def _get(self, name: str) -> Any:
        if self._values is None:
            self._values = self._fill()
        return self._values[name]

    # properties win over the dataclass's fields (and their class-level defaults)
    logits = property(lambda self: self._get("logits"))
    no_match = property(lambda self: self._get("no_match"))
    evidence = property(lambda self: self._get("evidence"))
    flat_logits = property(lambda self: self._get("flat_logits"))
    flat_no_match = property(lambda self: self._get("flat_no_match"))


def _context_free(exact_columns: list[np.ndarray]) -> np.ndarray:
    """(T,) whether no other query word matches exactly an attribute this word matches: its
    exact evidence then needs no coverage share from the others, so its logits are the same in
    any query (`Evidence.dense_rows` divides by the words of the attribute the query has)."""
    seen: dict[int, int] = {}
    for cols in exact_columns:
        for c in cols.tolist():
            seen[c] = seen.get(c, 0) + 1
    return np.array([all(seen[c] == 1 for c in cols.tolist()) for cols in exact_columns], dtype=bool)


class WordCache(Generic[V]):
    """Rows computed per query word, at most `capacity` words, the least recently used dropped
    first (a dict keeps insertion order: a hit moves its word to the end). Safe to share
    between threads: a race at worst drops a word or computes it twice."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._rows: dict[str, V] = {}

    def get(self, key: str) -> V | None:
        rows = self._rows.pop(key, None)
        if rows is not None:
            self._rows[key] = rows
        return rows

    def put(self, key: str, rows: V) -> None:
        self._rows[key] = rows
        while len(self._rows) > self.capacity:
            try:
                self._rows.pop(next(iter(self._rows)), None)
            except (StopIteration, RuntimeError):  # emptied or changed by another thread
                break

    def clear(self) -> None:
        self._rows.clear()

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: str) -> bool:
        return key in self._rows


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


class ScoringIndex:
    def __init__(self, model: FacetScorer, featurizer: Featurizer):
        self.model, self.featurizer = model.eval(), featurizer
        self.use_kernel = True  # compiled scoring when numba works here; False = numpy only
        compiled()  # compile (or load from numba's cache) now, not on the first request
        catalog = featurizer.catalog
        self.facets = model.cfg.facets  # the heads, in order
        if catalog.facets != self.facets:
            raise ValueError(f"the catalogue has the facets {list(catalog.facets)}, the model the "
                             f"heads {list(self.facets)}: build both from one schema")
        self.n_items = n = catalog.n_items
        self.tables: dict[str, FacetTables] = {}
        # BM25's length normalisation of the no-match slot, per head: (b, mean attribute count)
        self._length_norm = {f: (float(model.head(f).length_b().detach()),
                                 float(getattr(model, f"attr_mean_count_{f}"))) for f in self.facets}
        biases = {}
        prior = np.zeros(n, dtype=np.float32)
        with torch.no_grad():
            for f in self.facets:
                keys, values, attr_prior, biases[f] = model.head_tables(f)
                x = catalog.item_attrs[f]
                sets, item_set = _distinct_rows(x)
                counts = np.maximum(np.diff(sets.indptr), 1)
                set_prior = ((sets @ attr_prior.numpy().astype(np.float64)) / counts).astype(np.float32)
                self.tables[f] = FacetTables(keys, values.numpy(), sets, item_set, set_prior)
                prior += set_prior[item_set]
        self.prior = prior  # (n_items,)
        self._fold_query_tables(biases)
        self._fold_item_tables()

    # ---- build ---------------------------------------------------------------------------------

    def _fold_query_tables(self, biases: dict[str, torch.Tensor]) -> None:
        """Per-query work as a few whole-vocabulary numpy operations."""
        m, cfg = self.model, self.model.cfg
        ev = self.featurizer.evidence
        sizes = [len(self.tables[f].values) for f in self.facets]
        self.vocab_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        v_total = int(self.vocab_offsets[-1])
        with torch.no_grad():
            # views of the model's own embedding tables: no copy
            self._word_emb = m.word_emb.weight.detach().numpy()
            self._ngram_emb = m.ngram_emb.weight.detach().numpy()
            heads = [m.head(f).logit_tables(self.tables[f].keys, getattr(m, f"attr_idf_{f}"), biases[f])
                     for f in self.facets]
        # every head's tables side by side: attributes of all facets, then one no-match per head
        proj = np.concatenate([t.dot for t in heads] + [np.stack([t.no_match for t in heads], 1)], axis=1)
        self._proj = proj.astype(np.float32)  # (D, sum V + H)
        self._nm_bias = np.array([t.no_match_bias for t in heads], dtype=np.float32)  # (H,)
        self._nm_specific = np.array([t.specific_weight for t in heads], dtype=np.float32)  # (H,)
        self._weights = np.concatenate([t.weights for t in heads], axis=1)  # (N_KINDS, sum V)
        self._bias = np.concatenate([t.bias for t in heads])  # (sum V,)
        self._cap = float(cfg.logit_cap)
        self._values_flat = np.concatenate([self.tables[f].values for f in self.facets]).astype(np.float32)
        # evidence tables side by side over all facets (n_words, sum V), and the number of words
        # of each attribute (exact evidence is scaled by the share of them the query has)
        self._exact = sp.hstack([ev.exact[f] for f in self.facets], format="csr", dtype=np.float32)
        self._assoc = sp.hstack([ev.assoc[f] for f in self.facets], format="csr", dtype=np.float32)
        for t in (self._exact, self._assoc):
            t.sum_duplicates()
        self._attr_words = np.maximum(np.asarray(self._exact.sum(axis=0)).ravel(), 1.0).astype(np.float32)
        self._token_cache: WordCache[tuple[np.ndarray, np.ndarray]] = WordCache(
            max(16, CACHE_BYTES // (4 * (1 + N_KINDS) * (v_total + len(self.facets)))))  # float32 rows

    def _fold_item_tables(self) -> None:
        """Distinct sets of all facets as one block-diagonal matrix, and the scoring groups."""
        sets = [self.tables[f].sets for f in self.facets]
        u_sizes = [s.shape[0] for s in sets]
        self.set_offsets = np.concatenate([[0], np.cumsum(u_sizes)]).astype(np.int64)
        # one row per distinct set of any facet (block diagonal over the facets' vocabularies),
        # and the no-match slot's multiplicity in its denominator
        self._set_facet = np.repeat(np.arange(len(self.facets)), u_sizes)  # (sum U,)
        self._slot_count = np.concatenate([
            self.slot_multiplicity(f, np.diff(s.indptr)) for f, s in zip(self.facets, sets)
        ]).astype(np.float32)  # (sum U,)
        self._all_sets = sp.block_diag(sets, format="csr", dtype=np.float32)  # (sum U, sum V)
        self._all_sets.sort_indices()
        self._tree_parent, self._tree_attr, self._set_node = _prefix_tree(self._all_sets)
        self._set_prior = np.concatenate([self.tables[f].set_prior for f in self.facets])
        self.groups = _choose_groups([self.tables[f].item_set for f in self.facets], u_sizes,
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
                self.tables[self.facets[g.facets[0]]].item_set = g.ids
        self._tab_off = np.concatenate([[0], np.cumsum([g.size for g in self.groups])]).astype(np.int64)
        # every group's member set rows end to end, (facets, G) per group, for the compiled
        # table builder (a one-facet group's members are its facet's rows in order)
        members = [g.members if g.members is not None else
                   np.arange(self.set_offsets[g.facets[0]], self.set_offsets[g.facets[0] + 1])[None]
                   for g in self.groups]
        self._mem_rows = np.concatenate([m.ravel() for m in members]).astype(np.int32)
        self._mem_off = np.concatenate([[0], np.cumsum([m.size for m in members])]).astype(np.int64)
        self._mem_count = np.array([m.shape[0] for m in members], dtype=np.int64)
        self._prior_tab = self._tables_of_sets(self._set_prior[None])[0]  # (sum G,)
        self._zero_tab = np.zeros_like(self._prior_tab)
        self._counts = np.concatenate([g.counts for g in self.groups])
        self._ptr = np.concatenate([g.ptr for g in self.groups])  # group r's start at _tab_off[r] + r
        self._seed_group = int(np.argmax([g.size for g in self.groups]))
        self._no_mask = np.ones(0, dtype=np.bool_)
        # a word's cached record is its table parts (sum G,) then the per-set ratios of the facets
        # in merged groups: a one-facet group's table part IS its facet's ratios, stored once
        self._ratio_place: list[tuple[int, int]] = []  # facet -> its ratios in the record
        merged, at = [], int(self._tab_off[-1])
        for h in range(len(self.facets)):
            r = next(r for r, g in enumerate(self.groups) if h in g.facets)
            if self.groups[r].members is None:
                self._ratio_place.append((int(self._tab_off[r]), int(self._tab_off[r + 1])))
            else:
                lo, hi = int(self.set_offsets[h]), int(self.set_offsets[h + 1])
                merged.append(np.arange(lo, hi))
                self._ratio_place.append((at, at + hi - lo))
                at += hi - lo
        self._merged_sets = np.concatenate(merged or [np.zeros(0, dtype=np.int64)])
        self._ratio_cache: WordCache[np.ndarray] = WordCache(max(16, CACHE_BYTES // (4 * max(at, 1))))

    def slot_multiplicity(self, facet: str, n_attributes: np.ndarray) -> np.ndarray:
        """How many slots the no-match alternative counts as for items with `n_attributes`
        attributes in `facet`: 1 - b + b * max(n, 1) / mean (`FacetHead.slot_log_count`, in
        numpy: explanations call it per request)."""
        b, mean = self._length_norm[facet]
        n = np.maximum(np.asarray(n_attributes, dtype=np.float64), 1.0)
        return 1.0 - b + b * n / mean

    def clear_caches(self) -> None:
        """Forget every per-word row and ratio: the next queries start cold."""
        self._token_cache.clear()
        self._ratio_cache.clear()

    # ---- queries -------------------------------------------------------------------------------

    def query_state(self, query: str) -> QueryState:
        """The query's tokens and whether each one's logits are free of the others; the logits
        and evidence themselves are computed when first read (`_state_arrays`): a query whose
        words' ratios are all cached is ranked without them."""
        tokens = query_tokens(query)
        entries = [self._token_entry(t.key) for t in tokens]
        return _LazyQueryState(tokens, _context_free([cols for _, cols in entries]),
                               lambda: self._state_arrays([rows for rows, _ in entries]))

    def _state_arrays(self, word_rows: list[np.ndarray]) -> dict[str, Any]:
        """A query state's logits, no-match logits and evidence, by name, from its words' rows."""
        v_total = int(self.vocab_offsets[-1])
        if word_rows:
            rows = np.stack(word_rows)  # (T, 1 + N_KINDS, sum V + H)
        else:
            rows = np.zeros((0, 1 + N_KINDS, v_total + len(self.facets)), dtype=np.float32)
        kernels = self._compiled()
        if kernels is not None:
            raw, exact = kernels.query_logits(rows, v_total, self._weights, self._bias, self._attr_words,
                                              self._nm_bias)
        else:
            z = rows[:, 0]  # (T, sum V + H)
            exact = covered(rows[:, 1 + EXACT, :v_total], self._attr_words)  # (T, sum V)
            match = z[:, :v_total]
            for k in range(N_KINDS):  # in kind order, as the kernel adds them
                evidence = exact if k == EXACT else rows[:, 1 + k, :v_total]
                match = match + evidence * self._weights[k]
            raw = np.concatenate([match + self._bias, z[:, v_total:] + self._nm_bias], axis=1)
        cap = np.float32(self._cap)
        capped = np.tanh(raw / cap) * cap  # (T, sum V + H)
        flat, flat_nm = capped[:, :v_total], capped[:, v_total:]
        logits, no_match = {}, {}
        for h, f in enumerate(self.facets):
            lo, hi = self.vocab_offsets[h], self.vocab_offsets[h + 1]
            logits[f], no_match[f] = flat[:, lo:hi], flat_nm[:, h]
        return {"logits": logits, "no_match": no_match, "flat_logits": flat, "flat_no_match": flat_nm,
                "evidence": _LazyEvidence([exact if k == EXACT else rows[:, 1 + k, :v_total]
                                           for k in range(N_KINDS)], self.vocab_offsets, self.facets)}

    def _token_entry(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """The word's rows (`_token_rows`) and the attribute columns it matches exactly."""
        entry = self._token_cache.get(key)
        if entry is None:
            rows = self._token_rows(key)
            v_total = int(self.vocab_offsets[-1])
            entry = (rows, np.flatnonzero(rows[1 + EXACT, :v_total] > 0))
            self._token_cache.put(key, entry)
        return entry

    def _token_rows(self, key: str) -> np.ndarray:
        """(1 + N_KINDS, sum V + H) for one query word: row 0 is q.k / sqrt(d_k) against every
        attribute then the no-match pre-activations; row 1 + k its evidence of kind k
        (`formula.EVIDENCE_KINDS`; exact before coverage). The same features as `Featurizer.encode_queries`
        and `Evidence.dense_rows`. Words recur across queries: `_token_entry` caches them."""
        bucket, grams = self.featurizer.token_features(key)
        n_grams = np.float32(max(int((grams > 0).sum()), 1))
        tok = self._word_emb[bucket] + self._ngram_emb[grams].sum(0) / n_grams  # (D,)
        width = self._proj.shape[1]
        rows = np.zeros((1 + N_KINDS, width), dtype=np.float32)
        rows[0] = tok @ self._proj
        word = self.featurizer.words.id(key)
        if word >= 0:
            rows[0, width - len(self.facets):] += self._nm_specific * self.featurizer.word_specificity()[word]
            for r, table in ((1 + EXACT, self._exact), (1 + ASSOC, self._assoc)):
                lo, hi = table.indptr[word], table.indptr[word + 1]
                rows[r, table.indices[lo:hi]] = table.data[lo:hi]
        for near_word, sim in self.featurizer.near_words(key):
            lo, hi = self._exact.indptr[near_word], self._exact.indptr[near_word + 1]
            cols = self._exact.indices[lo:hi]
            rows[1 + NEAR, cols] = np.maximum(rows[1 + NEAR, cols], sim)
        return rows

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
        `_record_ratios`). A token's parts depend on that token alone unless
        another query word shares an exact-match attribute with it, so they are cached by word
        (bounded); the floats are the same either way."""
        t = len(state.tokens)
        cacheable = state.context_free if state.context_free is not None else np.zeros(t, dtype=bool)
        parts: list[np.ndarray | None] = [self._ratio_cache.get(tok.key) if cacheable[i] else None
                                          for i, tok in enumerate(state.tokens)]
        missing = [i for i in range(t) if parts[i] is None]
        if missing:  # only now are the logits needed (a lazy state computes them on this read)
            flat, flat_nm = state.flat_logits, state.flat_no_match
            if flat is None:  # a state built by hand
                flat = np.concatenate([state.logits[f] for f in self.facets], axis=1)
                flat_nm = np.stack([state.no_match[f] for f in self.facets], axis=1)
            assert flat_nm is not None  # set with flat_logits
            ratios, tables = self._new_word_parts(flat[missing], flat_nm[missing])
            for j, i in enumerate(missing):
                part = parts[i] = np.concatenate([tables[j], ratios[j, self._merged_sets]])
                if cacheable[i]:
                    self._ratio_cache.put(state.tokens[i].key, part)
        return cast(list[np.ndarray], parts)  # every token's part is filled in now

    def _new_word_parts(self, flat: np.ndarray, flat_nm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(m, sum U) per-set ratios and (m, sum G) table parts of m words from their logits."""
        kernels = self._compiled()
        if kernels is not None:
            return kernels.word_parts(self._tree_parent, self._tree_attr, self._set_node,
                                      self._slot_count, self._set_facet, np.ascontiguousarray(flat),
                                      np.ascontiguousarray(flat_nm), self._values_flat,
                                      self._mem_rows, self._mem_off, self._mem_count, self._tab_off)
        ratios = self._set_ratios(flat, flat_nm)
        return ratios, self._tables_of_sets(ratios)

    def _set_ratios(self, flat: np.ndarray, flat_nm: np.ndarray) -> np.ndarray:
        """(m, sum U) per-set numerator / denominator of m words from their logits, in numpy:
        the sums over each set's attributes of e^l * v and of e^l, the no-match slot's e^l
        times its multiplicity added to the denominator last."""
        m = flat.shape[0]
        e = np.exp(flat)  # (m, sum V)
        y = self._all_sets @ np.concatenate([(e * self._values_flat).T, e.T], axis=1)  # (sum U, 2m)
        slot = self._slot_count[:, None] * np.exp(flat_nm).T[self._set_facet]  # (sum U, m)
        ratios: np.ndarray = (y[:, :m] / (y[:, m:] + slot)).T
        return ratios

    def _tables_of_sets(self, per_set: np.ndarray) -> np.ndarray:
        """(m, sum G) from (m, sum U): each group's table entry is the sum of its member sets."""
        kernels = self._compiled()
        if kernels is not None:
            return kernels.word_tables(np.ascontiguousarray(per_set, dtype=np.float32), self._mem_rows,
                                       self._mem_off, self._mem_count, self._tab_off)
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

    def _compiled(self) -> Kernels | None:
        return compiled() if self.use_kernel else None

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
        flat = self._flat_tables(state, head_weights)
        return [flat[self._tab_off[r] : self._tab_off[r + 1]] for r in range(len(self.groups))]

    def _table_parts(self, state: QueryState, head_weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(rows, base): the groups' tables end to end are the sum of the rows, then base.
        Unweighted, the rows are the words' cached parts and base the prior; under head weights
        the one row is the weighted tables and base is zero (0 + x is x)."""
        parts = self._word_parts(state)
        weights = None if head_weights is None else np.asarray(head_weights, dtype=np.float32)
        g_total = len(self._prior_tab)
        if weights is None or (weights == 1).all():  # x * 1 is x: the same floats either way
            if not parts:
                return np.zeros((0, g_total), dtype=np.float32), self._prior_tab
            return np.stack([record[:g_total] for record in parts]), self._prior_tab
        ratios = (np.stack([self._record_ratios(record) for record in parts]) if parts
                  else np.zeros((0, int(self.set_offsets[-1])), dtype=np.float32))
        kernels = self._compiled()
        if kernels is not None:
            flat = kernels.weighted_tables(ratios, weights, self._set_facet, self._set_prior,
                                           self._mem_rows, self._mem_off, self._mem_count, self._tab_off)
        else:
            per_set = np.zeros(int(self.set_offsets[-1]), dtype=np.float32)
            for r in ratios:
                per_set += r
            per_set = per_set * weights[self._set_facet] + self._set_prior
            flat = self._tables_of_sets(per_set[None])[0]
        return flat[None], self._zero_tab

    def _flat_tables(self, state: QueryState, head_weights: np.ndarray | None) -> np.ndarray:
        """All groups' tables end to end (group r at _tab_off[r]:_tab_off[r+1])."""
        rows, base = self._table_parts(state, head_weights)
        flat = np.zeros_like(base)
        for r in rows:
            flat += r
        flat += base
        return flat

    def score(self, state: QueryState, head_weights: np.ndarray | None = None) -> np.ndarray:
        """(n_items,) float32: prior + head_outputs(state) @ head_weights (up to rounding)."""
        return self._item_scores(self.group_tables(state, head_weights), None)

    def _item_scores(self, tables: list[np.ndarray], items: np.ndarray | None) -> np.ndarray:
        """Scores of `items` (all when None); always summed in the same order, so an item's
        score is the same float whichever way it is reached."""
        scores: np.ndarray | None = None
        for g, table in zip(self.groups, tables):
            part = np.take(table, g.ids if items is None else g.ids[items])
            if scores is None:
                scores = part
            else:
                scores += part
        assert scores is not None  # an index has at least one group
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
        few = eligible is not None and np.count_nonzero(eligible) * 8 < n
        kernels = self._compiled()
        if kernels is not None and not few:
            rows, base = self._table_parts(state, head_weights)
            mask = self._no_mask if eligible is None else np.ascontiguousarray(eligible, dtype=np.bool_)
            return kernels.top_k(rows, base, self._tab_off, self._ids, self._order, self._by_id,
                                 self._ptr, self._counts, mask, eligible is not None, int(k),
                                 self._seed_group)
        flat = self._flat_tables(state, head_weights)
        tables = [flat[self._tab_off[r] : self._tab_off[r + 1]] for r in range(len(self.groups))]
        if few and eligible is not None:  # few: eligible is not None
            return self._top_of_items(tables, np.flatnonzero(eligible), k)
        return self._top_k_numpy(tables, eligible, k)

    def _top_k_numpy(self, tables: list[np.ndarray], eligible: np.ndarray | None,
                     k: int) -> tuple[np.ndarray, np.ndarray]:
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

    def _top_of_items(self, tables: list[np.ndarray], items: np.ndarray,
                      k: int) -> tuple[np.ndarray, np.ndarray]:
        s = self._item_scores(tables, items)
        pos = _top_of(items, s, k)
        return items[pos], s[pos]

    def _full_top_k(self, tables: list[np.ndarray], eligible: np.ndarray | None,
                    k: int) -> tuple[np.ndarray, np.ndarray]:
        if eligible is not None:
            return self._top_of_items(tables, np.flatnonzero(eligible), k)
        scores = self._item_scores(tables, None)
        best = fast_top_k(scores, None, k)
        return best, scores[best]

    def nbytes(self) -> int:
        """Bytes of the arrays serving keeps per catalogue (not the model's embedding tables)."""
        arrays = [self.prior, self._set_prior, self._values_flat, self._set_facet, self._slot_count,
                  self._all_sets.data, self._all_sets.indices, self._all_sets.indptr,
                  self._mem_rows, self._prior_tab, self._zero_tab, self._tree_parent,
                  self._tree_attr, self._set_node]
        for f in self.facets:
            t = self.tables[f]
            arrays += [t.item_set, t.sets.data, t.sets.indices, t.sets.indptr, t.values, t.set_prior]
        arrays += [self._order, self._by_id, self._ptr, self._counts]
        for g in self.groups:
            if g.members is not None:
                arrays += [g.ids, g.members]
        return int(sum(a.nbytes for a in arrays))


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


# ---- distinct sets and groups --------------------------------------------------------------------


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
