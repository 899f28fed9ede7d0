"""Click synonyms: a word that shoppers' choices say means a value, with confidence, starts as a
full match of it (`evidence.association_evidence`); weak, mixed or contradicted clicks do not.

The planted log: every colour is asked for by its own word ("blue lamp"), which calibrates how
reliably this log's clicks follow a word; "navy" is asked for in many searches, always answered
with blue items (a strong synonym); "teal" in one search (weak); "dusky" with blue and red items
alike (mixed); "sunny" a few times with blue items but mostly with yellow ones, skipping the blue
ones it was shown (contradicted).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest, norm

from recsys.artifact import load_version, save_version
from recsys.catalog import Catalog
from recsys.evidence import ASSOC_CONFIDENCE_Z, confident_lift
from recsys.explain import MATCH_THRESHOLD, head_attention
from recsys.formula import ASSOC, EXACT
from recsys.lexicon import LexiconConfig
from recsys.recommender import Recommender
from recsys.tokenize import match_key
from training.config import TrainConfig
from training.fit import FitReport, train_recommender
from training.start import build_featurizer, untrained_recommender

COLORS = ["red", "blue", "green", "black", "white", "yellow", "purple"]  # purple: never asked for
CATEGORIES = ["lamp", "chair", "sofa", "rug", "table"]
STYLES = ["modern", "rustic"]
BRANDS = ["Acme", "Borea"]


def items() -> pd.DataFrame:
    combos = itertools.product(COLORS, CATEGORIES, STYLES, BRANDS)
    return pd.DataFrame([{"item_id": f"S{n:03d}", "title": f"{brand} {category}", "color": color,
                          "style": style, "category": category}
                         for n, (color, category, style, brand) in enumerate(combos)])


def log(cat: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """(query, item_id, label) rows: per search, two items with what it asked for chosen, six
    shown at random (chosen when they have it too)."""
    rng = np.random.default_rng(seed)
    rows: list[tuple[str, str, int]] = []

    def search(query: str, right: np.ndarray, skipped: np.ndarray | None = None) -> None:
        good = cat.item_id.to_numpy()[right]
        rows.extend((query, item, 1) for item in rng.choice(good, 2, replace=False))
        shown = cat.item_id.to_numpy()[skipped] if skipped is not None else cat.item_id.to_numpy()
        rows.extend((query, item, int(item in good)) for item in rng.choice(shown, 6, replace=False))

    def has(color: str | list[str], category: str) -> np.ndarray:
        colors = [color] if isinstance(color, str) else color
        return (cat.color.isin(colors) & (cat.category == category)).to_numpy()

    for _ in range(3):
        for color, category, style in itertools.product(COLORS[:-1], CATEGORIES, STYLES):
            search(f"{color} {style} {category}", has(color, category) & (cat["style"] == style).to_numpy())
    for category, style in itertools.product(CATEGORIES, STYLES):
        for query in (f"navy {category}", f"navy {style} {category}", f"{style} navy {category}"):
            search(query, has("blue", category))
        search(f"dusky {style} {category}", has(["blue", "red"], category))
        search(f"sunny {style} {category}", has("yellow", category), skipped=(cat.color == "blue").to_numpy())
    for category in CATEGORIES[:2]:
        search(f"sunny {category}", has("blue", category))
    search("teal lamp", has("blue", "lamp"))
    return pd.DataFrame(rows, columns=["query", "item_id", "label"])


def catalogue_and_rows(frame: pd.DataFrame, clicks: pd.DataFrame) -> tuple[Catalog, pd.DataFrame]:
    """The catalogue of `frame` and the training rows of the (query, item_id, label) `clicks`."""
    cat = Catalog.build(frame, lexicon=LexiconConfig(enabled=False))
    rows = pd.DataFrame({"query": clicks["query"], "item_idx": [cat.idx(i) for i in clicks.item_id],
                         "label": clicks["label"].astype(np.float32),
                         "weight": np.ones(len(clicks), dtype=np.float32)})
    return cat, rows


@pytest.fixture(scope="module")
def planted() -> tuple[Catalog, pd.DataFrame]:
    frame = items()
    return catalogue_and_rows(frame, log(frame))


@pytest.fixture(scope="module")
def start(planted) -> Recommender:
    return untrained_recommender(*planted, TrainConfig())


@pytest.fixture(scope="module")
def fitted(planted) -> tuple[Recommender, FitReport]:
    return train_recommender(*planted, TrainConfig(epochs=2, alphas=(1.0,)))


@pytest.fixture(scope="module")
def trained(fitted) -> Recommender:
    return fitted[0]


def attr(rec: Recommender, facet: str, value: str) -> int:
    return next(i for i, a in enumerate(rec.catalog.vocab[facet]) if a.value == value)


def attention_rows(rec: Recommender, query: str, word: str, facet: str,
                   value: str) -> list[tuple[np.ndarray, list[str]]]:
    """For each item of the query's top 10 with `value` in `facet`: the head's attention row of
    `word` (the no-match slot last) and the values it is over."""
    state = rec.index.query_state(query)
    t = [tok.surface for tok in state.tokens].index(word)
    ranked, _ = rec.index.top_k(state, None, None, 10)
    out = []
    for item in ranked:
        att = head_attention(rec.index, state, int(item), facet)
        values = [rec.catalog.vocab[facet][a].value for a in att.attr_idx]
        if value in values:
            out.append((att.weights[t], values))
    return out


def blue_attention(rec: Recommender, query: str, word: str) -> list[tuple[float, bool]]:
    """For each blue item of the query's top 10: the colour head's attention of `word` on blue,
    and whether blue has the word's most attention (rather than the no-match slot)."""
    return [(float(row[values.index("blue")]), int(np.argmax(row)) == values.index("blue"))
            for row, values in attention_rows(rec, query, word, "color", "blue")]


