"""Baselines that `recsys evaluate` reports next to the model, behind one small interface.

Every ranker scores the whole catalogue for a query (float32, higher is better) and returns the
top k item indices, ties broken by the lower index. Sklearn style: `__init__` stores parameters,
`fit(item_texts, interactions)` learns attributes ending in `_` and returns self.

Interactions are a DataFrame with columns `query` (str), `item_idx` (int, row of item_texts)
and `label` (number >= 0; > 0 is a positive).
"""

from __future__ import annotations

import hashlib
from typing import Any, Protocol, runtime_checkable

import bm25s
import numpy as np
import pandas as pd
import scipy.sparse as sp

from .errors import NotFittedError
from .index.topk import fast_top_k
from .tokenize import content_keys, match_keys

INTERACTION_COLUMNS = ("query", "item_idx", "label")


@runtime_checkable
class Ranker(Protocol):
    name: str

    def fit(self, item_texts: list[str], interactions: pd.DataFrame | None) -> Ranker: ...

    def score(self, query: str) -> np.ndarray: ...

    def top_k(self, query: str, k: int) -> np.ndarray: ...


def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the `k` highest scores, best first; equal scores in index order (the same
    selection the model's ranking uses)."""
    return fast_top_k(scores, None, int(k))


def score_all(ranker: Ranker, queries: list[str], k: int) -> dict[str, np.ndarray]:
    """`{query: top-k item indices}` for each distinct query."""
    return {query: ranker.top_k(query, k) for query in dict.fromkeys(queries)}


class _Base:
    """Shared plumbing: the fitted check and top_k on top of `score`."""

    name = "base"

    def _check_fitted(self) -> None:
        if not hasattr(self, "n_items_"):
            raise NotFittedError(
                f"{type(self).__name__} is not fitted yet: call fit(item_texts, interactions) "
                "before score() or top_k()"
            )

    def score(self, query: str) -> np.ndarray:
        raise NotImplementedError  # each ranker's own

    def top_k(self, query: str, k: int) -> np.ndarray:
        return top_k_indices(self.score(query), k)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.endswith("_"))
        return f"{type(self).__name__}({params})"


def _check_items(item_texts: list[str]) -> int:
    if len(item_texts) == 0:
        raise ValueError("item_texts is empty: a ranker needs at least one item")
    return len(item_texts)


def _check_interactions(interactions: pd.DataFrame | None, n_items: int, who: str) -> pd.DataFrame:
    if interactions is None:
        raise ValueError(f"{who} learns from interactions: pass a DataFrame, not None")
    missing = [c for c in INTERACTION_COLUMNS if c not in interactions.columns]
    if missing:
        raise ValueError(
            f"{who}: interactions lack columns {missing}; expected {list(INTERACTION_COLUMNS)}"
        )
    idx = interactions["item_idx"].to_numpy()
    if idx.size and (idx.min() < 0 or idx.max() >= n_items):
        raise ValueError(
            f"{who}: item_idx must be in [0, {n_items}), got {idx.min()}..{idx.max()}"
        )
    return interactions


def _row_counts(interactions: pd.DataFrame) -> np.ndarray:
    """(R,) how many interactions each row stands for: its `count` column (a log kept as one row
    per distinct query, item and label, training.groups.InteractionCounts), else 1."""
    if "count" in interactions.columns:
        return np.asarray(interactions["count"], dtype=np.float64)
    return np.ones(len(interactions))


class BM25Ranker(_Base):
    """Okapi BM25 (bm25s, Lucene variant) over the item texts, Snowball-stemmed on both sides,
    English stop words dropped (`tokenize.STOPWORDS`)."""

    name = "bm25"

    def __init__(self, k1: float = 1.5, b: float = 0.75):
        self.k1 = k1
        self.b = b

    def fit(self, item_texts: list[str], interactions: pd.DataFrame | None = None) -> BM25Ranker:
        n_items = _check_items(item_texts)
        corpus = [content_keys(text) for text in item_texts]
        self.retriever_: Any = None  # bm25s.BM25 (untyped)
        self.vocab_: dict[str, int] = {}
        if any(corpus):  # bm25s cannot index a catalogue without a single token
            self.retriever_ = bm25s.BM25(k1=self.k1, b=self.b, method="lucene")
            self.retriever_.index(corpus, show_progress=False)
            self.vocab_ = self.retriever_.vocab_dict
        self.n_items_ = n_items
        return self

    def score(self, query: str) -> np.ndarray:
        self._check_fitted()
        tokens = [t for t in content_keys(query) if t in self.vocab_]
        if not tokens:  # also an empty query: bm25s would fail on an empty token list
            return np.zeros(self.n_items_, dtype=np.float32)
        scores: np.ndarray = self.retriever_.get_scores(tokens).astype(np.float32, copy=False)
        return scores


