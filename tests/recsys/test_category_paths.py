"""A category path ("Home & Garden > Kitchen > Cookware", Google Merchant's `product_type`, a
shop's breadcrumbs) is a value per level: each level matches, filters and counts as a value of
its own, where the whole path was one long phrase."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recsys.baselines import BM25Ranker
from recsys.catalog import Catalog, path_columns, path_levels
from training.fit import TrainConfig
from training.start import untrained_recommender

NO_ROWS = pd.DataFrame({"query": pd.Series([], dtype=object), "item_idx": pd.Series([], dtype="int64"),
                        "label": pd.Series([], dtype="float32"), "weight": pd.Series([], dtype="float32")})


def _items(paths: list[str], **extra: list[str]) -> pd.DataFrame:
    n = len(paths)
    return pd.DataFrame({"item_id": [f"i{i}" for i in range(n)], "title": [f"thing {i}" for i in range(n)],
                         "product_type": paths, **extra})


@pytest.mark.parametrize("value, levels", [
    ("home & garden > kitchen > cookware", ["home & garden", "kitchen", "cookware"]),
    ("apparel›topwear›shirts", ["apparel", "topwear", "shirts"]),
    ("women » shoes", ["women", "shoes"]),
    ("accessories > watches > watches", ["accessories", "watches"]),  # each level once
    ("toys", ["toys"]),
])
def test_path_levels(value, levels):
    assert path_levels(value) == levels


def test_which_columns_are_category_paths():
    items = _items(["Home & Garden > Kitchen > Cookware", "Home & Garden", "Toys > Puzzles", "Toys > Dolls"],
                   age=["> 3 years", "> 8 years", "<5 years", "all ages"],  # comparisons, not paths
                   brand=["Acme", "Borea", "Acme", "Cato"])
    # a feed files some items under a top level alone: half the cells paths is enough
    assert path_columns(items, {}) == ["product_type"]
    # a schema that maps the column to a facet keeps it a path: the levels are still values
    assert path_columns(items, {"product_type": "style"}) == ["product_type"]
    assert path_columns(items, {"product_type": "ignore"}) == []


@pytest.mark.parametrize("column, cells, levels", [
    # Wayfair's category hierarchy
    ("category hierarchy", ["Furniture / Living Room Furniture / Chairs & Seating / Accent Chairs",
                            "Furniture / Bedroom Furniture / Beds", "Rugs / Area Rugs"],
     ["furniture", "living room furniture", "chairs & seating", "accent chairs"]),
    # Magento's categories: several paths joined by a bare comma, each level once
    ("categories", ["Default Category/Gear,Default Category/Gear/Bags", "Default Category/Gear/Watches",
                    "Default Category/Men/Tops"], ["default category", "gear", "bags"]),
    # three levels or more need no name
    ("shelf", ["Home/Kitchen/Pans", "Home/Kitchen/Knives", "Home/Garden/Tools"], ["home", "kitchen", "pans"]),
    # where `>` separates the levels, a slash is a level's own
    ("category", ["Lighting > Indoor/Outdoor Lights > Sconces", "Lighting > Fans", "Bath > Sinks"],
     ["lighting", "indoor/outdoor lights", "sconces"]),
])
def test_slash_paths_are_read_a_level_each(column, cells, levels):
    items = pd.DataFrame({"item_id": ["a", "b", "c"], "title": ["x", "y", "z"], column: cells})
    assert path_columns(items, {}) == [column]
    cat = Catalog.build(items)
    assert [lab.split(":", 1)[1] for lab in cat.attribute_labels(0)["other"] if lab.startswith(column)] == levels


def test_paths_joined_by_commas_are_read_each_and_a_level_s_own_comma_stays():
    """WooCommerce joins an item's categories with ", " ("Clothing > Hoodies, Music"); Google's
    taxonomy has levels with a comma of their own ("Food, Beverages & Tobacco"). A comma starts
    another path only where what follows starts a path of the column elsewhere."""
    woo = pd.DataFrame({"item_id": ["a", "b", "c", "d"], "title": ["w", "x", "y", "z"],
                        "Categories": ["Clothing > Hoodies, Music", "Music > Albums", "Clothing > Tshirts",
                                       "Clothing, Clothing > Tshirts"]})
    cat = Catalog.build(woo)
    levels = [sorted(lab.split(":", 1)[1] for lab in cat.attribute_labels(i)["other"] if lab.startswith("categories"))
              for i in range(4)]
    assert levels == [["clothing", "hoodies", "music"], ["albums", "music"], ["clothing", "tshirts"],
                      ["clothing", "tshirts"]]
    google = pd.DataFrame({"item_id": ["a", "b", "c"], "title": ["x", "y", "z"],
                           "google_product_category": ["Food, Beverages & Tobacco > Beverages",
                                                       "Food, Beverages & Tobacco > Food Items",
                                                       "Apparel & Accessories > Shoes"]})
    cat = Catalog.build(google)
    assert [lab for lab in cat.attribute_labels(0)["other"] if lab.startswith("google")] == [
        "google_product_category:food, beverages & tobacco", "google_product_category:beverages"]


def test_paths_joined_by_semicolons_are_read_each():
    """BigCommerce joins a product's categories with `;` ("Shop All/Camping/Tents;Shop All/Sale")."""
    bc = pd.DataFrame({"item_id": ["a", "b", "c"], "title": ["w", "x", "y"],
                       "Category": ["Shop All/Camping/Tents;Shop All/Sale", "Shop All/Camping/Tents",
                                    "Shop All/Hiking/Backpacks"]})
    cat = Catalog.build(bc)
    assert sorted(lab for lab in cat.attribute_labels(0)["other"] if lab.startswith("category")) == [
        "category:camping", "category:sale", "category:shop all", "category:tents"]
    assert sorted(np.flatnonzero(cat.filter_mask({"category": ["tents"]})).tolist()) == [0, 1]


