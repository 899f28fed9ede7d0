"""The lexical floor: before any training the heads rank like BM25, descriptions count, stop words
match nothing, and training never leaves the model below where it started."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recsys.baselines import BM25Ranker
from recsys.catalog import Catalog
from recsys.lexicon import LexiconConfig
from recsys.metrics import ndcg_at_k
from recsys.model_config import ModelOptions
from training.fit import TrainConfig, choose_served, choose_step, other_splits, train_recommender
from training.start import untrained_recommender

NO_ROWS = pd.DataFrame({"query": pd.Series([], dtype=str), "item_idx": np.zeros(0, dtype=np.int64),
                        "label": np.zeros(0, dtype=np.float32), "weight": np.zeros(0, dtype=np.float32)})

# titles of distinct lengths sharing words at different rates, so IDF and length both matter
TITLES = [
    "oak dining table", "oak dining table with two extending leaves and a walnut finish",
    "walnut coffee table", "glass coffee table", "pine bookcase", "pine bookcase with five shelves",
    "oak bookcase", "walnut sideboard", "glass display cabinet", "oak side table", "pine bed frame",
    "walnut bed frame with storage drawers", "oak wardrobe", "glass shelf", "leather sofa",
    "leather armchair", "velvet sofa", "velvet dining chair", "oak dining chair", "pine dining chair",
]


def title_catalog() -> Catalog:
    items = pd.DataFrame({"item_id": [f"T{i:02d}" for i in range(len(TITLES))], "title": TITLES})
    return Catalog.build(items, lexicon=LexiconConfig(enabled=False))


def test_untrained_heads_rank_like_bm25_with_the_same_k1():
    """Softmax over [the word's match, no match counted 1 - b + b n / avg times] is BM25's term
    saturation with tf 1: the untrained model orders items as BM25 with the model's k1 does."""
    catalog = title_catalog()
    rec = untrained_recommender(catalog, NO_ROWS, TrainConfig())
    bm25 = BM25Ranker(k1=rec.model.cfg.bm25_k1, b=rec.model.cfg.init_length).fit(catalog.texts)
    for query in ["oak table", "walnut", "pine bookcase", "glass coffee table", "dining chair", "sofa"]:
        model, lexical = rec.scores(query), bm25.score(query)
        hit = lexical > 0
        # items without a query word get almost nothing: e^-8 of attention per attribute
        assert (model[~hit] < 0.02 * model.max()).all(), query
        # every pair of items BM25 tells apart (by more than 2%) is in the same order
        m, lx = model[hit], lexical[hit]
        apart = np.abs(lx[:, None] - lx[None, :]) > 0.02 * lx.max()
        same = np.sign(m[:, None] - m[None, :]) == np.sign(lx[:, None] - lx[None, :])
        assert same[apart].all(), query
        # the model's top 3 are BM25's top 3 (items BM25 ties may come in either order)
        np.testing.assert_allclose(lexical[np.argsort(-model)[:3]], np.sort(lexical)[::-1][:3], rtol=1e-5)


def test_an_item_found_only_through_its_description_ranks_first_and_says_so():
    items = pd.DataFrame({
        "item_id": ["jacket", "coat", "parka", "vest"],
        "title": ["Trail jacket", "Town coat", "Arctic parka", "Fleece vest"],
        "description": ["light shell for walking in the hills, packs into its pocket",
                        "wool blend for the city",
                        "down filled hood, fully waterproof seams and a long cut for the coldest days",
                        "warm layer under a shell"],
    })
    catalog = Catalog.build(items, lexicon=LexiconConfig(enabled=False))
    rec = untrained_recommender(catalog, NO_ROWS, TrainConfig())
    result = rec.recommend("waterproof", k=2)
    top = result.items[0]
    assert top.item_id == "parka"
    matches = [(m.query_token, m.attribute) for h in top.explanation.heads for m in h.matches]
    assert ("waterproof", "description:waterproof") in matches
    assert result.items[1].score < 0.05 * top.score  # nothing else has the word


def test_a_word_in_the_title_starts_above_the_same_word_only_in_the_description():
    """BM25F's field weight: a description occurrence counts as `description_weight` of a title
    one (at 1, the two are at par, as plain BM25 over the text has them)."""
    items = pd.DataFrame({"item_id": ["named", "mentioned"], "title": ["Waterproof jacket", "Trail jacket"],
                          "description": ["warm lining", "waterproof shell"]})  # four words each
    catalog = Catalog.build(items, lexicon=LexiconConfig(enabled=False))
    scores = {}
    for weight in (0.5, 1.0):
        rec = untrained_recommender(catalog, NO_ROWS, TrainConfig(model=ModelOptions(description_weight=weight)))
        result = rec.recommend("waterproof", k=2)
        scores[weight] = {it.item_id: it.score for it in result.items}
        mentioned = next(it for it in result.items if it.item_id == "mentioned")
        matches = [(m.query_token, m.attribute) for h in mentioned.explanation.heads for m in h.matches]
        assert ("waterproof", "description:waterproof") in matches  # still shown as the match
    assert scores[0.5]["named"] > 1.1 * scores[0.5]["mentioned"] > 0
    assert scores[1.0]["named"] == pytest.approx(scores[1.0]["mentioned"], rel=1e-5)
    # k1 saturation with tf w: w / (w + k1) of the word's value against 1 / (1 + k1) in the title
    k1 = rec.model.cfg.bm25_k1
    assert scores[0.5]["mentioned"] / scores[0.5]["named"] == pytest.approx((0.5 / (0.5 + k1)) / (1 / (1 + k1)),
                                                                            rel=0.02)


def test_a_facet_value_and_a_description_word_are_one_term_to_bm25():
    """One document frequency per word over every field, as BM25 over the text has it: a colour
    that descriptions mention in passing ("suits black walls") is as common as the colour column
    says it is, so the items that are black rank above those that only mention it."""
    colours = ["black"] * 4 + ["white", "grey", "oak", "teal", "sage", "cream", "navy", "rust"]
    descriptions = ["solid frame"] * 4 + ["suits black walls", "pairs with black accents"] + ["solid frame"] * 6
    items = pd.DataFrame({"item_id": [f"C{i:02d}" for i in range(12)],
                          "title": [f"Model{i} chair" for i in range(12)],
                          "description": descriptions, "color": colours})
    catalog = Catalog.build(items, lexicon=LexiconConfig(enabled=False))
    rec = untrained_recommender(catalog, NO_ROWS, TrainConfig())
    featurizer = rec.featurizer
    as_colour = next(i for i, a in enumerate(catalog.vocab["color"]) if a.value == "black")
    in_text = next(i for i, a in enumerate(catalog.vocab["other"]) if (a.key, a.value) == ("description", "black"))
    assert featurizer.attribute_df("color")[as_colour] == featurizer.attribute_df("other")[in_text] == 6
    top = [it.item_id for it in rec.recommend("black", k=4).items]
    assert sorted(top) == ["C00", "C01", "C02", "C03"]


def test_the_last_words_of_a_long_description_count():
    filler = " ".join(f"filler{i}" for i in range(120))
    items = pd.DataFrame({"item_id": ["a", "b"], "title": ["Lamp", "Lamp"],
                          "description": [f"{filler} dimmable", f"{filler} battery"]})
    rec = untrained_recommender(Catalog.build(items, lexicon=LexiconConfig(enabled=False)), NO_ROWS,
                                TrainConfig())
    assert rec.recommend("dimmable", k=1).items[0].item_id == "a"
    assert rec.recommend("battery", k=1).items[0].item_id == "b"


def test_a_stop_word_query_matches_nothing():
    catalog = title_catalog()
    rec = untrained_recommender(catalog, NO_ROWS, TrainConfig())
    result = rec.recommend("the and of with for in", k=5)
    assert result.tokens == []
    assert len(result.items) == 5  # still an answer, by prior
    for item in result.items:
        assert all(not h.matches for h in item.explanation.heads)
        assert all(abs(h.contribution) < 1e-6 for h in item.explanation.heads)
    # and a stop word beside a real word changes nothing
    np.testing.assert_allclose(rec.scores("the oak table"), rec.scores("oak table"))


def test_ten_training_queries_leave_the_model_where_it_started(planted_paths):
    """Too few queries to hold any aside: nothing could show that a step off the lexical start
    helps, so the start is served, and held-out NDCG is not below the untrained model's."""
    from training.train import TrainInputs, load_training_data

    catalog, rows, _ = load_training_data(TrainInputs(planted_paths["items"], planted_paths["interactions"]))
    queries = sorted(rows["query"].unique())
    few = rows[rows["query"].isin(queries[:10])].reset_index(drop=True)
    held = rows[rows["query"].isin(queries[-20:]) & (rows["label"] > 0)]
    judged = {q: {int(i): 1.0 for i in g["item_idx"]} for q, g in held.groupby("query")}
    start = untrained_recommender(catalog, few, TrainConfig(seed=0))
    trained, report = train_recommender(catalog, few, TrainConfig(seed=0, epochs=3))
    assert report.alpha == 0.0
    np.testing.assert_allclose(trained.scores("scarlet gown"), start.scores("scarlet gown"), atol=1e-6)

    def ndcg(rec):
        return np.mean([ndcg_at_k(np.argsort(-rec.scores(q))[:10], rel, 10) for q, rel in judged.items()])

    assert ndcg(trained) >= ndcg(start) - 1e-9


def test_a_step_off_the_start_must_beat_it_on_the_held_aside_queries_beyond_their_noise():
    start = np.array([0.5, 0.6, 0.4, 0.5])

    def served(**steps):
        return choose_served({"start": start, **{k: start + np.array(v) for k, v in steps.items()}}, "start", 2.0)

    assert served(worse=[-0.1, 0.0, 0.0, 0.0]) == "start"
    assert served(same=[0.0, 0.0, 0.0, 0.0]) == "start"
    # a mean gain of 0.05 from one query of four is 1 standard error: noise
    assert served(lucky=[0.2, 0.0, 0.0, 0.0]) == "start"
    # the same gain from every query is no noise, and of two such steps the better one is served
    assert served(small=[0.05, 0.05, 0.05, 0.05], large=[0.1, 0.1, 0.1, 0.09]) == "large"
    assert served(first=[0.05] * 4, second=[0.05] * 4) == "first"  # ties: the earlier
    assert choose_served({"start": start[:1], "step": start[:1] + 0.3}, "start", 2.0) == "start"  # one query


def test_of_steps_that_beat_the_start_the_fullest_one_within_the_noise_of_the_best_is_served():
    start = np.array([0.5, 0.6, 0.4, 0.5])

    def served(**steps):  # the steps in order of their share of the way to the fitted weights
        candidates = {"start": start, **{k: start + np.array(v) for k, v in steps.items()}}
        return choose_served(candidates, "start", 2.0, prefer_later=True)

    # share 1 is 0.0025 below share 0.75 on average, one standard error of their differences
    assert served(half=[0.05] * 4, three_quarters=[0.1] * 4, full=[0.09, 0.1, 0.1, 0.1]) == "full"
    # clearly below the best (every query loses 0.05): the best is served
    assert served(three_quarters=[0.1] * 4, full=[0.05] * 4) == "three_quarters"
    # a fuller step that does not beat the start is never served, however close to the best
    assert served(three_quarters=[0.2, 0.0, 0.0, 0.0], full=[0.19, 0.0, 0.0, 0.0]) == "start"
    # an earlier step within the noise of a later best is not preferred over it
    assert served(three_quarters=[0.09, 0.1, 0.1, 0.1], full=[0.1] * 4) == "full"
    # and without the preference, the best mean
    assert choose_served({"start": start, "a": start + 0.1, "b": start + np.array([0.09, 0.1, 0.1, 0.1])},
                         "start", 2.0) == "a"


def test_the_fitted_weights_need_less_than_a_blend_to_be_served():
    start = np.array([0.5, 0.6, 0.4, 0.5, 0.3])

    def served(*gains):  # shares 0.5 and 1 of the way to the fitted weights
        steps = {"start": start, **{k: start + np.array(g) for k, g in zip(("half", "fitted"), gains)}}
        return choose_step(steps, "start", "fitted", 2.0, 1.0)[0]

    one_and_a_half = [0.05, 0.05, 0.0, 0.0, 0.0]  # mean 0.02, standard error 0.0122: 1.63
    assert served([0.0] * 5, one_and_a_half) == "fitted"
    assert served(one_and_a_half, [0.0] * 5) == "start"  # a blend still needs two
    assert served([0.0] * 5, [0.05, 0.0, 0.0, 0.0, 0.0]) == "start"  # one query's luck: 1.0
    assert served([0.0] * 5, [-0.05, -0.05, 0.0, 0.0, 0.0]) == "start"
    assert served([0.1] * 5, [0.05] * 5) == "half"  # a step that passes two is served as before


def _split(gains: list[float], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One held-aside split of planted per-query NDCG: the start's, and the fitted weights' at
    the start's plus `gains` (the same queries)."""
    start = np.random.default_rng(seed).uniform(0.2, 0.6, len(gains))
    return start, start + np.array(gains)


# the fitted weights gain 0.02-0.03 on most queries and lose 0.07 on one in six: a real gain
# that one split of 12 queries shows at 0.78 standard errors, three at 1.40
STEADY = [0.02, 0.03, 0.02, -0.07, 0.02, 0.03, 0.02, 0.03, -0.07, 0.02, 0.03, 0.02]


def test_one_splits_noise_does_not_send_the_fitted_weights_back_to_the_start():
    """Planted: the fitted weights are better on three splits of held-aside queries alike. The
    first split alone puts them 0.78 standard errors ahead of the start, under the one they must
    win by; judged on all three splits' queries they pass it, and are served."""
    start, fitted = _split(STEADY, 0)
    gain = (fitted - start).mean() / ((fitted - start).std(ddof=1) / np.sqrt(len(start)))
    assert 0.5 < gain < 1.0
    steps = {"start": start, "fitted": fitted}
    asked = []

    def more():
        asked.append(True)
        return [_split(STEADY, 1), _split(STEADY, 2)]

    assert choose_step(steps, "start", "fitted", 2.0, 1.0) == ("start", 12)  # one split: noise wins
    assert choose_step(steps, "start", "fitted", 2.0, 1.0, more) == ("fitted", 36)
    assert asked == [True]


def test_more_splits_can_also_take_the_fitted_weights_back_and_never_serve_them_below_the_start():
    start, fitted = _split([0.04, 0.0, 0.03, 0.02, -0.02, 0.02], 0)  # 1.69 standard errors
    worse = [_split([-0.02] * 6, 1), _split([-0.01, -0.03, 0.0, -0.02, -0.01, -0.02], 2)]
    steps = {"start": start, "fitted": fitted}
    assert choose_step(steps, "start", "fitted", 2.0, 1.0)[0] == "fitted"
    assert choose_step(steps, "start", "fitted", 2.0, 1.0, lambda: worse)[0] == "start"

    def never():
        raise AssertionError("no other split is needed")

    # below the start on its own queries: the start, whatever other splits say
    below = {"start": start, "fitted": start - 0.001 * np.arange(6)}
    assert choose_step(below, "start", "fitted", 2.0, 1.0, never) == ("start", 6)
    # clearly past the bar (3 standard errors and more), or a step that passes two: no re-check
    clear = {"start": start, "fitted": start + np.array([0.1, 0.12, 0.1, 0.11, 0.1, 0.1])}
    assert choose_step(clear, "start", "fitted", 2.0, 1.0, never) == ("fitted", 6)
    half = {"start": start, "half": (start + clear["fitted"]) / 2, "fitted": clear["fitted"]}
    assert choose_step(half, "start", "fitted", 2.0, 1.0, never)[0] == "fitted"


def test_more_held_aside_splits_share_no_query_and_leave_most_to_fit_on():
    queries = pd.Series([f"q{i}" for i in range(60)] * 2)
    first = {f"q{i}" for i in range(6)}
    splits = other_splits(queries, first, 2, np.random.default_rng(0))
    assert [len(s) for s in splits] == [6, 6]
    assert not (splits[0] & splits[1]) and not ((splits[0] | splits[1]) & first)
    assert len(other_splits(queries, set(queries[:25]), 2, np.random.default_rng(0))) == 0  # 35 left: none


@pytest.mark.parametrize("query", ["zxqv blorf"])
def test_words_no_item_has_add_nothing_to_any_head(query):
    rec = untrained_recommender(title_catalog(), NO_ROWS, TrainConfig())
    result = rec.recommend(query, k=3)
    for item in result.items:
        assert all(abs(h.contribution) < 1e-2 for h in item.explanation.heads)


def test_a_word_of_a_longer_value_counts_as_bm25_counts_it():
    """A column's value of several words is one attribute worth the phrase's IDF. A query word
    that is one of its words counts about the word's own IDF (`formula.partial_worth`), as BM25
    over the text counts it: "gifts" in "free gifts" about as much as "gifts" in a title, "blue"
    in "navy blue" about as much as the colour blue. Planted pairs of items, each query's score
    of the first over the second's within 15% of BM25's. Counted by the share of the phrase's
    words the query has (versions saved before), "gifts" of "free gifts" was worth a tenth of
    the title's."""
    fillers = [("Card holder", "", "black"), ("Cotton shirt", "", "blue"), ("Linen shirt", "", "blue"),
               ("Wool scarf", "", "blue"), ("Silk scarf", "", "red"), ("Leather belt", "", "brown")] * 3
    planted = [("Card", "free gifts", "red"), ("Gifts card", "", "red"),
               ("Oxford shirt", "", "navy blue"), ("Poplin shirt", "", "blue")]
    rows = planted + fillers
    items = pd.DataFrame({"item_id": [f"P{i:02d}" for i in range(len(rows))], "title": [r[0] for r in rows],
                          "category": [r[1] for r in rows], "color": [r[2] for r in rows]})
    catalog = Catalog.build(items, lexicon=LexiconConfig(enabled=False))
    rec = untrained_recommender(catalog, NO_ROWS, TrainConfig())
    old = untrained_recommender(catalog, NO_ROWS, TrainConfig(model=ModelOptions(partial_worth=False)))
    bm25 = BM25Ranker(k1=rec.model.cfg.bm25_k1, b=rec.model.cfg.init_length).fit(catalog.texts)
    pairs = {"gifts": (0, 1), "gifts card": (0, 1), "navy shirt": (2, 3), "blue shirt": (2, 3)}
    for query, (a, b) in pairs.items():
        want = bm25.score(query)[a] / bm25.score(query)[b]
        got, before = rec.scores(query)[a] / rec.scores(query)[b], old.scores(query)[a] / old.scores(query)[b]
        assert abs(got / want - 1) < 0.15, (query, got, want)
        if query.startswith("gifts"):
            assert abs(before / want - 1) > 0.5, (query, before, want)  # the test tells them apart
