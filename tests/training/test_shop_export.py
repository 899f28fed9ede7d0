"""A shop's own export trains in one command (issue 28 item 1): its column names are mapped to
the contracts (recsys/io/headers.py), [rename] settles the rest in every file, and interactions of
items no longer in the catalogue are skipped and counted."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from cli.main import main
from recsys.errors import DataError
from recsys.io.readers import InteractionStream, read_interactions, read_items, read_judgments
from tests.recsys.test_dataio import rename_hint
from training.train import TrainInputs, load_training_data

# a products export as shops write them: their own id, title and description columns
PRODUCTS = """product_id,product_title,Product Description,brand,colour
SKU-1001,Crimson Wrap Dress,"A red cotton wrap dress, knee length.",Nordic,red
SKU-1002,Navy Linen Shirt,Relaxed navy shirt in breathable linen.,Harbor,navy
SKU-1003,Black Leather Boots,Ankle boots in black leather with a low heel.,Nordic,black
SKU-1004,Red Summer Dress,"Light red dress in cotton, sleeveless.",Harbor,red
SKU-1005,White Linen Shirt,Crisp white shirt in pure linen.,Nordic,white
SKU-1006,Brown Suede Boots,Chelsea boots in brown suede.,Harbor,brown
"""
# its search log, with its own header and two items since discontinued (lines 4 and 9)
SEARCHES = """search_term,product_id,clicks
red dress,SKU-1001,3
red dress,SKU-1004,2
red dress,SKU-0999,1
red dress,SKU-1002,0
linen shirt,SKU-1002,4
linen shirt,SKU-1005,2
linen shirt,SKU-1003,0
leather boots,SKU-0998,2
leather boots,SKU-1003,5
suede boots,SKU-1006,3
white shirt,SKU-1005,2
navy shirt,SKU-1002,3
summer dress,SKU-1004,4
black boots,SKU-1003,2
"""


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def shop(tmp_path) -> tuple[Path, Path]:
    return _write(tmp_path, "products.csv", PRODUCTS), _write(tmp_path, "searches.csv", SEARCHES)


def test_a_shop_export_trains_with_one_command_and_says_how_it_read_the_columns(shop, tmp_path, capsys):
    products, searches = shop
    out = tmp_path / "art"
    code = main(["train", "--items", str(products), "--interactions", str(searches), "--out", str(out),
                 "--epochs", "1", "--json"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert ("products.csv: product_id -> item_id, product_title -> title, Product Description -> "
            "description\n") in err
    assert "searches.csv: search_term -> query, product_id -> item_id, clicks -> label (" in err
    unknown = [line for line in err.splitlines() if "not in the items file" in line]
    assert unknown == [
        "searches.csv: skipped 2 rows whose item_id is not in the items file: lines 4, 9 (first: "
        "line 4: 'red dress', 'SKU-0999'; line 9: 'leather boots', 'SKU-0998'); --unknown-items "
        "error stops at them instead"]
    version = next(p for p in out.iterdir() if p.name.startswith("v"))
    data = json.loads((version / "manifest.json").read_text())["data"]
    assert data["interactions"]["unknown_items"] == 2 and data["interactions"]["rows"] == 12
    assert data["items"]["columns"] == {"product_id": "item_id", "product_title": "title",
                                        "Product Description": "description"}
    # the README's "Your own catalogue" shows these files and this output
    blocks = _readme_blocks("Your own catalogue")
    assert PRODUCTS.startswith(blocks[0]) and SEARCHES.startswith(blocks[1])
    assert blocks[2].strip() == "recsys train --items products.csv --interactions searches.csv"
    assert set(blocks[3].splitlines()) <= set(err.splitlines())


def _readme_blocks(section: str) -> list[str]:
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    text = readme.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [re.sub(r"^\.venv/bin/", "", block) for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S)]


def test_unknown_items_are_an_error_with_the_option(shop, tmp_path, capsys):
    products, searches = shop
    code = main(["train", "--items", str(products), "--interactions", str(searches),
                 "--out", str(tmp_path / "art"), "--unknown-items", "error"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == (f"error: {searches}, row 4, column 'item_id': expected an item_id from the items "
                   "file, found 'SKU-0999'; 1 more row has unknown item_ids (2 distinct)\n")
    assert not (tmp_path / "art").exists()


def test_unknown_items_are_counted_the_same_streamed_or_whole(shop):
    products, searches = shop
    ids = set(read_items(products)[0]["item_id"])
    whole, report = read_interactions(searches, ids)
    stream = InteractionStream(searches, ids, chunk_rows=3)
    streamed = pd.concat(list(stream), ignore_index=True)
    pd.testing.assert_frame_equal(streamed, whole)
    assert stream.report == report
    assert report.unknown_items == 2 and report.skipped_lines == [4, 9]
    assert report.notices == [w for w in report.warnings if "not in the items file" in w]


def test_a_log_of_only_unknown_items_says_so(tmp_path):
    items = _write(tmp_path, "items.csv", "item_id,title\nA1,Red dress\n")
    log = _write(tmp_path, "log.csv", "query,item_id,label\nred,Z1,1\nred,Z2,1\n")
    with pytest.raises(DataError, match=r"none of the rows names an item_id of the items file \(2 "
                                        r"rows with unknown items, first: line 2: 'Z1'; line 3: 'Z2'\)"):
        load_training_data(TrainInputs(items, log))


@pytest.mark.parametrize(("header", "expected"), [
    # the message lists the columns found and the exact [rename] lines to add
    ("pid,headline,text",
     "row 1: missing required columns 'item_id', 'title'; found columns: 'pid', 'headline', 'text'"
     + rename_hint('pid = "item_id"', 'headline = "title"')),
    # two candidates for one column: both named, and the line that settles it
    ("sku,product_id,name",
     "row 1: 'sku', 'product_id' could each be 'item_id'; say which in a schema file (--schema "
     'FILE.toml), e.g. its [rename] table in one line, at the top: rename = {sku = "item_id"}'),
])
def test_a_header_that_cannot_be_mapped_says_which_rename_lines_to_add(tmp_path, capsys, header,
                                                                       expected):
    items = _write(tmp_path, "items.csv", header + "\nA1,Red dress,x\n")
    log = _write(tmp_path, "log.csv", "query,item_id,label\nred,A1,1\n")
    args = ["train", "--items", str(items), "--interactions", str(log), "--out", str(tmp_path / "art"),
            "--epochs", "1"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err == f"error: {items}, {expected}\n"
    assert not (tmp_path / "art").exists()
    # the line, pasted as it is into a schema file, is what the file needed
    schema = _write(tmp_path, "schema.toml", err.split("at the top: ", 1)[1])
    assert main([*args, "--schema", str(schema)]) == 0, capsys.readouterr().err


def test_an_interactions_header_that_cannot_be_mapped_names_that_file(shop, tmp_path, capsys):
    products, _ = shop
    log = _write(tmp_path, "log.csv", "suchfeld,product_id,treffer\nred dress,SKU-1001,2\n")
    code = main(["train", "--items", str(products), "--interactions", str(log), "--out",
                 str(tmp_path / "art")])
    assert code == 2
    assert capsys.readouterr().err == (
        f"error: {log}, row 1: missing required columns 'query', 'label' (or 'event' to derive it: "
        "impression, click, cart, purchase); found columns: 'suchfeld', 'product_id', 'treffer'"
        + rename_hint('suchfeld = "query"', 'treffer = "label"') + "\n")


@pytest.mark.parametrize(("header", "mapped"), [
    ("search_term,product_id,clicks", {"search_term": "query", "product_id": "item_id",
                                       "clicks": "label"}),
    ("Keyword,SKU,Purchases", {"Keyword": "query", "SKU": "item_id", "Purchases": "label"}),
    ("query,id,relevance", {"id": "item_id", "relevance": "label"}),
    ("Search Query,Product ID,Event Type,Customer ID",
     {"Search Query": "query", "Product ID": "item_id", "Event Type": "event",
      "Customer ID": "user_id"}),
    ("query,item_id,label,clicks", {}),  # the contract's own names win; the others are ignored
    # a Spanish, a Dutch and a German shop's own names, accents and all
    ("término de búsqueda,referencia,clics", {"término de búsqueda": "query", "referencia": "item_id",
                                            "clics": "label"}),
    ("zoekterm,artikelnummer,aantal kliks", {"zoekterm": "query", "artikelnummer": "item_id",
                                             "aantal kliks": "label"}),
    ("Suchbegriff,Artikelnummer,Käufe,Datum", {"Suchbegriff": "query", "Artikelnummer": "item_id",
                                               "Käufe": "label", "Datum": "timestamp"}),
])
def test_export_names_map_to_the_interactions_contract(tmp_path, header, mapped):
    values = {"query": "red dress", "item_id": "A1", "label": "1", "event": "click", "user_id": "u1"}
    renamed = {c: mapped.get(c, c) for c in header.split(",")}
    row = ",".join(values.get(renamed[c], "2") for c in header.split(","))
    path = _write(tmp_path, "log.csv", f"{header}\n{row}\n")
    rows, report = read_interactions(path, {"A1"})
    assert report.renamed == mapped
    assert rows[["query", "item_id", "label"]].to_dict("records") == [
        {"query": "red dress", "item_id": "A1", "label": 1.0}]


@pytest.mark.parametrize(("header", "mapped"), [
    ("Item ID,Title", {"Item ID": "item_id", "Title": "title"}),  # case and separators ignored
    ("PRODUCT-ID,productTitle,DESC", {"PRODUCT-ID": "item_id", "productTitle": "title",
                                      "DESC": "description"}),
    ("item_id,title,product_id,name", {}),  # the contract's own names win; the others stay facets
    ("id,sku,name", {"sku": "item_id", "name": "title"}),  # a bare id yields to a specific name
    ("id,name,description", {"id": "item_id", "name": "title"}),
    ("Product Title,product_id,Product Description", {"Product Title": "title", "product_id": "item_id",
                                                      "Product Description": "description"}),
    ("referencia,nombre,descripción,categoría", {"referencia": "item_id", "nombre": "title",
                                                "descripción": "description"}),
    ("artikelnummer;naam;omschrijving;kleur", {"artikelnummer": "item_id", "naam": "title",
                                              "omschrijving": "description"}),
    ("Artikelnummer,Produktname,Beschreibung,Farbe", {"Artikelnummer": "item_id", "Produktname": "title",
                                                     "Beschreibung": "description"}),
    ("Référence produit,Nom du produit,Description", {"Référence produit": "item_id",
                                                      "Nom du produit": "title", "Description": "description"}),
])
def test_export_names_map_to_the_items_contract(tmp_path, header, mapped):
    sep = ";" if ";" in header else ","
    path = _write(tmp_path, "items.csv", header + "\n" + sep.join(f"v{i}" for i in range(header.count(sep) + 1)) + "\n")
    items, report = read_items(path)
    assert report.renamed == mapped
    assert {"item_id", "title"} <= set(items.columns)


def test_an_explicit_rename_wins_over_the_automatic_mapping(tmp_path):
    path = _write(tmp_path, "items.csv", "sku,product_id,product_title\nS1,P1,Red dress\n")
    items, report = read_items(path, rename={"product_id": "item_id"})
    assert items.loc[0, "item_id"] == "P1" and items.loc[0, "sku"] == "S1"
    assert report.renamed == {"product_id": "item_id", "product_title": "title"}


@pytest.mark.parametrize(("content", "kept"), [
    # WooCommerce: the SKU is the id, and a shopper types it
    ("ID,SKU,Name\n7,WC-PDO-000,Pebble dutch oven\n8,WC-SKL-001,Iron skillet\n", "SKU"),
    ("ASIN,Title\nWC-PDO-000,Pebble dutch oven\nWC-SKL-001,Iron skillet\n", "ASIN"),
    # a Spanish shop's reference, and a German one's
    ("referencia,nombre\nWC-PDO-000,Olla de hierro\nWC-SKL-001,Sartén\n", "referencia"),
    ("Artikelnummer,Produktname\nWC-PDO-000,Bräter\nWC-SKL-001,Pfanne\n", "Artikelnummer"),
    # a database's id is no attribute
    ("id,name\nWC-PDO-000,Pebble dutch oven\nWC-SKL-001,Iron skillet\n", None),
    ("product_id,title\nWC-PDO-000,Pebble dutch oven\nWC-SKL-001,Iron skillet\n", None),
])
def test_an_id_read_from_a_code_shoppers_type_stays_searchable(tmp_path, content, kept):
    from recsys.catalog import Catalog
    from training.fit import TrainConfig
    from training.start import untrained_recommender

    items, _ = read_items(_write(tmp_path, "items.csv", content))
    copies = [c for c in items.columns if c not in ("item_id", "title", "ID")]
    assert copies == ([kept] if kept else [])
    none = pd.DataFrame({"query": [], "item_idx": [], "label": [], "weight": []})
    rec = untrained_recommender(Catalog.build(items), none, TrainConfig())
    found = rec.recommend("WC-PDO-000", k=1)
    assert (found.unmatched_tokens == []) == bool(kept)
    if kept:
        assert items[kept].tolist() == items["item_id"].tolist() and found.items[0].item_id == "WC-PDO-000"


def test_an_export_whose_id_column_is_optional_names_the_ways_on(tmp_path):
    """An Etsy listings download's SKU is the only id, empty where the seller set none."""
    path = _write(tmp_path, "EtsyListingsDownload.csv", "TITLE,DESCRIPTION,SKU\nMoon necklace,Silver.,\n"
                  "Sun ring,Gold.,ETSY001\n")
    with pytest.raises(DataError, match="fill the 'SKU' column in, leave such rows out with --on-bad-lines skip"):
        read_items(path)
    items, _ = read_items(path, on_bad_lines="skip")
    assert items["item_id"].tolist() == ["ETSY001"]


