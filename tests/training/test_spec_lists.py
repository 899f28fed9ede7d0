"""Spec lists are specs: an `attributes` column of key:value pairs (| or ; separated, or a JSON
object) is read as attributes whose key is context, and negative values match nothing."""

from __future__ import annotations

import pandas as pd
import pytest

from recsys.baselines import BM25Ranker
from recsys.catalog import Catalog, spec_list_summary, spec_pairs
from recsys.model_config import ModelOptions
from training.fit import TrainConfig
from training.start import untrained_recommender

NO_ROWS = pd.DataFrame({"query": pd.Series([], dtype=object), "item_idx": pd.Series([], dtype="int64"),
                        "label": pd.Series([], dtype="float32"), "weight": pd.Series([], dtype="float32")})


@pytest.mark.parametrize("cell, pairs", [
    ("brand:Acme|ports:usb", [("brand", "Acme"), ("ports", "usb")]),
    ("brand:Acme; ports:usb", [("brand", "Acme"), ("ports", "usb")]),
    ('{"brand": "Acme", "ports": ["usb", "hdmi"]}', [("brand", "Acme"), ("ports", "usb"), ("ports", "hdmi")]),
    ("bluetooth:No|apple_docking:Not supported|usb_ports:0|wifi:false|gps:None", []),
    # a yes makes the key the value, as one word
    ("bluetooth_enabled:Yes|Water Resistant:true|usb_ports:2", [("bluetooth_enabled", "bluetooth_enabled"),
                                                                 ("Water Resistant", "Water_Resistant"),
                                                                 ("usb_ports", "2")]),
    ('{"Wi-Fi Built-In": true, "dock": false}', [("Wi-Fi Built-In", "Wi-Fi_Built-In")]),
    # Magento's additional_attributes: `=` and `,`, a key's further values after `|`
    ("color=Blue,size=M,activity=Yoga|Gym", [("color", "Blue"), ("size", "M"), ("activity", "Yoga"),
                                             ("activity", "Gym")]),
    # `key=value` parts separated by `;`, as parts catalogues write them
    ("thread=M8; length=40 mm; material=Zinc Plated Steel", [("thread", "M8"), ("length", "40 mm"),
                                                            ("material", "Zinc Plated Steel")]),
    ("lonely|:x|y:", []),
    ("{not json", []),
    # a nested object's keys joined by dots; a broken object's complete pairs alone
    ('{"screen": "13 in", "dims": {"w": 30, "h": 2}, "ports": [{"kind": "usb"}]}',
     [("screen", "13 in"), ("dims.w", "30"), ("dims.h", "2"), ("ports.kind", "usb")]),
    ('{"screen": "14 in", "panel": "IPS", "color": ', [("screen", "14 in"), ("panel", "IPS")]),
    ('{"color": "bl', []),
])
def test_spec_pairs(cell, pairs):
    assert spec_pairs(cell) == pairs


def test_the_summary_counts_cells_that_are_broken_json():
    items = pd.DataFrame({"item_id": ["a", "b", "c"], "title": ["One", "Two", "Three"],
                          "attributes": ['{"screen": "13 in"}', '{"screen": "14 in", "color": ', "color:red|size:m"]})
    assert spec_list_summary(items) == {"items": 3, "keys": 3, "columns": ["attributes"], "broken_json": 1}
    items.loc[1, "attributes"] = '{"screen": "14 in"}'
    assert "broken_json" not in (spec_list_summary(items) or {})


def _start(items: pd.DataFrame):
    return untrained_recommender(Catalog.build(items), NO_ROWS, TrainConfig(seed=0))


def _filler(n: int) -> dict[str, list[str]]:
    return {"item_id": [f"f{i}" for i in range(n)], "title": [f"garden hose {i}" for i in range(n)],
            "attributes": [f"length:{i} m" for i in range(n)]}


