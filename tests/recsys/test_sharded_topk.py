"""docs/scaling.md's claim, checked on the planted catalogue: shards of the catalogue by item hash,
each a real `ScoringIndex` over its items alone, give per item the score the whole catalogue's
index gives (scores are per item), so merging each shard's exact top-k is the exact top-k."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from recsys.catalog import Catalog
from recsys.encoding import Featurizer
from recsys.index.scoring import ScoringIndex
from recsys.recommender import Recommender

SHARDS = 3
K = 10


def shard_of(item_id: str) -> int:
    """A stable hash (Python's own is salted per process, and every router must agree)."""
    return int.from_bytes(hashlib.sha256(item_id.encode()).digest()[:8], "big") % SHARDS


def shard_index(rec: Recommender, rows: np.ndarray) -> ScoringIndex:
    """The index of one shard: its items' rows of the attribute tables, with what every shard
    shares: the vocabulary, the model (its IDF and length buffers), the word and evidence tables
    and the words' specificity, all of the whole catalogue (computed on a shard's items alone,
    the specificity moved scores by up to 9e-4 here and would make a merge inexact)."""
    cat = rec.catalog
    part = Catalog([cat.item_ids[r] for r in rows], [cat.titles[r] for r in rows], [cat.texts[r] for r in rows],
                   cat.vocab, {f: m[rows] for f, m in cat.item_attrs.items()}, cat.buckets)
    whole = rec.featurizer
    return ScoringIndex(rec.model, Featurizer(part, whole.words, whole.evidence, whole.cfg,
                                              _specificity=whole.word_specificity()))


def merged_top_k(shards: list[tuple[np.ndarray, ScoringIndex]], query: str, k: int) -> tuple[list[int], list[float]]:
    """Each shard's exact top k, merged by score, ties by catalogue order (as one index breaks
    them): the router's whole job."""
    found: list[tuple[float, int]] = []
    for rows, index in shards:
        local, scores = index.top_k(index.query_state(query), None, None, k)
        found += zip(scores.tolist(), rows[local].tolist())
    found.sort(key=lambda sc: (-sc[0], sc[1]))
    return [i for _, i in found[:k]], [s for s, _ in found[:k]]


def test_merged_shard_top_k_is_the_whole_catalogues(planted_model, planted_paths):
    rec = planted_model
    by_shard = np.array([shard_of(i) for i in rec.catalog.item_ids])
    shards = [(np.flatnonzero(by_shard == s), None) for s in range(SHARDS)]
    assert all(len(rows) >= K for rows, _ in shards)  # every shard can fill a top k alone
    shards = [(rows, shard_index(rec, rows)) for rows, _ in shards]
    queries = list(dict.fromkeys(pd.read_csv(planted_paths["judgments"])["query"].tolist()
                                 + pd.read_csv(planted_paths["interactions"])["query"].tolist()[:200]
                                 + ["acme", "premium formal", "words nothing matches"]))
    whole = rec.index
    for q in queries:
        state = whole.query_state(q)
        scores = whole.score(state)
        for rows, index in shards:  # the same score per item, to float32 rounding
            np.testing.assert_allclose(index.score(index.query_state(q)), scores[rows], rtol=0, atol=1e-5)
        items, top = whole.top_k(state, None, None, K)
        merged, merged_scores = merged_top_k(shards, q, K)
        np.testing.assert_allclose(merged_scores, top, rtol=0, atol=1e-5)
        # the same items, but two whose scores differ only by float32 rounding (a shard sums an
        # item's parts in its own groups) may come in either order
        np.testing.assert_allclose(scores[merged], top, rtol=0, atol=1e-5)
        same = [a == b or abs(float(scores[a]) - float(scores[b])) <= 1e-5 for a, b in zip(merged, items.tolist())]
        assert all(same), q
