import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from recsys.baselines import (
    BM25Ranker,
    ClickAssociationRanker,
    PopularityRanker,
    RandomRanker,
    Ranker,
    score_all,
    top_k_indices,
)
from recsys.errors import NotFittedError

from ..reference import sorted_top_k

ITEMS = [
    "red cotton dress casual",  # 0
    "blue cotton dress casual",  # 1
    "red silk scarf elegant",  # 2
    "blue denim jacket casual",  # 3
    "green wool sweater",  # 4
    "black leather boots",  # 5
]


def interactions(rows):
    return pd.DataFrame(rows, columns=["query", "item_idx", "label"])


CLICKS = interactions(
    [
        ("red dress", 0, 1),
        ("red dress", 1, 0),
        ("boots", 5, 1),
        ("boots", 5, 2),
        ("leather boots", 5, 1),
        ("jacket", 3, 1),
        ("jacket", 4, 0),
    ]
)

ALL_RANKERS = [BM25Ranker(), PopularityRanker(), RandomRanker(seed=1), ClickAssociationRanker()]


@pytest.mark.parametrize("ranker", ALL_RANKERS, ids=lambda r: r.name)
def test_common_interface(ranker):
    assert isinstance(ranker, Ranker)
    fitted = ranker.fit(ITEMS, CLICKS)
    assert fitted is ranker
    scores = ranker.score("red dress")
    assert scores.dtype == np.float32 and scores.shape == (len(ITEMS),)
    top = ranker.top_k("red dress", 3)
    assert top.shape == (3,) and len(set(top.tolist())) == 3
    assert np.all(np.diff(scores[top]) <= 0)  # best first
    assert ranker.top_k("red dress", 100).shape == (len(ITEMS),)  # k beyond the catalogue
    assert ranker.score("").shape == (len(ITEMS),)


@pytest.mark.parametrize(
    "ranker",
    [BM25Ranker(), PopularityRanker(), RandomRanker(), ClickAssociationRanker()],
    ids=lambda r: r.name,
)
def test_unfitted_raises(ranker):
    name = type(ranker).__name__
    with pytest.raises(NotFittedError, match=rf"{name} is not fitted.*call fit"):
        ranker.score("red")
    with pytest.raises(NotFittedError, match=name):
        ranker.top_k("red", 3)


def test_init_stores_parameters_only():
    ranker = BM25Ranker(k1=1.2, b=0.5)
    assert vars(ranker) == {"k1": 1.2, "b": 0.5}
    assert repr(ranker) == "BM25Ranker(k1=1.2, b=0.5)"


def test_top_k_breaks_ties_by_index():
    scores = np.array([1.0, 3.0, 2.0, 3.0, 1.0, 2.0, 3.0], dtype=np.float32)
    assert top_k_indices(scores, 2).tolist() == [1, 3]
    assert top_k_indices(scores, 4).tolist() == [1, 3, 6, 2]
    assert top_k_indices(scores, 7).tolist() == [1, 3, 6, 2, 5, 0, 4]
    assert top_k_indices(np.zeros(5, dtype=np.float32), 3).tolist() == [0, 1, 2]
    assert top_k_indices(scores, 0).tolist() == []


@pytest.mark.parametrize("seed", range(20))
def test_top_k_agrees_with_a_full_stable_sort(seed):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 5, size=50).astype(np.float32)  # many ties
    k = int(rng.integers(1, 60))
    assert top_k_indices(scores, k).tolist() == sorted_top_k(scores, None, k).tolist()


def test_bm25_ranks_the_item_with_the_rare_word_first():
    ranker = BM25Ranker().fit(ITEMS, None)
    assert ranker.top_k("casual silk", 1).tolist() == [2]  # "silk" is rare, "casual" is common
    assert ranker.top_k("leather", 1).tolist() == [5]


def test_bm25_matches_plurals_through_stems():
    ranker = BM25Ranker().fit(ITEMS, None)
    assert ranker.top_k("Jackets", 1).tolist() == [3]
    assert ranker.top_k("blue dresses", 1).tolist() == [1]
    scores = ranker.score("dresses")
    assert scores[0] > 0 and scores[1] > 0 and scores[4] == 0


def test_bm25_empty_and_unknown_queries_score_zero():
    ranker = BM25Ranker().fit(ITEMS, None)
    assert not ranker.score("").any()
    assert not ranker.score("   ,, ").any()
    assert not ranker.score("zebra").any()
    assert ranker.top_k("", 3).tolist() == [0, 1, 2]


