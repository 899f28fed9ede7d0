"""Items like an item (issue 32, "like this item"), on a planted furniture catalogue whose right
answers are known: every (category, wood, style, brand) once, so the items most like a walnut
scandi chair are the walnut scandi chair of the other brand, then the walnut or scandi chairs."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient

from cli.main import main
from recsys.catalog import Catalog
from recsys.similar import MAX_WORDS, TITLE_KIND, item_query, title_kind
from training.fit import TrainConfig
from training.start import untrained_recommender

CATEGORIES, WOODS, STYLES, BRANDS = ("chair", "table", "sofa"), ("walnut", "oak", "pine"), \
    ("scandi", "industrial", "rustic"), ("Nordhem", "Brickyard")
NO_EVENTS = pd.DataFrame({"query": pd.Series([], dtype=object), "item_idx": pd.Series([], dtype=np.int64),
                          "label": pd.Series([], dtype=np.float32), "weight": pd.Series([], dtype=np.float32)})


def furniture() -> pd.DataFrame:
    rows = [{"item_id": f"F{n:03d}", "title": f"{brand} {wood} {category}", "material": wood,
             "style": style, "category": category,
             "description": f"A {style} {category} made of solid {wood}, finished by hand."}
            for n, (category, wood, style, brand) in enumerate(itertools.product(CATEGORIES, WOODS, STYLES, BRANDS))]
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def rec():
    return untrained_recommender(Catalog.build(furniture()), NO_EVENTS, TrainConfig(seed=0))


def _row(rec, item_id: str) -> dict:
    return furniture().set_index("item_id").loc[item_id].to_dict()


def test_a_walnut_scandi_chair_is_like_walnut_or_scandi_chairs_first(rec):
    asked, result = rec.similar("F000", k=5)  # Nordhem walnut chair, scandi
    assert asked.query.split() == ["scandi", "walnut", "chair", "nordhem"]
    ids = [item.item_id for item in result.items]
    assert "F000" not in ids
    rows = [_row(rec, i) for i in ids]
    assert ids[0] == "F001"  # the same chair of the other brand: everything but the brand shared
    for row in rows[:3]:
        assert row["category"] == "chair" and (row["material"] == "walnut" or row["style"] == "scandi"), rows
    assert asked.kept_to == {"category": ["chair"]} and result.total == 17  # its kind: the other chairs


def test_each_query_word_says_which_attribute_of_the_item_drew_it(rec):
    asked, result = rec.similar("F000", k=3)
    assert asked.drawn_by == {"scandi": ["style:scandi"], "walnut": ["material:walnut"],
                              "chair": ["category:chair"], "nordhem": ["title:nordhem"]}
    top = result.items[0].explanation
    matched = {(m.query_token, m.attribute) for h in top.heads for m in h.matches}
    assert ("scandi", "scandi") in matched and ("walnut", "material:walnut") in matched, matched


def test_filters_and_exclusions_apply_as_on_recommend(rec):
    _, result = rec.similar("F000", k=4, filters={"category": ["table"]}, exclude=["F018"])
    rows = [_row(rec, item.item_id) for item in result.items]
    assert all(r["category"] == "table" for r in rows) and "F018" not in [i.item_id for i in result.items]
    assert rows[0]["material"] == "walnut" and rows[0]["style"] == "scandi", rows


def test_description_words_only_when_the_item_says_little_else_and_the_rarest_kept():
    items = pd.DataFrame([
        {"item_id": "A", "title": "lamp", "description": "tall reading lamp with a folding shade"},
        {"item_id": "B", "title": "lamp", "description": "paper lamp"},
        {"item_id": "C", "title": " ".join(f"word{i}" for i in range(MAX_WORDS + 4)) + " common",
         "description": "ignored words here"},
        *({"item_id": f"X{i}", "title": "common thing", "description": "plain"} for i in range(5)),
    ])
    catalog = Catalog.build(items)
    rec = untrained_recommender(catalog, NO_EVENTS, TrainConfig(seed=0))
    few = item_query(catalog, catalog.idx("A"), rec.featurizer.attribute_df)
    assert set(few.query.split()) == {"lamp", "tall", "reading", "folding", "shade"}  # "lamp" alone: too little
    many = item_query(catalog, catalog.idx("C"), rec.featurizer.attribute_df)
    assert len(many.query.split()) == MAX_WORDS and "common" not in many.query.split()  # the most shared
    assert "ignored" not in many.query.split()


def test_a_numbers_band_is_no_word_of_the_query():
    """A price band's bounds drew the bands that share one: "ranked 5th for '39' matched cost
    per item:27-39" (a Shopify export's `Cost per item`)."""
    items = pd.DataFrame([{"item_id": f"L{i}", "title": f"{'brass' if i % 2 else 'paper'} lamp",
                           "price": str(10 + 3 * i)} for i in range(30)])
    catalog = Catalog.build(items)
    assert "price" in catalog.buckets
    rec = untrained_recommender(catalog, NO_EVENTS, TrainConfig(seed=0))
    asked = item_query(catalog, catalog.idx("L1"), rec.featurizer.attribute_df)
    assert set(asked.query.split()) == {"brass", "lamp"}, asked


