"""The kind of evidence an explanation names per cell (recsys/match_evidence.py), on a catalogue
where each kind is planted: a title word, a description word, two query words a title runs
together, a near spelling; click associations are in tests/training/test_click_synonyms.py."""

from __future__ import annotations

import numpy as np
import pandas as pd

from recsys.catalog import Catalog
from recsys.lexicon import LexiconConfig
from recsys.match_evidence import CellEvidence
from tests.planted import charger_shop
from training.config import TrainConfig
from training.start import untrained_recommender


def cells(query: str, item_id: str) -> dict[tuple[str, str], str]:
    items = pd.DataFrame({"item_id": ["A", "B", "C"],
                          "title": ["Acme showerhead", "Borea doorbell", "Corvo desk lamp"],
                          "description": ["A chrome head.", "A waterproof bell.", "Bright light."],
                          "color": ["silver", "white", "black"]})
    cat = Catalog.build(items, lexicon=LexiconConfig(enabled=False))
    none = pd.DataFrame({"query": ["lamp"], "item_idx": [2], "label": np.zeros(1, np.float32),
                         "weight": np.ones(1, np.float32)})
    detail = untrained_recommender(cat, none, TrainConfig()).explain(query, item_id)
    return {(tok, h.attributes[m]): kind for h in detail.heads for tok, row in zip(detail.tokens, h.evidence)
            for m, kind in enumerate(row) if kind}


def test_each_kind_of_evidence_is_named():
    assert cells("shower head", "A") == {("head", "description:head"): "description",
                                         ("showerhead", "title:showerhead"): "words run together"}
    assert cells("desk lampp", "C") == {("desk", "title:desk"): "exact", ("lampp", "title:lamp"): "near spelling"}


def test_a_click_association_says_its_searches_and_lift():
    assert CellEvidence("click association", 0.62, 41).describe() == "learned from 41 searches, lift 0.62"
    assert CellEvidence("click association", 0.0, 3).describe() == "learned from 3 searches"
    assert CellEvidence("click association", 0.5, 1).describe() == "learned from 1 search, lift 0.50"
    assert CellEvidence("click association").describe() == "learned from clicks"  # a version saved before


# ---- which matches count: a word the catalogue says matches only where it is said ----------

def _shop() -> tuple[Catalog, pd.DataFrame]:
    """`planted.charger_shop` as the start reads it."""
    items, clicks = charger_shop()
    cat = Catalog.build(items, lexicon=LexiconConfig(enabled=False))
    n = len(clicks)
    return cat, pd.DataFrame({"query": clicks["query"], "item_idx": [cat.idx(i) for i in clicks["item_id"]],
                              "label": np.ones(n, np.float32), "weight": np.ones(n, np.float32)})


def test_a_said_word_drawn_elsewhere_by_clicks_moves_the_score_but_matches_only_where_said():
    cat, clicks = _shop()
    rec = untrained_recommender(cat, clicks, TrainConfig())
    answer = rec.recommend("charger", k=30)
    by_id = {it.item_id: it.explanation for it in answer.items}
    score = {it.item_id: it.score for it in answer.items}
    # the clicks draw "charger" to black a little (a said word's association is scaled down:
    # `formula.assoc_scales`): black cases above the others, far below the chargers
    assert score["C0"] > 50 * max(score[f"K{i}"] for i in range(6))
    assert min(score[f"K{i}"] for i in range(6)) > max(score[f"K{i}"] for i in range(6, 12))
    colour = next(h for h in rec.explain("charger", "K0").heads if "black" in h.attributes)
    assert colour.evidence[0][colour.attributes.index("black")] == "learned from 6 searches, lift 0.46"
    assert all(by_id[f"C{i}"].matched for i in range(6))
    assert not any(by_id[f"K{i}"].matched for i in range(12))  # before: the six black ones matched
    assert "'charger' matched title:charger" in by_id["C0"].summary
    assert "no query word matched its attributes" in by_id["K0"].summary
    # the listing's counts and total are the chargers', not every black item's
    counts = rec.facet_counts("charger", ["color"])
    assert counts.matching == 6
    assert {(v["value"], v["count"]) for f in counts.facets for v in f.values} == {("black", 6)}
    assert "charger" not in rec.recommend("charger", k=5).unmatched_tokens


def test_a_word_no_item_says_matches_where_its_clicks_put_it():
    cat, clicks = _shop()
    rec = untrained_recommender(cat, clicks, TrainConfig())
    answer = rec.recommend("navy", k=4)
    assert answer.unmatched_tokens == []
    top = answer.items[0].explanation
    assert top.matched and [(m.attribute, m.evidence, m.counts) for m in top.heads[1].matches] == [
        ("blue", "click association", True)]
    assert {it.item_id for it in answer.items[:3]} == {"L1", "K7", "L7"}  # the blue items
    counts = rec.facet_counts("navy", ["color"])
    assert {"value": "blue", "count": 3, "name": "blue"} in counts.facets[0].values
