"""What `recsys train` tells a shop about how its export was read: the cells of a number column
that are words ("POA"), kept as values that no range selects; the columns left out as the
shop's own records (stock, cost, tax)."""

import json

import pandas as pd

from cli.main import main


def test_recsys_train_names_a_price_columns_words(tmp_path, capsys):
    items = tmp_path / "items.csv"
    pd.DataFrame({"item_id": [f"p{n}" for n in range(40)], "title": [f"garden lamp {n}" for n in range(40)],
                  "price": ["POA" if n % 8 == 0 else "Call for price" if n == 3 else f"{n * 5}.00"
                            for n in range(40)]}).to_csv(items, index=False)
    assert main(["train", "--items", str(items), "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert ("price: read as numbers (a range filter takes it); 6 cells are not numbers and stay words, which no "
            "range selects: 'POA' (5), 'Call for price' (1)") in err, err
    manifest = json.loads(next((tmp_path / "a").glob("v*/manifest.json")).read_text())
    assert manifest["data"]["items"]["number_words"] == {"price": {"POA": 5, "Call for price": 1}}


def test_recsys_train_names_the_columns_it_leaves_out_as_the_shops_records(tmp_path, capsys):
    items = tmp_path / "items.csv"
    pd.DataFrame({"item_id": [f"p{n}" for n in range(6)], "title": [f"garden lamp {n}" for n in range(6)],
                  "Cost per item": [str(n) for n in range(6)], "Tax class": ["parent"] * 6}).to_csv(items, index=False)
    assert main(["train", "--items", str(items), "--out", str(tmp_path / "a")]) == 0
    assert ("Cost per item, Tax class: the shop's own records (stock, cost, tax, shipping, SEO), not read as "
            "attributes (a schema's [columns] can map them)") in capsys.readouterr().err