def test_over_http_get_items_similar(rec, tmp_path):
    from api.config import Settings
    from cli.app import create_app

    settings = Settings(artifacts_dir=tmp_path / "artifacts", data_dir=tmp_path / "data",
                        default_data_dir=tmp_path / "data" / "default", watch_interval_s=0,
                        database_url=f"sqlite:///{tmp_path / 'store.db'}")
    with TestClient(create_app(settings, recommender=rec)) as c:
        r = c.get("/items/F000/similar", params={"k": 2, "filter": ["category:chair", "material:oak"]})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["item_id"] == "F000" and body["drawn_by"]["walnut"] == ["material:walnut"]
        rows = [_row(rec, item["item_id"]) for item in body["items"]]
        assert [(x["category"], x["material"], x["style"]) for x in rows] == [("chair", "oak", "scandi")] * 2
        assert body["items"][0]["explanation"]["heads"]
        assert c.get("/items/F000/similar", params={"explain": "false"}).json()["items"][0]["explanation"] is None
        assert c.get("/items/F000").status_code == 200  # the item's own route still answers
        assert c.get("/items/NOPE/similar").status_code == 404
        bad = c.get("/items/F000/similar", params={"filter": "category"})
        assert bad.status_code == 422 and "key:value" in bad.json()["message"], bad.text


