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
