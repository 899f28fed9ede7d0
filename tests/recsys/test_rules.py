"""Merchandising rules in the library: what each kind changes on the planted catalogue, the
scoped and windowed ones doing nothing outside their scope, additivity with rules, and the
ranking with rules held equal to the reference (every item scored, then the pins placed)."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pytest

from recsys.explain import additivity_gap
from recsys.kernels import compiled
from recsys.recommender import Recommender
from recsys.rules import (
    Adjustments,
    Rule,
    RuleBook,
    RuleError,
    check_rule,
    matching_items,
    place_pins,
)

from .test_index import _index, _items

NOW = datetime(2026, 12, 4, 12, 0)
QUERY = "scarlet gown"


def adjust(rec, *rules, query=QUERY, now=NOW):
    return RuleBook(rules).for_query(query, rec.catalog, now)


def color(rec, item_id):
    return rec.catalog.attribute_labels(rec.catalog.idx(item_id)).get("color", [])


def matched(rec, query):
    """(n_items,) bool: the items some word of `query` matches, read from their explanations."""
    every = rec.recommend(query, k=rec.catalog.n_items)
    out = np.zeros(rec.catalog.n_items, dtype=bool)
    out[[rec.catalog.idx(it.item_id) for it in every.items if it.explanation.matched]] = True
    return out


def reference(rec, query, rules, k, offset=0, filters=None):
    """Every item scored, plus its boosts and buries; hidden and filtered ones out; then pins. A
    boost acts on the items the query matches (all of them where it matches none, or has no
    word)."""
    scores = rec.scores(query).astype(np.float64)
    mask = np.ones(rec.catalog.n_items, dtype=bool) if not filters else rec.catalog.filter_mask(filters)
    boosted = matched(rec, query)
    if not boosted.any():
        boosted[:] = True
    pins = []
    for r in rules.rules if rules is not None else []:
        ix = matching_items(r, rec.catalog)
        if r.delta > 0:
            ix = ix[boosted[ix]]
        scores[ix] += r.delta
        if r.kind == "hide":
            mask[ix] = False
    for r in rules.rules if rules is not None else []:
        ix = matching_items(r, rec.catalog)
        if r.kind == "pin" and ix.size and mask[ix[0]]:
            pins.append((min(r.position, int(mask.sum())), int(ix[0])))
    pins.sort(key=lambda p: p[0])
    first = {}
    for p, i in pins:  # an item two rules pin is placed once, at the higher place
        first.setdefault(i, p)
    pins = list(dict.fromkeys((p, i) for p, i in pins if first[i] == p))
    free = mask.copy()
    free[[i for _, i in pins]] = False
    idx = np.flatnonzero(free)
    order = idx[np.lexsort((idx, -scores[idx]))]
    shown = place_pins(order, pins, offset + k)[offset:]
    return [rec.catalog.item_ids[i] for i in shown.tolist()]


def ids(result):
    return [it.item_id for it in result.items]


def test_boost_lifts_exactly_the_matching_items_by_the_amount(planted_model):
    rec = planted_model
    before = {it.item_id: it.score for it in rec.recommend(QUERY, k=48).items}
    found = matched(rec, QUERY)
    rule = Rule("blue-week", "boost", attribute="color:blue", amount=5.0)
    after = rec.recommend(QUERY, k=48, rules=adjust(rec, rule))
    lifted = [it.item_id for it in after.items if color(rec, it.item_id) == ["blue"]
              and found[rec.catalog.idx(it.item_id)]]  # blue, and a word of the query matches it
    assert 0 < len(lifted) < sum(color(rec, it.item_id) == ["blue"] for it in after.items)
    for it in after.items:
        lift = it.score - before[it.item_id]
        assert lift == pytest.approx(5.0 if it.item_id in lifted else 0.0, abs=1e-5)
        assert additivity_gap(it.score, it.explanation) is None
        named = [r.name for r in it.explanation.rules]
        assert named == (["blue-week"] if it.item_id in lifted else [])
    assert set(ids(after)[:len(lifted)]) == set(lifted)  # lifted over the red gowns


def test_a_boost_for_any_query_never_lifts_what_the_query_does_not_match(planted_model):
    """A brand's boost for every search put its items that match nothing ("cheddar": oat drinks)
    above every real result; a bury still sinks them, and a home page is boosted whole."""
    rec = planted_model
    plain = rec.recommend("gown", k=48)
    gowns = {it.item_id for it in plain.items if it.explanation.matched}
    assert 0 < len(gowns) < 48
    other = next(it.item_id for it in plain.items if it.item_id not in gowns)
    rules = adjust(rec, Rule("lift", "boost", item_id=other, amount=50.0),
                   Rule("sink", "bury", item_id=other, amount=0.25), query="gown")
    got = rec.recommend("gown", k=48, rules=rules)
    assert set(ids(got)[:len(gowns)]) == gowns  # the boost did not lift it above them
    moved = next(it for it in got.items if it.item_id == other)
    before = next(it for it in plain.items if it.item_id == other)
    assert [r.name for r in moved.explanation.rules] == ["sink"]
    assert moved.score == pytest.approx(before.score - 0.25, abs=1e-5)
    assert additivity_gap(moved.score, moved.explanation) is None
    detail = rec.explain("gown", other, rules=rules)
    assert [r.name for r in detail.rules] == ["sink"] and detail.score == pytest.approx(moved.score, abs=1e-5)
    # a page with no query word is boosted whole
    home = rec.recommend("", k=3, rules=adjust(rec, Rule("lift", "boost", item_id=other, amount=50.0), query=""))
    assert ids(home)[0] == other and [r.name for r in home.items[0].explanation.rules] == ["lift"]


def test_bury_sinks_the_matching_items(planted_model):
    rec = planted_model
    rule = Rule("no-red", "bury", attribute="color:red", amount=50.0)
    got = rec.recommend(QUERY, k=48, rules=adjust(rec, rule))
    assert all(color(rec, i) == ["red"] for i in ids(got)[-12:])
    assert all(it.explanation.rules[0].amount == -50.0 for it in got.items[-12:])
    assert all(additivity_gap(it.score, it.explanation) is None for it in got.items)


def test_hide_removes_the_matching_items_and_counts_them_out(planted_model):
    rec = planted_model
    rule = Rule("no-dresses", "hide", attribute="category:dress")
    got = rec.recommend(QUERY, k=48, rules=adjust(rec, rule))
    assert got.total == 48 - 16 and len(got.items) == 32
    dresses = rec.catalog.filter_mask({"category": ["dress"]})
    assert not any(dresses[rec.catalog.idx(i)] for i in ids(got))


def test_pin_places_the_item_and_says_so(planted_model):
    rec = planted_model
    plain = ids(rec.recommend(QUERY, k=10))
    last = ids(rec.recommend(QUERY, k=48))[-1]
    got = rec.recommend(QUERY, k=10, rules=adjust(rec, Rule("pin-it", "pin", item_id=last, position=3)))
    assert ids(got) == plain[:2] + [last] + plain[2:9]
    pinned = got.items[2]
    assert [(r.kind, r.amount, r.position) for r in pinned.explanation.rules] == [("pin", None, 3)]
    assert "pinned at position 3" in pinned.explanation.summary
    assert additivity_gap(pinned.score, pinned.explanation) is None
    # the second page goes on where the first stopped, the pinned item not shown again
    second = rec.recommend(QUERY, k=10, offset=10, rules=adjust(rec, Rule("pin-it", "pin", item_id=last, position=3)))
    assert ids(second) == ids(rec.recommend(QUERY, k=20))[9:19]


def test_an_item_two_rules_pin_is_listed_once_at_the_higher_place(planted_model):
    rec = planted_model
    plain = ids(rec.recommend(QUERY, k=10))
    last = ids(rec.recommend(QUERY, k=48))[-1]
    rules = adjust(rec, Rule("low", "pin", item_id=last, position=5), Rule("high", "pin", item_id=last, position=2),
                   Rule("again", "pin", item_id=last, position=2))
    got = rec.recommend(QUERY, k=10, rules=rules)
    assert ids(got) == plain[:1] + [last] + plain[1:9]  # once: it took two places of one answer
    pinned = got.items[1]
    assert [(r.name, r.position) for r in pinned.explanation.rules] == [("high", 2), ("again", 2)]
    assert "position 5" not in pinned.explanation.summary
    assert ids(rec.recommend(QUERY, k=10, offset=10, rules=rules)) == ids(rec.recommend(QUERY, k=20))[9:19]


def test_a_pin_shown_elsewhere_than_its_position_says_where_and_why(planted_model):
    rec = planted_model
    ranked = ids(rec.recommend(QUERY, k=48))
    first, second = ranked[-1], ranked[-2]
    rules = adjust(rec, Rule("a", "pin", item_id=first, position=3), Rule("b", "pin", item_id=second, position=3))
    got = rec.recommend(QUERY, k=10, rules=rules)
    assert ids(got)[2:4] == [first, second]
    assert got.items[2].explanation.summary.endswith("pinned at position 3 by rule 'a'")
    assert got.items[3].explanation.summary.endswith(
        "pinned at position 3 by rule 'b', shown 4th: another pin holds position 3"), got.items[3].explanation.summary
    # five candidates: a pin at 8 closes up to the end
    few = rec.recommend(QUERY, k=10, candidates=ranked[:4] + [first],
                        rules=adjust(rec, Rule("far", "pin", item_id=first, position=8)))
    assert ids(few)[-1] == first and few.items[-1].rank == 5
    assert few.items[-1].explanation.summary.endswith(
        "pinned at position 8 by rule 'far', shown 5th: fewer than 8 results"), few.items[-1].explanation.summary


def test_scope_and_window(planted_model):
    rec = planted_model
    exact = Rule("e", "hide", attribute="color:red", match="exact", query="Scarlet  GOWN")
    word = Rule("w", "hide", attribute="color:red", match="contains", query="gown")
    assert adjust(rec, exact) is not None and adjust(rec, word) is not None
    assert adjust(rec, exact, query="scarlet gown sale") is None
    assert adjust(rec, word, query="red gownless") is None  # a word, not a prefix
    assert adjust(rec, word, query="long gown, red") is not None
    # as search reads words: accents and word endings ignored (a pin on "sartén" missed
    # "sarten", one on "lámpara" missed "lámparas", a shop's first hour)
    assert adjust(rec, word, query="red gowns") is not None
    accented = Rule("a", "hide", attribute="color:red", match="exact", query="Sartén Honda")
    assert adjust(rec, accented, query="sarten  hondas") is not None
    assert adjust(rec, Rule("l", "hide", attribute="color:red", match="contains", query="lámpara"),
                  query="lamparas de mesa") is not None
    timed = Rule("t", "hide", attribute="color:red", start=NOW, end=NOW + timedelta(hours=1))
    assert adjust(rec, timed) is not None
    assert adjust(rec, timed, now=NOW - timedelta(seconds=1)) is None
    assert adjust(rec, timed, now=NOW + timedelta(hours=1)) is None  # the end is exclusive


@pytest.mark.parametrize("use_kernel", [True, False], ids=["compiled", "numpy"])
@pytest.mark.parametrize("seed", range(6))
def test_ranking_with_rules_equals_the_reference(planted_model, seed, use_kernel):
    _ranks_as_the_reference(planted_model, seed, use_kernel, ("scarlet gown", "blue kicks", ""),
                            {"style": ["casual"]}, ("red", "blue", "green"), ("dress", "shirt"))


@pytest.fixture(scope="module")
def big_recommender(tmp_path_factory):
    """The index tests' catalogue of 720 items (copies: ties), where the pruned top-k prunes."""
    index = _index(tmp_path_factory.mktemp("big-rules"), _items(copies=12), seed=1)
    return Recommender(index.model, index.featurizer)


