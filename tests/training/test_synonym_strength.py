"""A click synonym means its strongest value: a word whose searches choose items that carry one
value always and another often (the rugs that "carpet" finds, many of them shaggy) is raised to
a full match of the first, and of the second only in proportion (`evidence.association_evidence`),
so the head shows "carpet -> rug", not a split between rug and shaggy."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from recsys.evidence import association_evidence
from recsys.explain import head_attention
from training.config import TrainConfig
from training.start import untrained_recommender

from .test_click_synonyms import catalogue_and_rows

CATEGORIES = ["rug", "lamp", "chair", "sofa"]
MATERIALS = ["shaggy", "jute", "wool", "oak", "steel", "linen"]
COLORS = ["red", "blue", "green"]


def items() -> pd.DataFrame:
    combos = itertools.product(CATEGORIES, MATERIALS, COLORS, range(2))
    return pd.DataFrame([{"item_id": f"M{n:03d}", "title": f"{color} {category}", "color": color,
                          "category": category, "material": material}
                         for n, (category, material, color, _) in enumerate(combos)])


def log(cat: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Each category asked for by its own word, with as many items chosen at random as right
    (which calibrates how reliably clicks follow a word: about half), and "carpet" in many
    searches, each choosing two rugs, five in six of them shaggy (a sixth of the rugs are)."""
    rng = np.random.default_rng(seed)
    rows: list[tuple[str, str, int]] = []
    ids = cat.item_id.to_numpy()
    for _ in range(3):
        for category, color in itertools.product(CATEGORIES, COLORS):
            good = ids[((cat.category == category) & (cat.color == color)).to_numpy()]
            chosen = [*rng.choice(good, 2, replace=False), *rng.choice(ids, 2, replace=False)]  # two at random
            rows.extend((f"{color} {category}", item, 1) for item in chosen)
    rugs = (cat.category == "rug").to_numpy()
    shaggy = ids[rugs & (cat.material == "shaggy").to_numpy()]
    other = ids[rugs & (cat.material != "shaggy").to_numpy()]
    for n, word in enumerate(["cosy", "big", "soft", "cheap", "warm", "thick", "deal", "new"] * 2):
        chosen = [rng.choice(shaggy), rng.choice(other if n % 3 == 0 else shaggy)]
        rows.extend((f"{word} carpet", item, 1) for item in chosen)
    return pd.DataFrame(rows, columns=["query", "item_id", "label"])


def test_raised_pairs_keep_their_order_below_the_strongest():
    """Two pairs of one unsaid word above the bar: the stronger is a full match, the other its
    share of it; a word's single pair below the bar keeps its proportion; said words are never
    raised."""
    point = np.zeros(5)
    confident = np.array([0.4, 0.25, 0.1, 0.6, 0.3])
    unsaid = np.array([True, True, True, False, True])
    words = np.array([0, 0, 1, 2, 3])
    out = association_evidence(point, confident, 0.2, unsaid, words)
    assert out.tolist() == [1.0, 0.625, 0.5, 0.0, 1.0]


def test_the_word_means_the_value_its_searches_always_chose():
    cat, rows = catalogue_and_rows(items(), log(items()))
    rec = untrained_recommender(cat, rows, TrainConfig())
    ev, words = rec.featurizer.evidence, rec.featurizer.words
    vocab = cat.vocab["other"]
    rug = next(i for i, a in enumerate(vocab) if a.label == "category:rug")
    shaggy = next(i for i, a in enumerate(vocab) if a.label == "material:shaggy")
    carpet = words.id("carpet")
    assert ev.assoc["other"][carpet, rug] == 1.0
    assert 0 < ev.assoc["other"][carpet, shaggy] < 1.0
    state = rec.index.query_state("carpet")
    item = cat.idx(items().query("category == 'rug' and material == 'shaggy'").item_id.iloc[0])
    att = head_attention(rec.index, state, item, "other")
    top = att.attr_idx[int(np.argmax(att.weights[0][:-1]))]
    assert vocab[top].label == "category:rug"
