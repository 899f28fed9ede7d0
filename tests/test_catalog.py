"""Items to facet attribute tokens: the column rule, multi-values, pairs, numbers, titles, filters."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recsys.catalog import Catalog
from recsys.facets import facet_for_column


@pytest.mark.parametrize(("column", "facet"), [
    ("color", "color"), ("Colour", "color"), ("baseColour", "color"), ("style", "style"),
    ("quality", "quality"), ("grade", "quality"), ("rating", "quality"), ("brand", "other"),
    ("item_id", None), ("title", None), ("description", None),
])
def test_column_rule(column, facet):
    assert facet_for_column(column) == facet


def test_schema_overrides_the_rule():
    assert facet_for_column("usage", {"usage": "style"}) == "style"
    assert facet_for_column("year", {"year": "ignore"}) is None


def catalog() -> Catalog:
    items = pd.DataFrame({
        "item_id": ["a", "b", "c", "d"],
        "title": ["Acme Red Cotton Dress", "Borea Shirt", "Acme Boots", "Plain Hat"],
        "color": ["red", "blue|white", "black", ""],
        "style": ["casual", "formal", "casual", "vintage"],
        "material": ["cotton", "linen", "leather", "wool"],
        "attributes": ["fit:slim|sleeve:long", "", "heel colour:brown", "lonely"],
        "price": ["10", "25", "40", "55"] * 1,
        "description": ["a dress", "a shirt", "boots", "a hat"],
    })
    items = pd.concat([items] + [items.assign(item_id=items.item_id + str(i)) for i in range(3)])
    return Catalog.build(items.reset_index(drop=True))


def labels(cat: Catalog, item_id: str) -> dict[str, list[str]]:
    return cat.attribute_labels(cat.idx(item_id))


def test_columns_values_and_pairs_go_to_their_facets():
    cat = catalog()
    a, b, c = labels(cat, "a"), labels(cat, "b"), labels(cat, "c")
    assert a["color"] == ["red"] and b["color"] == ["blue", "white"]
    assert a["style"] == ["casual"]
    assert "material:cotton" in a["other"] and "fit:slim" in a["other"] and "sleeve:long" in a["other"]
    assert "brown" in c["color"]  # an attribute key with "colour" in its name feeds color


def test_title_words_feed_other_unless_they_repeat_an_attribute():
    a = labels(catalog(), "a")
    assert "title:acme" in a["other"] and "title:dress" in a["other"]
    assert "title:red" not in a["other"] and "title:cotton" not in a["other"]


def test_numbers_become_bucket_tokens():
    cat = catalog()
    prices = {lab for i in range(cat.n_items) for lab in cat.attribute_labels(i)["other"] if lab.startswith("price:")}
    assert 2 <= len(prices) <= 5
    assert all(any(ch.isdigit() for ch in p) for p in prices)


def test_filters_or_within_a_key_and_across_keys():
    cat = catalog()
    ids = lambda mask: sorted({cat.item_ids[i][0] for i in np.flatnonzero(mask)})  # noqa: E731
    assert ids(cat.filter_mask({"color": ["red", "black"]})) == ["a", "c"]
    assert ids(cat.filter_mask({"color": ["red", "black"], "style": ["casual"]})) == ["a", "c"]
    assert ids(cat.filter_mask({"color": ["red", "black"], "material": ["leather"]})) == ["c"]
    assert ids(cat.filter_mask({"color": ["purple"]})) == []


def test_unknown_item_names_the_id():
    from recsys.errors import UnknownItemError

    with pytest.raises(UnknownItemError, match="'nope'"):
        catalog().idx("nope")
