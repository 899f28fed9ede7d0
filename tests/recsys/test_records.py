"""Products as JSON records (a search engine's index export: Algolia, Meilisearch, Typesense,
Elasticsearch) are read as the items CSV is (recsys/io/records.py)."""

from __future__ import annotations

import json

import pytest

from recsys.catalog import Catalog
from recsys.errors import DataError
from recsys.io.readers import check_header, read_items

ALGOLIA = [
    {"objectID": "p1", "name": "Crimson Wrap Dress", "description": "A red cotton wrap dress.", "brand": "Nordic",
     "categories": ["Dresses", "Sale"], "hierarchicalCategories": {"lvl0": "Women", "lvl1": "Women > Dresses"},
     "price": 89.5, "free_shipping": True, "_highlightResult": {"name": {"value": "<em>Crimson</em>"}}},
    {"objectID": "p2", "name": "Navy Linen Shirt", "description": "Relaxed navy shirt.", "brand": "Harbor",
     "categories": ["Shirts"], "hierarchicalCategories": {"lvl0": "Men", "lvl1": "Men > Shirts"},
     "price": 49, "free_shipping": False, "rating": None},
    {"objectID": "p3", "name": "Brown Suede Boots", "description": "Chelsea boots.", "brand": "Harbor",
     "categories": ["Boots"], "hierarchicalCategories": {"lvl0": "Men", "lvl1": "Men > Boots"}, "price": 129},
]


def test_an_algolia_export_is_a_row_a_record(tmp_path):
    path = tmp_path / "algolia-export.json"
    path.write_text(json.dumps(ALGOLIA, indent=2))
    items, report = read_items(path)
    assert report.renamed == {"objectID": "item_id", "name": "title"}
    assert items["item_id"].tolist() == ["p1", "p2", "p3"]
    dress = items.iloc[0]
    assert dress["categories"] == "Dresses|Sale" and dress["hierarchicalCategories.lvl1"] == "Women > Dresses"
    assert dress["price"] == "89.5" and dress["free_shipping"] == "yes" and items.iloc[1]["free_shipping"] == "no"
    assert not any(c.startswith("_") for c in items.columns) and "rating" not in items.columns  # null: no value
    cat = Catalog.build(items)
    assert "hierarchicalcategories.lvl1:dresses" in cat.attribute_labels(0)["other"]  # a path: its levels


def test_json_lines_and_an_elasticsearch_dump(tmp_path):
    typesense = tmp_path / "documents.jsonl"
    typesense.write_text('{"id": "a1", "title": "Oak Chair", "tags": ["oak", "chair"]}\n\n'
                         '{"id": "a2", "title": "Oak Table", "tags": ["oak"]}\n')
    items, _ = read_items(typesense)
    assert items[["item_id", "title", "tags"]].values.tolist() == [["a1", "Oak Chair", "oak|chair"],
                                                                   ["a2", "Oak Table", "oak"]]
    dump = tmp_path / "products.ndjson"
    dump.write_text("\n".join(json.dumps({"_index": "products", "_id": f"e{n}", "_score": 1.0,
                                          "_source": {"title": f"Lamp {n}", "colour": "red"}}) for n in (1, 2)))
    items, _ = read_items(dump)
    assert items[["item_id", "title", "colour"]].values.tolist() == [["e1", "Lamp 1", "red"], ["e2", "Lamp 2", "red"]]
    assert check_header(dump, "items").renamed == {"id": "item_id"}


@pytest.mark.parametrize("text, message, row", [
    ('[{"id": "a", "title": "Chair"}, {"id": "b", "title": }]', "not valid JSON", 1),
    ('{"id": "a", "title": "Chair"}\n{"id": "b" "title": "Table"}\n', "not a JSON object a line", 2),
    ('[{"id": "a", "title": "Chair"}, ["b", "Table"]]', "expected an object", 2),
    ("[]", "no records", None),
])
def test_records_that_cannot_be_read_say_where(tmp_path, text, message, row):
    path = tmp_path / "items.json"
    path.write_text(text)
    with pytest.raises(DataError, match=message) as e:
        read_items(path)
    assert e.value.row == row


def test_json_records_in_another_encoding_are_refused_with_the_fix(tmp_path):
    path = tmp_path / "items.json"
    path.write_bytes('[{"id": "a", "title": "Chäir"}]'.encode("utf-16"))
    with pytest.raises(DataError, match="looks like UTF-16 text; save it as UTF-8"):
        read_items(path)


def test_recsys_train_reads_records(tmp_path, capsys):
    from cli.main import main

    path = tmp_path / "algolia-export.json"
    path.write_text(json.dumps(ALGOLIA))
    assert main(["train", "--items", str(path), "--out", str(tmp_path / "a")]) == 0
    assert "algolia-export.json: objectID -> item_id, name -> title" in capsys.readouterr().err
