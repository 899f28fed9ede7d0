"""Words run together or split apart: "rustoleum" finds "Rust-Oleum", "shower head" finds a
"showerhead", in every path and in the explanation."""

from __future__ import annotations

import pandas as pd
import pytest

from recsys.catalog import Catalog
from recsys.lexicon import LexiconConfig
from recsys.spelling import NearWords
from recsys.words import query_tokens
from training.fit import TrainConfig
from training.start import untrained_recommender

from .test_lexical_start import NO_ROWS

TITLES = ["Rust-Oleum spray paint", "Rust remover gel", "Spray paint primer", "Rain showerhead in chrome",
          "Shower curtain liner", "Head lamp", "Shower caddy", "Oleum lamp oil", "Head torch", "Hex head bolt"]


@pytest.fixture(scope="module")
def start():
    items = pd.DataFrame({"item_id": [f"T{i}" for i in range(len(TITLES))], "title": TITLES})
    return untrained_recommender(Catalog.build(items, lexicon=LexiconConfig(enabled=False)), NO_ROWS,
                                 TrainConfig())


def test_a_word_the_catalogue_lacks_splits_into_two_it_has():
    near = NearWords(["rust", "oleum", "snow", "blower", "shower", "head", "door", "our", "x"])
    assert near.parts("rustoleum") == ("rust", "oleum")
    assert near.parts("snowblowers") == ("snow", "blower")  # the second part may be inflected
    assert [w for w, _ in near.related("rustoleum")] == ["rust", "oleum"]
    assert near.related("rustoleum")[0][1] == pytest.approx(1 - 1 / 9)  # one edit: a hyphen left out
    assert near.parts("shower") == ()  # a word the catalogue has is exact evidence
    assert near.parts("ourdoor") == ()  # stop words are no part
    assert near.parts("headx") == ()  # nor are parts shorter than three letters
    assert near.parts("door12") == ()  # nor are words with digits split


def test_adjacent_words_the_catalogue_writes_as_one_are_read_as_one_too():
    vocabulary = {"showerhead", "doorbel", "48"}
    assert [t.surface for t in query_tokens("rain shower head", vocabulary)] == ["rain", "shower", "head",
                                                                               "showerhead"]
    assert [t.key for t in query_tokens("door bells", vocabulary)] == ["door", "bell", "doorbel"]
    assert [t.surface for t in query_tokens("shower head", set())] == ["shower", "head"]  # no catalogue
    assert [t.surface for t in query_tokens("4 8 shower the head", vocabulary)] == ["4", "8", "shower", "head"]


def test_a_run_together_word_finds_the_item_and_the_explanation_shows_both_parts(start):
    top = start.recommend("rustoleum", k=3).items[0]
    assert top.item_id == "T0"  # the only item with both parts beats the items with one
    matches = {(m.query_token, m.attribute) for h in top.explanation.heads for m in h.matches}
    assert {("rustoleum", "title:rust"), ("rustoleum", "title:oleum")} <= matches


def test_two_words_the_catalogue_writes_as_one_find_it(start):
    result = start.recommend("shower head", k=3)
    assert "showerhead" in result.tokens
    top = result.items[0]
    assert top.item_id == "T3"
    matches = {(m.query_token, m.attribute) for h in top.explanation.heads for m in h.matches}
    assert ("showerhead", "title:showerhead") in matches
    assert abs(top.score - top.explanation.prior - sum(h.contribution for h in top.explanation.heads)) < 1e-4
