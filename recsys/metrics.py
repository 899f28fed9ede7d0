"""Ranking metrics as pure functions: NDCG@k, Recall@k, MRR, and their mean over queries.

A ranking is an array of item indices, best first. Judgments for one query are a dict
`{item_idx: grade}`; grade 0 means judged irrelevant, and an item that is not in the dict counts
as grade 0. NDCG uses linear gains and a log2(rank + 1) discount, as `sklearn.metrics.ndcg_score`
does, and its ideal ranking is built from every judged item of the query (not only the retrieved
ones).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from .errors import DataError

Relevance = Mapping[int, float]


def _check_k(k: int) -> int:
    if int(k) != k or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return int(k)


def dcg_at_k(gains_in_rank_order: np.ndarray, k: int) -> float:
    """Discounted cumulative gain of the first `k` gains: sum(gain_i / log2(i + 1)), i from 1."""
    gains = np.asarray(gains_in_rank_order, dtype=np.float64)[: _check_k(k)]
    discounts = np.log2(np.arange(2, gains.size + 2, dtype=np.float64))
    return float(np.sum(gains / discounts))


def ndcg_at_k(ranked_item_idx: np.ndarray, relevance: Relevance, k: int = 10) -> float:
    """DCG@k of the ranking divided by DCG@k of the ideal ordering of all judged items.

    0.0 when no judged item has a positive grade (as sklearn does).
    """
    k = _check_k(k)
    ideal = np.sort(np.fromiter(relevance.values(), dtype=np.float64, count=len(relevance)))[::-1]
    ideal_dcg = dcg_at_k(ideal, k)
    if ideal_dcg <= 0.0:
        return 0.0
    top = np.asarray(ranked_item_idx)[:k]
    gains = np.array([relevance.get(int(i), 0.0) for i in top], dtype=np.float64)
    return dcg_at_k(gains, k) / ideal_dcg


def _relevant(relevance: Relevance) -> set[int]:
    return {int(i) for i, grade in relevance.items() if grade > 0}


def recall_at_k(ranked_item_idx: np.ndarray, relevance: Relevance, k: int = 10) -> float:
    """Share of the relevant items (grade > 0) found in the first `k`; 0.0 if none is relevant."""
    k = _check_k(k)
    relevant = _relevant(relevance)
    if not relevant:
        return 0.0
    found = relevant.intersection(int(i) for i in np.asarray(ranked_item_idx)[:k])
    return len(found) / len(relevant)


def reciprocal_rank(ranked_item_idx: np.ndarray, relevance: Relevance) -> float:
    """1 / rank of the first relevant item (grade > 0) in the whole ranking; 0.0 if none."""
    relevant = _relevant(relevance)
    for rank, i in enumerate(np.asarray(ranked_item_idx), start=1):
        if int(i) in relevant:
            return 1.0 / rank
    return 0.0


def evaluate_rankings(
    rankings: Mapping[str, np.ndarray],
    judgments: Mapping[str, Relevance],
    k: int = 10,
) -> dict[str, float]:
    """Mean NDCG@k, Recall@k and MRR over the judged queries that have a relevant item.

    Returns `{"ndcg@{k}", "recall@{k}", "mrr", "queries"}`; "queries" is how many queries were
    averaged (queries whose judgments have no grade > 0 are skipped: no system can score there).
    With no such query the means are 0.0 and "queries" is 0. Every judged query with a relevant
    item must have a ranking: a missing one raises ValueError rather than silently scoring 0.
    """
    k = _check_k(k)
    evaluated = [q for q, rel in judgments.items() if _relevant(rel)]
    missing = [q for q in evaluated if q not in rankings]
    if missing:
        raise ValueError(
            f"{len(missing)} judged queries have no ranking, e.g. {missing[0]!r}; "
            "rank every query of the judgments"
        )
    ndcg, recall, rr = [], [], []
    for query in evaluated:
        ranking, relevance = rankings[query], judgments[query]
        ndcg.append(ndcg_at_k(ranking, relevance, k))
        recall.append(recall_at_k(ranking, relevance, k))
        rr.append(reciprocal_rank(ranking, relevance))

    def mean(values: list[float]) -> float:
        return float(np.mean(values)) if values else 0.0

    return {
        f"ndcg@{k}": mean(ndcg),
        f"recall@{k}": mean(recall),
        "mrr": mean(rr),
        "queries": len(evaluated),
    }


def paired_difference(rankings: Mapping[str, np.ndarray], baseline: Mapping[str, np.ndarray],
                      judgments: Mapping[str, Relevance], k: int = 10) -> dict[str, float | int]:
    """NDCG@k of `rankings` less the `baseline`'s, query by query over the judged queries with a
    relevant item (those `evaluate_rankings` averages): the mean difference, its standard error
    (the spread of the differences over the square root of their count; 0 with one query), and
    on how many queries either is ahead. Whether a mean below the baseline's is more than the
    queries' noise: with 20 searches, one search's swing moves the mean by a twentieth."""
    k = _check_k(k)
    evaluated = [q for q, rel in judgments.items() if _relevant(rel)]
    diffs = np.array([ndcg_at_k(rankings[q], judgments[q], k) - ndcg_at_k(baseline[q], judgments[q], k)
                      for q in evaluated], dtype=np.float64)
    n = diffs.size
    return {"difference": float(diffs.mean()) if n else 0.0,
            "standard_error": float(diffs.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0,
            "ahead": int((diffs > 0).sum()), "behind": int((diffs < 0).sum()), "queries": n}


def group_judgments(
    df: pd.DataFrame,
    item_index: Mapping[str, int],
    grade_column: str = "grade",
    *,
    source: str = "judgments.csv",
) -> dict[str, dict[int, float]]:
    """`{query: {item_idx: grade}}` from a frame with columns query, item_id and `grade_column`.

    `item_index` maps external item ids to indices. An unknown item id, a missing query, or a
    grade that is not a number >= 0 raises DataError naming `source`, the row (header = row 1,
    assuming the frame kept the CSV's row order and a default index) and the column. A
    (query, item) pair judged twice keeps the higher grade.
    """
    for column in ("query", "item_id", grade_column):
        if column not in df.columns:
            raise DataError(
                source, f"missing column {column!r}; expected query, item_id, {grade_column}"
            )
    grades = pd.to_numeric(df[grade_column], errors="coerce").to_numpy(dtype=np.float64)
    judgments: dict[str, dict[int, float]] = {}
    rows = zip(df["query"].tolist(), df["item_id"].tolist(), grades)
    for position, (query, item_id, grade) in enumerate(rows):
        row = position + 2
        if not isinstance(query, str) or not query.strip():
            raise DataError(source, "expected a non-empty query", row=row, column="query")
        if not np.isfinite(grade) or grade < 0:
            raise DataError(
                source, f"expected a number >= 0, got {df[grade_column].iat[position]!r}",
                row=row, column=grade_column,
            )
        key = str(item_id)
        if key not in item_index:
            raise DataError(
                source, f"unknown item_id {key!r}: not in the catalogue", row=row, column="item_id"
            )
        per_query = judgments.setdefault(query, {})
        idx = int(item_index[key])
        per_query[idx] = max(float(grade), per_query.get(idx, 0.0))
    return judgments
