"""Item lengths counted in words (`ModelOptions.length_unit` "words"), end to end: the index
against the reference computation, the explanations' exactness and erasure, and a ranking whose
right answer is known in advance.

An item's length in words is the sum over its attributes of their content words times their
field-weighted term frequency, as BM25 over the text counts it; erasing an attribute takes its
own length off the item's, not 1.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from recsys.catalog import Catalog
from recsys.explain import explain_item, explain_items, head_attention
from recsys.facets import FACETS
from recsys.index.scoring import ScoringIndex
from recsys.kernels import compiled
from recsys.lexicon import LexiconConfig
from recsys.model_config import ModelOptions
from recsys.recommender import Recommender
from training.config import TrainConfig
from training.faithfulness import outputs_with, slot_curve
from training.fit import train_recommender
from training.groups import InteractionCounts
from training.length_unit import choose_length_unit, describe
from training.start import untrained_recommender

from ..training.test_faithfulness_eraser import _reference_contribution
from .test_explain import _same
from .test_index import QUERIES, _index, _items, reference


@pytest.fixture(scope="module")
def words_index(tmp_path_factory) -> ScoringIndex:
    """test_index's planted catalogue (descriptions of 0-3 content words, one- and two-word
    values) and random weights, its lengths in words."""
    return _index(tmp_path_factory.mktemp("words"), _items(copies=2), length_unit="words")


@pytest.mark.parametrize("query", QUERIES)
def test_words_index_equals_the_reference(words_index, query):
    ref_scores, ref_contrib = reference(words_index, query)
    state = words_index.query_state(query)
    scale = max(1.0, float(np.abs(ref_scores).max()))
    np.testing.assert_allclose(words_index.score(state), ref_scores, atol=2e-6 * scale, rtol=0)
    np.testing.assert_allclose(words_index.head_outputs(state), ref_contrib, atol=2e-6 * scale, rtol=0)


@pytest.mark.parametrize("query", QUERIES)
def test_explanations_add_up_and_equal_the_reference_in_words(words_index, query):
    """score == prior + heads; the batched pass (compiled and numpy) equals the per-item
    reference, erasure worths included."""
    state = words_index.query_state(query)
    weights = np.ones(len(FACETS), dtype=np.float32)
    items = np.arange(words_index.n_items)
    scores = words_index.score(state)
    got = {}
    for use_kernel in ((True, False) if compiled() is not None else (False,)):
        words_index.use_kernel = use_kernel
        try:
            got[use_kernel] = explain_items(words_index, state, items, weights)
        finally:
            words_index.use_kernel = True
    batched = got[False]
    assert all(g == batched for g in got.values())
    for item, e in zip(items.tolist(), batched):
        _same(e, explain_item(words_index, state, item, weights))
        assert scores[item] == pytest.approx(e.prior + sum(h.contribution for h in e.heads), abs=1e-4)


def test_erasure_equals_the_reference_forward_in_words(words_index):
    rng = np.random.default_rng(0)
    checked = 0
    for query in ("navy blue dining chair", "soft dress", "machine washable acme", "red red dress"):
        state = words_index.query_state(query)
        for item in rng.choice(words_index.n_items, 6, replace=False).tolist():
            for f in FACETS:
                att = head_attention(words_index, state, item, f)
                n = len(att.labels)
                if n < 2:
                    continue
                slots = slot_curve(words_index, f, item)
                singles = outputs_with(att, slots, ~np.eye(n, dtype=bool))
                # atol: a head none of whose attributes the query names outputs 1e-17 to 1e-12 (the start's
                # unmatched offset), where a relative bound only measures float noise
                np.testing.assert_allclose(singles, [att.without(m) for m in range(n)], rtol=1e-9, atol=1e-9)
                for m in range(n):
                    ref = _reference_contribution(words_index, query, item, f, att.attr_idx[[m]])
                    assert att.without(m) == pytest.approx(ref, abs=2e-4, rel=1e-4)
                keep = rng.random(n) < 0.5
                ref = _reference_contribution(words_index, query, item, f, att.attr_idx[~keep])
                assert outputs_with(att, slots, keep[None])[0] == pytest.approx(ref, abs=2e-4, rel=1e-4)
                checked += 1
    assert checked > 10


def test_lengths_per_head_in_words(words_index):
    """Per head (`length_per_item` False) each head's own length in words: the batched pass
    reads the multiplicities the per-item reference does."""
    index = copy.copy(words_index)
    index.sets = copy.copy(index.sets)
    index.sets.per_item = False
    weights = np.ones(len(FACETS), dtype=np.float32)
    items = np.arange(index.n_items)
    for query in ("navy blue dining chair", "soft dress"):
        state = index.query_state(query)
        batched = explain_items(index, state, items, weights)
        for item, got in zip(items.tolist(), batched):
            _same(got, explain_item(index, state, item, weights))
        index.use_kernel = False
        try:
            assert explain_items(index, state, items, weights) == batched
        finally:
            index.use_kernel = True


# ---- a ranking known in advance ----------------------------------------------------------------

def _catalog(rows: list[dict]) -> Catalog:
    """The rows as a catalogue, the lexicon off: no colour is read out of a description."""
    return Catalog.build(pd.DataFrame(rows), lexicon=LexiconConfig(enabled=False))


def _start(catalog: Catalog, unit: str) -> Recommender:
    cfg = TrainConfig(model=ModelOptions(length_unit=unit))
    return untrained_recommender(catalog, InteractionCounts().rows(), cfg)


def test_a_long_repetitive_attribute_makes_an_item_longer_in_words():
    """Both lamps say "lamp" once in the title. The plain one has more distinct attributes (a
    description of six different words) but few words; the other a description that says one
    word thirty times. In attributes the repetitive one is the shorter and ranks first; in
    words, as BM25 counts, it is far the longer and ranks second."""
    filler = [{"item_id": f"f{i}", "title": f"oak chair {i}", "description": "sturdy wood"} for i in range(20)]
    rows = [{"item_id": "plain", "title": "lamp", "description": "brass base linen shade warm bulb"},
            {"item_id": "repetitive", "title": "lamp", "description": " ".join(["glow"] * 30)}, *filler]
    catalog = _catalog(rows)
    first = {unit: _start(catalog, unit).rank("lamp", k=2).item_ids[0] for unit in ("attributes", "words")}
    assert first == {"attributes": "repetitive", "words": "plain"}
    items = np.array([catalog.idx("plain"), catalog.idx("repetitive")])
    lengths = _start(catalog, "words").index.sets.total_length(items)
    assert lengths.tolist() == [1 + 6 * 0.5, 1 + 30 * 0.5]


# ---- the choice per catalogue ------------------------------------------------------------------

def _words_catalogue() -> Catalog:
    """Forty gadgets, each named by a word of its own ("zorb7 gadget deluxe pro": four
    attributes, four words), and for each a holder whose description names it twice among
    thirty "holder" (two attributes: short in attributes, long in words). Holders have two
    distinct words, so known-item topics are drawn from the gadgets alone: a topic naming
    "zorb7" finds the gadget and its holder with the word as often (title 1, description
    2 x 0.5). Counted in attributes the holder is the shorter and ranks first; in words the
    gadget, as BM25 ranks it."""
    rows = []
    for i in range(40):
        rows.append({"item_id": f"g{i}", "title": f"zorb{i} gadget deluxe pro", "description": ""})
        rows.append({"item_id": f"h{i}", "title": "holder", "description": f"zorb{i} zorb{i} " + "holder " * 30})
    return _catalog(rows)


def test_the_choice_keeps_words_where_they_win_known_items_and_the_model_keeps_it():
    catalog = _words_catalogue()
    choice = choose_length_unit(catalog, TrainConfig())
    assert choice.unit == "words" and choice.rule == "compared"
    assert choice.mrr["words"] > 1.2 * choice.mrr["attributes"], choice
    rec, report = train_recommender(catalog, InteractionCounts().rows(), TrainConfig())
    assert rec.model.cfg.length_unit == "words"
    assert report.length_unit["unit"] == "words"
    assert describe(report.length_unit).startswith("item lengths in words: the start's known-item MRR")


def test_the_choice_keeps_attributes_where_words_lose_and_when_told():
    """The mirror: each gadget says its word once in the title beside a description of thirty
    "bright" (long in words, three attributes), its twin says it once in the title beside six
    different colours (short in words, long in attributes). Gadgets outnumber twins three to
    one among the topics, so attributes find more known items; and 0 topics keeps the unit
    given."""
    colours = "red blue green white black grey"
    rows = []
    for i in range(60):
        rows.append({"item_id": f"g{i}", "title": f"zorb{i} lamp", "description": "bright " * 30})
        if i % 3 == 0:
            rows.append({"item_id": f"t{i}", "title": f"zorb{i}", "description": colours})
    catalog = _catalog(rows)
    choice = choose_length_unit(catalog, TrainConfig())
    assert choice.unit == "attributes" and choice.mrr["attributes"] > choice.mrr["words"], choice
    given = choose_length_unit(catalog, TrainConfig(length_unit_topics=0, model=ModelOptions(length_unit="words")))
    assert (given.unit, given.rule) == ("words", "given")


def _one_word_catalogue(specs: int) -> Catalog:
    """Sixty items whose every attribute is one word said once, so that an item's length is the
    same in either unit and known items cannot tell the units apart; the first `specs` of them
    say their facts as a spec list of `key:value` pairs, the others in columns of their own."""
    rows = []
    for i in range(60):
        facts = {"brand": f"brand{i % 7}", "material": f"alloy{i % 5}", "finish": f"matte{i % 3}"}
        spec = "|".join(f"{k}:{v}" for k, v in facts.items())
        row = {"item_id": f"i{i}", "title": f"widget{i}", "attributes": spec if i < specs else "",
               **{k: "" if i < specs else v for k, v in facts.items()}}
        rows.append(row)
    return _catalog(rows)


@pytest.mark.parametrize("specs, unit", [(60, "words"), (30, "words"), (0, "attributes"), (29, "attributes")])
def test_ties_go_to_words_where_most_items_hold_a_spec_list(specs, unit):
    """`length_unit_spec_share` 0.5: 30 items of 60 with a spec list are most, 29 are not."""
    catalog = _one_word_catalogue(specs)
    assert catalog.spec_items == specs
    choice = choose_length_unit(catalog, TrainConfig())
    assert choice.rule == "compared" and choice.gain_z == 0.0, choice
    assert (choice.unit, choice.default) == (unit, unit)
    line = describe(choice.to_json())
    assert line.startswith(f"item lengths in {unit}: ")
    assert ("most items hold a spec list" in line) == (unit == "words"), line
