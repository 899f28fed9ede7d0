"""Reason lines that tell the listed items apart, `matched`, `unmatched_tokens` and the wording
`/compare` shares, on the planted catalogue (red/blue/green/black x casual/formal x dress/shirt/
shoes, titled with a brand only; "scarlet gown" means a red dress)."""

from __future__ import annotations

import re

import pytest

from recsys.explain import (
    MATCH_THRESHOLD,
    REASON_MIN,
    Explanation,
    HeadExplanation,
    Match,
    contrast_summaries,
    describe_difference,
    summarize,
)
from recsys.rules import RuleEffect

LISTED = re.compile(r"'([^']+)' matched ([^\s,;)]+)")


def _matches(e: Explanation) -> set[tuple[str, str]]:
    return {(m.query_token, m.attribute) for h in e.heads for m in h.matches}


def test_each_reason_line_names_a_match_its_item_has_and_the_lines_differ(planted_model):
    res = planted_model.recommend("scarlet formal gown", k=10)
    lines = [item.explanation.summary for item in res.items]
    assert len(set(lines)) >= 6, lines
    for item in res.items:
        e = item.explanation
        assert e.matched
        named = LISTED.findall(e.summary)
        assert set(named) <= _matches(e), (e.summary, _matches(e))
        # an item whose matches every result shares is told apart by what differs from a neighbour
        assert named or re.search(r"(against [+-]\d\.\d\d for|as good a match as) the \d+(st|nd|rd|th)",
                                  e.summary), e.summary
    assert sum(bool(LISTED.findall(i.explanation.summary)) for i in res.items) >= 4


def test_a_match_every_result_shares_is_common_ground_not_the_reason(planted_model):
    res = planted_model.recommend("scarlet gown", k=4)
    common = set.intersection(*(_matches(i.explanation) for i in res.items))
    assert ("scarlet", "red") in common  # every top item is red: that tells none of them apart
    for item in res.items:
        head = item.explanation.summary.split(";")[0]
        assert "'scarlet' matched red" not in head, item.explanation.summary


def test_items_with_the_same_matches_are_told_apart_by_the_part_that_differs():
    def expl(prior: float, color: float) -> Explanation:
        return Explanation(prior, "", [HeadExplanation("color", color, [Match("red", "red", 0.9)]),
                                       HeadExplanation("other", 0.0, [])])

    ranking = [expl(0.5, 2.0), expl(0.1, 2.0), expl(0.1, 1.5)]
    contrast_summaries(ranking, [1, 2, 3])
    assert ranking[0].summary == ("ranked 1st: prior +0.50 against +0.10 for the 2nd (a higher prior, learned "
                                  "from its attributes); every result matches 'red' red")
    assert ranking[1].summary.startswith("ranked 2nd: color +2.00 against +1.50 for the 3rd")
    assert ranking[2].summary.startswith("ranked 3rd: color +1.50 against +2.00 for the 2nd")


def test_a_tie_is_never_given_as_a_reason_and_the_same_matches_are_not_blamed_on_length():
    def expl(prior: float, color: float) -> Explanation:
        return Explanation(prior, "", [HeadExplanation("color", color, [Match("red", "red", 0.9, color)]),
                                       HeadExplanation("other", 0.0, [])])

    ranking = [expl(0.1, 2.0), expl(0.1, 2.0), expl(0.1, 1.5)]
    contrast_summaries(ranking, [1, 2, 3])
    assert ranking[0].summary.startswith(f"ranked 1st: as good a match as the 2nd: no part of the score "
                                         f"differs by {REASON_MIN} or more")
    # length, how often the item says the word and its other attributes all weigh a match: the
    # line cannot tell which did, so it names none of them
    assert ranking[2].summary.startswith("ranked 3rd: color +1.50 against +2.00 for the 2nd (the same "
                                         "matches)")
    assert ranking[1].summary.startswith("ranked 2nd: color +2.00 against +1.50 for the 3rd (the same "
                                         "matches)")


def _parts(prior: float, color: float, other: float, rules: list[RuleEffect] = ()) -> Explanation:  # type: ignore[assignment]
    return Explanation(prior, "", [HeadExplanation("color", color, [Match("red", "red", 0.9, color)] if color else []),
                                   HeadExplanation("other", other, [Match("dress", "category:dress", 0.9, other)]
                                                   if other else [])], rules=list(rules))


