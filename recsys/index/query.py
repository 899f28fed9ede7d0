"""The query side of the index: a query's logits against every facet's whole vocabulary.

Per query word, one (D,) @ (D, sum V + H) product gives every facet's q.k / sqrt(d_k) and
no-match pre-activation (the heads' `formula.LogitTables` side by side), and its evidence rows are
read straight from the CSR tables (what `Evidence.dense_rows` returns); both are cached per word
(`QueryTables.word_rows`). No torch call is made per query: on a busy 2-core machine torch's
intra-op thread pool waits ~20 ms per operation, and for these shapes numpy is faster anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from ..encoding import Featurizer
from ..formula import ASSOC, EXACT, N_KINDS, NEAR, covered, logit_evidence, unlinked, value_share
from ..kernels import Kernels
from ..lru import WordCache
from ..model import FacetScorer
from ..synonyms import SynonymBook
from ..words import QueryToken

CACHE_BYTES = 32 << 20  # bound of each per-word cache of an index (rows of floats per word)


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
    # (T,) the key each token's logits, and what is computed from them alone, are cached under
    # (`_contexts`): its `cache_key` when context-free, else with the words it is coupled to
    context_keys: list[str] | None = field(default=None, repr=False, compare=False)
    # (T, sum V) float32 the share of each attribute's value a word's attention is worth
    # (`formula.value_share`, `ModelOptions.partial_value`); None: 1 everywhere
    value_share: np.ndarray | None = field(default=None, repr=False, compare=False)
    # per token, the flat attribute columns (int64, sorted) where the word itself is said: exact
    # or near evidence (a title or column value, a description word, words run together, a
    # near spelling, a shop synonym). None: a state built by hand, every cell counts
    # (`match_kind.countable`)
    lexical: list[np.ndarray] | None = field(default=None, repr=False, compare=False)


class _LazyEvidence(Mapping[str, np.ndarray]):
    """facet -> (T, V, N_KINDS) evidence (`formula.EVIDENCE_KINDS` order), stacked only when asked
    for: ranking never reads it, and on a large vocabulary it is the biggest array a query would
    build. `exact` (T, sum V) the exact evidence after coverage, `rows` the words' stacked rows
    (T, 1 + N_KINDS, sum V + H) holding the other kinds."""

    def __init__(self, exact: np.ndarray, rows: np.ndarray, offsets: np.ndarray, facets: tuple[str, ...]):
        self._exact, self._rows, self._offsets, self._facets = exact, rows, offsets, facets
        self._done: dict[str, np.ndarray] = {}

    def __getitem__(self, facet: str) -> np.ndarray:
        if facet not in self._done:
            if facet not in self._facets:
                raise KeyError(facet)
            h = self._facets.index(facet)
            lo, hi = self._offsets[h], self._offsets[h + 1]
            parts = [self._exact[:, lo:hi] if k == EXACT else self._rows[:, 1 + k, lo:hi] for k in range(N_KINDS)]
            self._done[facet] = np.stack(parts, -1)  # (T, V, N_KINDS)
        stacked: np.ndarray = self._done[facet]
        return stacked

    def __iter__(self) -> Iterator[str]:
        return iter(self._facets)

    def __len__(self) -> int:
        return len(self._facets)

    def at(self, t: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """(P, N_KINDS) the evidence of tokens `t` on flat attribute columns `cols` (P each),
        without stacking a facet's whole vocabulary."""
        out = self._rows[t, 1:1 + N_KINDS, cols].copy()  # (P, N_KINDS)
        out[:, EXACT] = self._exact[t, cols]
        return out


