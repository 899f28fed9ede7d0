"""The electronics benchmark generator (benchmarks/electronics_data.py): contract, traps, truth."""

from __future__ import annotations

import filecmp
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ..benchmark_modules import load, script

SCRIPT = script("electronics_data")
ed = load("electronics_data")

ITEM_COLUMNS = ["item_id", "title", "description", "brand", "color", "type", "price", "attributes"]
FILES = ("items", "interactions", "judgments")
N_ITEMS = 600


def _read(d: Path, name: str, **kw) -> pd.DataFrame:
    return pd.read_csv(d / f"{name}.csv", keep_default_na=False, **kw)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("electronics")
    info = ed.generate(d, n_items=N_ITEMS, n_queries=140, seed=0)
    built, records = ed.make_catalogue(N_ITEMS, seed=0)
    return {"dir": d, "info": info, "items": _read(d, "items", dtype=str), "built": built,
            "records": records, "interactions": _read(d, "interactions"),
            "judgments": _read(d, "judgments")}


def _pairs(cell: str) -> list[list[str]]:
    return [kv.split(":", 1) for kv in cell.split("|")] if cell else []


def _mean_label(inter: pd.DataFrame, query: str, records: list[dict]) -> float:
    ids = {r["item_id"] for r in records}
    rows = inter[(inter["query"] == query) & inter["item_id"].isin(ids)]
    return float(rows["label"].mean()) if len(rows) else float("nan")


