"""A shop's synonyms (recsys.synonyms) on the planted furniture shop: which results they change,
how explanations name them, and what bad input is told."""

from __future__ import annotations

import pandas as pd
import pytest

from recsys.catalog import Catalog
from recsys.explain import additivity_gap
from recsys.io.readers import read_items
from recsys.synonyms import (
    SynonymBook,
    SynonymError,
    check_synonym,
    make_synonym,
    parse_synonyms,
    read_synonyms_file,
)
from training.fit import TrainConfig
from training.start import untrained_recommender

from ..planted import furniture_items


@pytest.fixture(scope="module")
def rec(tmp_path_factory):
    path = tmp_path_factory.mktemp("furniture") / "items.csv"
    furniture_items().to_csv(path, index=False)
    items, _ = read_items(path)
    none = pd.DataFrame({"query": [], "item_idx": [], "label": [], "weight": []})
    return untrained_recommender(Catalog.build(items), none, TrainConfig(seed=0))


def _categories(result) -> list[str]:
    return [i.attributes["other"][0] for i in result.items]


def test_a_two_way_synonym_ranks_sofas_for_couch(rec):
    rec.use_synonyms(None)
    assert "couch" in rec.recommend("couch", k=4).unmatched_tokens  # no item says it
    rec.use_synonyms(SynonymBook(parse_synonyms("sofa, couch, settee\n")))
    try:
        for query in ("couch", "settee"):
            result = rec.recommend(query, k=6)
            assert _categories(result) == ["category:sofa"] * 6  # every sofa first
            assert result.unmatched_tokens == []
            for item in result.items:
                e = item.explanation
                assert [(s.name, s.query_token, s.attribute) for s in e.synonyms] == [("sofa", query, "category:sofa")]
                assert f"{query} -> category:sofa (synonym rule 'sofa')" in e.summary
                assert additivity_gap(item.score, e) is None
        # as strong as the word itself: "couch" scores each sofa within a hair of "sofa"
        sofa = {i.item_id: i.score for i in rec.recommend("sofa", k=6).items}
        couch = {i.item_id: i.score for i in rec.recommend("couch", k=6).items}
        assert sofa.keys() == couch.keys()
        detail = rec.explain("couch", rec.recommend("couch", k=1).items[0].item_id)
        other = next(h for h in detail.heads if h.head == "other")
        assert ["synonym rule 'sofa'"] in [[c for c in row if c] for row in other.evidence]
    finally:
        rec.use_synonyms(None)


def test_a_one_way_synonym_does_not_work_backwards(rec):
    blue_before = [i.item_id for i in rec.recommend("blue", k=6).items]
    navy_before = rec.recommend("navy sofa", k=6)
    assert "navy" in navy_before.unmatched_tokens
    rec.use_synonyms(SynonymBook(parse_synonyms("navy => blue\n")))
    try:
        navy = rec.recommend("navy sofa", k=2)
        assert [i.attributes["color"] for i in navy.items] == [["blue"], ["blue"]]
        assert [s.note for s in navy.items[0].explanation.synonyms] == ["navy -> color:blue (synonym rule 'navy')"]
        blue = rec.recommend("blue", k=6)
        assert [i.item_id for i in blue.items] == blue_before  # "blue" does not count as "navy"
        assert all(not i.explanation.synonyms for i in blue.items)
    finally:
        rec.use_synonyms(None)
    assert [i.item_id for i in rec.recommend("navy sofa", k=6).items] == [i.item_id for i in navy_before.items]