def test_the_cli_prints_what_drew_each_word(rec, tmp_path, capsys):
    from recsys.artifact import save_version

    folder = save_version(rec, tmp_path / "artifacts", {})
    assert main(["similar", "F000", "--k", "3", "--model", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "like F000 (Nordhem walnut chair): scandi <- style:scandi; walnut <- material:walnut" in out
    assert "F001" in out
    assert main(["similar", "F000", "--k", "1", "--json", "--model", str(folder)]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["recommendation"]["items"][0]["item_id"] == "F001"
    assert main(["similar", "NOPE", "--model", str(folder)]) == 2


def _sharing(rec, item_id: str) -> set[str]:
    """The items other than `item_id` that some word of its like-this query matches, as the
    explanations say (`matched`): what like-this ranks, whatever else it keeps to."""
    query = rec.similar(item_id, k=1)[0].query
    ranked = rec.recommend(query, k=rec.catalog.n_items, explain=True).items
    return {it.item_id for it in ranked if it.explanation.matched and it.item_id != item_id}


def test_same_keeps_the_items_that_share_the_items_own_values(rec):
    """`same=["category"]` is the filter of the item's own category: chairs like a chair."""
    _, alike = rec.similar("F000", k=30, same=["category"])
    assert {_row(rec, i.item_id)["category"] for i in alike.items} == {"chair"}
    assert alike.total == 17  # the 18 chairs but itself
    _, filtered = rec.similar("F000", k=30, filters={"category": ["chair"]})
    assert [i.item_id for i in alike.items] == [i.item_id for i in filtered.items]
    _, both = rec.similar("F000", k=30, same=["category", "Material"])  # any spelling of a key
    assert {(_row(rec, i.item_id)["category"], _row(rec, i.item_id)["material"]) for i in both.items} == {
        ("chair", "walnut")} and both.total == 5
    _, every = rec.similar("F000", k=60, same=())
    sharing = _sharing(rec, "F000")
    assert 17 < len(sharing) < len(furniture()) - 1
    assert every.total == len(sharing) and {i.item_id for i in every.items} == sharing  # of every kind
    from recsys.errors import InputError
    with pytest.raises(InputError, match="same: unknown key 'shape'"):
        rec.similar("F000", same=["shape"])
    with pytest.raises(InputError, match="also a filter"):
        rec.similar("F000", same=["category"], filters={"category": ["table"]})


def test_same_on_a_category_path_keeps_to_its_finest_level_and_on_tags_to_any():
    """A path's levels are values of one key: `same=category` kept to any of them was every
    item of the top level (393 of a marketplace's 394). It keeps to the finest level, whose items
    every other level holds; a key whose values are not nested (tags) keeps to items sharing any."""
    rows = [{"item_id": f"E{n:02d}", "title": f"{kind} {n}", "category": f"Electronics > Audio > {kind}",
             "tags": tags}
            for n, (kind, tags) in enumerate(itertools.product(("Earbuds", "Speakers", "Headphones"),
                                                               ("wireless, compact", "wired", "wireless", "compact")))]
    rec = untrained_recommender(Catalog.build(pd.DataFrame(rows)), NO_EVENTS, TrainConfig(seed=0))
    asked, alike = rec.similar("E00", k=20, same=["category"])
    assert asked.kept_to == {"category": ["earbuds"]}
    assert {i.item_id for i in alike.items} == {"E01", "E02", "E03"}
    asked, tagged = rec.similar("E00", k=20, same=["tags"])
    assert sorted(asked.kept_to["tags"]) == ["compact", "wireless"]
    assert alike.total == 3 and tagged.total == 8  # of the 11 others, all but the three wired


def test_same_over_http_and_the_cli(rec, tmp_path, capsys):
    from api.config import Settings
    from cli.app import create_app
    from recsys.artifact import save_version

    settings = Settings(artifacts_dir=tmp_path / "artifacts", data_dir=tmp_path / "data",
                        default_data_dir=tmp_path / "data" / "default", watch_interval_s=0,
                        database_url=f"sqlite:///{tmp_path / 'store.db'}")
    with TestClient(create_app(settings, recommender=rec)) as c:
        r = c.get("/items/F000/similar", params={"k": 20, "same": "category", "explain": "false"})
        assert r.status_code == 200, r.text
        assert {_row(rec, i["item_id"])["category"] for i in r.json()["items"]} == {"chair"}
        assert r.json()["kept_to"] == {"category": ["chair"]}
        bad = c.get("/items/F000/similar", params={"same": "shape"})
        assert bad.status_code == 422 and "same: unknown key 'shape'" in bad.json()["message"], bad.text
        kind = c.get("/items/F000/similar", params={"k": 30, "explain": "false"}).json()
        assert kind["kept_to"] == {"category": ["chair"]} and kind["total"] == 17
        every = c.get("/items/F000/similar", params={"k": 30, "same": "none", "explain": "false"}).json()
        assert every["kept_to"] == {} and every["total"] == len(_sharing(rec, "F000"))
        assert {_row(rec, i["item_id"])["category"] for i in every["items"]} == set(CATEGORIES)
        both = c.get("/items/F000/similar", params={"same": ["none", "category"]})
        assert both.status_code == 422 and "stands alone" in both.json()["message"], both.text
    folder = save_version(rec, tmp_path / "art", {})
    assert main(["similar", "F009", "--k", "2", "--model", str(folder)]) == 0
    assert "kept to category: chair" in capsys.readouterr().out
    assert main(["similar", "F009", "--k", "60", "--same", "none", "--json", "--model", str(folder)]) == 0
    assert len(json.loads(capsys.readouterr().out)["recommendation"]["items"]) == len(_sharing(rec, "F009"))
    assert main(["similar", "F009", "--k", "20", "--same", "category", "--json", "--model", str(folder)]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert {_row(rec, i["item_id"])["category"] for i in answer["recommendation"]["items"]} == {"chair"}


def test_like_this_keeps_to_the_finest_kind_that_ten_other_items_share():
    """A catalogue names an item's kind in a column of a usual name: the finest whose value at
    least MIN_SAME_KIND other items share is kept to; a kind of a few items widens to the coarser
    one, and a catalogue without such a column ranks every item."""
    rows = [{"item_id": f"S{n:02d}", "title": f"{kind} {n}", "Product Type": kind, "department": "seating",
             "colour": "red"} for n, kind in enumerate(["armchair"] * 10 + ["stool"] * 3)]
    rows += [{"item_id": f"T{n:02d}", "title": f"table {n}", "Product Type": "table", "department": "tables",
              "colour": "red"} for n in range(12)]
    catalog = Catalog.build(pd.DataFrame(rows))
    rec = untrained_recommender(catalog, NO_EVENTS, TrainConfig(seed=0))
    asked, result = rec.similar("S00", k=30)  # an armchair: 9 other armchairs, not enough
    assert asked.kept_to == {"department": ["seating"]} and result.total == 12
    asked, result = rec.similar("S12", k=30)  # a stool: 2 other stools, so its department
    assert asked.kept_to == {"department": ["seating"]} and result.total == 12
    rows += [{"item_id": f"A{n:02d}", "title": f"armchair {n}", "Product Type": "armchair", "department": "seating",
              "colour": "red"} for n in range(5)]
    rec = untrained_recommender(Catalog.build(pd.DataFrame(rows)), NO_EVENTS, TrainConfig(seed=0))
    asked, result = rec.similar("S00", k=30)  # 14 other armchairs: its product type
    assert asked.kept_to == {"product type": ["armchair"]} and result.total == 14
    assert {i.item_id[0] for i in result.items} <= {"S", "A"}
    for kind in ({"department": ["tables"]}, {"product_type": ["table"]}):  # the caller chose a kind
        asked, result = rec.similar("S00", k=30, filters=kind)
        assert asked.kept_to == {} and result.total == 12
    plain = [{"item_id": f"P{n}", "title": f"{kind} {n}", "colour": "red"}
             for n, kind in enumerate(["lamp"] * 10 + ["rug"] * 10)]
    rec = untrained_recommender(Catalog.build(pd.DataFrame(plain)), NO_EVENTS, TrainConfig(seed=0))
    asked, result = rec.similar("P0", k=30)  # 9 other lamps: its title's kind is too few
    assert asked.kept_to == {} and result.total == 19


def test_a_kind_column_of_any_name_is_the_one_whose_values_hold_the_titles_kinds():
    """A shop names its kind column as it likes (`family`): the column whose values hold the word
    each title names its kind by is kept to; the brand, said in every title too, is not."""
    rows = [{"item_id": f"C{n:02d}", "title": f"{brand} Oak {kind}", "family": family, "maker": brand}
            for n, (brand, kind, family) in enumerate(
                [("Nordli", "Chair", "Chairs"), ("Skog", "Armchair", "Chairs")] * 6
                + [("Nordli", "Table", "Tables"), ("Skog", "Desk", "Tables")] * 6)]
    rec = untrained_recommender(Catalog.build(pd.DataFrame(rows)), NO_EVENTS, TrainConfig(seed=0))
    assert rec.kind_keys == ["family"]
    asked, result = rec.similar("C00", k=30)  # a chair: armchairs too, no tables
    assert asked.kept_to == {"family": ["chairs"]} and result.total == 11
    assert {i.item_id for i in result.items} == {f"C{n:02d}" for n in range(1, 12)}


def test_a_kind_column_in_the_shop_s_language_is_kept_to_and_filtered_accents_aside():
    """A Spanish shop's `categoría` is its kind column (its titles say "Cama", its categories
    "Dormitorio": no inference finds it), and a filter or a like-this `same` spelled `categoria`
    names it (was a 422: keys were not accent-folded)."""
    rows = [{"item_id": f"E{n:02d}", "title": f"{word} {colour}", "categoría": room, "color": colour}
            for n, (word, room, colour) in enumerate(
                [("Cama", "Dormitorio", "blanco"), ("Mesita", "Dormitorio", "negro")] * 6
                + [("Sofá", "Salón", "blanco"), ("Lámpara", "Salón", "negro")] * 6)]
    rec = untrained_recommender(Catalog.build(pd.DataFrame(rows)), NO_EVENTS, TrainConfig(seed=0))
    assert rec.kind_keys == ["categoría"] and rec.catalog.filter_key("categoria") == "categoría"
    asked, result = rec.similar("E00", k=30)  # a bed: the bedroom's other items
    assert asked.kept_to == {"categoría": ["dormitorio"]} and result.total == 11
    asked, result = rec.similar("E00", k=30, same=["categoria"])
    assert asked.kept_to == {"categoría": ["dormitorio"]} and result.total == 11
    found = rec.recommend("blanco", k=30, filters={"categoria": ["salon"]})
    assert {i.item_id for i in found.items} == {f"E{n:02d}" for n in range(12, 24)}


@pytest.mark.parametrize("title, kind", [
    ("Whirlpool 1.9 cu. ft. Over the Range Convection Microwave in Stainless Steel with Sensor Cooking", "microwave"),
    ("Delta Vero 1-Handle Shower Only Faucet Trim Kit in Chrome (Valve Not Included)", "trim"),
    ("Nicholson Ergonomic Handles File Set with Pouch (5-Piece)", "file"),  # a set of files
    ("Gift Set", "gift"),
    ("BEHR Premium Textured DeckOver 1-gal. #SC-141 Tugboat Wood and Concrete Coating", "coating"),
    ("House of Fara 3/4 in. x 3 in. x 8 ft. MDF Fluted Casing", "casing"),
    ("Oakley Sunglasses - Radar Path Polished Black/Gray Sunglasses", "sunglasses"),
    ("Accent Pillow with Heart Design - Red/Black", "pillow"),
    ("Turtle Check Men Navy Blue Shirt", "shirt"),
    ("Shirt, navy, linen", "shirt"),
    ("12345", None),
])
def test_a_title_names_its_kind_last_in_its_main_clause(title, kind):
    assert title_kind(title) == kind


def test_without_a_kind_column_like_this_keeps_to_the_kind_its_title_names():
    """Home Depot's and CrowdFlower's items are titles alone: an oak chair's like-this were
    oak tables of the same brand as much as chairs. The kind its title names (by match key:
    chair and chairs) is kept to where 10 other items share it, and said."""
    rows = [{"item_id": f"C{n:02d}", "title": f"Nordli Oak Dining {'Chairs' if n % 2 else 'Chair'} {n}"}
            for n in range(11)]
    rows += [{"item_id": f"T{n:02d}", "title": f"Nordli Oak Dining Table {n}"} for n in range(11)]
    rows += [{"item_id": f"S{n}", "title": f"Nordli Oak Stool {n}"} for n in range(3)]
    rec = untrained_recommender(Catalog.build(pd.DataFrame(rows)), NO_EVENTS, TrainConfig(seed=0))
    asked, result = rec.similar("C00", k=30)
    assert asked.kept_to == {TITLE_KIND: ["chair"]} and result.total == 10
    assert {i.item_id[0] for i in result.items} == {"C"}
    asked, result = rec.similar("C00", k=30, same=())  # every item, asked
    assert asked.kept_to == {} and {i.item_id[0] for i in result.items} == {"C", "T", "S"}
    asked, result = rec.similar("S0", k=30)  # 2 other stools: every item
    assert asked.kept_to == {} and result.total == 24
    same = [{"item_id": f"P{n}", "title": f"Product {n}"} for n in range(12)]  # a kind of every item is none
    rec = untrained_recommender(Catalog.build(pd.DataFrame(same)), NO_EVENTS, TrainConfig(seed=0))
    assert rec.similar("P0", k=30)[0].kept_to == {}


def test_an_item_s_codes_do_not_draw_items_like_it():
    """A Shopify export's variant SKUs ("LS-NAVY-S") are the item's other ids and a typed code
    finds its item, but they say nothing of what it is like: an oak chair whose SKUs share "ab"
    with an oak table's is still like the other chairs."""
    rows = [{"item_id": f"C{n}", "title": f"{wood} chair", "material": wood, "variant sku": f"CH{n}-S|CH{n}-M"}
            for n, wood in enumerate(["oak", "pine", "walnut", "beech"] * 3)]
    rows[0]["variant sku"] = "AB-7 S|AB-7 M"
    rows += [{"item_id": f"T{n}", "title": f"{wood} table", "material": wood, "variant sku": f"AB-{n} S|AB-{n} M"}
             for n, wood in enumerate(["oak", "pine", "walnut", "beech"] * 3)]
    catalog = Catalog.build(pd.DataFrame(rows))
    rec = untrained_recommender(catalog, NO_EVENTS, TrainConfig(seed=0))
    asked = item_query(catalog, catalog.idx("C0"), rec.featurizer.attribute_df)
    assert set(asked.query.split()) == {"oak", "chair"}, asked
    assert not any("variant sku" in label for labels in asked.drawn_by.values() for label in labels)
    _, result = rec.similar("C0", k=3, same=())  # every item, the tables too
    assert [it.item_id for it in result.items][:2] == ["C4", "C8"]  # the oak chairs
    assert rec.recommend("ab-7", k=1, explain=False).items[0].item_id == "C0"  # a typed code still finds it


def test_an_item_that_shares_no_word_with_any_other_has_nothing_like_it():
    """Like-this of an item whose every word no other item has is empty, not the catalogue by
    prior (a typed query that matches nothing is answered so, and says it)."""
    frame = pd.DataFrame({"item_id": ["Z", "A", "B"], "title": ["Zorbleflux", "Oak chair", "Pine chair"]})
    rec = untrained_recommender(Catalog.build(frame), NO_EVENTS, TrainConfig(seed=0))
    asked, result = rec.similar("Z", k=5, same=())
    assert asked.query == "zorbleflux" and result.items == [] and result.total == 0
    _, chairs = rec.similar("A", k=5, same=())
    assert [it.item_id for it in chairs.items] == ["B"]
