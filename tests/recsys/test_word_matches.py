"""`Recommender.word_matches`: whether a word can match anything, kept per word so that a query of
words already seen skips its logits; held equal to `explain.unmatched_tokens` computed afresh."""

from __future__ import annotations

import pytest

from recsys.explain import unmatched_tokens
from recsys.lru import WordCache
from recsys.recommender import WORD_MATCHES

# known words, unknown ones, a stop word, a repeat and words run together, in every order
QUERIES = ["scarlet zxqv", "zxqv blorf", "olive kicks qqq", "the scarlet", "blorf scarlet zxqv",
           "scarlet scarlet", "olive kicks", "kicks olive zxqv"]


def _fresh(rec, query: str) -> list[str]:
    return unmatched_tokens(rec.index, rec.index.query_state(query))


@pytest.mark.parametrize("cold_first", [True, False])
def test_remembered_answers_equal_fresh_ones(planted_model, cold_first):
    rec = planted_model
    if cold_first:
        rec.index.clear_caches()
    for _ in range(2):  # the second pass answers from what the first remembered
        for q in QUERIES:
            assert rec.recommend(q, k=3, explain=False).unmatched_tokens == _fresh(rec, q), q
    assert "zxqv" in rec.word_matches and rec.word_matches.get("zxqv") is False


def test_a_word_counts_as_remembered_only_while_the_index_has_its_rows(planted_model):
    rec = planted_model
    rec.recommend("scarlet zxqv", k=3)
    assert rec.is_warm("scarlet zxqv") and not rec.is_warm("scarlet zxqv neverseen")
    rec.index.clear_caches()  # a cold start: nothing is answered from before
    assert not rec.is_warm("scarlet zxqv")
    assert rec.recommend("scarlet zxqv", k=3).unmatched_tokens == ["zxqv"]
    assert rec.is_warm("scarlet zxqv")


def test_the_cache_is_bounded_and_still_right_when_full(planted_model, monkeypatch):
    rec = planted_model
    assert rec.word_matches.capacity == WORD_MATCHES
    monkeypatch.setattr(rec, "word_matches", WordCache("word matches", 3))
    for q in QUERIES * 2:
        assert rec.recommend(q, k=3, explain=False).unmatched_tokens == _fresh(rec, q), q
        assert len(rec.word_matches) <= 3
