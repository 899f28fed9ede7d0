"""For this shopper (issue 32): a history of events becomes query words, ranked in the same heads
and explained as the shopper's, on a planted clothing catalogue whose right answers are known:
every (category, colour, material, brand) once, so a shopper who bought navy linen items of
different kinds and brands prefers exactly navy and linen; one who chose red where the query asked
for red ("crimson", a shop's synonym) prefers no colour; one who chose navy where the queries
left the colour free and the answers showed every colour prefers navy, surely enough for a typed
query."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

from recsys.catalog import Catalog
from recsys.explain import additivity_gap
from recsys.profile import (
    CONFIDENT_ANSWERS,
    HALF_LIFE_DAYS,
    NO_HISTORY,
    NOT_SURE,
    HistoryEvent,
    build_profile,
    event_weight,
)
from recsys.recommender import HISTORY_LABEL
from recsys.synonyms import SynonymBook, parse_synonyms
from tests.recsys.test_similar import NO_EVENTS
from training.fit import TrainConfig
from training.start import untrained_recommender

CATEGORIES, COLOURS, MATERIALS, BRANDS = ("shirt", "trousers", "dress"), ("navy", "red", "white"), \
    ("linen", "cotton", "wool"), ("Ostra", "Velde")
# the planted shopper's purchases: navy linen trousers of one brand, a navy linen dress of the other
BOUGHT = ("C018", "C037")
# the other four navy linen items: six purchases in all, one of each
SURE_EXTRA = ("C019", "C036", "C000", "C001")


def clothing() -> pd.DataFrame:
    rows = [{"item_id": f"C{n:03d}", "title": f"{brand} {material} {category}", "color": colour,
             "material": material, "category": category}
            for n, (category, colour, material, brand) in
            enumerate(itertools.product(CATEGORIES, COLOURS, MATERIALS, BRANDS))]
    return pd.DataFrame(rows)


def navy_linen(row: dict) -> bool:
    return row["color"] == "navy" and row["material"] == "linen"


@pytest.fixture(scope="module")
def rec():
    return untrained_recommender(Catalog.build(clothing()), NO_EVENTS, TrainConfig(seed=0))


def _row(item_id: str) -> dict:
    return clothing().set_index("item_id").loc[item_id].to_dict()


def _bought(rec, kind: str = "purchase", age_days: float = 1.0) -> list[HistoryEvent]:
    return [HistoryEvent(rec.catalog.idx(i), kind, age_days) for i in BOUGHT]


def test_an_event_weighs_its_kind_and_halves_every_half_life():
    assert event_weight("purchase", 0) > event_weight("cart", 0) > event_weight("click", 0) > 0
    assert event_weight("impression", 0) == 0
    assert event_weight("click", HALF_LIFE_DAYS) == pytest.approx(event_weight("click", 0) / 2)


def test_what_the_shopper_bought_in_common_is_the_profile(rec):
    assert [_row(i)["color"] for i in BOUGHT] == ["navy", "navy"] and _row(BOUGHT[0])["category"] == "trousers"
    profile = build_profile(rec.catalog, _bought(rec), rec.featurizer.attribute_df)
    assert profile.words == ["navy", "linen"]  # each item's own words (category, brand) half as strong
    assert profile.drawn_by == {"navy": ["color:navy"], "linen": ["material:linen"]}
    # the lift: the purchases' weight less that weight times the share of the catalogue saying navy
    bought = 2 * event_weight("purchase", 1.0)
    assert profile.events == 2 and profile.weights["navy"] == pytest.approx(bought * (1 - 18 / 54))


def test_what_every_shown_item_said_is_no_preference(rec):
    """Two searches that showed only navy items, where the shopper chose the two navy linen ones
    at the top: navy says nothing (every item shown had it), linen does (four of six shown,
    examined as 1 / position)."""
    navy = [*BOUGHT, "C000", "C001", "C002", "C003"]
    assert all(_row(i)["color"] == "navy" for i in navy)
    shown = [HistoryEvent(rec.catalog.idx(i), "impression", 1.0, "summer", "r1", n + 1) for n, i in enumerate(navy)]
    chosen = [HistoryEvent(rec.catalog.idx(i), "click", 1.0, "summer", "r1", 1) for i in BOUGHT]
    profile = build_profile(rec.catalog, [*shown, *chosen, *(HistoryEvent(e.item_idx, e.kind, e.age_days, e.query, "r2")
                                                            for e in [*shown, *chosen])],
                            rec.featurizer.attribute_df)
    assert "navy" not in profile.words and "linen" in profile.words, profile


def test_old_events_fade_behind_recent_ones(rec):
    red_wool = [HistoryEvent(rec.catalog.idx(i), "purchase", 10 * HALF_LIFE_DAYS) for i in ("C010", "C011")]
    assert all(_row(i)["color"] == "red" and _row(i)["material"] == "wool" for i in ("C010", "C011"))
    profile = build_profile(rec.catalog, [*red_wool, *_bought(rec, "click")], rec.featurizer.attribute_df)
    # undecayed, red and wool (two purchases) would outweigh navy and linen (two clicks) threefold
    assert profile.words[:2] == ["navy", "linen"] and not {"red", "wool"} & set(profile.words), profile


def _searched(rec, queries: list[str], chooses) -> list[HistoryEvent]:
    """A history of `queries`, each answered by `rec`'s best 10 (impressions at their positions),
    the shopper clicking the shown items `chooses(row)` says, a day per search."""
    events = []
    for day, query in enumerate(queries):
        shown = [rec.catalog.item_ids[i] for i in rec.top_indices(query, 10).tolist()]
        for position, item_id in enumerate(shown, 1):
            events.append(HistoryEvent(rec.catalog.idx(item_id), "impression", day, query, f"r{day}", position))
            if chooses(_row(item_id)):
                events.append(HistoryEvent(rec.catalog.idx(item_id), "click", day, query, f"r{day}", position))
    return events


def test_a_colour_the_query_asked_for_is_no_preference():
    """Searches for "crimson ..." (a shop's synonym of red) answered with red items first, the
    shopper clicking the red ones: red is what she asked for, not what she prefers. By the
    query's own words alone (no `matched`), red would be her taste."""
    shop = untrained_recommender(Catalog.build(clothing()), NO_EVENTS, TrainConfig(seed=0))
    shop.use_synonyms(SynonymBook(parse_synonyms("crimson => red\n")))
    events = _searched(shop, ["crimson shirt", "crimson dress", "crimson trousers", "crimson linen"],
                       lambda row: row["color"] == "red")
    assert sum(e.kind == "click" for e in events) >= 8
    by_words = build_profile(shop.catalog, events, shop.featurizer.attribute_df)
    assert "red" in by_words.words, by_words
    profile = build_profile(shop.catalog, events, shop.featurizer.attribute_df, shop.matched_attributes)
    assert not {"red", "navy", "white"} & set(profile.words), profile


def test_navy_chosen_among_every_colour_where_the_query_left_it_free_is_a_sure_preference(rec):
    """Six searches (CONFIDENT_ANSWERS) naming a kind of item, never a colour, each answered with the nine items of
    that kind and one brand, the colours in turn (red, white, navy, ...) and the materials
    rotated from one answer to the next; the shopper clicks the three navy ones. Navy is chosen
    every time, shown at a fifth of the examined places: a sure taste. The brand and the
    materials are chosen as often as shown: no taste."""
    events = []
    for day, (category, brand) in enumerate(itertools.product(CATEGORIES, BRANDS)):
        materials = MATERIALS[day % 3:] + MATERIALS[:day % 3]
        first = CATEGORIES.index(category) * 18 + BRANDS.index(brand)  # clothing()'s order
        shown = [f"C{first + COLOURS.index(c) * 6 + MATERIALS.index(m) * 2:03d}"
                 for m in materials for c in ("red", "white", "navy")]
        assert all(_row(i)["category"] == category and _row(i)["title"].startswith(brand) for i in shown)
        for position, item_id in enumerate(shown, 1):
            idx = rec.catalog.idx(item_id)
            events.append(HistoryEvent(idx, "impression", day, category, f"r{day}", position))
            if _row(item_id)["color"] == "navy":
                events.append(HistoryEvent(idx, "click", day, category, f"r{day}", position))
    profile = build_profile(rec.catalog, events, rec.featurizer.attribute_df, rec.matched_attributes)
    assert profile.words == ["navy"] and profile.confident == ["navy"], profile
    assert profile.sure() == profile and profile.drawn_by == {"navy": ["color:navy"]}


def test_a_typed_query_waits_for_a_sure_preference(rec):
    """Two purchases: navy and linen are the profile of a home page, but two answers are fewer
    than CONFIDENT_ANSWERS for a typed query; six purchases of navy linen make them sure."""
    two = build_profile(rec.catalog, _bought(rec), rec.featurizer.attribute_df, rec.matched_attributes)
    assert two.words == ["navy", "linen"] and two.confident == [] and CONFIDENT_ANSWERS == 6
    assert not two.sure() and two.sure().note == NOT_SURE and two.sure().events == 2
    more = [HistoryEvent(rec.catalog.idx(i), "purchase", 1.0) for i in SURE_EXTRA]
    assert all(navy_linen(_row(i)) for i in SURE_EXTRA)
    six = build_profile(rec.catalog, [*_bought(rec), *more], rec.featurizer.attribute_df, rec.matched_attributes)
    assert six.confident == ["navy", "linen"] and six.sure() == six


@pytest.mark.parametrize("query", ["", "shirt"])
def test_a_navy_linen_shopper_gets_navy_linen_first_explained_as_their_history(rec, query):
    profile = build_profile(rec.catalog, _bought(rec), rec.featurizer.attribute_df)
    result = rec.recommend(query, k=6, history=profile.words)
    rows = [_row(item.item_id) for item in result.items]
    first = 6 if query == "" else 2  # six navy linen items in all, two of them shirts
    assert all(navy_linen(r) for r in rows[:first]), rows
    if query:
        assert all(r["category"] == "shirt" for r in rows[:first])  # neither of them bought
    assert result.history == ["navy", "linen"] and result.tokens == query.split()
    for item in result.items[:first]:
        e = item.explanation
        assert e.history == ["navy", "linen"] and e.summary.endswith(f"{HISTORY_LABEL}: navy, linen")
        drawn = {(m.query_token, m.attribute) for h in e.heads for m in h.matches}
        assert {("navy", "navy"), ("linen", "material:linen")} <= drawn, drawn
    for item in result.items:
        assert additivity_gap(item.score, item.explanation) is None


def test_without_history_the_answer_is_the_unpersonalised_one(rec):
    profile = build_profile(rec.catalog, [HistoryEvent(0, "impression", 0.0)], rec.featurizer.attribute_df)
    assert not profile and profile.note == NO_HISTORY
    plain, empty = rec.recommend("shirt", k=5), rec.recommend("shirt", k=5, history=profile.words)
    assert [(i.item_id, i.score, i.explanation) for i in plain.items] == \
        [(i.item_id, i.score, i.explanation) for i in empty.items]
    assert empty.history == [] and all(i.explanation.history == [] for i in empty.items)


def test_a_history_word_the_shopper_typed_counts_once(rec):
    result = rec.recommend("navy shirt", k=3, history=["navy", "linen"])
    assert result.history == ["linen"] and result.tokens == ["navy", "shirt"]
    assert navy_linen(_row(result.items[0].item_id))


def test_one_choice_is_what_that_item_was_not_a_taste(rec):
    once = build_profile(rec.catalog, _bought(rec)[:1], rec.featurizer.attribute_df)
    assert not once and once.events == 1  # every word of the item said in one answer only
    twice = build_profile(rec.catalog, [*_bought(rec)[:1], *_bought(rec, "click")[:1]], rec.featurizer.attribute_df)
    assert "navy" in twice.words  # the same item chosen again: its words recur


@pytest.mark.parametrize("use_kernel", [True, False], ids=["compiled", "numpy"])
@pytest.mark.parametrize("head_weights", [None, {"color": 2.0, "other": 0.5}])
def test_the_history_reranks_the_querys_best_as_ranking_them_as_candidates_does(rec, head_weights, use_kernel):
    """`_rerank` scores the query's HISTORY_DEPTH best with the history words; the reference ranks
    the catalogue with them as `candidates` (the two passes it once made): the same items, order,
    ties and floats, on the compiled path and on numpy's."""
    from recsys.kernels import compiled
    from recsys.recommender import HISTORY_DEPTH

    if use_kernel and compiled() is None:
        pytest.skip("numba is not installed")
    rec.index.use_kernel = use_kernel
    try:
        for query, history, offset, filters in itertools.product(
                ["shirt", "red wool", "ostra dress"], [["navy", "linen"], ["wool"], ["velde", "white"]],
                [0, 3], [None, {"material": ["cotton", "linen"]}]):
            got = rec.recommend(query, k=5, offset=offset, filters=filters, history=history,
                                head_weights=head_weights, explain=False)
            _, _, top, _, found = rec._top(query, max(HISTORY_DEPTH, offset + 5), 0, filters, (), None, head_weights)
            added = rec.history_words(query, history)
            want = rec.recommend(" ".join([query, *added]), k=5, offset=offset, head_weights=head_weights,
                                 candidates=[rec.catalog.item_ids[i] for i in top.tolist()], explain=False)
            assert [(i.item_id, i.score) for i in got.items] == [(i.item_id, i.score) for i in want.items], \
                (query, history, offset, filters)
            assert got.total == found and got.history == [w for w in added if w in want.tokens]
    finally:
        rec.index.use_kernel = True