def test_a_negative_value_and_a_key_s_words_never_match():
    rows = _filler(20)
    rows["item_id"] += ["radio", "dock", "plain"]
    rows["title"] += ["Clock Radio", "Speaker Dock", "Clock Radio"]
    rows["attributes"] += ["apple_docking_compatibility:Not supported|bluetooth:No", "compatibility:Apple", ""]
    rec = _start(pd.DataFrame(rows))
    radio = rec.catalog.idx("radio")
    labels = [lab for labs in rec.catalog.attribute_labels(radio).values() for lab in labs]
    assert not any("supported" in lab or "bluetooth" in lab for lab in labels)
    assert "supported" not in rec.catalog.texts[radio] and "apple" not in rec.catalog.texts[radio]
    plain = rec.catalog.idx("plain")
    for query in ("apple", "supported bluetooth", "apple docking"):
        scores = rec.index.score(rec.index.query_state(query), None)
        # the spec list's key and its negative values add nothing: the radio scores as one
        # without any spec list
        assert scores[radio] == pytest.approx(scores[plain], abs=1e-6)
    assert rec.catalog.item_ids[rec.top_indices("apple", 1)[0]] == "dock"


def test_a_key_a_yes_affirms_matches_its_words_each_at_its_own_share():
    """Earbuds whose spec says `bluetooth_enabled:Yes` are bluetooth earbuds: for "bluetooth
    earbuds" they beat a bluetooth mouse, which names one of the two words (its "bluetooth" is
    rarer than "earbuds", so the earbuds lost when the key's words could not match). And the
    key's words are not a phrase: a mouse whose spec says `rechargeable_battery:Yes` does not
    beat batteries that say "rechargeable" and "batteries" in their titles for "rechargeable
    batteries", which it would if a query covering both words counted each at the rare
    phrase's worth."""
    rows = _filler(20)
    earbuds = [f"earbuds{i}" for i in range(8)]
    batteries = [f"batteries{i}" for i in range(6)]
    rows["item_id"] += [*earbuds, "mouse", *batteries, "mx"]
    rows["title"] += [f"Acme Earbuds {i}" for i in range(8)] + ["Bluetooth Mouse"] + [
        f"Rechargeable AA Batteries {i}" for i in range(6)] + ["MX Wireless Mouse"]
    rows["attributes"] += ["bluetooth_enabled:Yes"] + ["bluetooth_enabled:No"] * 7 + ["connectivity:usb"] + [
        "battery_size:AA"] * 6 + ["rechargeable_battery:Yes"]
    rec = _start(pd.DataFrame(rows))
    first = rec.catalog.idx("earbuds0")
    # its words match; shown, it says the yes the spec list said
    assert "bluetooth_enabled:yes" in [lab for labs in rec.catalog.attribute_labels(first).values() for lab in labs]
    assert rec.catalog.item_ids[rec.top_indices("bluetooth earbuds", 1)[0]] == "earbuds0"
    # a filter on the key takes that yes (and what the label said before)
    for value in ("yes", "True", "bluetooth_enabled"):
        found = rec.catalog.filter_columns("bluetooth_enabled", value)
        assert [rec.catalog.vocab[f][a].label for f, a in found] == ["bluetooth_enabled:yes"], value
    assert rec.catalog.filter_columns("bluetooth_enabled", "no") == []
    assert rec.catalog.filter_values("bluetooth_enabled") == ["yes"]
    assert rec.catalog.item_filter_values(first, "bluetooth_enabled") == ["yes"]
    counts = {c.key: c.values for c in rec.facet_counts("earbuds", keys=["bluetooth_enabled"]).facets}
    assert counts == {"bluetooth_enabled": [{"value": "yes", "count": 1, "name": "yes"}]}
    assert rec.recommend("earbuds", k=8, filters={"bluetooth_enabled": ["yes"]}).items[0].item_id == "earbuds0"
    bm25 = BM25Ranker().fit(rec.catalog.texts, None)
    for top in (rec.top_indices("rechargeable batteries", 6), bm25.top_k("rechargeable batteries", 6)):
        assert sorted(rec.catalog.item_ids[int(i)] for i in top) == batteries


def test_a_brand_the_title_names_beats_the_brand_only_in_a_compatibility_spec():
    rows = _filler(30)
    rows["item_id"] += ["tablet", "case"]
    rows["title"] += ["Apple iPad Air tablet", "Slim tablet case"]
    rows["attributes"] += ["brand:Apple|storage:64 GB", "brand:Generic|brand_compatibility:Apple"]
    rec = _start(pd.DataFrame(rows))
    bm25 = BM25Ranker().fit(rec.catalog.texts, None)
    assert [rec.catalog.item_ids[i] for i in bm25.top_k("apple", 2)] == ["tablet", "case"]
    top = [rec.catalog.item_ids[i] for i in rec.top_indices("apple", 2)]
    assert top == ["tablet", "case"]