@pytest.mark.parametrize("column, cells", [
    ("color", ["Black/White", "Navy / Red", "Grey"]),  # two colours, not a path
    ("size", ["S/M", "M/L", "L/XL"]),
])
def test_a_slash_inside_a_value_is_no_path(column, cells):
    items = pd.DataFrame({"item_id": ["a", "b", "c"], "title": ["x", "y", "z"], column: cells})
    assert path_columns(items, {}) == []


def test_each_level_is_a_value_to_filter_and_count_by():
    items = _items(["Home & Garden > Kitchen > Cookware", "Home & Garden > Kitchen > Cutlery|Sale",
                    "Home & Garden > Bedroom", "Toys"])
    cat = Catalog.build(items)
    labels = [sorted(lab for lab in cat.attribute_labels(i)["other"] if lab.startswith("product_type:"))
              for i in range(4)]
    assert labels == [["product_type:cookware", "product_type:home & garden", "product_type:kitchen"],
                      ["product_type:cutlery", "product_type:home & garden", "product_type:kitchen",
                       "product_type:sale"],
                      ["product_type:bedroom", "product_type:home & garden"],
                      ["product_type:toys"]]
    kitchen = cat.filter_mask({"product_type": ["kitchen"]})
    assert [cat.item_ids[i] for i in np.flatnonzero(kitchen)] == ["i0", "i1"]
    counts = untrained_recommender(cat, NO_ROWS, TrainConfig(seed=0)).facet_counts("", ["product_type"])
    assert {v["value"]: v["count"] for v in counts.facets[0].values} == {
        "home & garden": 3, "kitchen": 2, "cookware": 1, "cutlery": 1, "sale": 1, "bedroom": 1, "toys": 1}


def test_the_start_ranks_a_level_as_bm25_does_and_names_the_level():
    """"cookware" on the saucepan filed under Cookware, against a rack whose long title says
    the word: BM25 puts the shorter saucepan first, and so does the start. Its explanation names
    the level the word matched; read as one phrase, it named the whole path."""
    n = 30
    items = pd.DataFrame({
        "item_id": ["pan", "rack"] + [f"f{i}" for i in range(n)],
        "title": ["Saucepan", "Cookware Hanging Rack Hook Set For Walls"] + [f"lamp shade {i}" for i in range(n)],
        "product_type": ["Home & Garden > Kitchen & Dining > Cookware", "Home & Garden > Storage"]
                        + ["Home & Garden > Lighting"] * n})
    cat = Catalog.build(items)
    bm25 = BM25Ranker().fit(cat.texts).score("cookware")
    assert bm25[cat.idx("pan")] > bm25[cat.idx("rack")]
    rec = untrained_recommender(cat, NO_ROWS, TrainConfig(seed=0))
    top = rec.recommend("cookware", k=2).items
    assert [r.item_id for r in top] == ["pan", "rack"]
    assert "'cookware' matched product_type:cookware" in top[0].explanation.summary


def test_recsys_train_says_which_columns_are_category_paths(tmp_path, capsys):
    from cli.main import main

    items = tmp_path / "items.csv"
    _items([f"Home & Garden > Kitchen > {kind}" for kind in ("Cookware", "Cutlery", "Storage")] * 2).to_csv(
        items, index=False)
    assert main(["train", "--items", str(items), "--out", str(tmp_path / "a")]) == 0
    assert "product_type: category paths (A > B > C), each level a value of its own" in capsys.readouterr().err


def test_like_this_keeps_to_the_deepest_level_that_ten_other_items_share():
    """A path's levels are values of one key: like-this keeps to the item's deepest level that
    enough other items share (a shirt to shirts, not to all apparel), widening a level at a
    time where the deepest is too small (a polo of three to its topwear)."""
    paths = (["Apparel > Topwear > Shirts"] * 12 + ["Apparel > Topwear > Polos"] * 3
             + ["Apparel > Bottomwear > Jeans"] * 12)
    rec = untrained_recommender(Catalog.build(_items(paths)), NO_ROWS, TrainConfig(seed=0))
    asked, result = rec.similar("i0", k=40)
    assert asked.kept_to == {"product_type": ["shirts"]} and result.total == 11
    asked, result = rec.similar("i12", k=40)
    assert asked.kept_to == {"product_type": ["topwear"]} and result.total == 14


def test_like_this_keeps_to_a_wayfair_product_class_then_its_hierarchy_s_level():
    """Wayfair's catalogue names an item's kind in `product_class` and files it under a slash
    path: a class of a few items widens to the hierarchy's deepest level enough others share."""
    hierarchy = "Furniture / Living Room Furniture / Chairs & Seating / {}"
    classes = ["Accent Chairs"] * 12 + ["Recliners"] * 3 + ["Sofas"] * 8
    n = len(classes)
    items = pd.DataFrame({"item_id": [f"w{i}" for i in range(n)], "title": [f"seat {i}" for i in range(n)],
                          "product_class": classes, "category hierarchy": [hierarchy.format(c) for c in classes]})
    rec = untrained_recommender(Catalog.build(items), NO_ROWS, TrainConfig(seed=0))
    asked, result = rec.similar("w0", k=30)  # an accent chair: 11 others
    assert asked.kept_to == {"product_class": ["accent chairs"]} and result.total == 11
    asked, result = rec.similar("w12", k=30)  # a recliner: 2 others, so chairs & seating
    assert asked.kept_to == {"category hierarchy": ["chairs & seating"]} and result.total == 22
