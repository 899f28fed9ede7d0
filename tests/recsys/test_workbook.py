"""An Excel workbook (.xlsx) is read as the items table a CSV file gives (recsys/io/workbook.py):
a shop's product list is often a spreadsheet."""

from __future__ import annotations

import datetime as dt
import json
import zipfile

import openpyxl
import pytest

from recsys.errors import DataError
from recsys.io import workbook
from recsys.io.readers import check_header, read_items


def _save(path, rows, blank_sheet_first=False):
    book = openpyxl.Workbook()
    sheet = book.active
    if blank_sheet_first:  # a workbook whose first sheet is empty: the first that holds rows is read
        sheet = book.create_sheet("Products")
    for row in rows:
        sheet.append(row)
    book.save(path)
    return path


def test_a_product_sheet_is_an_items_file(tmp_path):
    path = _save(tmp_path / "products.xlsx", [
        (None, None, None, None, None),  # a blank first row: the header is the first that holds any
        ("SKU", "Product Name", "Colour", "Price", "In stock", "Added"),
        (100001.0, "Crimson Wrap Dress", "red", 49.99, True, dt.datetime(2026, 3, 1)),
        (100002, "Navy Linen Shirt", "navy", 52, False, dt.date(2026, 4, 2)),
        (None, None, None, None, None, None),
        ("A-3", "Oak Side Table", None, 120.5, None, None),
    ], blank_sheet_first=True)
    items, report = read_items(path)
    assert items["item_id"].tolist() == ["100001", "100002", "A-3"]  # 100001.0 as Excel keeps it: digits
    assert items["title"].tolist() == ["Crimson Wrap Dress", "Navy Linen Shirt", "Oak Side Table"]
    assert items["Price"].tolist() == ["49.99", "52", "120.5"]
    assert items["In stock"].tolist() == ["yes", "no", ""] and items["Added"].tolist() == [
        "2026-03-01", "2026-04-02", ""]
    assert report.renamed == {"SKU": "item_id", "Product Name": "title"}
    assert check_header(path, "items").renamed == {"SKU": "item_id", "Product Name": "title"}


def test_a_sheet_s_rows_are_checked_and_named_by_the_sheet_s_numbers(tmp_path):
    path = _save(tmp_path / "products.xlsx", [("item_id", "title"), ("A1", "Shirt"), ("A2", None)])
    with pytest.raises(DataError, match="row 3, column 'title': expected a non-empty title"):
        read_items(path)
    path = _save(tmp_path / "wide.xlsx", [("item_id", "title"), ("A1", "Shirt", "stray")])
    with pytest.raises(DataError, match="field 3 has no name in the header but holds values"):
        read_items(path)


def test_a_damaged_or_oversized_workbook_is_refused_with_the_fix(tmp_path, monkeypatch):
    damaged = tmp_path / "damaged.xlsx"
    with zipfile.ZipFile(damaged, "w") as archive:
        archive.writestr("xl/workbook.xml", "<workbook><sheets>")
    with pytest.raises(DataError, match=r"cannot read the workbook .*export it as CSV"):
        read_items(damaged)
    path = _save(tmp_path / "products.xlsx", [("item_id", "title"), ("A1", "Shirt")])
    monkeypatch.setattr(workbook, "MAX_UNPACKED_BYTES", 1000)
    with pytest.raises(DataError, match=r"unpacks to .* bytes, more than 1,000: export it as CSV"):
        read_items(path)


def test_a_zip_that_is_no_workbook_is_still_told_to_be_csv(tmp_path):
    path = tmp_path / "items.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("items.csv", "item_id,title\nA1,Shirt\n")
    with pytest.raises(DataError, match="looks like a zip archive"):
        read_items(path)


def test_recsys_train_takes_a_workbook(tmp_path, capsys):
    from cli.main import main

    path = _save(tmp_path / "products.xlsx", [("item_id", "title", "color")]
                 + [(f"P{n}", f"{c} {kind}", c) for n, (c, kind) in enumerate(
                     [("red", "dress"), ("navy", "shirt"), ("green", "lamp")] * 4)])
    assert main(["train", "--items", str(path), "--out", str(tmp_path / "a")]) == 0
    assert main(["recommend", "--model", str(tmp_path / "a"), "red dress", "--k", "1"]) == 0
    assert "red dress" in capsys.readouterr().out.lower()


def test_a_search_report_and_judgments_as_workbooks(tmp_path, capsys):
    """An analytics tool's search report and a judgment list saved from a spreadsheet are read
    as their CSV files would be: the export's names mapped, counts typed as numbers read as
    numbers, the train command taking all three as workbooks."""
    from cli.main import main
    from recsys.io.readers import read_interactions, read_judgments

    items = _save(tmp_path / "products.xlsx", [("SKU", "Product Name", "Colour")] + [
        (100001 + n, f"{c} {kind}", c) for n, (c, kind) in enumerate(
            [("red", "dress"), ("navy", "shirt"), ("green", "lamp")] * 4)])
    log = _save(tmp_path / "search report.xlsx", [
        ("Search Term", "SKU", "Clicks"),
        ("crimson dress", 100001.0, 3.0),  # Excel keeps the SKU as a float and the clicks too
        ("crimson dress", 100004, 2),
        ("navy top", 100002, 1.5),
    ])
    frame, report = read_interactions(log, {str(100001 + n) for n in range(12)})
    assert frame["query"].tolist() == ["crimson dress", "crimson dress", "navy top"]
    assert frame["item_id"].tolist() == ["100001", "100004", "100002"]
    assert frame["label"].tolist() == [3.0, 2.0, 1.5]
    assert report.renamed == {"Search Term": "query", "SKU": "item_id", "Clicks": "label"}
    assert check_header(log, "interactions").renamed == report.renamed
    judged = _save(tmp_path / "judged.xlsx", [("query", "item_id", "relevance"), ("red dress", 100001, 3),
                                              ("red dress", 100002, 0)])
    grades, _ = read_judgments(judged, {"100001", "100002"})
    assert grades["item_id"].tolist() == ["100001", "100002"] and grades["grade"].tolist() == [3.0, 0.0]
    with pytest.raises(DataError, match="item_id"):  # checked as a CSV's rows are
        read_judgments(_save(tmp_path / "bad.xlsx", [("query", "item_id", "grade"), ("red", "X9", 1)]),
                       {"100001"})

    out = tmp_path / "version"
    assert main(["train", "--items", str(items), "--interactions", str(log), "--judgments", str(judged),
                 "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["recommend", "--model", str(out), "crimson dress", "--k", "2", "--json"]) == 0
    top = json.loads(capsys.readouterr().out)["items"]
    assert {it["item_id"] for it in top} == {"100001", "100004"}  # the red dresses, by the clicks alone
