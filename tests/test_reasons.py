"""Reason lines that tell the listed items apart, `matched`, `unmatched_tokens` and the wording
`/compare` shares, on the planted catalogue (red/blue/green/black x casual/formal x dress/shirt/
shoes, titled with a brand only; "scarlet gown" means a red dress)."""

from __future__ import annotations

import re

from recsys.explain import MATCH_THRESHOLD, Explanation, HeadExplanation, Match, contrast_summaries

LISTED = re.compile(r"'([^']+)' matched (\S+)")


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
        assert named or re.search(r"against [+-]\d\.\d\d for the \d+(st|nd|rd|th)$", e.summary), e.summary
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
    assert ranking[0].summary == ("ranked 1st: matches what every result matches ('red' red); "
                                  "prior +0.50 against +0.10 for the 2nd")
    assert ranking[1].summary.endswith("color +2.00 against +1.50 for the 3rd")
    assert ranking[2].summary.endswith("color +1.50 against +2.00 for the 2nd")


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
    biggest = max(diffs, key=lambda k: abs(diffs[k]))
    assert cmp.summary.startswith(f"A scores {cmp.score_a - cmp.score_b:+.2f} against B")
    assert f"difference: {biggest} " in cmp.summary
    assert LISTED.search(cmp.summary)  # A's match that B lacks is named