def test_a_line_names_what_puts_the_item_above_the_next_not_what_holds_it_back():
    # above the 2nd by 0.2: +0.6 colour and +0.6 other, against a prior 1.0 lower
    ahead, behind = _parts(-0.8, 0.6, 0.6), _parts(0.2, 0.0, 0.0)
    line = describe_difference(ahead, behind, "the 2nd")
    assert line.startswith("color +0.60 against +0.00 for the 2nd"), line
    # and below it, what holds it back most
    line = describe_difference(behind, ahead, "the 1st")
    assert line.startswith("color +0.00 against +0.60 for the 1st"), line
    # small gains in every part that add up to more than any one
    many = describe_difference(_parts(0.005, 0.005, 0.005), _parts(0.0, 0.0, 0.0), "the 2nd")
    assert many == f"above the 2nd by 0.01, no part of the score by {REASON_MIN} or more", many


def test_a_rule_is_a_part_of_the_score_the_lines_weigh():
    boost = RuleEffect("toasters", "boost", 0.3, None, "boost 'toasters': +0.30 (type:toaster)")
    ranking = [_parts(0.0, 0.4, 0.0, [boost]), _parts(0.0, 0.4, 0.0)]
    contrast_summaries(ranking, [1, 2])
    assert ranking[0].summary.startswith("ranked 1st: rules +0.30 against +0.00 for the 2nd"), ranking[0].summary
    assert describe_difference(ranking[1], ranking[0], "A").startswith("rules +0.00 against +0.30 for A")


def test_a_pinned_item_is_placed_by_its_pin_and_compared_with_nothing():
    pin = RuleEffect("hero", "pin", None, 1, "pinned at position 1 by rule 'hero'")
    ranking = [_parts(0.0, 0.1, 0.2, [pin]), _parts(0.0, 0.9, 0.2), _parts(0.0, 0.5, 0.2)]
    contrast_summaries(ranking, [1, 2, 3])
    assert "against" not in ranking[0].summary, ranking[0].summary
    # the 2nd is compared with the 3rd, not with the pinned 1st it outscores
    assert ranking[1].summary.startswith("ranked 2nd: color +0.90 against +0.50 for the 3rd"), ranking[1].summary
    assert ranking[2].summary.startswith("ranked 3rd: color +0.50 against +0.90 for the 2nd"), ranking[2].summary
    # a pinned item that matches less: what the others share is still common ground, not a reason
    ranking = [_parts(0.0, 0.0, 0.2, [pin]), _parts(0.0, 0.9, 0.2), _parts(0.0, 0.5, 0.2)]
    contrast_summaries(ranking, [1, 2, 3])
    assert "'red' matched red (color" not in ranking[1].summary + ranking[2].summary
    assert ranking[1].summary.endswith("; every result not pinned matches 'dress' category:dress, 'red' red"), \
        ranking[1].summary


@pytest.mark.parametrize("query", ["the and for", ""])
def test_a_search_with_no_word_to_match_says_so_not_that_its_words_matched_nothing(planted_model, query):
    """Stop words alone (or nothing) leave no word that could have matched: every line says so,
    in a list and on its own."""
    res = planted_model.recommend(query, k=3)
    assert res.tokens == []
    for item in res.items:
        assert item.explanation.summary.startswith(f"ranked {item.rank}"), item.explanation.summary
        assert "the search has no word to match (prior" in item.explanation.summary
        assert "no query word matched" not in item.explanation.summary
    alone = planted_model.recommend(query, k=1).items[0].explanation  # one item: `summarize`
    assert alone.summary.startswith("ranked 1st: the search has no word to match (prior"), alone.summary
    # a word no item has is a word that matched nothing
    missed = planted_model.recommend("zxqvw", k=3)
    assert all("no query word matched its attributes" in i.explanation.summary for i in missed.items)


def test_an_item_without_a_match_is_not_said_to_be_ranked_on_its_prior_alone():
    # the heads gave it something (a word's pull below a match), the prior nothing
    weak = Explanation(0.0, "", [HeadExplanation("color", 0.036, []), HeadExplanation("other", 0.0, [])])
    weaker = Explanation(0.0, "", [HeadExplanation("color", 0.02, []), HeadExplanation("other", 0.0, [])])
    assert summarize(weak.heads, weak.prior, 5) == ("ranked 5th: no query word matched its attributes "
                                                    "(prior +0.00, attention below a match +0.04)")
    ranking = [weak, weaker]
    contrast_summaries(ranking, [5, 6])
    assert ranking[0].summary == ("ranked 5th: no query word matched its attributes (prior +0.00, attention "
                                  "below a match +0.04); color +0.04 against +0.02 for the 6th")
    assert ranking[1].summary == ("ranked 6th: no query word matched its attributes (prior +0.00, attention "
                                  "below a match +0.02); color +0.02 against +0.04 for the 5th")


