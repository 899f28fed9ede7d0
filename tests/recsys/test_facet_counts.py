"""Facet counts (issue 31, point 3) on the planted catalogue, where every count is known: 4
colours x 2 styles x 3 categories x 2 brands, one item each (tests/planted.py).

The items counted are those an explanation calls matched (`recsys.query_match`): held equal to
`explain_items` on every item for queries that match some, all or none of the catalogue. Counts
are disjunctive: a key's own filter is left out of its counts, every other one applies.
"""

from __future__ import annotations

import numpy as np
import pytest

import recsys.facet_counts as facet_counts
import recsys.item_bits as item_bits
from recsys.errors import InputError
from recsys.explain import explain_items
from recsys.facet_counts import FacetCount, FacetCounter, FacetValue, _joined, _key_table
from recsys.item_bits import count_items, pack_items, unpack_items
from recsys.kernels import compiled
from recsys.synonyms import SynonymBook, parse_synonyms
from tests.planted import CATEGORIES, COLORS, STYLES


def _counts(rec, query, **kw) -> tuple[int, dict[str, dict[str, int]]]:
    got = rec.facet_counts(query, **kw)
    return got.matching, {f.key: {v["value"]: v["count"] for v in f.values} for f in got.facets}


@pytest.mark.parametrize("use_kernel", [True, False], ids=["compiled", "numpy"])
@pytest.mark.parametrize("query", ["red dress", "scarlet gown", "acme", "formal shoes blue", "zxqv blorf",
                                   "the of", "dres"])
def test_matching_items_are_the_explanations_matched_ones(planted_model, query, use_kernel):
    rec = planted_model
    if use_kernel and compiled() is None:
        pytest.skip("numba is not installed")
    state = rec.index.query_state(query)
    everything = np.arange(rec.catalog.n_items)
    explained = explain_items(rec.index, state, everything, np.ones(len(rec.facets), dtype=np.float32))
    expected = np.array([e.matched for e in explained])
    if not expected.any():  # answered by prior: the listing is the whole ranking
        expected[:] = True
    rec.index.use_kernel = use_kernel
    try:
        rec.facet_counter.matches.word_items.clear()
        assert (rec.facet_counter.matches.mask(state) == expected).all()
        # from the per-word cache (a state of its own: the last state's items are kept apart)
        again = rec.index.queries.query_state(query)
        assert (rec.facet_counter.matches.mask(again) == expected).all()
        mine = rec.facet_counter.matches.matching(again)
        mine[:] = 0  # each caller's own array: the kept one is not changed
        assert (rec.facet_counter.matches.mask(again) == expected).all()
    finally:
        rec.index.use_kernel = True
        rec.facet_counter.matches.word_items.clear()


@pytest.mark.parametrize("use_kernel", [True, False], ids=["compiled", "numpy"])
@pytest.mark.parametrize("dense_share", [0.0, 0.3, 2.0], ids=["bits", "both", "lists"])
def test_value_counts_equal_a_count_item_by_item(planted_model, use_kernel, dense_share):
    """A value's count (`_KeyTable.counts`) is how many selected items a filter on the value
    selects, whether the value's items are kept as bits or as a list (a colour holds a quarter
    of the items: a list at a share of 0.3, a category's third bits), compiled or in numpy."""
    rec = planted_model
    if use_kernel and compiled() is None:
        pytest.skip("numba is not installed")
    kernels = compiled() if use_kernel else None
    n = rec.catalog.n_items
    rng = np.random.default_rng(31)
    selections = [np.ones(n, dtype=bool), np.zeros(n, dtype=bool), rng.random(n) < 0.5, rng.random(n) < 0.1]
    kinds = set()
    for key in [*rec.facet_counter.default_keys(), "other"]:
        table = _key_table(rec.index, key, dense_share)
        kinds |= {"bits"} if len(table.dense) else set()
        kinds |= {"lists"} if len(table.items) else set()
        for selected in selections:
            expected = [int((selected & rec._filter_mask(key, [v])).sum()) for v in table.values]
            assert table.counts(pack_items(selected), kernels).tolist() == expected, (key, dense_share)
    assert kinds == {"bits": {"bits"}, "both": {"bits", "lists"}, "lists": {"lists"}}[
        {0.0: "bits", 0.3: "both", 2.0: "lists"}[dense_share]]


