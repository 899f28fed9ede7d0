"""The kind of evidence an explanation names per cell (recsys/match_evidence.py), on a catalogue
where each kind is planted: a title word, a description word, two query words a title runs
together, a near spelling; click associations are in tests/training/test_click_synonyms.py."""

from __future__ import annotations

import numpy as np
import pandas as pd

from recsys.catalog import Catalog
from recsys.lexicon import LexiconConfig
from recsys.match_evidence import CellEvidence
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
    assert CellEvidence("click association").describe() == "learned from clicks"  # a version saved before