@pytest.mark.parametrize("use_kernel", [True, False], ids=["compiled", "numpy"])
@pytest.mark.parametrize("seed", range(4))
def test_ranking_with_any_query_rules_equals_the_reference_where_it_prunes(big_recommender, seed, use_kernel):
    """Boosts and buries for any query are the index's per-item offsets (`ScoringIndex.offsets`):
    on a catalogue where its top-k prunes, the answer is still every item ranked."""
    _ranks_as_the_reference(big_recommender, seed, use_kernel, ("red", "navy blue dining chair", "acme dress", ""),
                            {"style": ["formal"]}, ("red", "blue", "green"), ("dress", "dining table"))


def _ranks_as_the_reference(rec, seed, use_kernel, queries, some_filters, colors, categories):
    if use_kernel and compiled() is None:
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(seed)
    items = rec.catalog.item_ids
    rules = [
        Rule("b", "boost", attribute=f"color:{rng.choice(colors)}", amount=float(rng.uniform(0.1, 3))),
        Rule("u", "bury", attribute=f"category:{rng.choice(categories)}", amount=float(rng.uniform(0.1, 3))),
        Rule("b2", "boost", item_id=items[int(rng.integers(len(items)))], amount=1.0),
        Rule("h", "hide", item_id=items[int(rng.integers(len(items)))]),
        Rule("p1", "pin", item_id=items[int(rng.integers(len(items)))], position=int(rng.integers(1, 6))),
        Rule("p2", "pin", item_id=items[int(rng.integers(len(items)))], position=int(rng.integers(1, 6))),
        # a query's own rules, on top of those for any query: the same items boosted again, one
        # of them hidden or pinned
        Rule("sb", "boost", attribute=f"color:{rng.choice(colors)}", amount=float(rng.uniform(0.1, 3)),
             match="contains", query=queries[0].split()[-1]),
        Rule("su", "bury", attribute=f"category:{rng.choice(categories)}", amount=float(rng.uniform(0.1, 3)),
             match="exact", query=queries[1]),
        Rule("sh", "hide", item_id=items[int(rng.integers(len(items)))], match="exact", query=queries[1]),
        Rule("sp", "pin", item_id=items[int(rng.integers(len(items)))], position=int(rng.integers(1, 6)),
             match="contains", query=queries[0].split()[-1]),
    ]
    filters = some_filters if seed % 2 else None
    rec.index.use_kernel = use_kernel
    try:
        for query in queries:
            a = adjust(rec, *rules, query=query)
            assert (a.base is not None) == (query in queries[:2])  # the query's own rules on a base
            for k, offset in ((5, 0), (10, 3), (70, 0)):
                got = rec.recommend(query, k=k, offset=offset, filters=filters, rules=a)
                assert ids(got) == reference(rec, query, a, k, offset, filters)
                assert all(additivity_gap(it.score, it.explanation) is None for it in got.items)
    finally:
        rec.index.use_kernel = True


