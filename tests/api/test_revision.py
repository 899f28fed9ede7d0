"""Catalogue revisions' item changes (api/revision.py) and items given as records
(recsys.io.readers.items_from_records), on planted rows."""

from __future__ import annotations

import pandas as pd
import pytest

from api.revision import remove, upsert, write_catalogue
from recsys.errors import DataError, InputError, UnknownItemError
from recsys.io.readers import items_from_records

BASE = pd.DataFrame({"item_id": ["a", "b", "c"], "title": ["A", "B", "C"], "color": ["red", "blue", ""]})


def test_upsert_replaces_whole_rows_in_place_and_appends_new_ones():
    items = items_from_records([{"item_id": "b", "title": "B2", "material": "wool"},
                                {"item_id": "d", "title": "D", "color": ["red", "navy"], "price": 9.5}])
    merged, change = upsert(BASE, items)
    assert merged["item_id"].tolist() == ["a", "b", "c", "d"]
    assert merged.loc[1].tolist() == ["b", "B2", "", "wool", ""]  # b's colour is gone with its row
    assert merged.loc[3].tolist() == ["d", "D", "red|navy", "", "9.5"]
    assert merged.loc[0].tolist() == ["a", "A", "red", "", ""]
    assert (change.added, change.replaced, change.removed) == (["d"], ["b"], [])
    assert change.summary() == "1 added, 1 replaced"


def test_remove_names_an_unknown_item_and_keeps_one_at_least():
    kept, change = remove(BASE, ["b"])
    assert kept["item_id"].tolist() == ["a", "c"] and change.removed == ["b"]
    with pytest.raises(UnknownItemError, match="'z'"):
        remove(BASE, ["z"])
    with pytest.raises(InputError, match="at least one"):
        remove(BASE.iloc[:1], ["a"])


@pytest.mark.parametrize(("records", "row", "column"), [
    ([{"item_id": "a", "title": "A"}, {"item_id": " ", "title": "B"}], 1, "item_id"),
    ([{"item_id": "a", "title": "A"}, {"item_id": "a", "title": "B"}], 1, "item_id"),
    ([{"item_id": "a", "title": "A"}, {"item_id": "b"}], 1, "title"),
    ([{"item_id": "a", "title": "A", "color": True}], 0, "color"),
    ([{"item_id": "a", "title": "A", "price": float("nan")}], 0, "price"),
    ([{"item_id": "a", "title": "A", "style": ["casual", 3]}], 0, "style"),
])
def test_records_are_checked_as_the_items_file_is(records, row, column):
    with pytest.raises(DataError) as info:
        items_from_records(records)
    assert (info.value.row, info.value.column) == (row, column), str(info.value)


def test_a_catalogue_file_is_named_by_its_content(tmp_path):
    first = write_catalogue(BASE, tmp_path)
    assert write_catalogue(BASE.copy(), tmp_path) == first
    assert write_catalogue(BASE.iloc[:2], tmp_path) != first
    assert pd.read_csv(first, dtype=str, keep_default_na=False).equals(BASE)