def _worth_by_erasure(model, query: str, item_id: str) -> dict[tuple[str, str], float]:
    """The reference: (query word, attribute) -> what erasing the attribute costs the score
    (`/explain`'s erasure, one item at a time)."""
    detail = model.explain(query, item_id)
    out = {}
    for h in detail.heads:
        cost = {x.attribute: -x.score_change for x in h.erasure}
        for m in h.matches:
            out[(m.query_token, m.attribute)] = cost[m.attribute]
    return out


WORTH = re.compile(r"'([^']+)' matched (\S+) \((\w+), worth (-?\d+\.\d\d)\)")
ORDINAL = re.compile(r"\b\d+(st|nd|rd|th)\b")
TIE = re.compile(r"([+-]\d+\.\d\d) against \1\b")


@pytest.fixture(scope="module")
def varied_start():
    """The untrained start on a catalogue whose red dresses differ: in length, in the other
    query words they say, and in where they say them."""
    import numpy as np
    import pandas as pd

    from recsys.catalog import Catalog
    from recsys.lexicon import LexiconConfig
    from training.fit import TrainConfig
    from training.start import untrained_recommender

    titles = ["red dress", "red summer dress", "red cotton summer dress with long sleeves and a belt",
              "dress in deep red for evening parties and weddings", "red silk dress", "crimson dress",
              "red dress red dress", "red shirt", "summer dress", "red linen summer dress sale",
              "dress", "red", "blue dress", "red wool winter dress with pockets", "long red dress"]
    colour = ["red", "red", "red", "", "red", "red", "", "red", "", "red", "", "red", "blue", "", "red"]
    items = pd.DataFrame({"item_id": [f"I{i:02d}" for i in range(len(titles))], "title": titles,
                          "color": colour})
    catalog = Catalog.build(items, lexicon=LexiconConfig(enabled=False))
    rows = pd.DataFrame({"query": pd.Series([], dtype=str), "item_idx": np.zeros(0, dtype=np.int64),
                         "label": np.zeros(0, dtype=np.float32), "weight": np.zeros(0, dtype=np.float32)})
    return untrained_recommender(catalog, rows, TrainConfig())


def test_ten_reason_lines_of_results_that_differ_say_six_different_things(varied_start):
    for query in ("red dress", "red summer dress"):
        res = varied_start.recommend(query, k=10)
        lines = [ORDINAL.sub("", i.explanation.summary) for i in res.items]
        assert len(set(lines)) >= 6, [i.explanation.summary for i in res.items]
        _check_reasons(varied_start, query, res)


@pytest.mark.parametrize("query", ["scarlet formal gown", "crimson dress", "azure blouse casual", "acme",
                                   "red shoes", "black"])
def test_reason_lines_are_true_by_erasure_and_never_a_tie(planted_model, query):
    _check_reasons(planted_model, query, planted_model.recommend(query, k=10))


def _check_reasons(model, query, res):
    for item in res.items:
        line = item.explanation.summary
        assert not TIE.search(line), line
        named = WORTH.findall(line)
        if not named:
            continue
        (token, attribute, _head, worth), = named
        truth = _worth_by_erasure(model, query, item.item_id)
        assert float(worth) == pytest.approx(truth[(token, attribute)], abs=0.006), line
        assert float(worth) >= REASON_MIN
        # no match the item has alone (not every result's) is worth more than the one named
        common = set.intersection(*(_matches(i.explanation) for i in res.items))
        others = [v for pair, v in truth.items() if pair not in common]
        assert max(others) <= float(worth) + 0.006, (line, truth)


def test_unknown_words_are_reported_and_match_nothing(planted_model):
    res = planted_model.recommend("zxqv blorf", k=5)
    assert res.unmatched_tokens == ["zxqv", "blorf"]
    for item in res.items:
        e = item.explanation
        assert not e.matched and all(not h.matches for h in e.heads)
        assert "no query word matched" in e.summary


def test_only_the_unknown_word_of_a_query_is_unmatched(planted_model):
    res = planted_model.recommend("scarlet zxqv", k=5)
    assert res.unmatched_tokens == ["zxqv"]
    assert all(i.explanation.matched for i in res.items)
    assert all(m.query_token != "zxqv" for i in res.items for h in i.explanation.heads for m in h.matches)