def test_a_phrase_on_the_left_counts_where_its_words_follow_each_other(rec):
    """`sea foam => green`: "sea foam" in a query counts as green, each of its words; "sea" or
    "foam" alone, or the two the other way round or apart, count as nothing."""
    rule = make_synonym(["Sea  Foam"], ["green"])
    assert (rule.name, rule.words, rule.line()) == ("sea-foam", ("sea foam",), "sea foam => green")
    before = {q: [i.item_id for i in rec.recommend(q, k=6).items]
              for q in ("sea foam sofa", "sea sofa", "foam sea sofa", "sea blue foam sofa")}
    assert {"sea", "foam"} <= set(rec.recommend("sea foam sofa", k=1).unmatched_tokens)
    rec.use_synonyms(SynonymBook(parse_synonyms("sea foam => green\n")))
    try:
        got = rec.recommend("sofa in sea foam", k=2)  # a stop word before the phrase does not matter
        assert [i.attributes["color"] for i in got.items] == [["green"], ["green"]]
        assert got.unmatched_tokens == []
        e = got.items[0].explanation
        assert [s.note for s in e.synonyms] == ["sea -> color:green (synonym rule 'sea-foam')",
                                                "foam -> color:green (synonym rule 'sea-foam')"]
        assert all(additivity_gap(i.score, i.explanation) is None for i in got.items)
        for query in ("sea sofa", "foam sea sofa", "sea blue foam sofa"):  # not the phrase
            result = rec.recommend(query, k=6)
            assert [i.item_id for i in result.items] == before[query]
            assert all(not i.explanation.synonyms for i in result.items)
    finally:
        rec.use_synonyms(None)
    assert [i.item_id for i in rec.recommend("sea foam sofa", k=6).items] == before["sea foam sofa"]


def test_a_query_without_synonyms_keeps_its_tokens(rec):
    book = SynonymBook(parse_synonyms("sofa, couch\n"))
    tokens = rec.featurizer.query_tokens("red table")
    assert book.tokens(tokens) is tokens
    assert [t.cache_key for t in book.tokens(rec.featurizer.query_tokens("couch"))] != ["couch"]


def test_the_file_format(tmp_path):
    path = tmp_path / "synonyms.txt"
    path.write_text("# a shop's synonyms\nnavy, marine => blue\n\nsofa, couch, settee  # the living room\n"
                    "couch => sofa bed\n")
    got = read_synonyms_file(path)
    assert [(s.name, s.words, s.to) for s in got] == [
        ("navy", ("navy", "marine"), ("blue",)), ("sofa", ("sofa", "couch", "settee"), ()),
        ("couch", ("couch",), ("sofa bed",))]
    assert [s.line() for s in got] == ["navy, marine => blue", "sofa, couch, settee", "couch => sofa bed"]
    assert [s.name for s in parse_synonyms("red, crimson\nred, scarlet\n")] == ["red", "red-2"]
    with pytest.raises(SynonymError, match="line 2"):
        parse_synonyms("red, crimson\nsofa bed, couch\n", "x.txt")
    with pytest.raises(SynonymError, match="one '=>' a line"):
        parse_synonyms("navy => blue => teal")


@pytest.mark.parametrize(("words", "to", "field"), [
    ([""], [], "words.0"), (["sofa bed", "couch"], [], "words.0"), (["the"], ["couch"], "words.0"),
    (["sofa of bed"], ["couch"], "words.0"), (["deep dark navy blue ink"], ["blue"], "words.0"),
    (["sofa"], [], "words"), (["sofa"], ["sofa"], "to"), ([f"w{n}" for n in range(33)], [], "words"),
    (["navy"], ["a b c d e"], "to.0"),
])
def test_bad_synonyms_name_the_field(words, to, field):
    with pytest.raises(SynonymError) as exc:
        make_synonym(words, to)
    assert exc.value.field == field


def test_a_synonym_the_catalogue_cannot_use_is_reported(rec):
    keys = rec.featurizer.catalog_keys()
    assert check_synonym(make_synonym(["sofa", "couch"]), keys) is None
    assert check_synonym(make_synonym(["navy"], ["blue"]), keys) is None
    warning = check_synonym(make_synonym(["divan", "ottoman"]), keys)
    assert warning is not None and "neither side occurs in any item" in warning
    warning = check_synonym(make_synonym(["sofa"], ["futon"]), keys)
    assert warning is not None and "no item says 'futon'" in warning