def test_rename_applies_to_every_file(tmp_path):
    # names no export list knows: the schema's [rename] maps them in the items, interactions and
    # judgments files alike (one entry, `artikelnr`, serves all three)
    items = _write(tmp_path, "artikel.csv", "artikelnr,bezeichnung\nA1,Rotes Kleid\nA2,Blaues Hemd\n")
    log = _write(tmp_path, "suchen.csv", "suchbegriff,artikelnr,klicks\nrotes kleid,A1,2\nhemd,A2,1\n")
    judged = _write(tmp_path, "urteile.csv", "suchbegriff,artikelnr,note\nhemd,A2,2\n")
    schema = _write(tmp_path, "schema.toml", '[rename]\nartikelnr = "item_id"\nbezeichnung = "title"\n'
                                             'suchbegriff = "query"\nklicks = "label"\nnote = "grade"\n')
    catalog, rows, data = load_training_data(TrainInputs(items, log, schema=schema))
    assert catalog.item_ids == ["A1", "A2"]
    assert sorted(rows["query"]) == ["hemd", "rotes kleid"] and sorted(rows["label"]) == [1.0, 2.0]
    assert data["interactions"]["columns"] == {"suchbegriff": "query", "artikelnr": "item_id",
                                               "klicks": "label"}
    grades, _ = read_judgments(judged, {"A1", "A2"}, rename=data["schema"]["rename"])
    assert grades.to_dict("records") == [{"query": "hemd", "item_id": "A2", "grade": 2.0}]