def test_explain_and_compare_carry_the_rules(planted_model):
    rec = planted_model
    a_id, b_id = "P000", "P001"
    rules = adjust(rec, Rule("lift", "boost", item_id=a_id, amount=2.5), Rule("top", "pin", item_id=b_id, position=1))
    plain = rec.explain(QUERY, a_id)
    detail = rec.explain(QUERY, a_id, rules=rules)
    assert detail.score == pytest.approx(plain.score + 2.5)
    assert detail.score == pytest.approx(detail.prior + sum(h.contribution for h in detail.heads) + 2.5)
    cmp = rec.compare(QUERY, a_id, b_id, rules=rules)
    assert [r.name for r in cmp.rules_a] == ["lift"] and [r.kind for r in cmp.rules_b] == ["pin"]
    assert "rules +2.50" in cmp.summary and "pinned at position 1" in cmp.summary
    assert cmp.summary.count("rules +2.50") == 1, cmp.summary  # named once, as the part or as its share


def test_check_rule_names_the_field(planted_model):
    cat = planted_model.catalog
    bad = [
        (Rule("x", "boost", attribute="flavour:red", amount=1.0), "attribute"),
        (Rule("x", "boost", attribute="red", amount=1.0), "attribute"),
        (Rule("x", "pin", item_id="P000", position=0), "position"),
        (Rule("x", "boost", attribute="color:red"), "amount"),
        (Rule("x", "hide", attribute="color:red", start=NOW, end=NOW - timedelta(days=1)), "end"),
        (Rule("x", "hide", attribute="color:red", match="exact"), "query"),
        (Rule("x", "shout", attribute="color:red"), "kind"),
    ]
    for rule, field in bad:
        with pytest.raises(RuleError) as err:
            check_rule(rule, cat)
        assert err.value.field == field, (rule, str(err.value))
    assert check_rule(Rule("x", "boost", attribute="color:red", amount=1.0), cat) is None
    warning = check_rule(Rule("x", "boost", attribute="color:purple", amount=1.0), cat)
    assert warning and "no item of the catalogue has color:purple" in warning
    assert "not in the catalogue" in (check_rule(Rule("x", "pin", item_id="NOPE", position=1), cat) or "")


