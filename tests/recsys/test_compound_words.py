"""Words run together or split apart: "rustoleum" finds "Rust-Oleum", "shower head" finds a
"showerhead", in every path and in the explanation."""

from __future__ import annotations

import pandas as pd
import pytest

from recsys.catalog import Catalog
from recsys.did_you_mean import every_word_matches
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
    assert near.parts("door12") == ()  # nor is a word with digits whose number the catalogue lacks


def test_a_model_name_run_into_its_number_splits_into_name_and_number():
    near = NearWords(["iphon", "15", "rtx", "4090", "galaxi", "s23", "door", "x4", "all", "ps", "5",
                      "wh", "1000", "xm4", "in"])
    assert near.parts("iphone15") == ("iphon", "15")  # the name as the catalogue's keys stem it
    assert near.parts("rtx4090") == ("rtx", "4090")
    assert near.parts("ps5") == ("ps", "5")  # cut where letters turn to digits, any length
    assert near.parts("wh1000xm4") == ("wh", "1000", "xm4")  # "WH-1000XM4": a code's pieces
    assert near.parts("galaxys23") == ("galaxi", "s23")  # no "23": a name of its first letters
    assert [w for w, _ in near.related("rtx4090")] == ["rtx", "4090"]
    assert near.parts("door12") == ()  # a number the catalogue lacks: a code, not split
    assert near.parts("x42") == ()  # "x4" and "2" are not cut at a letter-digit bound
    assert near.parts("in5") == ()  # a stop word is no piece
    assert near.parts("wh1000xm4ps5") == ()  # four pieces or more: an id, not a name
    assert NearWords(["iphone", "15"]).parts("iphone15") == ("iphone", "15")  # words as written


def test_a_name_and_number_the_catalogue_writes_as_one_are_read_as_one_too():
    vocabulary = {"rtx4090", "ps5", "48", "iphone5", "iphon", "5"}
    assert [t.surface for t in query_tokens("rtx 4090", vocabulary)] == ["rtx", "4090", "rtx4090"]
    assert [t.surface for t in query_tokens("ps 5 console", vocabulary)] == ["ps", "5", "console", "ps5"]
    assert [t.surface for t in query_tokens("4 8", vocabulary)] == ["4", "8"]  # a number first is a size
    # both words said apart too: the catalogue's "iPhone 5" items are what the shopper means
    assert [t.surface for t in query_tokens("iphone 5", vocabulary)] == ["iphone", "5"]


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


GLUED = ["Apple iPhone 15 Pro 128GB", "Apple iPhone 14 128GB", "Phone case for the iPhone 15",
         "Samsung Galaxy S23 Ultra", "NVIDIA GeForce RTX4090 graphics card", "NVIDIA RTX3060 graphics card",
         "Sony PS5 console", "Pack of 15 pens", "Charging cable 2m", "Sony WH-1000XM4 wireless headphones",
         "Sony WH-CH520 headphones"]


@pytest.fixture(scope="module")
def electronics():
    items = pd.DataFrame({"item_id": [f"E{i}" for i in range(len(GLUED))], "title": GLUED})
    return untrained_recommender(Catalog.build(items, lexicon=LexiconConfig(enabled=False)), NO_ROWS,
                                 TrainConfig())


@pytest.mark.parametrize(("query", "found"), [("iphone15", {"E0", "E2"}), ("galaxys23", {"E3"}),
                                              ("rtx 4090", {"E4"}), ("ps 5", {"E6"}), ("wh1000xm4", {"E9"})])
def test_a_model_name_typed_with_or_without_a_space_finds_the_model(electronics, query, found):
    """Shoppers type "iphone15" for a title's "iPhone 15" and "rtx 4090" for its "RTX4090"."""
    result = electronics.recommend(query, k=len(GLUED))
    assert {it.item_id for it in result.items[:len(found)]} == found and result.unmatched_tokens == []
    assert every_word_matches(electronics.index, query)  # so no "did you mean" corrects it


def test_the_explanation_shows_a_glued_name_matching_both_parts(electronics):
    top = electronics.recommend("iphone15", k=3).items[0]
    matches = {(m.query_token, m.attribute) for h in top.explanation.heads for m in h.matches}
    assert {("iphone15", "title:iphone"), ("iphone15", "title:15")} <= matches
    detail = electronics.explain("iphone15", top.item_id)
    kinds = {(tok, h.attributes[m]): kind for h in detail.heads for tok, row in zip(detail.tokens, h.evidence)
             for m, kind in enumerate(row) if kind}
    assert kinds == {("iphone15", "title:iphone"): "words run together", ("iphone15", "title:15"): "words run together"}
    detail = electronics.explain("wh1000xm4", "E9")
    kinds = {(tok, h.attributes[m]): kind for h in detail.heads for tok, row in zip(detail.tokens, h.evidence)
             for m, kind in enumerate(row) if kind}
    assert kinds == {("wh1000xm4", f"title:{w}"): "words run together" for w in ("wh", "1000", "xm4")}