def channels_at(state: QueryState, offsets: np.ndarray, facets: tuple[str, ...], t: np.ndarray,
                cols: np.ndarray) -> np.ndarray:
    """(P, N_KINDS) the state's evidence of tokens `t` on flat attribute columns `cols` (all
    facets side by side, facet h's from offsets[h]): `_LazyEvidence.at`, or read facet by facet
    from a state built by hand."""
    t, cols = np.asarray(t, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    if isinstance(state.evidence, _LazyEvidence):
        return state.evidence.at(t, cols)
    out = np.zeros((len(cols), N_KINDS), dtype=np.float32)
    heads = np.searchsorted(offsets, cols, side="right") - 1
    for i, (tt, c, h) in enumerate(zip(t.tolist(), cols.tolist(), heads.tolist())):
        out[i] = state.evidence[facets[h]][tt, c - int(offsets[h])]
    return out


class _LazyQueryState(QueryState):
    """A `QueryState` whose logits, no-match logits and evidence are computed by `fill` (which
    returns them by name) when one of them is first read."""

    def __init__(self, tokens: list[QueryToken], context_free: np.ndarray, context_keys: list[str],
                 fill: Callable[[], dict[str, Any]], lexical: list[np.ndarray] | None = None):
        self.tokens, self.context_free, self.context_keys = tokens, context_free, context_keys
        self.lexical = lexical
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
    value_share = property(lambda self: self._get("value_share"))


def _contexts(tokens: list[QueryToken], exact_columns: list[np.ndarray]) -> tuple[np.ndarray, list[str]]:
    """(T,) whether no other query word matches exactly an attribute this word matches, and
    (T,) the key its logits can be cached under. A free word's exact evidence needs no coverage
    share from the others, so its logits are the same in any query (`Evidence.dense_rows`
    divides by the words of the attribute the query has): its key is its `cache_key`. A coupled
    word's logits depend on itself and the words sharing an exact attribute with it alone
    (coverage counts those, or adds their stored values in query order: `formula.covered`), so
    its key is theirs and its own in query order and its place among them: the same key, the
    same floats ("58" with "37" of a price bucket "37-58", in every request of a shopper whose
    profile has both)."""
    sharing: dict[int, list[int]] = {}  # attribute column -> the tokens matching it exactly
    for t, cols in enumerate(exact_columns):
        for c in cols.tolist():
            sharing.setdefault(c, []).append(t)
    if all(len(us) == 1 for us in sharing.values()):  # most queries: no word is coupled
        return np.ones(len(tokens), dtype=bool), [token.cache_key for token in tokens]
    free, keys = [], []
    for t, (token, cols) in enumerate(zip(tokens, exact_columns)):
        context = sorted({u for c in cols.tolist() for u in sharing[c]} | {t})
        free.append(len(context) == 1)
        keys.append(token.cache_key if len(context) == 1 else
                    "\x1e".join(tokens[u].cache_key for u in context) + f"\x1d{context.index(t)}")
    return np.array(free, dtype=bool), keys


class QueryTables:
    """What turns a query into its `QueryState`: every head's logit tables side by side over all
    facets' attributes (`_proj` (D, sum V + H), `_weights` (N_KINDS, sum V), `_bias`, the
    no-match biases), the evidence tables side by side (`_exact`, `_assoc`: n_words x sum V) and
    each attribute's word count (coverage divides by it). Owns one cache, `word_rows`: per query
    word, its rows (`_token_rows`) and the attributes it matches exactly or has any evidence of,
    bounded by bytes."""

    def __init__(self, model: FacetScorer, featurizer: Featurizer, keys: dict[str, torch.Tensor],
                 biases: dict[str, torch.Tensor], kernels: Callable[[], Kernels | None]):
        """keys (V, K) and logit offsets (V,) per facet (`FacetScorer.head_tables`); `kernels`
        says whether to use the compiled path now (the index's `use_kernel`)."""
        m, cfg = model, model.cfg
        self.featurizer, self.facets, self._compiled = featurizer, model.cfg.facets, kernels
        ev = featurizer.evidence
        sizes = [len(keys[f]) for f in self.facets]
        self.vocab_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        v_total = int(self.vocab_offsets[-1])
        with torch.no_grad():
            # views of the model's own embedding tables: no copy
            self._word_emb = m.word_emb.weight.detach().numpy()
            self._ngram_emb = m.ngram_emb.weight.detach().numpy()
            heads = [m.head(f).logit_tables(keys[f], getattr(m, f"attr_idf_{f}"), biases[f])
                     for f in self.facets]
        # every head's tables side by side: attributes of all facets, then one no-match per head
        proj = np.concatenate([t.dot for t in heads] + [np.stack([t.no_match for t in heads], 1)], axis=1)
        self._proj = proj.astype(np.float32)  # (D, sum V + H)
        self._nm_bias = np.array([t.no_match_bias for t in heads], dtype=np.float32)  # (H,)
        self._nm_specific = np.array([t.specific_weight for t in heads], dtype=np.float32)  # (H,)
        self._weights = np.concatenate([t.weights for t in heads], axis=1)  # (N_KINDS, sum V)
        self._bias = np.concatenate([t.bias for t in heads])  # (sum V,)
        # each attribute's head's offset on unlinked words (`formula.unlinked`), after the cap
        self._unmatched = np.concatenate([np.full(len(t.bias), t.unmatched_offset, dtype=np.float32)
                                          for t in heads])  # (sum V,)
        self._any_unmatched = bool(self._unmatched.any())  # read per query state
        self._cap = float(cfg.logit_cap)
        # evidence tables side by side over all facets (n_words, sum V), and the number of words
        # of each attribute (exact evidence is scaled by the share of them the query has)
        self._exact = sp.hstack([ev.exact[f] for f in self.facets], format="csr", dtype=np.float32)
        self._assoc = sp.hstack([ev.assoc[f] for f in self.facets], format="csr", dtype=np.float32)
        for t in (self._exact, self._assoc):
            t.sum_duplicates()
        # its words: how many values are stored, not their sum (they are partial worths)
        self._attr_words = np.maximum(np.diff(self._exact.tocsc().indptr), 1).astype(np.float32)
        self._partial = ev.partial
        # the tables store value shares (`ModelOptions.partial_value`): a present word is a full
        # match in the logit, worth its `formula.value_share` of the attribute's value
        self._partial_value = cfg.value_shares
        # (sum V,) 1 where a query with all of an attribute's words matches it whole, 0 where
        # its value is one word as written (`Evidence.phrase`; 1 everywhere when None)
        self._phrase = np.concatenate([np.ones(0, dtype=np.float32)] + [ev.phrase_flags(f) for f in self.facets])
        self._any_word = bool((self._phrase < 1).any())
        # per query word: its rows and the attributes it matches exactly (float32 rows, bounded)
        self.word_rows: WordCache[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = WordCache(
            "word rows", max(16, CACHE_BYTES // (4 * (1 + N_KINDS) * (v_total + len(self.facets)))))

    def query_state(self, query: str, synonyms: SynonymBook | None = None) -> QueryState:
        """The query's tokens and whether each one's logits are free of the others; the logits
        and evidence themselves are computed when first read (`_state_arrays`): a query whose
        words' ratios are all cached is ranked without them. `synonyms`: the shop's, which give
        their words more exact evidence (`recsys.synonyms`)."""
        tokens = self.featurizer.query_tokens(query, synonyms)
        entries = [self._token_entry(t) for t in tokens]
        return _LazyQueryState(tokens, *_contexts(tokens, [cols for _, cols, _, _ in entries]),
                               lambda: self._state_arrays([rows for rows, _, _, _ in entries],
                                                          [cols for _, _, cols, _ in entries]),
                               [said for _, _, _, said in entries])

    def _state_arrays(self, word_rows: list[np.ndarray], evidence_cols: list[np.ndarray] | None = None
                      ) -> dict[str, Any]:
        """A query state's logits, no-match logits and evidence, by name, from its words' rows
        and the attributes where each has any evidence (None: wherever it may)."""
        v_total = int(self.vocab_offsets[-1])
        if word_rows:
            rows = np.stack(word_rows)  # (T, 1 + N_KINDS, sum V + H)
        else:
            rows = np.zeros((0, 1 + N_KINDS, v_total + len(self.facets)), dtype=np.float32)
        kernels = self._compiled()
        # the attributes where some word has evidence (None: wherever it may); an attribute twice
        # computes it twice, to the same floats: no sort needed
        with_evidence = None if evidence_cols is None else np.concatenate([np.zeros(0, dtype=np.int64), *evidence_cols])
        if kernels is not None:
            cols = np.arange(v_total) if with_evidence is None else with_evidence
            raw, exact = kernels.query_logits(rows, v_total, self._weights, self._bias, self._attr_words,
                                              self._phrase, self._partial, self._partial_value, self._nm_bias, cols)
        else:
            z = rows[:, 0]  # (T, sum V + H)
            exact = covered(rows[:, 1 + EXACT, :v_total], self._attr_words, self._partial,
                            self._phrase if self._any_word else None)  # (T, sum V)
            match = z[:, :v_total]
            for k in range(N_KINDS):  # in kind order, as the kernel adds them
                evidence = logit_evidence(exact, self._partial_value) if k == EXACT else rows[:, 1 + k, :v_total]
                match = match + evidence * self._weights[k]
            raw = np.concatenate([match + self._bias, z[:, v_total:] + self._nm_bias], axis=1)
        cap = np.float32(self._cap)
        capped = np.tanh(raw / cap) * cap  # (T, sum V + H)
        if self._any_unmatched and kernels is not None:
            kernels.offset_unlinked(capped, exact, rows, self._unmatched, cols)
        elif self._any_unmatched:
            self._subtract_offsets(capped, exact, rows, evidence_cols)
        flat, flat_nm = capped[:, :v_total], capped[:, v_total:]
        logits, no_match = {}, {}
        for h, f in enumerate(self.facets):
            lo, hi = self.vocab_offsets[h], self.vocab_offsets[h + 1]
            logits[f], no_match[f] = flat[:, lo:hi], flat_nm[:, h]
        return {"logits": logits, "no_match": no_match, "flat_logits": flat, "flat_no_match": flat_nm,
                "value_share": self._value_share(exact, with_evidence),
                "evidence": _LazyEvidence(exact, rows, self.vocab_offsets, self.facets)}

    def _value_share(self, exact: np.ndarray, cols: np.ndarray | None) -> np.ndarray | None:
        """(T, sum V) float32 each pair's `formula.value_share` under `partial_value`, or None
        where every share is 1 (most queries: no word is part of a longer value it does not
        cover). Only the attributes where a word has evidence (`cols`; None: any) can hold a
        share below 1."""
        if not self._partial_value:
            return None
        if cols is None:
            share = value_share(exact)
            return share if (share < 1).any() else None
        at_cols = value_share(exact[:, cols])  # (T, C)
        if not (at_cols < 1).any():
            return None
        share = np.ones_like(exact)
        share[:, cols] = at_cols
        return share

    def _subtract_offsets(self, capped: np.ndarray, exact: np.ndarray, rows: np.ndarray,
                          evidence_cols: list[np.ndarray] | None) -> None:
        """Each word's capped logits (T, sum V + H) less its head's `unmatched_offset` where
        `formula.unlinked`, in place. Only the attributes where a word has evidence can be linked,
        so those alone are kept aside and put back (a catalogue of long descriptions has tens of
        thousands of attributes and a word evidence at a few): the same floats as the mask."""
        v_total = int(self.vocab_offsets[-1])
        if evidence_cols is None:
            away = unlinked(exact, rows[:, 1 + ASSOC, :v_total], rows[:, 1 + NEAR, :v_total])
            capped[:, :v_total] -= self._unmatched * away
            return
        kept = []
        for t, cols in enumerate(evidence_cols):
            linked = cols[~unlinked(exact[t, cols], rows[t, 1 + ASSOC, cols], rows[t, 1 + NEAR, cols])]
            kept.append((t, linked, capped[t, linked].copy()))
        capped[:, :v_total] -= self._unmatched
        for t, linked, values in kept:
            capped[t, linked] = values

    def _token_entry(self, token: QueryToken) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The word's rows (`_token_rows`, with its synonyms' exact evidence: `_synonym_rows`),
        the attribute columns it matches exactly, those where it has evidence of any kind
        (elsewhere its logit is q.k + bias) and those where it is said, exactly or by a near
        spelling (`QueryState.lexical`), each int64 and sorted."""
        entry = self.word_rows.get(token.cache_key)
        if entry is None:
            rows = self._token_rows(token.key)
            if token.synonyms:
                rows[1 + EXACT, : int(self.vocab_offsets[-1])] = np.maximum(
                    rows[1 + EXACT, : int(self.vocab_offsets[-1])], self._synonym_rows(token))
            v_total = int(self.vocab_offsets[-1])
            entry = (rows, np.flatnonzero(rows[1 + EXACT, :v_total] > 0),
                     np.flatnonzero(rows[1:, :v_total].any(axis=0)).astype(np.int64),
                     np.flatnonzero((rows[1 + EXACT, :v_total] > 0) | (rows[1 + NEAR, :v_total] > 0)))
            self.word_rows.put(token.cache_key, entry)
        return entry

    def _synonym_rows(self, token: QueryToken) -> np.ndarray:
        """(sum V,) the exact evidence, before the query's coverage, that the token's synonyms
        give it: per phrase it counts as, each of the phrase's words' stored exact values, 1 on
        the attributes whose words the phrase has all (as the phrase typed alone would match
        them), the largest over its phrases (`recsys.synonyms`)."""
        v_total = int(self.vocab_offsets[-1])
        out = np.zeros(v_total, dtype=np.float32)
        for use in token.synonyms:
            for phrase in use.phrases:
                stored = np.zeros(v_total, dtype=np.float32)
                said = np.zeros(v_total, dtype=np.float32)  # the phrase's words each attribute has
                for key in dict.fromkeys(phrase):
                    word = self.featurizer.words.id(key)
                    if word < 0:
                        continue
                    lo, hi = self._exact.indptr[word], self._exact.indptr[word + 1]
                    cols = self._exact.indices[lo:hi]
                    stored[cols] = np.maximum(stored[cols], self._exact.data[lo:hi])
                    said[cols] += 1.0
                whole = (said >= self._attr_words) & (said > 0)
                out = np.maximum(out, np.where(whole, np.float32(1.0), stored))
        return out

    def _token_rows(self, key: str) -> np.ndarray:
        """(1 + N_KINDS, sum V + H) for one query word: row 0 is q.k / sqrt(d_k) against every
        attribute then the no-match pre-activations; row 1 + k its evidence of kind k
        (`formula.EVIDENCE_KINDS`; exact before coverage). The same features as `Featurizer.encode_queries`
        and `Evidence.dense_rows`. Words recur across queries: `_token_entry` caches them."""
        bucket, grams = self.featurizer.token_features(key)
        n_grams = np.float32(max(int(np.count_nonzero(grams)), 1))  # bucket 0 is padding
        tok = self._word_emb[bucket] + self._ngram_emb[grams].sum(0) / n_grams  # (D,)
        width = self._proj.shape[1]
        rows = np.zeros((1 + N_KINDS, width), dtype=np.float32)
        rows[0] = tok @ self._proj
        word = self.featurizer.words.id(key)
        if word >= 0:
            rows[0, width - len(self.facets):] += self._nm_specific * self.featurizer.word_specificity()[word]
            lo, hi = self._exact.indptr[word], self._exact.indptr[word + 1]
            rows[1 + EXACT, self._exact.indices[lo:hi]] = self._exact.data[lo:hi]
            lo, hi = self._assoc.indptr[word], self._assoc.indptr[word + 1]
            share = self.featurizer.word_assoc_scales(word)  # a said word's association counts a share
            rows[1 + ASSOC, self._assoc.indices[lo:hi]] = self._assoc.data[lo:hi] * share
        for near_word, sim in self.featurizer.near_words(key):
            lo, hi = self._exact.indptr[near_word], self._exact.indptr[near_word + 1]
            cols = self._exact.indices[lo:hi]
            rows[1 + NEAR, cols] = np.maximum(rows[1 + NEAR, cols], sim)
        return rows