@pytest.mark.parametrize("own", [1, 2, 3])
def test_a_query_s_layer_sums_its_boosts_over_the_base_as_one_array_would(own):
    """A query's own layer of one boost is summed without an array over the catalogue; with
    any number it is what summing every rule, base first, into one array gives, to the bit."""
    rng = np.random.default_rng(own)
    n = 5_000
    base_rules = [Rule(name=f"b{i}", kind="boost" if i % 3 else "bury", attribute="color:red",
                       amount=0.1 + 0.37 * i) for i in range(4)]
    base_items = [np.sort(rng.choice(n, 900, replace=False)) for _ in base_rules]
    base = Adjustments(base_rules, base_items, n, None, indexed=True)
    rules = [Rule(name=f"q{i}", kind="boost", attribute="brand:x", amount=0.3 + 0.11 * i, match="word",
                  query="sofa") for i in range(own)]
    items = [np.sort(rng.choice(n, 700, replace=False)) for _ in rules]
    layer = Adjustments(rules, items, n, base)
    summed = np.zeros(n)
    for r, ix in zip([*base_rules, *rules], [*base_items, *items]):
        summed[ix] += r.delta
    touched = np.unique(np.concatenate(items))
    assert layer.offset_items.tolist() == touched.tolist()
    assert layer.offset_values.tolist() == summed[touched].tolist()
    assert layer.apart.tolist() == touched.tolist() and layer.apart_values.tolist() == summed[touched].tolist()