class PopularityRanker(_Base):
    """The same ranking for every query: items by their summed positive labels."""

    name = "popularity"

    def fit(self, item_texts: list[str], interactions: pd.DataFrame | None) -> PopularityRanker:
        n_items = _check_items(item_texts)
        df = _check_interactions(interactions, n_items, type(self).__name__)
        labels = df["label"].to_numpy(dtype=np.float64) * _row_counts(df)
        positive = labels > 0
        item_idx = df["item_idx"].to_numpy(dtype=np.int64)
        self.popularity_ = np.bincount(
            item_idx[positive], weights=labels[positive], minlength=n_items
        ).astype(np.float32)
        self.n_items_ = n_items
        return self

    def score(self, query: str) -> np.ndarray:
        self._check_fitted()
        return self.popularity_.copy()


class RandomRanker(_Base):
    """Uniform random scores, the same for a given (seed, query) in any process."""

    name = "random"

    def __init__(self, seed: int = 0):
        self.seed = seed

    def fit(self, item_texts: list[str], interactions: pd.DataFrame | None = None) -> RandomRanker:
        self.n_items_ = _check_items(item_texts)
        return self

    def score(self, query: str) -> np.ndarray:
        self._check_fitted()
        # Python's hash() of a str changes with PYTHONHASHSEED; a digest does not.
        digest = hashlib.blake2b(query.encode("utf-8"), digest_size=8).digest()
        rng = np.random.default_rng([int(self.seed), int.from_bytes(digest, "little")])
        return rng.random(self.n_items_, dtype=np.float32)