def test_a_product_that_names_the_word_everywhere_beats_one_short_spec_that_mentions_it():
    # the projector says "projector" in its title, type and description; the cable names it once,
    # in a short spec list: term frequency (one count per occurrence) ranks the projector first,
    # as BM25 does, where one match apiece let the shorter item win
    rows = _filler(30)
    rows["item_id"] += ["projector", "cable"]
    rows["title"] += ["Epsom Home Cinema Projector", "HDMI cable 2 m"]
    rows["attributes"] += ["type:Projector|lumens:3000", "compatible:projector"]
    rows["description"] = [""] * 30 + ["A bright projector for home cinema; the projector has a quiet fan.", ""]
    rec = _start(pd.DataFrame(rows))
    bm25 = BM25Ranker().fit(rec.catalog.texts, None)
    assert [rec.catalog.item_ids[i] for i in bm25.top_k("projector", 2)] == ["projector", "cable"]
    assert [rec.catalog.item_ids[i] for i in rec.top_indices("projector", 2)] == ["projector", "cable"]
    projector = rec.catalog.idx("projector")
    said = [(a.label, a.occurrences) for a in (rec.catalog.vocab["other"][j]
                                               for j in rec.catalog.attributes_of(projector, "other"))]
    assert ("type:projector", (2, 2)) in said  # its value, the title's word, twice in the description


def test_recsys_train_says_what_spec_list_it_found(tmp_path, capsys):
    from cli.main import main

    rows = _filler(8)
    rows["attributes"][0] = "brand:Acme;Ports:usb|bluetooth:No"  # a negative value is no pair
    rows["attributes"][1] = ""
    items = tmp_path / "items.csv"
    pd.DataFrame(rows).to_csv(items, index=False)
    inter = tmp_path / "interactions.csv"
    log = pd.DataFrame({"query": ["garden hose"] * 3, "item_id": ["f0", "f2", "f3"], "label": [1, 1, 0]})
    log.to_csv(inter, index=False)
    assert main(["train", "--items", str(items), "--interactions", str(inter), "--out", str(tmp_path / "a"),
                 "--epochs", "1"]) == 0
    # 7 items have a pair (one's cell is empty); keys: length, brand, ports (bluetooth: only "No")
    assert "attributes: 7 items, 3 keys" in capsys.readouterr().err


def test_a_word_a_spec_value_shares_with_the_title_counts_as_one_more_occurrence():
    """An accessory's title says "camera" and so does its spec value "Lumix DC-TZ99 camera": to
    BM25 over the text that is the word twice, a second occurrence that saturates with the first.
    The spec value's match is a full one worth the word's share of the phrase's value
    (`formula.partial_share`), so it saturates with the title's as BM25's does. As a weaker match
    on the rare phrase's whole value (`partial_value` False) it added a small attention on a
    large value on top of the title's, more than BM25's second occurrence: the accessory that
    named the camera it fits came close to, or above, the camera."""
    rows = _filler(30)
    rows["item_id"] += ["camera", "strap", "plain strap"]
    rows["title"] += ["Digital Camera", "Padded camera strap", "Padded camera strap"]
    rows["attributes"] += ["type:Camera", "device_compatibility:Lumix DC-TZ99 camera",
                           "device_compatibility:Lumix DC-TZ99"]
    rows["description"] = [""] * 30 + ["A compact camera.", "", ""]
    items = pd.DataFrame(rows)

    def extra(rec, scores) -> float:  # what the spec value's "camera" adds, as a ratio
        return float(scores[rec.catalog.idx("strap")] / scores[rec.catalog.idx("plain strap")])

    rec = _start(items)
    old = untrained_recommender(Catalog.build(items), NO_ROWS,
                                TrainConfig(seed=0, model=ModelOptions(partial_value=False)))
    bm25 = BM25Ranker(k1=rec.model.cfg.bm25_k1, b=rec.model.cfg.init_length).fit(rec.catalog.texts)
    want = extra(rec, bm25.score("camera"))
    assert want > 1.1  # BM25 counts the second "camera"
    assert extra(rec, rec.index.score(rec.index.query_state("camera"), None)) == pytest.approx(want, rel=0.03)
    assert extra(old, old.index.score(old.index.query_state("camera"), None)) > want * 1.05  # the test tells them apart
    assert [rec.catalog.item_ids[i] for i in rec.top_indices("camera", 3)] == ["camera", "strap", "plain strap"]


