"""Exact, fast scoring of a whole catalogue: the production path.

Keys and values depend on the attribute alone, so a query is scored once against each facet's
attribute vocabulary (T x V logits); an item's head output then only needs sums over its own
attributes:  out = sum_t  (sum_m e^{l_tm} v_m) / (e^{l_t,none} + sum_m e^{l_tm}).
Both sums are one sparse product with the item x attribute matrix, and items with the same
attribute set in a facet share the result, so each facet is computed once per distinct set.
Logits are soft-capped by the model, so the exponentials need no max-shift.
The result equals `FacetScorer.forward` up to float rounding (tested).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch

from .encoding import Featurizer
from .facets import FACETS
from .model import FacetScorer
from .words import QueryToken


@dataclass
class FacetTables:
    keys: torch.Tensor  # (V, K)
    values: np.ndarray  # (V,)
    sets: sp.csr_matrix  # (U, V) distinct attribute sets of this facet
    item_set: np.ndarray  # (n_items,) row of `sets` for each item


@dataclass
class QueryState:
    """Everything about one query that explanations and scoring share."""

    tokens: list[QueryToken]
    logits: dict[str, np.ndarray]  # facet -> (T, V) match logits against the whole vocabulary
    no_match: dict[str, np.ndarray]  # facet -> (T,)
    evidence: dict[str, np.ndarray]  # facet -> (T, V, 2) exact, assoc


class ScoringIndex:
    def __init__(self, model: FacetScorer, featurizer: Featurizer):
        self.model, self.featurizer = model.eval(), featurizer
        catalog = featurizer.catalog
        self.tables: dict[str, FacetTables] = {}
        prior = np.zeros(catalog.n_items, dtype=np.float32)
        with torch.no_grad():
            for f in FACETS:
                keys, values, attr_prior = model.head_tables(f)
                x = catalog.item_attrs[f]
                sets, item_set = _distinct_rows(x)
                self.tables[f] = FacetTables(keys, values.numpy(), sets, item_set)
                counts = np.maximum(np.diff(x.indptr), 1)
                prior += (x @ attr_prior.numpy()) / counts
        self.prior = prior  # (n_items,)

    def query_state(self, query: str) -> QueryState:
        enc = self.featurizer.encode_queries([query])
        n_tok = int(enc.mask[0].sum())
        tokens = enc.tokens[0]
        logits, no_match, evidence = {}, {}, {}
        with torch.no_grad():
            tok = self.model.embed_tokens(enc.bucket[0, :n_tok], enc.grams[0, :n_tok])  # (T, D)
            for f in FACETS:
                head = self.model.heads[f]
                q, nm = head.queries(tok)  # (T, K), (T,)
                ev = np.stack(self.featurizer.evidence.dense_rows(f, enc.word_id[0, :n_tok]), -1)
                dot = q @ self.tables[f].keys.T  # (T, V)
                logits[f] = head.match_logits(dot, torch.from_numpy(ev)).numpy()
                no_match[f], evidence[f] = nm.numpy(), ev
        return QueryState(tokens, logits, no_match, evidence)

    def head_outputs(self, state: QueryState) -> np.ndarray:
        """(n_items, H) unweighted head outputs for every item."""
        n = self.featurizer.catalog.n_items
        out = np.zeros((n, len(FACETS)), dtype=np.float32)
        if not state.tokens:
            return out
        for h, f in enumerate(FACETS):
            t = self.tables[f]
            e = np.exp(state.logits[f])  # (T, V)
            num = t.sets @ (e * t.values).T  # (U, T)
            den = t.sets @ e.T + np.exp(state.no_match[f])  # (U, T)
            out[:, h] = (num / den).sum(axis=1)[t.item_set]
        return out


def _distinct_rows(x: sp.csr_matrix) -> tuple[sp.csr_matrix, np.ndarray]:
    """Distinct rows of a 0/1 CSR matrix and, per original row, the index of its distinct row."""
    seen: dict[bytes, int] = {}
    item_set = np.empty(x.shape[0], dtype=np.int64)
    firsts = []
    for i in range(x.shape[0]):
        row = np.sort(x.indices[x.indptr[i] : x.indptr[i + 1]])
        key = row.tobytes()
        j = seen.get(key)
        if j is None:
            j = seen[key] = len(firsts)
            firsts.append(i)
        item_set[i] = j
    return x[firsts], item_set
