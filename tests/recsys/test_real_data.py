"""The two real catalogues in ../shared/data (never copied here), and the scripts that use them.

Every test on the real files skips cleanly when they are absent; the scripts are also run on
small files of our own so they are checked everywhere.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from recsys.catalog import Catalog
from recsys.errors import DataError
from recsys.io.readers import read_interactions, read_items
from recsys.io.schema import Schema

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT.parent / "shared" / "data"
STYLES = REAL / "fashion" / "styles.csv"
HOMEDEPOT = REAL / "homedepot"
FASHION_SCHEMA = ROOT / "data" / "fashion_schema.toml"
SAMPLES = ROOT / "data" / "samples"

sys.path.insert(0, str(ROOT / "benchmarks"))
import fashion_import  # noqa: E402
import homedepot_eval  # noqa: E402

needs_fashion = pytest.mark.skipif(not STYLES.is_file(), reason="real fashion catalogue not present")
needs_homedepot = pytest.mark.skipif(not (HOMEDEPOT / "items.csv").is_file(),
                                     reason="real Home Depot data not present")
BAD_LINES = [6044, 6569, 7399, 7939, 9026, 10264, 10427, 10905, 11373, 11945, 14112, 14532, 15076,
             29906, 31625, 33020, 35748, 35962, 37770, 38105, 38275, 38404]


# --- fashion: the schema, the 22 broken lines, facets ---------------------------------------------


@pytest.fixture(scope="module")
def fashion_report() -> dict:
    return fashion_import.import_report(STYLES, FASHION_SCHEMA, on_bad_lines="skip")


@needs_fashion
def test_fashion_default_import_stops_at_line_6044() -> None:
    with pytest.raises(DataError) as caught:
        read_items(STYLES, schema=Schema.load(FASHION_SCHEMA))
    assert (caught.value.file, caught.value.row) == (str(STYLES), 6044)
    assert "expected 10 fields, found 11; 21 more lines have the wrong number of fields" in str(caught.value)
    assert "--on-bad-lines skip" in str(caught.value)


@needs_fashion
def test_fashion_skip_reports_every_line(fashion_report: dict) -> None:
    r = fashion_report
    assert r["skipped_lines"] == BAD_LINES
    assert r["rows"] == r["items"] == 44_424  # 44,446 products - 22 lines
    assert "renamed columns: id -> item_id, productDisplayName -> title" in r["warnings"]
    assert "331 cells holding 'NA' taken as empty (baseColour 15, usage 316)" in r["warnings"]


@needs_fashion
def test_fashion_facets_from_columns_and_titles(fashion_report: dict) -> None:
    f = fashion_report["facets"]
    assert f["color"]["coverage"] > 0.999 and f["style"]["coverage"] > 0.99
    assert f["color"]["items_with_a_value_from_text"] > 0  # NA colours read from the title
    labels = {v for v, _ in f["other"]["top_values"]}
    assert "gender:men" in labels and "mastercategory:apparel" in labels
    assert not any(v.startswith("year:") for v, _ in f["other"]["top_values"])
    kinds = fashion_report["items_with_a_value_of_kind_from_text"]
    assert kinds["pattern"] > 1000 and kinds["material"] > 1000


@needs_fashion
def test_fashion_import_script_exits_2_naming_the_line(capsys) -> None:
    assert fashion_import.main(["--items", str(STYLES)]) == 2
    assert "row 6044" in capsys.readouterr().err


# --- Home Depot: titles only, so every facet value comes from the lexicon ------------------------


@pytest.fixture(scope="module")
def homedepot() -> tuple[pd.DataFrame, Catalog]:
    items, _ = read_items(HOMEDEPOT / "items.csv")
    return items, Catalog.build(items)


@needs_homedepot
def test_homedepot_titles_give_facets(homedepot) -> None:
    items, cat = homedepot
    coverage = {f: float((cat.item_attrs[f].getnnz(axis=1) > 0).mean()) for f in cat.item_attrs}
    assert coverage["color"] > 0.4 and coverage["quality"] > 0.02 and coverage["style"] > 0.02
    by_title = dict(zip(items["title"], range(len(items))))
    delta = cat.attribute_labels(by_title[
        "Delta Vero 1-Handle Shower Only Faucet Trim Kit in Chrome (Valve Not Included)"])
    assert delta["color"] == ["chrome"]
    behr = cat.attribute_labels(by_title[
        "BEHR Premium Textured DeckOver 1-gal. #SC-141 Tugboat Wood and Concrete Coating"])
    assert behr["quality"] == ["premium"]
    assert "material:wood" in behr["other"] and "material:concrete" in behr["other"]
    assert cat.texts == cat.titles  # BM25 reads the titles as they are


@needs_homedepot
def test_homedepot_split_is_by_search_term(homedepot) -> None:
    items, cat = homedepot
    inter, _ = read_interactions(HOMEDEPOT / "interactions.csv", set(items["item_id"]))
    rows = pd.DataFrame({"query": inter["query"], "item_idx": inter["item_id"].map(cat.idx),
                         "label": inter["label"], "weight": inter["weight"]})
    train, held = homedepot_eval.split(rows, 1.0, 0.2, seed=0)
    assert not set(train["query"]) & set(held["query"])
    assert len(train) + len(held) == len(rows)
    assert 0.18 < held["query"].nunique() / rows["query"].nunique() < 0.22
    again, _ = homedepot_eval.split(rows, 1.0, 0.2, seed=0)
    assert again.equals(train)


# --- the scripts on files of our own (always run) ------------------------------------------------


def test_fashion_import_script_on_the_sample(capsys) -> None:
    items = str(SAMPLES / "fashion_styles.csv")
    assert fashion_import.main(["--items", items]) == 2
    assert "row 12: expected 10 fields, found 11" in capsys.readouterr().err
    assert fashion_import.main(["--items", items, "--on-bad-lines", "skip", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["skipped_lines"] == [12, 19] and report["items"] == 18
    assert report["facets"]["color"]["from_text"] == [["grey", 1]]  # "Charcoal" where baseColour is NA
    assert report["facets"]["style"]["from_text"] == [["casual", 1]]


def _tiny_homedepot(folder: Path) -> Path:
    rng = np.random.default_rng(0)
    colours = ["White", "Black", "Chrome", "Oil Rubbed Bronze", "Brushed Nickel"]
    things = ["Faucet", "Door Hinge", "Cabinet Pull", "Towel Bar", "Shower Head", "Light Fixture"]
    titles = [f"Acme {c} {t} {n}" for c in colours for t in things for n in ("Basic", "Deluxe")]
    folder.mkdir()
    pd.DataFrame({"item_id": range(1, len(titles) + 1), "title": titles}).to_csv(folder / "items.csv", index=False)
    rows = []
    for c in colours:
        for t in things:
            query = f"{c.split()[-1].lower()} {t.split()[-1].lower()}"
            for i, title in enumerate(titles, start=1):
                if t in title:
                    label = 2.0 if c in title else float(rng.choice([0.0, 1.0]))
                    rows.append((query, i, label))
    pd.DataFrame(rows, columns=["query", "item_id", "label"]).to_csv(folder / "interactions.csv", index=False)
    return folder


def test_homedepot_eval_runs_end_to_end_on_a_tiny_copy(tmp_path: Path, capsys) -> None:
    data = _tiny_homedepot(tmp_path / "hd")
    assert homedepot_eval.main(["--data", str(data), "--epochs", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["metrics"]) >= {"model", "bm25", "popularity"}
    assert report["split"]["eval_terms"] == 6 and report["split"]["train_terms"] == 24
    assert report["train_seconds"] >= 0 and report["catalog"]["facet_coverage"]["color"] == 1.0
    assert homedepot_eval.main(["--data", str(data), "--epochs", "1"]) == 0
    out = capsys.readouterr().out
    assert "NDCG@10" in out and "bm25" in out and "target:" in out


def test_homedepot_eval_without_data_says_so(tmp_path: Path, capsys) -> None:
    assert homedepot_eval.main(["--data", str(tmp_path)]) == 2
    assert "no Home Depot data" in capsys.readouterr().err
