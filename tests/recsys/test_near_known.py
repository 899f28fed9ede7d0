"""A word the catalogue has is taken as typed (`ModelOptions.near_known_ratio`,
`Featurizer.near_words`): its near spellings count only where far more items say them, as a typo
is to the word it misspells. Words the catalogue lacks keep their near spellings."""

from __future__ import annotations

import numpy as np
import pandas as pd

from recsys.catalog import Catalog
from recsys.evidence import word_document_frequency
from recsys.lexicon import LexiconConfig
from recsys.model_config import ModelConfig, ModelOptions
from recsys.tokenize import match_key
from training.fit import TrainConfig
from training.start import untrained_recommender

NO_ROWS = pd.DataFrame({"query": pd.Series([], dtype=str), "item_idx": np.zeros(0, dtype=np.int64),
                        "label": np.zeros(0, dtype=np.float32), "weight": np.zeros(0, dtype=np.float32)})

# "shirts" and "shorts" are both common words, one edit apart; "fibreglass" is a spelling two titles
# make of "fiberglass", which twenty-four say
TITLES = ([f"cotton shirts style {i}" for i in range(12)] + [f"denim shorts style {i}" for i in range(12)]
          + [f"fiberglass ladder model {i}" for i in range(24)] + ["fibreglass ladder model x", "fibreglass pole"])


def _recommender(**options):
    items = pd.DataFrame({"item_id": [f"i{i:02d}" for i in range(len(TITLES))], "title": TITLES})
    catalog = Catalog.build(items, lexicon=LexiconConfig(enabled=False))
    return catalog, untrained_recommender(catalog, NO_ROWS, TrainConfig(model=ModelOptions(**options)))


def _top(catalog, rec, query, k):
    return [catalog.titles[i] for i in rec.top_indices(query, k)]


def test_a_common_word_does_not_match_another_common_word_one_edit_away():
    catalog, rec = _recommender()
    scores = rec.scores("shirts")
    shorts = np.array(["shorts" in t for t in catalog.titles])
    shirts = np.array(["shirts" in t for t in catalog.titles])
    assert (scores[shorts] < 1e-3 * scores[shirts].min()).all()
    # before the rule (versions saved before load with 0): shorts came in as near matches
    catalog, old = _recommender(near_known_ratio=0.0)
    assert old.scores("shirts")[shorts].min() > 0.1 * old.scores("shirts")[shirts].min()


def test_a_rare_spelling_still_reaches_the_common_word_and_an_unknown_one_too():
    catalog, rec = _recommender()
    df = word_document_frequency(catalog)
    counts = [df[match_key(w)] for w in ("fiberglass", "fibreglass", "shirts", "shorts")]
    assert counts == [24, 2, 12, 12]
    # "fibreglass" is in 2 items, "fiberglass" in 24 (12 times as many): its near matches count
    found = _top(catalog, rec, "fibreglass", 26)
    assert set(found[:2]) == {"fibreglass ladder model x", "fibreglass pole"}  # its exact matches first
    assert sum("fiberglass" in t for t in found) == 24
    # the other way round the common word is taken as typed
    assert not any("fibreglass" in t for t in _top(catalog, rec, "fiberglass", 24))
    # a word no item has keeps its near spellings
    assert all("shirts" in t for t in _top(catalog, rec, "shirst", 12))


def test_versions_saved_before_keep_every_near_spelling():
    saved = ModelConfig(vocab_sizes={"other": 4}).to_json()
    del saved["near_known_ratio"]
    assert ModelConfig.from_json(saved).near_known_ratio == 0.0
    assert ModelOptions().near_known_ratio > 1.0
