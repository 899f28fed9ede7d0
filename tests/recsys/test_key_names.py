"""A column's name as the items file writes it, kept beside its lower-cased key
(`Catalog.key_names`): labels say `articletype:tshirts`, a page says "Article type: tshirts"."""

from __future__ import annotations

import pandas as pd

from recsys.artifact import load_version, save_version
from recsys.catalog import Catalog
from training.config import TrainConfig
from training.start import untrained_recommender


def _items() -> pd.DataFrame:
    return pd.DataFrame({
        "item_id": ["A1", "A2", "A3"],
        "title": ["Crew neck tee", "Linen shirt", "Canvas tote"],
        "articleType": ["Tshirts", "Shirts", "Bags"],
        " baseColour ": ["Navy Blue", "White", "Black"],
        "usage": ["Casual", "Formal", "Casual"],
    })


def test_a_catalogue_keeps_its_columns_names_as_written_and_a_version_keeps_them(tmp_path):
    cat = Catalog.build(_items())
    assert "articletype:tshirts" in cat.attribute_labels(0)["other"]  # the key as labels say it
    # only where the two differ; item_id and title feed no facet as columns
    assert cat.key_names == {"articletype": "articleType", "basecolour": "baseColour"}
    none = pd.DataFrame({"query": [], "item_idx": [], "label": [], "weight": []})
    version = save_version(untrained_recommender(cat, none, TrainConfig()), tmp_path / "artifacts", {})
    assert load_version(version).catalog.key_names == cat.key_names


def test_values_are_kept_as_written_where_labels_fold_them_and_a_version_keeps_them(tmp_path):
    """A Spanish shop's brands were shown "núñez & hijos": each value a column writes otherwise
    than its label is kept as the file first writes it, and every shown item carries its own."""
    items = _items()
    items["brand"] = ["Núñez & Hijos", "acme", "Núñez & Hijos|Añil"]
    cat = Catalog.build(items)
    assert cat.value_names["brand:núñez & hijos"] == "Núñez & Hijos" and cat.value_names["brand:añil"] == "Añil"
    assert cat.value_names["articletype:tshirts"] == "Tshirts" and "brand:acme" not in cat.value_names
    assert not any(label.startswith("title:") for label in cat.value_names)  # the title says its words
    none = pd.DataFrame({"query": [], "item_idx": [], "label": [], "weight": []})
    rec = untrained_recommender(cat, none, TrainConfig())
    shown = {it.item_id: it.value_names for it in rec.recommend("tote", k=3).items}
    assert shown["A3"]["brand:añil"] == "Añil" and shown["A3"]["articletype:bags"] == "Bags"
    assert shown["A2"].get("brand:acme") is None
    version = save_version(rec, tmp_path / "artifacts", {})
    assert load_version(version).catalog.value_names == cat.value_names


def test_a_listing_names_its_values_as_written_and_filters_by_the_value():
    items = _items()
    items["brand"] = ["Núñez & Hijos", "acme", "Núñez & Hijos|Añil"]
    none = pd.DataFrame({"query": [], "item_idx": [], "label": [], "weight": []})
    rec = untrained_recommender(Catalog.build(items), none, TrainConfig())
    brand = next(f for f in rec.facet_counts("", ["brand"]).facets if f.key == "brand")
    assert brand.values == [{"value": "núñez & hijos", "count": 2, "name": "Núñez & Hijos"},
                            {"value": "acme", "count": 1, "name": "acme"},
                            {"value": "añil", "count": 1, "name": "Añil"}]
    assert rec.recommend("", k=3, filters={"brand": ["núñez & hijos"]}).total == 2
