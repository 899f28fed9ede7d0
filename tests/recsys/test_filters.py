"""Filter values are read as query words are (case, stems), and a value that selects nothing is
a clear error naming the value the model would match it to and the values that exist. Planted
catalogue: red/blue/green/black x casual/formal x dress/shirt/shoes; "scarlet" means red."""

from __future__ import annotations

import numpy as np
import pytest

from recsys.errors import InputError


def test_a_value_matches_as_a_query_word_would(planted_model):
    catalog = planted_model.catalog
    red = catalog.filter_mask({"color": ["red"]})
    assert red.sum() > 0
    for same in (["RED"], [" Red "], ["reds"]):
        assert np.array_equal(catalog.filter_mask({"color": same}), red), same
    res = planted_model.recommend("gown", k=50, filters={"color": ["Reds"]})
    assert res.total == int(red.sum())
    assert all(item.attributes["color"] == ["red"] for item in res.items)


def test_a_synonym_is_refused_with_the_value_it_means(planted_model):
    with pytest.raises(InputError) as err:
        planted_model.recommend("gown", filters={"color": ["scarlet"]})
    message = str(err.value)
    assert message.startswith("filters: 'color' has no value 'scarlet'; did you mean 'red'?")
    assert "Its values: black, blue, green, red" in message


def test_a_value_nothing_resembles_lists_the_values(planted_model):
    with pytest.raises(InputError) as err:
        planted_model.recommend("gown", filters={"style": ["qqqq"]})
    assert str(err.value) == "filters: 'style' has no value 'qqqq'. Its values: casual, formal"


def test_a_facet_no_item_has_a_value_of_says_so():
    import pandas as pd

    from recsys.catalog import Catalog
    from training.fit import TrainConfig
    from training.start import untrained_recommender

    rows = pd.DataFrame({"query": pd.Series([], dtype=object), "item_idx": pd.Series([], dtype="int64"),
                         "label": pd.Series([], dtype="float32"), "weight": pd.Series([], dtype="float32")})
    frame = pd.DataFrame({"item_id": ["a", "b"], "title": ["Teekanne", "Tasse"]})  # no colour anywhere
    rec = untrained_recommender(Catalog.build(frame), rows, TrainConfig(seed=0))
    with pytest.raises(InputError) as err:
        rec.recommend("tasse", filters={"color": ["rot"]})
    assert str(err.value) == "filters: 'color' has no value 'rot': no item has any value of it"


def test_a_misspelt_value_gets_the_nearest_spelling(planted_model):
    with pytest.raises(InputError, match="did you mean 'formal'"):
        planted_model.recommend("gown", filters={"style": ["fromal"]})


def test_an_items_own_filter_attributes_are_the_keys_attributes_it_has():
    """`Catalog.item_filter_attributes` reads the item's own row; it must select what
    `filter_attributes` does: facet names, columns and spec-list keys, any spelling."""
    import pandas as pd

    from recsys.catalog import Catalog

    items = pd.DataFrame([
        {"item_id": "A", "title": "red linen shirt", "colour": "red", "Product Type": "shirt",
         "attributes": "fabric:linen|fit:slim"},
        {"item_id": "B", "title": "blue shoes", "colour": "navy blue", "Product Type": "shoes",
         "attributes": "fit:wide"},
        {"item_id": "C", "title": "plain thing", "colour": "", "Product Type": "", "attributes": ""},
    ])
    catalog = Catalog.build(items)
    for key in sorted(catalog.filter_keys()) + ["COLOR", "product_type", "Fit"]:
        for i in range(catalog.n_items):
            want = {(f, a) for f, a in catalog.filter_attributes(key) if catalog.item_attrs[f][i, a] > 0}
            assert set(catalog.item_filter_attributes(i, key)) == want, (key, i)
    assert catalog.item_filter_values(0, "fit") == ["slim"] and catalog.item_filter_values(2, "colour") == []
    assert catalog.item_filter_values(1, "Colour") == ["navy blue"]


def test_a_number_asked_of_a_number_column_is_told_the_range_form():
    """`{"year": ["2001"]}` was offered "did you mean '<2000'?", a range that leaves 2001 out."""
    import pandas as pd

    from recsys.catalog import Catalog
    from training.fit import TrainConfig
    from training.start import untrained_recommender

    rows = [{"item_id": f"B{i}", "title": f"Book {i}", "year": str(1990 + i % 30), "price": f"{5 + i % 40}.99"}
            for i in range(100)]
    rec = untrained_recommender(Catalog.build(pd.DataFrame(rows)),
                                pd.DataFrame({"query": [], "item_idx": [], "label": [], "weight": []}),
                                TrainConfig(seed=0))
    with pytest.raises(InputError) as err:
        rec.recommend("book", k=1, filters={"year": ["2001"]})
    assert str(err.value) == ('filters: \'year\' holds numbers: filter a number as a range, {"year": {"min": 2001, '
                              '"max": 2001}}; its values are ranges: 2000+, <2000')
    with pytest.raises(InputError) as err:
        rec.recommend("book", k=1, filters={"Price": ["11.99"]})
    assert '{"Price": {"min": 11.99, "max": 11.99}}' in str(err.value) and "did you mean" not in str(err.value)
