"""Words run together or split apart: "rustoleum" finds "Rust-Oleum", "shower head" finds a
"showerhead", in every path and in the explanation."""

from __future__ import annotations

import pandas as pd
import pytest

from recsys.catalog import Catalog
from recsys.did_you_mean import every_word_matches
from recsys.lexicon import LexiconConfig
from recsys.spelling import NearWords
from recsys.synonyms import SynonymBook, make_synonym
from recsys.words import code_pieces, query_tokens
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


def test_a_model_name_run_into_its_number_is_read_as_its_pieces():
    vocabulary = {"iphon", "15", "rtx", "4090", "galaxi", "s23", "door", "x4", "all", "ps", "5",
                  "wh", "1000", "xm4", "in", "case"}
    assert code_pieces("iphone15", vocabulary) == (("iphone", "iphon"), ("15", "15"))  # keyed as stemmed
    assert code_pieces("rtx4090", vocabulary) == (("rtx", "rtx"), ("4090", "4090"))
    assert code_pieces("ps5", vocabulary) == (("ps", "ps"), ("5", "5"))  # cut where letters turn to digits
    assert [p for p, _ in code_pieces("wh1000xm4", vocabulary)] == ["wh", "1000", "xm4"]  # "WH-1000XM4"
    assert code_pieces("galaxys23", vocabulary) == (("galaxy", "galaxi"), ("s23", "s23"))  # a name, the rest
    # cut at the bound into "galaxys" (stemmed "galaxi") and "23" too: the model's "s23" is kept
    assert code_pieces("galaxys23", vocabulary | {"23"}) == (("galaxy", "galaxi"), ("s23", "s23"))
    assert code_pieces("door12", vocabulary) == ()  # a number the catalogue lacks: a code, not split
    assert code_pieces("x42", vocabulary) == ()  # "x4" and "2" are not cut at a letter-digit bound
    assert code_pieces("in5", vocabulary) == ()  # a stop word is no piece
    assert code_pieces("wh1000xm4ps5", vocabulary) == ()  # four pieces or more: an id, not a name
    assert code_pieces("rustoleum", vocabulary) == ()  # no digits: a near match (above)
    assert code_pieces("ps5", vocabulary | {"ps5"}) == ()  # a word the catalogue has is itself
    assert [t.surface for t in query_tokens("iphone15 case", vocabulary)] == ["iphone", "15", "case"]
    assert NearWords(vocabulary).parts("rtx4090") == ("rtx", "4090")  # what "did you mean" offers


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


@pytest.mark.parametrize(("glued", "apart"), [("iphone15 case", "iphone 15 case"), ("wh1000xm4", "wh 1000 xm4"),
                                              ("galaxys23 ultra", "galaxy s23 ultra")])
def test_a_glued_name_ranks_and_explains_as_its_pieces_typed_apart(electronics, glued, apart):
    a, b = electronics.recommend(glued, k=len(GLUED)), electronics.recommend(apart, k=len(GLUED))
    assert a.tokens == b.tokens
    assert [(it.item_id, it.score, it.explanation.summary) for it in a.items] == \
        [(it.item_id, it.score, it.explanation.summary) for it in b.items]


def test_a_glued_word_a_shop_synonym_names_is_read_whole_for_the_rule():
    """The catalogue says "PS 4" and "5" apart, so "ps5" would be read as "ps 5"; a shop's rule
    "ps5 => playstation 5" names the word, which is then read whole and the rule finds the console."""
    titles = ["Sony PlayStation 5 console", "PS 4 controller", "Pack of 5 pens", "Xbox Series X console"]
    items = pd.DataFrame({"item_id": [f"P{i}" for i in range(len(titles))], "title": titles})
    rec = untrained_recommender(Catalog.build(items, lexicon=LexiconConfig(enabled=False)), NO_ROWS, TrainConfig())
    assert rec.recommend("ps5", k=1).tokens == ["ps", "5"]
    rec.use_synonyms(SynonymBook([make_synonym(["ps5"], ["playstation 5"])]))
    answer = rec.recommend("ps5", k=1)
    assert answer.tokens == ["ps5"] and answer.items[0].item_id == "P0"
    assert rec.is_warm("ps5")  # the warm check reads the query as the ranking did