def _one_key(key, table, counts, max_values) -> FacetCount:
    """A key's listing as counted one key at a time: the most counted first, ties by value."""
    order = np.argsort(-counts, kind="stable")[: np.count_nonzero(counts)]
    shown = order[:max_values]
    return FacetCount(key, [FacetValue(value=table.values[g], count=int(counts[g]),
                                       name=(table.names[g] if table.names else None) or table.values[g])
                            for g in shown],
                      max(len(order) - max_values, 0))


@pytest.mark.parametrize("numpy_sorted", [0, 512], ids=["numpy", "python"])
@pytest.mark.parametrize("max_values", [2, 100])
def test_keys_counted_together_list_what_each_counted_alone_does(planted_model, monkeypatch, max_values,
                                                                 numpy_sorted):
    """Keys counted over one selection are counted as one joined table (`_joined`, one compiled
    pass): each key's listing (order, ties by value, what is cut past MAX_VALUES and how many)
    equals its own table's, sorted by numpy, whichever way `_facets` sorts a key."""
    rec = planted_model
    monkeypatch.setattr(facet_counts, "MAX_VALUES", max_values)
    monkeypatch.setattr(facet_counts, "NUMPY_SORTED", numpy_sorted)
    kernels = compiled()
    keys = [*rec.facet_counter.default_keys(), "other"]
    tables = [_key_table(rec.index, key, 0.3) for key in keys]  # both bits and lists
    table, starts = _joined(tables)
    rng = np.random.default_rng(5)
    cut = []
    for share in (1.0, 0.4, 0.05, 0.0):
        packed = pack_items(rng.random(rec.catalog.n_items) < share)
        got = facet_counts._facets(keys, table.values, table.counts(packed, kernels), starts, table.names)
        assert got == [_one_key(k, t, t.counts(packed, kernels), max_values) for k, t in zip(keys, tables)]
        cut.append(sum(f.more for f in got))
    assert (cut[0] > 0) == (max_values == 2) and cut[-1] == 0  # four colours: two listed, two more


@pytest.mark.parametrize("popcount", [True, False], ids=["bitwise_count", "unpacked"])
def test_items_are_counted_from_their_bits(monkeypatch, popcount):
    """`count_items` (how many a selection holds; a dense value's count in numpy) gives the same
    counts by numpy 2's popcount and by unpacking the bits; 130 items leave a word part-filled."""
    if not popcount:
        monkeypatch.setattr(item_bits, "_BIT_COUNT", None)
    elif item_bits._BIT_COUNT is None:
        pytest.skip("numpy before 2.0 has no bitwise_count")
    masks = np.random.default_rng(7).random((4, 130)) < np.array([[0.0], [0.3], [0.9], [1.0]])
    bits = np.stack([pack_items(m) for m in masks])
    assert count_items(bits).tolist() == masks.sum(axis=1).tolist() == [0, *masks.sum(axis=1)[1:3], 130]
    assert [int(count_items(b)) for b in bits] == masks.sum(axis=1).tolist()
    assert all((unpack_items(b, 130) == m).all() for b, m in zip(bits, masks))


def test_cleared_items_leave_the_others_selected():
    """`clear_items` unselects exactly the items given, a repeat or two in one word included."""
    mask = np.random.default_rng(3).random(200) < 0.7
    hidden = np.array([0, 1, 63, 64, 64, 130, 199, 5, 1])
    bits = pack_items(mask)
    item_bits.clear_items(bits, hidden)
    expected = mask.copy()
    expected[hidden] = False
    assert (unpack_items(bits, 200) == expected).all()


def test_items_rules_hide_are_not_counted(planted_model):
    """Counts under rules leave out the items they hide, as the ranking does, and are kept
    apart from the counts without them; a query's own hide counts for that query only."""
    from datetime import datetime

    from recsys.rules import Rule, RuleBook
    rec = planted_model
    rec.facet_counter.answers.clear()
    book = RuleBook([Rule("no-red", "hide", attribute="color:red"),
                     Rule("no-blue-gown", "hide", attribute="color:blue", match="contains", query="gown")])
    book.items(rec.catalog)
    now = datetime(2026, 12, 6)
    for query in ("dress", "blue gown"):
        rules = book.for_query(query, rec.catalog, now)
        hidden = [rec.catalog.item_ids[i] for i in rules.hidden.tolist()]
        assert len(hidden) == (12 if query == "dress" else 24)
        under_rules = _counts(rec, query, rules=rules)
        assert under_rules == _counts(rec, query, exclude=hidden)
        assert "red" not in under_rules[1]["color"] and ("blue" in under_rules[1]["color"]) == (query == "dress")
        assert _counts(rec, query)[1]["color"]["red"] > 0  # without the rules: not the kept answer


