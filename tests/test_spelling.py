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
    assert near.near("lump") == ()  # short words never match near: lamp is not lump
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


def test_near_spelling_work_is_bounded_whatever_the_word():
    """A 512-letter word once built 130k deletion variants of 510 letters (seconds per query):
    words over MAX_NEAR_CHARS have no near spellings, on either side."""
    import time

    from recsys.spelling import MAX_NEAR_CHARS

    long_word = "abcdefghij" * 52
    near = NearWords(["faucet", long_word, long_word[:MAX_NEAR_CHARS]])
    start = time.perf_counter()
    assert near.near(long_word[:-1] + "x") == ()
    assert near.near("q" * 100_000) == ()
    assert time.perf_counter() - start < 0.05
    # at the bound the usual rules still hold
    assert [w for w, _ in near.near(long_word[:MAX_NEAR_CHARS - 1] + "x")] == [long_word[:MAX_NEAR_CHARS]]