def test_bm25_catalogue_without_words():
    ranker = BM25Ranker().fit(["", "!!"], None)
    assert not ranker.score("red").any()


def test_popularity_ranks_the_most_clicked_item_first():
    ranker = PopularityRanker().fit(ITEMS, CLICKS)
    assert ranker.top_k("anything at all", 3).tolist() == [5, 0, 3]  # 4 > 1 = 1, ties by index
    assert ranker.score("x")[5] == 4.0
    assert ranker.score("x")[1] == 0.0  # label 0 is not a click


def test_popularity_needs_interactions():
    with pytest.raises(ValueError, match="interactions"):
        PopularityRanker().fit(ITEMS, None)
    with pytest.raises(ValueError, match="lack columns"):
        PopularityRanker().fit(ITEMS, pd.DataFrame({"query": ["q"], "item_id": [0], "label": [1]}))
    with pytest.raises(ValueError, match="item_idx"):
        PopularityRanker().fit(ITEMS, interactions([("q", 6, 1)]))


def test_random_is_deterministic_per_query_and_seed():
    a = RandomRanker(seed=3).fit(ITEMS, None)
    b = RandomRanker(seed=3).fit(ITEMS, None)
    other_seed = RandomRanker(seed=4).fit(ITEMS, None)
    np.testing.assert_array_equal(a.score("red dress"), b.score("red dress"))
    np.testing.assert_array_equal(a.score("red dress"), a.score("red dress"))
    assert not np.array_equal(a.score("red dress"), other_seed.score("red dress"))
    assert not np.array_equal(a.score("red dress"), a.score("blue dress"))


def test_random_does_not_depend_on_the_process_hash_seed():
    code = (
        "from recsys.baselines import RandomRanker;"
        f"print(RandomRanker(seed=0).fit({ITEMS!r}, None).score('red dress').tolist())"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={"PYTHONHASHSEED": str(hash_seed)},
            cwd=Path(__file__).resolve().parents[2],
            capture_output=True, text=True, check=True,
        ).stdout
        for hash_seed in (1, 2)
    }
    scores = RandomRanker(seed=0).fit(ITEMS, None).score("red dress")
    assert outputs == {f"{scores.tolist()}\n"}


SYNONYM_ITEMS = [
    "red cotton dress",  # 0
    "blue cotton dress",  # 1
    "red wool dress",  # 2
    "blue wool dress",  # 3
    "red silk dress",  # 4: never shown in training
    "blue silk dress",  # 5: never shown in training
    "green linen dress",  # 6
]


@pytest.mark.parametrize("with_negatives", [True, False])
def test_click_association_learns_a_synonym(with_negatives):
    rows = [
        ("crimson dress", 0, 1),
        ("crimson dress", 2, 1),
        ("crimson cotton dress", 0, 1),
        ("crimson wool", 2, 1),
        ("dress", 6, 1),
        ("dress", 1, 1),
        ("navy dress", 1, 1),
        ("navy dress", 3, 1),
    ]
    if with_negatives:
        rows += [("crimson dress", 1, 0), ("crimson dress", 3, 0), ("crimson wool", 3, 0)]
    ranker = ClickAssociationRanker().fit(SYNONYM_ITEMS, interactions(rows))
    scores = ranker.score("crimson silk")
    assert scores[4] > scores[5]  # the unseen red item above the unseen blue one
    assert ranker.top_k("crimson", 3).tolist() == [0, 2, 4]
    assert ranker.top_k("navy", 3).tolist() == [1, 3, 5]
    # BM25 cannot bridge the synonym: "crimson" matches no item text.
    bm25 = BM25Ranker().fit(SYNONYM_ITEMS, None).score("crimson silk")
    assert bm25[4] == bm25[5]


def test_click_association_unknown_words_and_empty_items():
    ranker = ClickAssociationRanker().fit(ITEMS + [""], CLICKS)
    assert not ranker.score("zebra").any()
    assert not ranker.score("").any()
    scores = ranker.score("boots")
    assert scores.argmax() == 5 and scores[-1] == 0.0


def test_score_all():
    ranker = BM25Ranker().fit(ITEMS, None)
    result = score_all(ranker, ["silk", "leather", "silk"], k=2)
    assert list(result) == ["silk", "leather"]
    assert result["silk"][0] == 2 and result["leather"][0] == 5
    assert all(v.shape == (2,) for v in result.values())
