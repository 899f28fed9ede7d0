"""The furniture benchmark generator (benchmarks/furniture_data.py): contract, ground truth, baselines."""

from __future__ import annotations

import csv
import filecmp
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ..benchmark_modules import load, script

SCRIPT = script("furniture_data")
fd = load("furniture_data")

ITEM_COLUMNS = ["item_id", "title", "description", "finish_colour", "design_style", "grade",
                "product_type", "room", "attributes", "price_usd", "stars"]
FILES = ("items", "interactions", "judgments", "probes")


def _read(d: Path, name: str, **kw) -> pd.DataFrame:
    return pd.read_csv(d / f"{name}.csv", keep_default_na=False, **kw)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("furniture")
    info = fd.generate(d, n_items=800, n_queries=4000, seed=0)
    return {
        "dir": d, "info": info,
        "items": _read(d, "items", dtype=str),
        "interactions": _read(d, "interactions"),
        "judgments": _read(d, "judgments"),
        "probes": _read(d, "probes"),
    }


def test_deterministic_per_seed(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    fd.generate(a, n_items=200, n_queries=300, seed=3)
    fd.generate(b, n_items=200, n_queries=300, seed=3)
    fd.generate(c, n_items=200, n_queries=300, seed=4)
    for name in FILES:
        assert filecmp.cmp(a / f"{name}.csv", b / f"{name}.csv", shallow=False), name
    assert not filecmp.cmp(a / "interactions.csv", c / "interactions.csv", shallow=False)
    assert not list(a.glob("*.tmp"))


def test_item_columns_ids_and_values(data):
    items = data["items"]
    assert list(items.columns) == ITEM_COLUMNS
    assert len(items) == 800
    assert items["item_id"].is_unique
    assert items["item_id"].str.fullmatch(r"F7-\d{5}").all()
    assert (items["title"].str.len() > 0).all()
    assert pd.to_numeric(items["price_usd"]).gt(0).all()
    assert pd.to_numeric(items["stars"]).between(1, 5).all()
    for col, vocab in (("finish_colour", fd.COLOURS), ("design_style", fd.STYLES), ("grade", fd.GRADES),
                       ("product_type", fd.TYPES), ("room", fd.ROOMS)):
        vals = {v for cell in items[col] for v in cell.split("|")}
        assert vals <= set(vocab), col
    assert items["finish_colour"].str.contains("|", regex=False).sum() >= 10  # two-tone finishes
    assert {"mid-century", "art deco"} & set(items["design_style"])
    assert {"dining table", "floor lamp"} <= set(items["product_type"])
    pairs = [kv.split(":", 1) for cell in items["attributes"] for kv in cell.split("|")]
    assert all(len(p) == 2 and p[0] and p[1] for p in pairs)
    assert all("material:" in cell for cell in items["attributes"])
    assert {k for k, _ in pairs} >= {"material", "seats", "upholstery", "shape"}


def test_description_quoting_round_trips(data):
    d, items = data["dir"], data["items"]
    desc = items["description"]
    assert desc.str.contains(",").any() and desc.str.contains('"').any()
    with open(d / "items.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ITEM_COLUMNS
    assert all(len(r) == len(ITEM_COLUMNS) for r in rows[1:])
    assert [r[2] for r in rows[1:]] == desc.tolist()
    again = pd.read_csv(pd.io.common.StringIO(items.to_csv(index=False)), dtype=str, keep_default_na=False)
    pd.testing.assert_frame_equal(again, items)


def test_interactions_contract(data):
    inter = data["interactions"]
    assert list(inter.columns) == ["query", "item_id", "event", "weight"]
    assert "label" not in inter.columns
    assert set(inter["event"]) == {"impression", "click", "cart", "purchase"}
    assert inter["weight"].between(0.5, 1.0).all()
    assert set(inter["item_id"]) <= set(data["items"]["item_id"])
    assert 0.9 * 4000 * fd.SHOWN <= len(inter) <= 4000 * fd.SHOWN
    clicks = inter.assign(pos=inter["event"] != "impression").groupby("query")["pos"].sum()
    assert (clicks == 0).mean() > 0.03  # some queries get no click at all
    assert (clicks > 0).mean() > 0.5


def _intents(probes: pd.DataFrame) -> dict[str, frozenset]:
    return {q: frozenset(zip(g["facet"], g["value"])) for q, g in probes.groupby("query")}


def test_heldout_intents_never_in_training(data):
    inter, judg = data["interactions"], data["judgments"]
    intents = _intents(data["probes"])
    train_q, held_q = set(inter["query"]), set(judg["query"])
    assert len(held_q) >= 50
    assert not train_q & held_q
    train_intents = {intents[q] for q in train_q}
    assert all(intents[q] not in train_intents for q in held_q)
    assert set(judg["grade"]) <= {1, 2, 3}
    assert judg.groupby("query")["grade"].max().eq(3).all()  # a perfect match always exists
    assert not judg.duplicated(["query", "item_id"]).any()


def test_judgments_follow_true_utility(data):
    """Rebuild each held-out intent from the probes; every item with grade >= 1 is judged."""
    items = data["items"].assign(stars=lambda df: df["stars"].astype(float))
    recs = items.to_dict("records")
    judg, probes = data["judgments"], data["probes"]
    for q in sorted(set(judg["query"]))[:15]:
        intent = {}
        for _, p in probes[probes["query"] == q].iterrows():
            facet = {"color": "colour", "style": "style", "quality": "grade"}.get(p["facet"])
            if facet is None:
                facet = ("product_type" if p["value"] in fd.TYPES else "room" if p["value"] in fd.ROOMS
                         else "material")
            intent[facet] = p["value"]
        assert 2 <= len(intent) <= 3
        expected = {r["item_id"]: fd.grade_from_utility(fd.true_utility(r, intent), intent) for r in recs}
        expected = {k: g for k, g in expected.items() if g >= 1}
        got = dict(zip(judg.loc[judg["query"] == q, "item_id"], judg.loc[judg["query"] == q, "grade"]))
        assert got == expected, q


def test_probes_consistent(data):
    probes, items = data["probes"], data["items"]
    assert list(probes.columns) == ["query", "word", "facet", "value"]
    all_queries = set(data["interactions"]["query"]) | set(data["judgments"]["query"])
    assert set(probes["query"]) == all_queries
    column_values = {c: {v for cell in items[c] for v in cell.split("|")} for c in items.columns}
    materials = {kv.split(":", 1)[1] for cell in items["attributes"] for kv in cell.split("|")
                 if kv.startswith("material:")}
    other = column_values["product_type"] | column_values["room"] | materials
    where = {"color": column_values["finish_colour"], "style": column_values["design_style"],
             "quality": column_values["grade"], "other": other}
    synonyms = {}
    for table in fd.SYNONYMS.values():
        for v, syns in table.items():
            synonyms.setdefault(v, set()).update(fd.words(s)[0] for s in [v, *syns])
    canonical = 0
    for r in probes.itertuples():
        toks = fd.words(r.query)
        assert r.word in toks, r
        assert r.value in where[r.facet], r
        assert r.word in synonyms[r.value], r
        canonical += r.word == fd.words(r.value)[0]
    assert 0.25 < canonical / len(probes) < 0.55
    assert probes["value"].str.contains(" |-", regex=True).any()  # multi-word values are probed
    assert not probes.duplicated(["query", "word"]).any()


def test_synonyms_never_in_catalogue(data):
    from recsys.tokenize import match_key

    text = " ".join(data["items"].astype(str).agg(" ".join, axis=1))
    cat_words = set(fd.words(text))
    cat_keys = {match_key(w) for w in cat_words}
    syn_words = {w for table in fd.SYNONYMS.values() for syns in table.values() for s in syns
                 for w in fd.words(s)}
    assert syn_words
    assert not syn_words & cat_words
    assert not {match_key(w) for w in syn_words} & cat_keys
    assert not set(fd.FILLER_NOWHERE) & cat_words
    for table in fd.SYNONYMS.values():  # each synonym names one value only
        flat = [s for syns in table.values() for s in syns]
        assert len(flat) == len(set(flat))


def test_utility_formula():
    item = {"finish_colour": "oak|white", "design_style": "modern", "grade": "value", "product_type": "desk",
            "room": "office", "attributes": "material:steel|assembly:none", "stars": 3.0}
    assert fd.true_utility(item, {"colour": "white", "product_type": "desk"}) == 5.0
    assert fd.true_utility(item, {"colour": "teal", "product_type": "desk"}) == 3.0
    assert fd.true_utility(item, {"material": "steel", "style": "rustic"}) == 1.5
    assert fd.grade_from_utility(5.0, {"colour": "white", "product_type": "desk"}) == 3
    assert fd.grade_from_utility(3.0, {"colour": "white", "product_type": "desk"}) == 2
    assert fd.grade_from_utility(2.0, {"colour": "white", "product_type": "desk"}) == 1
    assert fd.grade_from_utility(0.1, {"colour": "white", "product_type": "desk"}) == 0


def test_click_association_beats_word_overlap(data):
    items, inter, judg = data["items"], data["interactions"], data["judgments"]
    ca = fd.ClickAssociation().fit(inter, items)
    s = ca.score(judg["query"].iloc[0])
    assert s.shape == (len(items),)
    ndcg_ca = fd.evaluate_ndcg(ca.score, items, judg)
    ndcg_wo = fd.evaluate_ndcg(fd.WordOverlap(items).score, items, judg)
    assert ndcg_ca > ndcg_wo + 0.15, (ndcg_ca, ndcg_wo)
    assert 0.2 < ndcg_wo < 0.7


def test_evaluate_ndcg_perfect_and_constant():
    items = pd.DataFrame({"item_id": ["a", "b", "c"]})
    judg = pd.DataFrame({"query": ["q", "q"], "item_id": ["c", "b"], "grade": [3, 1]})
    assert fd.evaluate_ndcg(lambda q: [0.0, 1.0, 2.0], items, judg) == pytest.approx(1.0)
    assert fd.evaluate_ndcg(lambda q: [0.0, 0.0, 0.0], items, judg) < 1.0


def test_cli_check(tmp_path):
    out = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "--items", "300",
                          "--queries", "600", "--seed", "1", "--check"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert re.search(r"click-association: \d\.\d{3}", out) and re.search(r"word-overlap: \d\.\d{3}", out)
    assert all((tmp_path / f"{n}.csv").exists() for n in FILES)
