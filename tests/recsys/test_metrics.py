import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import ndcg_score

from recsys.errors import DataError
from recsys.metrics import (
    dcg_at_k,
    evaluate_rankings,
    group_judgments,
    ndcg_at_k,
    paired_difference,
    recall_at_k,
    reciprocal_rank,
)


@pytest.mark.parametrize("seed", range(60))
def test_ndcg_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    n_items = int(rng.integers(2, 40))
    k = int(rng.integers(1, 15))
    grades = rng.integers(0, 4, size=n_items).astype(float)
    grades[rng.integers(n_items)] = rng.integers(1, 4)  # at least one relevant item
    scores = rng.permutation(n_items).astype(float)  # distinct: no ties for sklearn to average
    ranked = np.argsort(-scores)
    relevance = {i: g for i, g in enumerate(grades)}
    expected = ndcg_score(grades[None, :], scores[None, :], k=k)
    assert ndcg_at_k(ranked, relevance, k) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_ndcg_ideal_uses_judged_items_outside_the_ranking(seed):
    # A ranking that retrieves only some items is scored against the ideal over all judged ones.
    rng = np.random.default_rng(seed)
    n_items = 30
    grades = rng.integers(0, 3, size=n_items).astype(float)
    grades[0] = 2
    scores = rng.permutation(n_items).astype(float)
    ranked = np.argsort(-scores)[:5]
    expected = ndcg_score(grades[None, :], scores[None, :], k=5)
    sparse_judgments = {i: g for i, g in enumerate(grades) if g > 0}
    assert ndcg_at_k(ranked, sparse_judgments, 5) == pytest.approx(expected, abs=1e-12)


def test_dcg_by_hand():
    expected = 3 + 2 / math.log2(3) + 1 / math.log2(5)
    assert dcg_at_k(np.array([3.0, 2.0, 0.0, 1.0]), 10) == pytest.approx(expected)
    assert dcg_at_k(np.array([3.0, 2.0, 0.0, 1.0]), 1) == pytest.approx(3.0)
    assert dcg_at_k(np.array([]), 5) == 0.0


def test_ndcg_perfect_and_empty_cases():
    relevance = {4: 2.0, 7: 1.0, 1: 0.0}
    assert ndcg_at_k(np.array([4, 7, 1, 0]), relevance, 10) == pytest.approx(1.0)
    assert ndcg_at_k(np.array([0, 1, 2]), relevance, 10) == 0.0
    assert ndcg_at_k(np.array([], dtype=int), relevance, 10) == 0.0
    assert ndcg_at_k(np.array([1, 2]), {1: 0.0, 2: 0.0}, 10) == 0.0  # nothing relevant
    assert ndcg_at_k(np.array([1, 2]), {}, 10) == 0.0


def test_recall_by_hand():
    relevance = {1: 1.0, 5: 2.0, 9: 1.0, 3: 0.0}
    ranked = np.array([3, 5, 0, 1, 8, 9])
    assert recall_at_k(ranked, relevance, 1) == 0.0
    assert recall_at_k(ranked, relevance, 2) == pytest.approx(1 / 3)
    assert recall_at_k(ranked, relevance, 4) == pytest.approx(2 / 3)
    assert recall_at_k(ranked, relevance, 100) == pytest.approx(1.0)  # k beyond the list
    assert recall_at_k(ranked, {3: 0.0}, 10) == 0.0  # no relevant item


def test_reciprocal_rank_by_hand():
    relevance = {1: 1.0, 5: 2.0, 3: 0.0}
    assert reciprocal_rank(np.array([5, 1]), relevance) == 1.0
    assert reciprocal_rank(np.array([3, 0, 1, 5]), relevance) == pytest.approx(1 / 3)
    assert reciprocal_rank(np.array([3, 0]), relevance) == 0.0  # grade 0 is not relevant
    assert reciprocal_rank(np.array([], dtype=int), relevance) == 0.0


def test_invalid_k():
    with pytest.raises(ValueError, match="k must be a positive integer"):
        ndcg_at_k(np.array([1]), {1: 1.0}, 0)