def test_which_items_a_set_raises_is_read_from_its_boosts_and_its_base_s():
    """`Adjustments.raises` (bits for a set for any query, its own rules' items for a query's
    layer) is membership in the union of every boost's items, the base's too, and never a
    bury's: on random sets of several boosts and buries, layered and not."""
    rng = np.random.default_rng(7)
    n = 3_000
    for trial in range(6):
        kinds = ["boost", "bury", "boost", "bury"]
        base_rules = [Rule(name=f"b{i}", kind=k, attribute="color:red", amount=0.5) for i, k in enumerate(kinds)]
        base_items = [np.sort(rng.choice(n, int(rng.integers(1, 800)), replace=False)) for _ in base_rules]
        base = Adjustments(base_rules, base_items, n, None, indexed=True)
        own_rules = [Rule(name=f"q{i}", kind=k, attribute="brand:x", amount=0.2, match="contains", query="sofa")
                     for i, k in enumerate(["bury", "boost", "boost"][: 1 + trial % 3])]
        own_items = [np.sort(rng.choice(n, int(rng.integers(1, 500)), replace=False)) for _ in own_rules]
        layer = Adjustments(own_rules, own_items, n, base)
        asked = rng.choice(n, 1_000)  # repeats and any order
        for adj, pairs in ((base, zip(base_rules, base_items)),
                           (layer, zip([*base_rules, *own_rules], [*base_items, *own_items]))):
            raised = np.zeros(n, dtype=bool)
            for rule, ix in pairs:
                if rule.kind == "boost":
                    raised[ix] = True
            assert adj.raises(asked).tolist() == raised[asked].tolist()
            assert adj.raises(asked[:0]).tolist() == []