def test_a_query_that_matches_nothing_counts_every_item(planted_model):
    matching, counts = _counts(planted_model, "zxqv blorf")
    n = planted_model.catalog.n_items
    assert matching == n
    assert counts["color"] == {c: n // len(COLORS) for c in COLORS}
    assert counts["category"] == {c: n // len(CATEGORIES) for c in CATEGORIES}


def test_default_keys_are_the_catalogues_columns(planted_model):
    # the planted items' columns (item_id and title aside); `other` is listed by its keys
    assert planted_model.facet_counter.default_keys() == ["category", "color", "price", "quality", "style"]


def test_counts_are_disjunctive(planted_model):
    rec = planted_model
    per_combo = rec.catalog.n_items // (len(COLORS) * len(STYLES) * len(CATEGORIES))  # brands
    dress = rec.catalog.n_items // len(CATEGORIES)
    matching, counts = _counts(rec, "dress")
    assert matching == dress and counts["category"] == {"dress": dress}
    # a filter on colour: colour still counts every colour of the dresses, the others red ones
    matching, counts = _counts(rec, "dress", filters={"colour": ["red"]})
    assert matching == per_combo * len(STYLES)
    assert counts["color"] == {c: per_combo * len(STYLES) for c in COLORS}
    assert counts["style"] == {s: per_combo for s in STYLES}
    # two keys filtered: each counts under the other's filter alone
    matching, counts = _counts(rec, "dress", filters={"color": ["red", "blue"], "style": ["formal"]})
    assert matching == 2 * per_combo
    assert counts["color"] == {c: per_combo for c in COLORS}
    assert counts["style"] == {s: 2 * per_combo for s in STYLES}
    assert counts["category"] == {"dress": 2 * per_combo}


def test_exclusions_and_candidates_restrict_the_counts(planted_model):
    rec = planted_model
    red_dresses = [rec.catalog.item_ids[i] for i in range(rec.catalog.n_items)
                   if {"red", "category:dress"} <= {a for labels in rec.catalog.attribute_labels(i).values()
                                                    for a in labels}]
    _, counts = _counts(rec, "dress", keys=["color"], candidates=red_dresses[:3])
    assert counts == {"color": {"red": 3}}
    matching, counts = _counts(rec, "dress", keys=["Colour"], exclude=red_dresses)
    assert "red" not in counts["color"] and matching == rec.catalog.n_items // len(CATEGORIES) - len(red_dresses)


def test_an_unknown_key_is_named(planted_model):
    with pytest.raises(InputError, match=r"facet_counts: unknown key 'colr'; count one of: category, color"):
        planted_model.facet_counts("dress", keys=["colr"])


def test_a_listing_asked_again_is_answered_from_its_kept_counts(planted_model):
    rec = planted_model
    kept = rec.facet_counter.answers
    kept.clear()
    first = rec.facet_counts("dress", filters={"colour": ["red"]})
    assert rec.facet_counts("dress", filters={"Colour": ["red"]}) is first  # the filter's any spelling
    # another filter, other keys or other words are other listings, counted afresh and right
    other = rec.facet_counts("dress", filters={"colour": ["blue"]})
    assert other is not first and {v["value"]: v["count"] for v in other.facets[0].values} != {}
    assert rec.facet_counts("dress", keys=["color"], filters={"colour": ["red"]}) is not first
    assert rec.facet_counts("shirt", filters={"colour": ["red"]}) is not first
    assert len(kept) == 4
    fresh = FacetCounter(rec.index).count(rec.index.query_state("dress"), None, None,
                                          {"color": rec.facet_counter.filter_masks.get(
                                              rec.facet_counter.filter_name("colour", ["red"]))})
    assert first == fresh


def test_exclusions_are_part_of_what_is_kept_and_candidates_never_kept(planted_model):
    rec = planted_model
    rec.facet_counter.answers.clear()
    some = rec.catalog.item_ids[:3]
    without = rec.facet_counts("dress")
    excluded = rec.facet_counts("dress", exclude=some)
    assert excluded is not without and rec.facet_counts("dress", exclude=some[::-1]) is excluded
    rec.facet_counts("dress", candidates=some)
    assert len(rec.facet_counter.answers) == 2


def test_a_new_synonym_is_counted_at_once(planted_model):
    rec = planted_model
    rec.facet_counter.answers.clear()
    before = _counts(rec, "navy")[1]["color"]
    assert len(before) == len(COLORS)  # "navy" matches nothing: every item counts
    try:
        rec.use_synonyms(SynonymBook(parse_synonyms("navy => blue\n")))
        assert _counts(rec, "navy")[1]["color"] == {"blue": rec.catalog.n_items // len(COLORS)}
    finally:
        rec.use_synonyms(None)
    assert _counts(rec, "navy")[1]["color"] == before



def test_a_facets_own_column_lists_its_values_alone():
    """A `quality` column and a `rating` column both fill the quality facet: the listing of
    `quality` is the column's values (the ratings' bands are `rating`'s), and a value's count is
    still what a filter on it selects."""
    import pandas as pd

    from recsys.catalog import Catalog
    from training.config import TrainConfig
    from training.start import untrained_recommender

    n = 12
    items = pd.DataFrame({"item_id": [f"I{i}" for i in range(n)], "title": ["dress"] * n,
                          "quality": ["premium", "budget", "standard"] * 4,
                          "rating": [str(x) for x in np.linspace(2.0, 5.0, n).round(1)]})
    catalog = Catalog.build(items)
    assert {a.key.lstrip("#") for a in catalog.vocab["quality"]} == {"quality", "rating"}  # one facet
    rec = untrained_recommender(catalog, pd.DataFrame({"query": [], "item_idx": [], "label": [], "weight": []}),
                                TrainConfig())
    matching, counts = _counts(rec, "dress")
    assert matching == n
    assert counts["quality"] == {"premium": 4, "budget": 4, "standard": 4}
    assert sum(counts["rating"].values()) == n and not set(counts["rating"]) & set(counts["quality"])
    assert rec.facet_counts("dress", filters={"quality": ["premium"]}).matching == 4


def test_colours_named_only_in_titles_are_listed_as_the_colour_facet():
    """A catalogue with no colour column whose titles name colours (CrowdFlower's shape): the
    lexicon reads them into the colour facet (keys "title", "description"), and `color` is listed
    with them, each counted as a filter on it selects; the quality facet's `rating` bands stay
    `rating`'s alone, and the text's own words (`other`) are no listing."""
    import pandas as pd

    from recsys.catalog import Catalog
    from training.config import TrainConfig
    from training.start import untrained_recommender

    titles = ["Crimson Cotton Dress", "Navy Blue Linen Dress", "Red Maxi Dress", "Plain Dress",
              "Black Party Dress", "Dress with pockets"]
    items = pd.DataFrame({"item_id": [f"I{i}" for i in range(6)], "title": titles,
                          "description": ["", "", "", "a dress in jet black", "", ""],
                          "rating": ["4.5", "3.0", "4.0", "2.5", "5.0", "3.5"]})
    catalog = Catalog.build(items)
    assert {a.key for a in catalog.vocab["color"]} <= {"title", "description"}  # read out of the text
    rec = untrained_recommender(catalog, pd.DataFrame({"query": [], "item_idx": [], "label": [], "weight": []}),
                                TrainConfig())
    keys = rec.facet_counter.default_keys()
    assert "color" in keys and "other" not in keys and "quality" not in keys and "rating" in keys
    matching, counts = _counts(rec, "dress")
    assert matching == 6
    assert counts["color"] == {"red": 2, "blue": 1, "black": 2}  # crimson is red; jet black in a description
    for value, n in counts["color"].items():
        assert rec.facet_counts("dress", filters={"color": [value]}).matching == n


def test_colours_read_from_titles_beside_a_colour_column_of_another_name_are_no_listing():
    """Fashion's shape: a `baseColour` column fills the colour facet, listed under its own key;
    the few colours the lexicon reads out of titles of items without one do not make a second,
    partial `color` listing."""
    import pandas as pd

    from recsys.catalog import Catalog
    from training.config import TrainConfig
    from training.start import untrained_recommender

    items = pd.DataFrame({"item_id": ["I0", "I1", "I2"], "title": ["Shirt", "Crimson Shirt", "Shirt"],
                          "baseColour": ["Navy Blue", "", "White"]})
    catalog = Catalog.build(items)
    assert {a.key for a in catalog.vocab["color"]} == {"basecolour", "title"}
    rec = untrained_recommender(catalog, pd.DataFrame({"query": [], "item_idx": [], "label": [], "weight": []}),
                                TrainConfig())
    keys = rec.facet_counter.default_keys()
    assert "basecolour" in keys and "color" not in keys