def test_evaluate_rankings_means_and_skips_queries_without_relevant_items():
    judgments = {
        "a": {0: 1.0, 1: 0.0},
        "b": {2: 2.0, 3: 1.0},
        "nothing relevant": {4: 0.0},
    }
    rankings = {
        "a": np.array([0, 1, 2]),  # perfect
        "b": np.array([0, 3, 1]),  # finds item 3 at rank 2, misses item 2
        "not judged": np.array([0]),
    }
    result = evaluate_rankings(rankings, judgments, k=2)
    assert set(result) == {"ndcg@2", "recall@2", "mrr", "queries"}
    assert result["queries"] == 2
    ndcg_b = (1 / math.log2(3)) / (2 + 1 / math.log2(3))
    assert result["ndcg@2"] == pytest.approx((1.0 + ndcg_b) / 2)
    assert result["recall@2"] == pytest.approx((1.0 + 0.5) / 2)
    assert result["mrr"] == pytest.approx((1.0 + 0.5) / 2)


def test_evaluate_rankings_default_key_names_and_no_queries():
    result = evaluate_rankings({}, {"q": {0: 0.0}})
    assert result == {"ndcg@10": 0.0, "recall@10": 0.0, "mrr": 0.0, "queries": 0}


def test_evaluate_rankings_missing_ranking_is_an_error():
    with pytest.raises(ValueError, match="no ranking"):
        evaluate_rankings({}, {"q": {0: 1.0}})


def test_group_judgments():
    df = pd.DataFrame(
        {
            "query": ["red dress", "red dress", "blue shoe", "red dress"],
            "item_id": ["i1", "i2", "i1", "i1"],
            "grade": [2, 0, 1, 3],
        }
    )
    index = {"i1": 0, "i2": 1}
    assert group_judgments(df, index) == {"red dress": {0: 3.0, 1: 0.0}, "blue shoe": {0: 1.0}}


def test_group_judgments_other_grade_column():
    df = pd.DataFrame({"query": ["q"], "item_id": ["i1"], "label": [1.5]})
    assert group_judgments(df, {"i1": 4}, grade_column="label") == {"q": {4: 1.5}}


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("item_id", "nope", "row 3, column 'item_id': unknown item_id 'nope'"),
        ("grade", -1, "row 3, column 'grade': expected a number >= 0"),
        ("grade", "high", "row 3, column 'grade'"),
        ("query", "  ", "row 3, column 'query'"),
    ],
)
def test_group_judgments_bad_rows_name_row_and_column(column, value, message):
    df = pd.DataFrame({"query": ["q", "q"], "item_id": ["i1", "i1"], "grade": [1, 1]}, dtype=object)
    df.loc[1, column] = value
    with pytest.raises(DataError, match=message):
        group_judgments(df, {"i1": 0}, source="judgments.csv")


def test_group_judgments_missing_column():
    with pytest.raises(DataError, match="missing column 'grade'"):
        group_judgments(pd.DataFrame({"query": [], "item_id": []}), {})


def test_the_paired_difference_of_two_rankings_over_planted_judgments():
    """Query by query: a gains 1 on q1, loses 0.5 on q2 (its item 2nd, not 1st: 1 - 1/log2(3)),
    ties on q3; the mean, its standard error and the counts are those of the three differences."""
    judgments = {"q1": {1: 1.0}, "q2": {2: 1.0}, "q3": {3: 1.0}, "none": {4: 0.0}}
    a = {"q1": np.array([1, 9]), "q2": np.array([9, 2]), "q3": np.array([3]), "none": np.array([4])}
    b = {"q1": np.array([9, 8]), "q2": np.array([2, 9]), "q3": np.array([3]), "none": np.array([4])}
    out = paired_difference(a, b, judgments, k=10)
    diffs = np.array([1.0, 1 / np.log2(3) - 1.0, 0.0])
    assert out["queries"] == 3 and out["ahead"] == 1 and out["behind"] == 1
    assert out["difference"] == pytest.approx(diffs.mean())
    assert out["standard_error"] == pytest.approx(diffs.std(ddof=1) / np.sqrt(3))
