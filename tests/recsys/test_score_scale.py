"""The scale a rule's amount is read on (`recsys.score_scale`): over the catalogue's commonest
title words as searches, the 1st result's lead over the 10th and neighbours' gap, medians that are
one real search's gap, so a boost of that amount lifts that search's 10th result to the top."""

from __future__ import annotations

import random
from datetime import datetime

import numpy as np
import pandas as pd
import pytest

from recsys.catalog import Catalog
from recsys.rules import Rule, RuleBook
from recsys.score_scale import SCALE_RANKS, score_scale
from training.config import TrainConfig
from training.start import untrained_recommender

NOW = datetime(2026, 12, 7, 12, 0)
NO_EVENTS = pd.DataFrame({"query": pd.Series([], dtype=object), "item_idx": pd.Series([], dtype=np.int64),
                          "label": pd.Series([], dtype=np.float32), "weight": pd.Series([], dtype=np.float32)})


@pytest.fixture(scope="module")
def rec():
    rng = random.Random(3)
    kinds, colours, fillers = ["lamp", "chair", "table", "rug"], ["red", "oak", "white"], \
        ["modern", "classic", "small", "large", "soft", "tall", "round", "square"]
    titles = [" ".join([rng.choice(kinds), rng.choice(colours), *rng.sample(fillers, rng.randint(0, 6))])
              for _ in range(120)]
    items = pd.DataFrame({"item_id": [f"I{n:03d}" for n in range(120)], "title": titles})
    return untrained_recommender(Catalog.build(items), NO_EVENTS, TrainConfig(seed=0))


def test_the_scale_is_the_median_search_s_gaps_and_a_boost_of_it_lifts_its_tenth_to_the_top(rec):
    scale = score_scale(rec)
    assert scale is score_scale(rec)  # found once per model
    spans = {w: rec.rank(w, k=SCALE_RANKS).scores for w in scale.searches}
    gaps = sorted(s[0] - s[-1] for s in spans.values() if len(s) == SCALE_RANKS)
    assert scale.first_to_tenth == pytest.approx(gaps[(len(gaps) - 1) // 2]) and scale.first_to_tenth > 0
    assert 0 < scale.neighbours < scale.first_to_tenth
    assert f"{scale.first_to_tenth:.2f}" in scale.note and f"{scale.neighbours:.2f}" in scale.note
    # the search whose gap is the median: its 10th result, boosted by the scale and a hair,
    # is its 1st; a hair less, it stays below the 1st
    word = next(w for w, s in spans.items() if len(s) == SCALE_RANKS
                and s[0] - s[-1] == pytest.approx(scale.first_to_tenth))
    tenth = rec.rank(word, k=SCALE_RANKS).item_ids[-1]
    for extra, first in ((1e-4, True), (-1e-4, False)):
        rule = Rule("lift", "boost", item_id=tenth, amount=scale.first_to_tenth + extra)
        ranked = rec.rank(word, k=SCALE_RANKS, rules=RuleBook([rule]).for_query(word, rec.catalog, NOW))
        assert (ranked.item_ids[0] == tenth) is first, (word, extra, ranked.item_ids)
