""""Did you mean" (issue 31, point 5) on the planted catalogue: a query word no item can match gets
whole queries near it whose every word matches, from near spellings and from the suggester."""

from __future__ import annotations

import pytest

from recsys.did_you_mean import corrections, did_you_mean, every_word_matches
from recsys.explain import unmatched_tokens
from recsys.suggest import Suggester


@pytest.fixture(scope="module")
def suggester(planted_model):
    return Suggester.from_catalog(planted_model.catalog)


def _offered(rec, suggester, query):
    unmatched = unmatched_tokens(rec.index, rec.index.query_state(query))
    return unmatched, did_you_mean(query, unmatched, suggester, lambda t: every_word_matches(rec.index, t))


@pytest.mark.parametrize("query, unmatched, first", [
    ("drs", ["drs"], "dress"),  # too short for a near spelling: the suggester's typo of one edit
    ("blakc shoos", ["shoos"], "blakc shoes"),  # a near spelling; the word that matches is kept
])
def test_an_unmatched_word_is_corrected_into_a_query_that_matches(planted_model, suggester, query, unmatched, first):
    got_unmatched, offered = _offered(planted_model, suggester, query)
    assert got_unmatched == unmatched
    assert offered[0] == first
    for text in offered:  # each one, asked, is answered by matches
        assert unmatched_tokens(planted_model.index, planted_model.index.query_state(text)) == []


@pytest.mark.parametrize("query", ["red dress", "zxqv blorf", "the of"])
def test_nothing_is_offered_without_a_near_query(planted_model, suggester, query):
    # every word matches; no catalogue word is near; no words at all
    assert _offered(planted_model, suggester, query)[1] == []


def test_corrections_come_from_near_spellings(suggester):
    assert corrections(suggester, "shoos")[0] == "shoes"
    assert corrections(suggester, "reddress") == ["red dress"]  # two words run together