def test_a_stop_word_query_matches_nothing(planted_model):
    res = planted_model.recommend("the and of", k=5)
    assert res.tokens == [] and res.unmatched_tokens == []
    assert all(not i.explanation.matched for i in res.items)


def test_unmatched_tokens_bound_every_items_attention(planted_model):
    # the bound is exact: no item gives an unmatched word MATCH_THRESHOLD of its attention
    for query in ("zxqv blorf", "scarlet zxqv", "olive kicks qqq"):
        res = planted_model.recommend(query, k=planted_model.catalog.n_items)
        for item in res.items:
            detail = planted_model.explain(query, item.item_id)
            for h in detail.heads:
                for tok, row in zip(detail.tokens, h.attention):
                    if tok in res.unmatched_tokens:
                        assert max(row[:-1], default=0.0) < MATCH_THRESHOLD


def test_compare_says_where_a_and_b_differ_most(planted_model):
    res = planted_model.recommend("scarlet gown", k=planted_model.catalog.n_items)
    ids = {i.item_id: i for i in res.items}
    red_dress = res.items[0].item_id
    blue_shirt = next(i for i, it in ids.items()
                      if "blue" in it.attributes["color"] and "category:shirt" in it.attributes["other"])
    cmp = planted_model.compare("scarlet gown", red_dress, blue_shirt)
    diffs = {h["head"]: h["difference"] for h in cmp.heads} | {"prior": cmp.prior_difference}
    assert cmp.score_a > cmp.score_b
    biggest = max(diffs, key=lambda k: diffs[k])  # what puts A above B most
    assert cmp.summary.startswith(f"A scores {cmp.score_a - cmp.score_b:+.2f} against B")
    assert f"the largest part: {biggest} " in cmp.summary
    assert LISTED.search(cmp.summary)  # A's match that B lacks is named


def test_compare_says_in_words_what_made_a_win(varied_start):
    # B's title does not say 'dress'
    plain = varied_start.compare("red dress", "I00", "I07")  # "red dress" against "red shirt"
    assert plain.summary.endswith("('dress' matched title:dress; B has no match for it in its other attributes)"), \
        plain.summary
    # the same matches, weighed differently (B has more attributes to weigh them against)
    longer = varied_start.compare("red dress", "I00", "I02")  # against a long title of the same words
    assert longer.summary.endswith("(the same matches)"), longer.summary


@pytest.mark.parametrize("query", ["scarlet kicks", "olive linen dress", "zxqv blorf"])
def test_a_ranking_s_reason_lines_do_not_need_each_item_s_own_first(planted_model, query):
    """`recommend` skips `summarize` per item when `contrast_summaries` rewrites every line."""
    from recsys.explain import explain_items  # here: the module's imports are others' to edit

    rec = planted_model
    state = rec.index.query_state(query)
    shown = rec.top_indices(query, 5)
    ranks = list(range(1, len(shown) + 1))
    weights = rec.head_weight_vector(None)
    lines = []
    for summaries in (True, False):
        explained = explain_items(rec.index, state, shown, weights, ranks, summaries=summaries)
        contrast_summaries(explained, ranks)
        lines.append([e.summary for e in explained])
    assert lines[0] == lines[1] and all(lines[1])
    assert [i.explanation.summary for i in rec.recommend(query, k=5).items] == lines[0]


def test_a_match_two_lines_name_at_different_worths_tells_neither_apart():
    def expl(prior: float, color: float, dress: float | None) -> Explanation:
        other = [Match("dress", "category:dress", 0.99, dress)] if dress is not None else []
        return Explanation(prior, "", [HeadExplanation("color", color, [Match("crimson", "red", 0.97, color)]),
                                       HeadExplanation("other", dress or 0.5, other)])

    ranking = [expl(0.2, 2.87, 2.25), expl(0.06, 2.93, 2.22), expl(-0.06, 2.93, None)]
    contrast_summaries(ranking, [1, 2, 3])
    # both name 'dress' (the 3rd is no dress): what sets the 1st above the 2nd is said beside it
    assert ranking[0].summary.startswith("ranked 1st for 'dress' matched category:dress (other attributes, "
                                         "worth 2.25); prior +0.20 against +0.06 for the 2nd"), ranking[0].summary
    assert "; other attributes +2.22 against +0.50 for the 3rd" in ranking[1].summary, ranking[1].summary


