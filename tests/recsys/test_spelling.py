"""Near-exact matches for misspelled query words."""

from __future__ import annotations

import numpy as np
import pytest

from recsys.spelling import NearWords, distance


@pytest.mark.parametrize(("a", "b", "d"), [("faucet", "faucet", 0), ("fauset", "faucet", 1),
                                             ("casaul", "casual", 1), ("ab", "ba", 1), ("", "abc", 3)])
def test_distance(a, b, d):
    assert distance(a, b) == d


def test_near_words_within_a_distance_that_grows_with_length():
    near = NearWords(["accessori", "fiberglass", "lamp", "faucet", "ceiling", "1/2"])
    assert [w for w, _ in near.near("accesori")] == ["accessori"]
    assert [w for w, _ in near.near("fiberglas")] == ["fiberglass"]
    assert [w for w, _ in near.near("celing")] == ["ceiling"]
    assert near.near("lump") == ()  # a short word changed by a letter is another word: not lamp
    assert near.near("1/4") == ()  # nor numbers
    assert near.near("faucet") == ()  # the word itself is exact evidence, not near
    (word, sim), = near.near("fauset")
    assert word == "faucet" and sim == pytest.approx(1 - 1 / 6)


def test_a_misspelled_word_still_matches_its_attribute(planted_model):
    """"casaul" is in no training query; near-spelling evidence ties it to style casual."""
    rec = planted_model
    casual = [i for i in range(rec.catalog.n_items) if rec.catalog.attribute_labels(i)["style"] == ["casual"]]
    formal = [i for i in range(rec.catalog.n_items) if rec.catalog.attribute_labels(i)["style"] == ["formal"]]
    state = rec.index.query_state("casaul")
    style = rec.index.head_outputs(state)[:, 2]
    assert state.evidence["style"][0].max() > 0.8
    assert np.min(style[casual]) > np.max(style[formal])


def test_near_spelling_work_is_bounded_whatever_the_word(monkeypatch):
    """A 512-letter word once built 130k deletion variants of 510 letters (seconds per query):
    words over MAX_NEAR_CHARS have no near spellings, on either side, and no deletion variant
    of theirs is ever built."""
    from recsys import spelling
    from recsys.spelling import MAX_NEAR_CHARS

    built: list[tuple[str, int]] = []  # each word asked for its deletion variants, and how many
    deletes = spelling._deletes

    def counted(word: str, d: int) -> set[str]:
        out = deletes(word, d)
        built.append((word, len(out)))
        return out

    monkeypatch.setattr(spelling, "_deletes", counted)
    long_word = "abcdefghij" * 52
    near = NearWords(["faucet", long_word, long_word[:MAX_NEAR_CHARS]])
    assert near.near(long_word[:-1] + "x") == ()
    assert near.near("q" * 100_000) == ()
    long_ones = [n for word, n in built if len(word) > MAX_NEAR_CHARS]
    assert long_ones and set(long_ones) == {1}  # the word itself, no variant
    # at the bound the usual rules still hold
    assert [w for w, _ in near.near(long_word[:MAX_NEAR_CHARS - 1] + "x")] == [long_word[:MAX_NEAR_CHARS]]


@pytest.mark.parametrize(("typed", "meant"), [
    ("dres", "dress"),  # a letter dropped
    ("redd", "red"),  # a letter doubled
    ("lmap", "lamp"),  # two letters swapped
    ("lampp", "lamp"),  # 5 letters, a letter added to a short word
    ("lump", None),  # a letter changed: another word
    ("tan", None),  # a catalogue word is exact evidence, not near
    ("blu", None),  # blue and blur are both a letter away: no guess
    ("thee", None),  # the stop word "the" is never a target
    ("ca", None),  # 2 letters: too short to say
    ("cas", None),  # 3 letters: in real searches more often an abbreviation ("ref", "med") than a typo
])
def test_short_words_match_the_one_catalogue_word_a_letter_dropped_added_or_swapped_away(typed, meant):
    near = NearWords(["dress", "red", "lamp", "tan", "blue", "blur", "the", "casual"])
    assert [w for w, _ in near.near(typed)] == ([meant] if meant else [])


def test_a_four_letter_word_that_is_also_a_letter_changed_from_a_catalogue_word_gets_no_guess():
    assert [w for w, _ in NearWords(["lap"]).near("lapp")] == ["lap"]
    assert NearWords(["lap", "lamp"]).near("lapp") == ()  # lap doubled, or lamp changed


def test_short_misspelled_words_rank_what_they_mean():
    """"crimsn casul dres" once listed sweaters and jeans and no dress: words of four letters or
    fewer had no near spellings."""
    import pandas as pd

    from recsys.catalog import Catalog
    from recsys.lexicon import LexiconConfig
    from training.fit import TrainConfig
    from training.start import untrained_recommender

    titles = ["crimson casual dress", "crimson casual sweater", "crimson casual jeans", "blue casual dress",
              "red formal dress", "crimson wool sweater", "navy casual jeans", "crimson silk scarf"]
    catalog = Catalog.build(pd.DataFrame({"item_id": [f"I{i}" for i in range(len(titles))], "title": titles}),
                            lexicon=LexiconConfig(enabled=False))
    no_rows = pd.DataFrame({"query": pd.Series([], dtype=str), "item_idx": np.zeros(0, dtype=np.int64),
                            "label": np.zeros(0, dtype=np.float32), "weight": np.zeros(0, dtype=np.float32)})
    rec = untrained_recommender(catalog, no_rows, TrainConfig())
    top = rec.recommend("crimsn casul dres", k=3).items
    assert top[0].item_id == "I0"
    assert rec.recommend("redd dres", k=1).items[0].item_id == "I4"