def test_deterministic_per_seed(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    ed.generate(a, n_items=300, n_queries=40, seed=3)
    ed.generate(b, n_items=300, n_queries=40, seed=3)
    ed.generate(c, n_items=300, n_queries=40, seed=4)
    for name in FILES:
        assert filecmp.cmp(a / f"{name}.csv", b / f"{name}.csv", shallow=False), name
        assert not filecmp.cmp(a / f"{name}.csv", c / f"{name}.csv", shallow=False), name
    assert not list(a.glob("*.tmp"))


def test_items_contract(data):
    items = data["items"]
    assert list(items.columns) == ITEM_COLUMNS
    assert len(items) == N_ITEMS and items["item_id"].is_unique
    assert items["item_id"].str.fullmatch(r"EL-\d{7}").all()
    assert (items[["title", "brand", "type"]] != "").all().all()
    assert items["title"].str.contains(" - ").all()  # "Brand - Product - Colour"
    assert pd.to_numeric(items["price"]).gt(0).all()
    assert 0.02 < (items["description"] == "").mean() < 0.2
    assert 0.05 < (items["color"] == "").mean() < 0.8
    assert items["title"].duplicated().mean() < 0.05
    assert {"Cell Phones", "Cases", "TVs", "HDMI Cables", "Batteries"} <= set(items["type"])
    pd.testing.assert_frame_equal(data["built"].astype(str), items)  # make_catalogue agrees
    devices = sum(r["role"] == "device" for r in data["records"])
    assert 0.35 < devices / N_ITEMS < 0.45


def test_every_spec_cell_parses(data):
    cells = data["items"]["attributes"]
    assert 0.01 < (cells == "").mean() < 0.15
    for cell in cells[cells != ""]:
        pairs = _pairs(cell)
        assert 4 <= len(pairs) <= 15, cell
        assert all(len(p) == 2 and re.fullmatch(r"[a-z0-9_]+", p[0]) and p[1] for p in pairs), cell
    pairs = [p for cell in cells for p in _pairs(cell)]
    values = {v for _, v in pairs}
    assert {"No", "None", "0", "false", "Not supported"} <= values  # absent features say so
    assert {"brand_compatibility", "device_compatibility", "model_number", "color",
            "bluetooth_enabled", "water_resistant", "hdmi_inputs",
            "apple_docking_compatibility"} <= {k for k, _ in pairs}
    assert any(re.fullmatch(r"\d+(\.\d+)? (inches|hours|gigabytes)", v) for v in values)


def test_accessories_name_what_they_fit(data):
    cells = dict(zip(data["items"]["item_id"], data["items"]["attributes"]))
    titles = dict(zip(data["items"]["item_id"], data["items"]["title"]))
    acc = [(r, dict(_pairs(cells[r["item_id"]]))) for r in data["records"]
           if r["role"] == "accessory"]
    compat = [(r, s["brand_compatibility"]) for r, s in acc if "brand_compatibility" in s]
    assert any(b != r["brand"] and b != "Universal" for r, b in compat)  # Otterbox for Apple
    assert any(b == r["brand"] for r, b in compat)  # Apple's own case
    fitted = [r for r, _ in acc if len(r["compat"]) == 1]
    assert fitted and all(r["compat"][0] in titles[r["item_id"]] for r in fitted)


def test_interactions_contract(data):
    inter, items = data["interactions"], data["items"]
    assert list(inter.columns) == ["query", "item_id", "label"]
    assert inter["label"].dtype.kind == "i" and set(inter["label"]) == {0, 1, 2, 3}
    assert set(inter["item_id"]) <= set(items["item_id"])
    assert not inter.duplicated(["query", "item_id"]).any()
    sizes = inter.groupby("query").size()
    assert len(sizes) >= 60 and sizes.min() >= 10 and sizes.max() <= 45
    assert set(inter["query"]) <= set(ed.QUERY_RULES)


def test_labels_are_noisy_true_grades(data):
    recs = {r["item_id"]: r for r in data["records"]}
    inter = data["interactions"]
    truth = pd.Series([ed.true_grade(recs[i], q) for q, i in zip(inter["query"], inter["item_id"])])
    diff = (inter["label"] - truth).abs()
    assert 0.7 < (diff == 0).mean() < 0.98  # mostly but not always right
    assert (diff <= 1).mean() > 0.95


def test_judgments_grade_every_relevant_item(data):
    judg, recs = data["judgments"], data["records"]
    assert list(judg.columns) == ["query", "item_id", "grade"]
    assert set(judg["query"]) <= set(data["interactions"]["query"])
    assert set(judg["grade"]) <= {1, 2, 3}
    for q in sorted(set(judg["query"]))[:10]:
        expected = {r["item_id"]: g for r in recs if (g := ed.true_grade(r, q)) >= 1}
        got = judg[judg["query"] == q]
        assert dict(zip(got["item_id"], got["grade"])) == expected, q


def test_brand_query_puts_its_devices_above_merely_compatible_accessories(data):
    recs, inter = data["records"], data["interactions"]
    checked = 0
    for q in sorted(set(ed.BRAND_QUERIES) & set(inter["query"])):
        brand = ed.BRAND_QUERIES[q]
        own = [r for r in recs if r["brand"] == brand and r["role"] == "device"]
        compatible = [r for r in recs if r["cbrand"] == brand and r["brand"] != brand]
        assert all(ed.true_grade(r, q) == 3 for r in own), q
        assert all(ed.true_grade(r, q) <= 1 for r in compatible), q
        a, b = _mean_label(inter, q, own), _mean_label(inter, q, compatible)
        if a == a and b == b:  # both rated
            assert a > b + 1, (q, a, b)
            checked += 1
    assert checked >= 2


def test_device_query_puts_the_device_above_its_cases(data):
    recs, inter = data["records"], data["interactions"]
    checked = 0
    for q in ("ipad", "ipads", "iphone", "iphones"):
        prefix = {"ipad": "iPad", "iphone": "iPhone"}[q.rstrip("s")]
        devices = [r for r in recs if r["role"] == "device" and r["short"].startswith(prefix)]
        cases = [r for r in recs
                 if r["kind"] == "case" and any(c.startswith(prefix) for c in r["compat"])]
        assert devices and cases
        assert all(ed.true_grade(r, q) == 3 for r in devices)
        assert all(ed.true_grade(r, q) <= 1 for r in cases)
        a, b = _mean_label(inter, q, devices), _mean_label(inter, q, cases)
        if a == a and b == b:
            assert a > b + 1, (q, a, b)
            checked += 1
    assert checked >= 1


def _record(**kw) -> dict:
    return {"role": "accessory", "kind": "", "sub": "", "brand": "", "short": "", "compat": (),
            "ckinds": (), "cbrand": "", "specs": {}, **kw}


def test_truth_comes_from_the_record_not_the_words():
    dry = _record(role="device", kind="speaker", brand="Insignia", short="Waterproof Speaker",
                  specs={"water_resistant": "false", "water_resistance_rating": "None"})
    wet = _record(role="device", kind="speaker", brand="JBL", short="Flip 6",
                  specs={"water_resistant": "true", "water_resistance_rating": "IP67"})
    assert ed.true_grade(wet, "waterproof speaker") == 3
    assert ed.true_grade(dry, "waterproof speaker") == 1
    ipad_pro_case = _record(kind="case", brand="Otterbox", short="Defender Series Case",
                            compat=("iPad Pro (4th Generation)",), ckinds=("tablet",),
                            cbrand="Apple")
    pro = _record(kind="controller", brand="Nintendo", short="Pro Controller", compat=("Switch",),
                  ckinds=("console",), cbrand="Nintendo", specs={"connectivity": "Wireless"})
    assert ed.true_grade(pro, "pro controller") == 3
    assert ed.true_grade(ipad_pro_case, "pro controller") == 0
    assert ed.true_grade(ipad_pro_case, "apple") == 1
    assert ed.true_grade(ipad_pro_case, "ipad case") == 3


def test_cli(tmp_path):
    out = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "--items", "300",
                          "--queries", "30", "--seed", "1"], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert re.search(r"wrote 300 items \(\d+ devices, \d+ accessories\)", out)
    assert "labels: 0=" in out
    assert all((tmp_path / f"{n}.csv").exists() for n in FILES)
