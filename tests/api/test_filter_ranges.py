"""Filters through POST /recommend (issue 28 item 5): a key by its column's own name or its
canonical (facet) name, any case and spelling of colour; numeric ranges on price-like columns,
checked against the items file the model was trained on."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from recsys.catalog import Catalog, NumberRange
from recsys.errors import InputError

QUERY = "dress"


@pytest.fixture(scope="module")
def items(data_dir) -> pd.DataFrame:
    return pd.read_csv(data_dir / "shop" / "items.csv", dtype=str, keep_default_na=False)


def _post(client, filters, offset=0):
    return client.post("/recommend", json={"query": QUERY, "k": 100, "offset": offset,
                                           "explain": False, "filters": filters})


def _ids(client, filters) -> set[str]:
    """Every item that passes `filters`, page by page."""
    got: list[str] = []
    while True:
        r = _post(client, filters, len(got))
        assert r.status_code == 200, r.text
        body = r.json()
        got += [i["item_id"] for i in body["items"]]
        if len(got) >= body["total"] or not body["items"]:
            assert len(got) == body["total"]
            return set(got)


def test_colour_and_color_are_one_key(client, items):
    red = set(items.loc[items["color"] == "red", "item_id"])
    assert red
    answers = [_ids(client, {key: ["red"]}) for key in ("color", "colour", "Colour", "COLOR")]
    assert all(a == answers[0] for a in answers)
    assert red <= answers[0]  # the column's red items, and those whose title says a red


@pytest.mark.parametrize("bounds", [{"min": 20, "max": 60}, {"min": 40.5}, {"max": 30}])
def test_a_price_range_returns_exactly_the_items_priced_in_it(client, items, rec, bounds):
    assert "price" in rec.catalog.buckets  # a bucketed column: ranges read its numbers
    price = items["price"].astype(float)
    inside = pd.Series(True, index=items.index)
    if "min" in bounds:
        inside &= price >= bounds["min"]
    if "max" in bounds:
        inside &= price <= bounds["max"]
    expected = set(items.loc[inside, "item_id"])
    assert 0 < len(expected) < len(items)
    assert _ids(client, {"Price": bounds}) == expected


def test_a_range_and_values_combine(client, items):
    price = items["price"].astype(float)
    expected = set(items.loc[(price >= 20) & (price <= 60) & (items["color"] == "red"), "item_id"])
    got = _ids(client, {"price": {"min": 20, "max": 60}, "colour": ["red"]})
    assert expected <= got
    assert all(20 <= float(items.set_index("item_id").loc[i, "price"]) <= 60 for i in got)


def test_a_rating_range(client, items):
    ratings = items["rating"].astype(float)
    expected = set(items.loc[(ratings >= 4.5) & (ratings <= 4.8), "item_id"])
    assert 0 < len(expected) < len(items)
    assert _ids(client, {"rating": {"min": 4.5, "max": 4.8}}) == expected


@pytest.mark.parametrize(("filters", "message"), [
    ({"color": {"min": 1}}, "filters: 'color' holds no numbers, so it takes values, not a range. "
                            "Numeric columns: price, rating"),
    ({"price": {"min": 60, "max": 20}}, "filters: 'price': a range's min (60) is above its max (20)"),
    ({"price": {}}, 'filters: \'price\': a range needs min, max or both, e.g. {"min": 20, "max": 60}'),
])
def test_a_range_that_cannot_be_used_is_a_422_saying_why(client, filters, message):
    r = _post(client, filters)
    assert r.status_code == 422
    assert r.json()["detail"] == message


def test_a_range_is_not_a_bare_number_nor_has_other_fields(client):
    for bounds in ({"min": "20"}, {"min": 20, "top": 60}, {"min": True}):
        r = _post(client, {"price": bounds})
        assert r.status_code == 422, (bounds, r.text)


def test_prices_survive_the_saved_version(rec, items):
    assert np.allclose(rec.catalog.numbers["price"], items["price"].astype(float))


def test_a_version_saved_before_ranges_names_its_buckets(rec):
    old = dataclasses.replace(rec.catalog, numbers={})
    with pytest.raises(InputError, match=r"filters: 'price' holds no numbers: this model keeps only "
                                         r"its buckets \(.*\); filter on those, or retrain for ranges"):
        old.range_mask("price", NumberRange(20, 60))


def test_a_value_selects_its_own_items_not_a_bucket_s_or_a_grade_s_that_reads_alike():
    """"<2", "5+" and "A+" are not 2, 5 and A: a filter on the number or letter leaves them out."""
    frame = pd.DataFrame({"item_id": [f"A{i}" for i in range(60)], "title": ["Boots"] * 60,
                          "grade": ["A", "A+", "B"] * 20, "rating": [f"{1 + i / 15:.2f}" for i in range(60)]})
    catalog = Catalog.build(frame)
    assert catalog.filter_mask({"grade": ["A"]}).tolist() == [i % 3 == 0 for i in range(60)]
    assert catalog.filter_mask({"grade": ["A+"]}).tolist() == [i % 3 == 1 for i in range(60)]
    labels = catalog.filter_values("rating")
    low = next(v for v in labels if v.startswith("<"))
    high = next(v for v in labels if v.endswith("+"))
    assert catalog.filter_columns("rating", low[1:]) == [] and catalog.filter_columns("rating", high[:-1]) == []
    assert catalog.filter_mask({"rating": [low]}).sum() > 0


def test_a_colour_column_answers_to_its_own_name_and_the_facet_name():
    frame = pd.DataFrame({"item_id": ["A1", "A2", "A3"], "title": ["Wrap dress", "Shirt", "Boots"],
                          "colour": ["red", "navy", "red"], "Base Colour": ["", "", "black"]})
    catalog = Catalog.build(frame)
    own = catalog.filter_mask({"colour": ["red"]})
    assert own.tolist() == [True, False, True]
    assert catalog.filter_mask({"Color": ["red"]}).tolist() == [True, False, True]
    assert catalog.filter_mask({"base_color": ["black"]}).tolist() == [False, False, True]
    assert catalog.filter_key("flavour") is None


def test_a_column_of_codes_takes_no_range_however_numeric_its_codes():
    frame = pd.DataFrame({"item_id": [f"A{i}" for i in range(6)], "title": ["Boots"] * 6,
                          "gtin": [str(4006381333931 + i % 3) for i in range(6)],
                          "size": [str(36 + i % 3) for i in range(6)]})
    catalog = Catalog.build(frame)
    assert catalog.range_keys() == {"size"}
    with pytest.raises(InputError, match=r"filters: 'gtin' is a column of codes, so it takes values, "
                                         r"not a range. Numeric columns: size"):
        catalog.range_mask("gtin", NumberRange(0, 1e13))
    assert catalog.filter_mask({"gtin": ["4006381333931"]}).tolist() == [i % 3 == 0 for i in range(6)]


def test_a_range_on_a_column_of_few_numbers_reads_its_values():
    # five distinct sizes: the column stays values (size:38), and a range reads them as numbers
    frame = pd.DataFrame({"item_id": [f"A{i}" for i in range(10)], "title": ["Boots"] * 10,
                          "size": [str(36 + i % 5) for i in range(10)]})
    catalog = Catalog.build(frame)
    assert "size" not in catalog.buckets
    assert catalog.range_mask("Size", NumberRange(37, 38.5)).tolist() == [i % 5 in (1, 2) for i in range(10)]
    assert catalog.range_keys() == {"size"}


def test_an_item_carries_its_numbers_as_its_file_says_them(client, items):
    """A shopper is shown an item's price, not its range (`price:37-56`, what filters and heads
    read): every shown item and `GET /items/{id}` carry the number column's number."""
    price = dict(zip(items["item_id"], items["price"].astype(float)))
    body = client.post("/recommend", json={"query": QUERY, "k": 20}).json()
    assert body["items"]
    for it in body["items"]:
        assert it["numbers"]["price"] == pytest.approx(price[it["item_id"]])
        assert any(label.startswith("price:") for labels in it["attributes"].values() for label in labels)
    first = body["items"][0]["item_id"]
    detail = client.get(f"/items/{first}").json()
    assert detail["numbers"]["price"] == pytest.approx(price[first])