def test_the_confident_lift_is_the_wilson_lower_bound():
    """Without prior searches: the lower end of scipy's Wilson interval at z standard errors,
    turned into a lift over the chance `p`; at z = 0, the point estimate. The prior searches
    keep one or two searches weak evidence, whatever they chose."""
    z = ASSOC_CONFIDENCE_Z
    for chosen, n, chance in ((8, 10, 0.1), (41, 50, 0.25), (1, 1, 0.1), (3, 40, 0.2)):
        interval = binomtest(chosen, n).proportion_ci(confidence_level=2 * norm.cdf(z) - 1, method="wilson")
        got = confident_lift(np.array([chosen]), np.array([n]), np.array([chance]), z, 0.0)[0]
        assert got == pytest.approx((interval.low - chance) / (1 - chance), abs=1e-6)
        point = confident_lift(np.array([chosen]), np.array([n]), np.array([chance]), 0.0, 0.0)[0]
        assert point == pytest.approx((chosen / n - chance) / (1 - chance), abs=1e-6)
    one, two, ten = confident_lift(np.array([1.0, 2.0, 10.0]), np.array([1, 2, 10]), np.full(3, 0.1))
    assert one < two < 0.3 < ten  # searches that always chose the value: weak until there are several


def test_strong_click_evidence_starts_at_or_above_an_exact_match_in_every_head(planted, start):
    cat, rows = planted
    featurizer = build_featurizer(cat, rows, TrainConfig())
    ev, words = featurizer.evidence, featurizer.words
    blue = attr(start, "color", "blue")
    navy = words.id(match_key("navy"))
    assert ev.assoc["color"][navy, blue] == 1.0
    assert ev.support is not None and ev.support["color"][navy, blue] == 25  # its distinct searches, 5 + 10 + 10
    for word in ("teal", "dusky"):
        assert 0 < ev.assoc["color"][words.id(match_key(word)), blue] < 0.9, word
    assert ev.assoc["color"][words.id(match_key("sunny")), blue] < 0.5
    # the start: navy on blue at or above an exact match without clicks (purple on purple); the
    # heads weigh the two kinds alike, so it is so in every head
    navy, exact = start.index.query_state("navy lamp"), start.index.query_state("purple lamp")
    # (up to the untrained q . k, a few 1e-5)
    assert navy.logits["color"][0, blue] >= exact.logits["color"][0, attr(start, "color", "purple")] - 1e-3
    for head in start.model.heads.values():
        assert head.evidence_weight[ASSOC] >= head.evidence_weight[EXACT]


def test_a_strong_synonym_wins_the_head_and_ranks_its_items(start, trained):
    for rec in (start, trained):
        ranked = rec.recommend("navy lamp", k=4).items
        assert all(i.attributes["color"] == ["blue"] and "category:lamp" in i.attributes["other"]
                   for i in ranked), [i.attributes for i in ranked]
        cases = blue_attention(rec, "navy lamp", "navy")
        assert cases and all(top and w >= 0.5 for w, top in cases), cases


def test_the_explanation_says_how_many_searches_taught_it(start):
    blue_lamp = next(i.item_id for i in start.recommend("navy lamp", k=1).items)
    detail = start.explain("navy lamp", blue_lamp)
    color = next(h for h in detail.heads if h.head == "color")
    said = color.evidence[detail.tokens.index("navy")][color.attributes.index("blue")]
    assert said.startswith("learned from 25 searches, lift "), said


def test_weak_and_mixed_support_do_not_win_the_head(start, trained):
    for rec in (start, trained):
        for query, word in (("teal sofa", "teal"), ("dusky modern rug", "dusky")):
            cases = blue_attention(rec, query, word)
            assert cases and not any(top for _, top in cases), (query, cases)


def test_a_synonym_the_clicks_contradict_is_not_learned(start, trained):
    for rec in (start, trained):
        cases = blue_attention(rec, "sunny chair", "sunny")
        assert cases and all(w < MATCH_THRESHOLD for w, _ in cases), cases


def test_a_version_saved_without_the_tables_loads_and_ranks_as_before(start, tmp_path):
    """Versions saved before the confident lift and support existed store their association
    values only: they load with neither, and rank with the values they stored."""
    ev = start.featurizer.evidence
    kept = ev.confident, ev.support
    ev.confident, ev.support = None, None
    try:
        folder = save_version(start, tmp_path, {"trained_at": "then"})
    finally:
        ev.confident, ev.support = kept
    loaded = load_version(folder)
    assert loaded.featurizer.evidence.confident is None and loaded.featurizer.evidence.support is None
    for q in ("navy lamp", "dusky rug", "blue chair"):
        a, b = start.recommend(q, k=10), loaded.recommend(q, k=10)
        assert [(i.item_id, round(i.score, 5)) for i in a.items] == [(i.item_id, round(i.score, 5)) for i in b.items]


def test_the_report_lists_the_strongest_synonyms_and_what_the_held_aside_queries_say(fitted):
    report = fitted[1].synonyms
    color = report["heads"]["color"]
    assert (color[0]["word"], color[0]["attribute"]) == (match_key("navy"), "blue"), color
    assert color[0]["searches"] >= 20 and color[0]["confirmed"] is not False
    # never a word of the value itself ("blue" may be listed for another head's value it goes with)
    assert all(row["word"] not in row["attribute"].split(":")[-1].split() for rows in report["heads"].values()
               for row in rows)
    assert report["listed"] == sum(len(rows) for rows in report["heads"].values())
    assert report["confirmed"] <= report["tested"] <= report["listed"]