def test_two_items_within_a_hundredth_say_what_evens_out():
    """Scores within REASON_MIN whose parts differ: the line names the part that differs most and
    what evens it out, never a part where the item is behind as if it were the reason."""
    line = describe_difference(_parts(-0.596, 0.6, 0.0), _parts(0.0, 0.0, 0.0), "the 2nd")
    assert line == ("as good a match as the 2nd within 0.01: its parts even out (most: color +0.60 against "
                    "+0.00, prior -0.60 against +0.00)"), line
    line = describe_difference(_parts(-0.005, 0.02, -0.006), _parts(0.0, 0.0, 0.0), "the 2nd")
    assert line == ("as good a match as the 2nd within 0.01: its parts even out (most: color +0.02 against "
                    "+0.00, against small differences in its other parts)"), line


def test_a_line_skips_pins_to_its_neighbour_and_a_pinned_line_names_no_match():
    pin = RuleEffect("hero", "pin", None, 1, "pinned at position 1 by rule 'hero'")
    other = RuleEffect("third", "pin", None, 3, "pinned at position 3 by rule 'third'")
    ranking = [_parts(0.0, 0.9, 0.2, [pin]), _parts(0.0, 0.8, 0.2), _parts(0.0, 0.1, 0.0, [other]),
               _parts(0.0, 0.4, 0.2)]
    contrast_summaries(ranking, [1, 2, 3, 4])
    assert ranking[0].summary == "ranked 1st", ranking[0].summary  # the pin's note follows (recommend)
    # the 2nd is compared with the 4th, the nearest item its score placed
    assert ranking[1].summary.startswith("ranked 2nd: color +0.80 against +0.40 for the 4th"), ranking[1].summary
    assert ranking[3].summary.startswith("ranked 4th: color +0.40 against +0.80 for the 2nd"), ranking[3].summary


def test_a_remark_never_credits_a_match_that_lowers_the_score():
    # the colour head gives the 1st more, but its one match of its own costs the score
    ahead = Explanation(0.0, "", [HeadExplanation("color", 0.5, [Match("retro", "standard", 0.3, -0.09)]),
                                  HeadExplanation("other", 0.0, [])])
    line = describe_difference(ahead, _parts(0.0, 0.0, 0.0), "the 2nd")
    assert line == "color +0.50 against +0.00 for the 2nd", line


def test_a_rounded_zero_reads_plus_zero():
    line = describe_difference(_parts(0.5, 0.0, 0.0), _parts(-0.001, 0.0, 0.0), "the 2nd")
    assert line.startswith("prior +0.50 against +0.00 for the 2nd"), line
    none = Explanation(-0.004, "", [HeadExplanation("color", 0.0, []), HeadExplanation("other", 0.0, [])])
    assert summarize(none.heads, none.prior, 3) == "ranked 3rd: no query word matched its attributes (prior +0.00)"


def test_a_small_match_of_its_own_does_not_lead_a_line_its_shared_matches_earn():
    """A Spanish shop's "camiseta negra": a skirt ranked 4th "for 'camiseta' drew categoría:ropa
    by click association (worth 0.02)", its heads giving it 2.13, nearly all for the "negra"
    every result said. A match of its own leads only when it is worth REASON_OWN_SHARE of the
    item's heads; else the line says what puts it above its neighbour."""
    from recsys.explain import REASON_OWN_SHARE

    def expl(other: float, own: float) -> Explanation:
        matches = [Match("negra", "title:negra", 0.99, other - own)]
        if own:
            matches.append(Match("camiseta", "category:ropa", 0.1, own, "click association", counts=False))
        return Explanation(0.0, "", [HeadExplanation("color", 0.0, []), HeadExplanation("other", other, matches)])

    small = 0.5 * REASON_OWN_SHARE * 2.13  # worth more than REASON_MIN, less than its share
    ranking = [expl(2.13, small), expl(2.0, 0.0)]
    contrast_summaries(ranking, [4, 5])
    assert ranking[0].summary.startswith("ranked 4th: other attributes +2.13 against +2.00 for the 5th "
                                         "('camiseta' drew category:ropa by click association"), ranking[0].summary
    big = 2 * REASON_OWN_SHARE * 2.13  # worth its share: it leads
    ranking = [expl(2.13, big), expl(2.0, 0.0)]
    contrast_summaries(ranking, [4, 5])
    assert ranking[0].summary.startswith("ranked 4th for 'camiseta' drew category:ropa by click association "
                                         f"(other attributes, worth {big:.2f})"), ranking[0].summary