def _frame(column: str, cells: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"item_id": [f"i{n}" for n in range(len(cells))],
                         "title": [f"Item {n}" for n in range(len(cells))], column: cells})


@pytest.mark.parametrize("column, cells", [
    ("specs", ['{"brand_compatibility": "Apple", "ports": ["usb", "hdmi"]}'] * 5 + ['{"brand": "Acme"}']),
    ("Specifications", ["brand_compatibility:Apple|ports:usb; ports:hdmi"] * 5 + ["brand:Acme|weight:2 kg"]),
])
def test_a_column_of_spec_lists_is_read_as_specs_under_any_name(column, cells):
    """An export calls its spec column `specs` or `Specifications` as often as `attributes`:
    read by its cells, its keys are context ("compatibility" matches nothing) and its values
    attributes of their own; read as a facet value, a whole list was one long phrase."""
    items = _frame(column, cells)
    cat = Catalog.build(items)
    labels = sorted(cat.vocab["other"][a].label for a in cat.attributes_of(0, "other"))
    assert labels[:3] == ["brand_compatibility:apple", "ports:hdmi", "ports:usb"]
    assert cat.spec_items == len(cells)
    rec = _start(items)
    assert rec.index.score(rec.index.query_state("compatibility"), None).max() == pytest.approx(
        rec.index.score(rec.index.query_state("zzzz"), None).max())
    assert rec.catalog.item_ids[rec.top_indices("apple", 1)[0]] == "i0"


@pytest.mark.parametrize("cells", [
    ["16:9", "4:3", "16:10", "21:9"],  # one pair a cell: a ratio, not a spec list
    ["red|blue", "green", "blue|white"],  # several values, no keys
    ["size:M|fit:slim", "cotton", "linen", "wool"],  # a spec list in one cell of four
])
def test_a_column_that_is_not_a_spec_list_stays_a_facet_column(cells):
    cat = Catalog.build(_frame("extra", cells))
    assert cat.spec_items == 0
    assert {a.key for a in cat.vocab["other"]} >= {"extra"}


def test_a_schema_that_maps_the_column_keeps_it_a_facet_column():
    cells = ["brand:Acme|ports:usb"] * 4
    cat = Catalog.build(_frame("specs", cells), overrides={"specs": "other"})
    assert cat.spec_items == 0 and {a.key for a in cat.vocab["other"]} - {"title"} == {"specs"}


def test_recsys_train_names_the_column_it_read_as_spec_lists(tmp_path, capsys):
    from cli.main import main

    items = tmp_path / "items.csv"
    frame = _frame("specs", ['{"brand": "Acme", "ports": ["usb"]}'] * 6)
    frame["title"] = [f"garden hose {n}" for n in range(6)]
    frame.to_csv(items, index=False)
    inter = tmp_path / "interactions.csv"
    pd.DataFrame({"query": ["garden hose"] * 2, "item_id": ["i0", "i1"], "label": [1, 1]}).to_csv(inter, index=False)
    assert main(["train", "--items", str(items), "--interactions", str(inter), "--out", str(tmp_path / "a"),
                 "--epochs", "1"]) == 0
    assert "attributes: 6 items, 2 keys (key:value pairs, the key as context; read as spec lists: specs)" in (
        capsys.readouterr().err)


def test_recsys_train_says_which_columns_are_links(tmp_path, capsys):
    from cli.main import main

    items = tmp_path / "items.csv"
    frame = _frame("Image Src", [f"https://cdn.example.com/{n}.jpg" for n in range(6)])
    frame["title"] = [f"garden hose {n}" for n in range(6)]
    frame.to_csv(items, index=False)
    assert main(["train", "--items", str(items), "--out", str(tmp_path / "a")]) == 0
    assert "Image Src: links, not read as attributes (a schema's [columns] can map them)" in capsys.readouterr().err
