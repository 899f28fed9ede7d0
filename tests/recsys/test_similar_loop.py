"""benchmarks/similar_loop.py's baselines and grades on planted items: attribute overlap ranks the
item sharing most attributes first, co-clicks the most co-clicked first and backfill by overlap,
neither returns the item itself, and a grade is the shopper's, not the opened item's."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))  # the script imports closed_loop and shopper_loop as it runs
_spec = importlib.util.spec_from_file_location("similar_loop", BENCHMARKS / "similar_loop.py")
sl = importlib.util.module_from_spec(_spec)
sys.modules["similar_loop"] = sl
_spec.loader.exec_module(sl)

from closed_loop import Shoppers  # noqa: E402

from recsys.catalog import Catalog  # noqa: E402

# item 0 is opened; 1 shares 4 of its 5 values, 2 and 3 share 3 (3 is the more popular), 4 shares 1
ITEMS = pd.DataFrame({
    "item_id": [f"SKU-{i}" for i in range(6)],
    "title": ["Oak Chair", "Oak Chair", "Oak Chair", "Oak Chair", "Pine Table", "Pine Table"],
    "color": ["navy", "navy", "navy", "red", "navy", "green"],
    "style": ["scandi", "scandi", "rustic", "scandi", "modern", "modern"],
    "category": ["chair", "chair", "chair", "chair", "table", "table"],
    "material": ["oak", "oak", "pine", "oak", "pine", "pine"],
    "brand": ["Nordwell", "Tessaro", "Nordwell", "Tessaro", "Tessaro", "Neveri"],
    "quality": ["standard"] * 6,
    "price": ["40"] * 6,
    "rating": ["4.0"] * 6,
})
POPULARITY = np.array([0.0, 0.0, 1.0, 5.0, 0.0, 0.0])


def _attrs() -> object:
    catalog = Catalog.build(ITEMS[["item_id", "title", "color", "style", "category", "material", "brand"]])
    return sl.attribute_matrix(catalog)


def test_attribute_overlap_ranks_most_shared_first_ties_by_popularity():
    ranked = sl.attribute_overlap(_attrs(), 0, POPULARITY, 5).tolist()
    assert ranked[:3] == [1, 3, 2]  # 4 shared values, then the tie of 3 by popularity
    assert ranked[3] == 4 and 0 not in ranked
    tables = ITEMS["category"].eq("table").to_numpy()
    assert sl.attribute_overlap(_attrs(), 0, POPULARITY, 5, first=tables).tolist() == [4, 5, 1, 3, 2]


def _clicks(rows: list[tuple[int, int, int]]) -> object:
    log = pd.DataFrame(rows, columns=["search", "item_idx", "label"])
    return sl.clicked_together(log, len(ITEMS))


def test_co_clicks_rank_the_most_co_clicked_first_and_backfill_by_overlap():
    # item 0 is clicked with 5 in searches 1, 2 and 3, with 4 in search 1; 2 is only shown with it
    clicks = _clicks([(1, 0, 1), (1, 5, 1), (1, 4, 2), (2, 0, 1), (2, 5, 1), (2, 2, 0),
                      (3, 0, 1), (3, 5, 1), (3, 5, 1), (4, 2, 1), (4, 1, 1)])
    assert sl.co_click_counts(clicks, 0).tolist() == [0, 0, 0, 0, 1, 3]
    ranked = sl.co_clicks(clicks, _attrs(), 0, POPULARITY, 5).tolist()
    assert ranked == [5, 4, 1, 3, 2]  # co-clicked by count, then the rest by overlap


def test_a_grade_is_the_category_what_was_asked_and_the_shoppers_preference(tmp_path: Path):
    items = ITEMS.assign(color=["navy", "navy", "red", "navy", "navy", "navy"])
    items.to_csv(tmp_path / "items.csv", index=False)
    pd.DataFrame({"query": ["navy chair"], "item_id": ["SKU-0"], "label": [1], "user_id": ["U-1"],
                  "timestamp": ["2024-01-01T00:00:00"]}).to_csv(tmp_path / "interactions.csv", index=False)
    judge = sl.Judge(Shoppers(tmp_path))
    preferred = np.array([False, False, True, True, True, False])  # the shopper's lasting taste
    # itself 0; a chair 1, + 1 navy (asked and found), + 1 preferred; a table 0 whatever it shares
    assert judge.grades("navy chair", 0, preferred).tolist() == [0, 2, 2, 3, 0, 0]
    # nothing asked besides the category: the opened item's colour (navy) or style (scandi) counts
    assert judge.grades("chair", 1, np.zeros(6, dtype=bool)).tolist() == [2, 0, 1, 2, 0, 0]