def test_a_relevance_scale_that_starts_at_one_is_pointed_out(tmp_path):
    # Home Depot's raw train.csv: a row id, the product's id and title, the term, a 1-3 relevance
    log = _write(tmp_path, "train.csv", "id,product_uid,product_title,search_term,relevance\n"
                                        "2,100001,Angle,angle bracket,3\n3,100001,Angle,l bracket,1\n")
    rows, report = read_interactions(log, {"100001"})
    assert report.renamed == {"product_uid": "item_id", "search_term": "query", "relevance": "label"}
    assert rows["label"].tolist() == [3.0, 1.0]  # taken as is, and said so
    assert report.notices == ["every label (from 'relevance') is 1 or more, so every row counts as "
                              "chosen; if 1 means not relevant, subtract it in the file so that not "
                              "relevant is 0", "ignored columns: id, product_title"]


def test_a_catalogue_with_no_search_log_trains_from_its_items_alone(shop, tmp_path, capsys):
    """`recsys train --items` alone writes the untrained start (which ranks as BM25 does) and
    reports it on known-item searches drawn from the items' own words."""
    from recsys.artifact import current_version, load_version
    from recsys.catalog import Catalog
    from training.fit import TrainConfig
    from training.start import untrained_recommender

    products, _ = shop
    out = tmp_path / "art"
    code = main(["train", "--items", str(products), "--out", str(out), "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)
    assert report["activated"], report["decision"]  # nothing was served
    assert "searches drawn from the items' own words" in report["summary"], report["summary"]
    known = report["metrics"]["known_item"]
    assert known["model"]["queries"] > 0 and "bm25" in known
    assert report["metrics"]["faithfulness"]["queries"] > 0  # judged on the known-item searches
    served = load_version(out / current_version(out))
    items, _ = read_items(products)
    start = untrained_recommender(Catalog.build(items), pd.DataFrame(
        {"query": [], "item_idx": [], "label": [], "weight": []}), TrainConfig())
    for query in ("red dress", "linen shirt", "boots", "nordic"):
        assert list(served.top_indices(query, 6)) == list(start.top_indices(query, 6)), query
    assert served.top_indices("crimson", 1)[0] == 0  # SKU-1001, the only crimson item

    # a second run on the same catalogue has no searches to compare with the served version on
    assert main(["train", "--items", str(products), "--out", str(out), "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert not second["activated"]
    assert "no searches were held out" in second["decision"]


def test_a_search_log_with_no_positive_row_is_refused_with_the_way_out(shop, tmp_path):
    products, _ = shop
    log = _write(tmp_path, "zero.csv", "query,item_id,label\nred dress,SKU-1001,0\n")
    with pytest.raises(DataError) as err:
        load_training_data(TrainInputs(products, log))
    assert "leave --interactions out" in str(err.value)