class ClickAssociationRanker(_Base):
    """Learned word-to-token associations from clicks: the "simple learned baseline".

    For a query word w (match key) and an item token t, the association is a smoothed rate of
    positive labels among the interactions where the query contains w and the item contains t:

        rate(w, t) = (pos(w, t) + alpha * prior) / (shown(w, t) + implicit(w, t) + alpha)

    `shown` counts every interaction row (label 0 rows are explicit negatives). Logs of clicks
    alone have no negatives, so each positive also stands for `negatives_per_positive` items
    drawn at random from the catalogue: implicit(w, t) = m * pos(w) * df(t) / n_items, which
    makes a token that every item has (a "dress" on every dress) weak evidence and a
    distinctive one ("red" under the query word "crimson") strong evidence. `prior` is the
    overall positive rate, counted the same way.
    An item's score is the sum over the query's known words of the max association over the
    item's tokens; words never seen in training add the same to every item and are skipped.

    The max over tokens makes noise in rare pairs the main risk (a brand seen twice and clicked
    once beats a colour seen 500 times), so the default smoothing is strong: with a large
    `alpha` the rate ranks pairs by clicks in excess of the prior, which needs volume.
    Implicit negatives matter even when the log has explicit ones: shown lists come from a
    retrieval system, so they give no contrast at the catalogue level. Defaults were picked
    on held-out queries of the project's synthetic data (NDCG@10 0.93; 0.27 with alpha=0.5,
    0.56 without implicit negatives) and of Home Depot search relevance (0.29; about 0.05
    without implicit negatives).
    """

    name = "click_association"

    def __init__(self, alpha: float = 100.0, negatives_per_positive: float = 50.0):
        self.alpha = alpha
        self.negatives_per_positive = negatives_per_positive

    def fit(
        self, item_texts: list[str], interactions: pd.DataFrame | None
    ) -> ClickAssociationRanker:
        n_items = _check_items(item_texts)
        df = _check_interactions(interactions, n_items, type(self).__name__)
        token_vocab: dict[str, int] = {}
        items = _binary_rows([match_keys(text) for text in item_texts], token_vocab)  # (n_items, T)

        word_vocab: dict[str, int] = {}
        query_codes, distinct_queries = pd.factorize(df["query"].astype(str))
        distinct_words = _binary_rows([match_keys(q) for q in distinct_queries], word_vocab)
        words = distinct_words[query_codes]  # (R, W), one row per interaction
        tokens = items[df["item_idx"].to_numpy(dtype=np.int64)]  # (R, T)
        positive = df["label"].to_numpy(dtype=np.float64) > 0  # (R,)
        counts = _row_counts(df)  # (R,)
        counted = sp.diags(counts) @ words  # (R, W): each row as many times as it stands for

        shown = (counted.T @ tokens).tocsr()  # (W, T) co-occurrence counts over all rows
        clicked = (counted[positive].T @ tokens[positive]).tocsr()  # (W, T) over positive rows
        pos_per_word = np.asarray(counted[positive].sum(axis=0)).ravel()  # (W,)
        token_share = np.asarray(items.sum(axis=0)).ravel() / n_items  # (T,) document frequency
        m = float(self.negatives_per_positive)
        n_pos = float(counts[positive].sum())
        self.prior_ = n_pos / max(float(counts.sum()) + m * n_pos, 1.0)

        # Rates at the observed (w, t) pairs; every other pair gets the unseen-pair rate below.
        rows = np.repeat(np.arange(shown.shape[0]), np.diff(shown.indptr))
        cols = shown.indices
        pos_at = np.asarray(clicked[rows, cols]).ravel() if shown.nnz else np.zeros(0)
        implicit = m * pos_per_word[rows] * token_share[cols]
        rates = self._rate(pos_at, shown.data + implicit)
        self.rates_ = sp.csr_matrix(
            (rates.astype(np.float32), cols, shown.indptr), shape=shown.shape
        )

        self.word_vocab_ = word_vocab
        self.token_vocab_ = token_vocab
        self.pos_per_word_ = pos_per_word
        self.token_share_ = token_share
        self.item_tokens_ = items
        self.nonempty_items_ = np.flatnonzero(np.diff(items.indptr))
        self.n_items_ = n_items
        return self

    def _rate(self, positives: np.ndarray, exposure: np.ndarray) -> np.ndarray:
        """Smoothed positive rate from `positives` out of `exposure` (both may be fractional)."""
        return (positives + self.alpha * self.prior_) / (exposure + self.alpha)

    def _word_rates(self, w: int) -> np.ndarray:
        """(T,) association of query word `w` with every item token."""
        implicit = self.negatives_per_positive * self.pos_per_word_[w] * self.token_share_
        rates = self._rate(np.zeros_like(implicit), implicit).astype(np.float32)
        start, end = self.rates_.indptr[w], self.rates_.indptr[w + 1]
        rates[self.rates_.indices[start:end]] = self.rates_.data[start:end]
        return rates

    def score(self, query: str) -> np.ndarray:
        self._check_fitted()
        scores = np.zeros(self.n_items_, dtype=np.float32)
        items, nonempty = self.item_tokens_, self.nonempty_items_
        if nonempty.size == 0:
            return scores
        for word in dict.fromkeys(match_keys(query)):
            w = self.word_vocab_.get(word)
            if w is None:
                continue
            per_entry = self._word_rates(w)[items.indices]  # (nnz,) rate of each item's tokens
            scores[nonempty] += np.maximum.reduceat(per_entry, items.indptr[nonempty])
        return scores


def _binary_rows(token_lists: list[list[str]], vocab: dict[str, int]) -> sp.csr_matrix:
    """(len(token_lists), len(vocab)) 0/1 matrix of which tokens each list holds; grows `vocab`."""
    indptr, indices = [0], []
    for tokens in token_lists:
        ids = {vocab.setdefault(t, len(vocab)) for t in tokens}
        indices.extend(sorted(ids))
        indptr.append(len(indices))
    data = np.ones(len(indices), dtype=np.float64)
    return sp.csr_matrix((data, indices, indptr), shape=(len(token_lists), len(vocab)))
