"""The batched explanations `recommend` serves equal the per-item reference, item by item."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from recsys.explain import MATCH_THRESHOLD, explain_item, explain_items
from recsys.facets import FACETS

from ..reference import forward_erased

QUERIES = ["scarlet gown", "azure blouse casual", "premium ebony kicks kicks", "", "zzqx unknownword",
           "red red red dress formal acme"]


def _same(batched, reference):
    assert batched.prior == reference.prior
    assert batched.summary == reference.summary
    assert [h.head for h in batched.heads] == [h.head for h in reference.heads] == list(FACETS)
    for b, r in zip(batched.heads, reference.heads):
        assert b.contribution == pytest.approx(r.contribution, rel=1e-6, abs=1e-9)
        assert [(m.query_token, m.attribute) for m in b.matches] == \
            [(m.query_token, m.attribute) for m in r.matches]
        assert [m.weight for m in b.matches] == pytest.approx([m.weight for m in r.matches], abs=1e-9)
        assert [m.worth for m in b.matches] == pytest.approx([m.worth for m in r.matches], abs=2e-4)


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("head_weights", [None, {"color": 0.0, "style": 2.5}])
def test_batched_explanations_equal_the_per_item_reference(planted_model, query, head_weights):
    index = planted_model.index
    state = index.query_state(query)
    weights = planted_model.head_weight_vector(head_weights)
    # every item of the catalogue, in an order unlike the catalogue's, and one item twice
    items = np.concatenate([np.arange(planted_model.catalog.n_items)[::-1], [3]])
    ranks = list(range(1, len(items) + 1))
    for item, rank, got in zip(items, ranks, explain_items(index, state, items, weights, ranks)):
        _same(got, explain_item(index, state, int(item), weights, rank))


def test_no_items_and_no_ranks(planted_model):
    index = planted_model.index
    state = index.query_state("scarlet gown")
    weights = planted_model.head_weight_vector(None)
    assert explain_items(index, state, np.array([], dtype=np.int64), weights) == []
    got = explain_items(index, state, np.array([5]), weights)[0]
    assert got.summary.startswith("scored")
    _same(got, explain_item(index, state, 5, weights))


def test_items_without_attributes_in_a_facet(planted_model):
    """An item with no attribute in a facet attends only to no-match: contribution 0, no match."""
    import copy

    import scipy.sparse as sp

    rec = copy.copy(planted_model)
    index = copy.copy(rec.index)
    catalog = copy.copy(index.featurizer.catalog)
    attrs = dict(catalog.item_attrs)
    color = attrs["color"].tolil()
    color[[0, 2], :] = 0  # items 0 and 2 lose their colour
    attrs["color"] = sp.csr_matrix(color)
    catalog.item_attrs = attrs
    featurizer = copy.copy(index.featurizer)
    featurizer.catalog = catalog
    index.featurizer = featurizer
    index.sets = copy.copy(index.sets)  # its flat item rows (batched explanations) from this catalogue
    index.sets._catalog, index.sets._item_rows = catalog, None
    state = index.query_state("scarlet gown")
    weights = rec.head_weight_vector(None)
    items = np.array([0, 1, 2, 3])
    got = explain_items(index, state, items, weights)
    for item, e in zip(items, got):
        _same(e, explain_item(index, state, int(item), weights))
    for e in (got[0], got[2]):
        color_head = e.heads[FACETS.index("color")]
        assert color_head.contribution == 0.0 and color_head.matches == []


def test_recommend_serves_the_batched_explanations(planted_model):
    res = planted_model.recommend("scarlet gown", k=6, offset=2, head_weights={"style": 0.5})
    state = planted_model.index.query_state("scarlet gown")
    weights = planted_model.head_weight_vector({"style": 0.5})
    for item in res.items:
        e = item.explanation
        reference = explain_item(planted_model.index, state, planted_model.catalog.idx(item.item_id),
                                 weights, item.rank)
        # the ranking rewrites the reason line to contrast the items (tests/recsys/test_reasons.py)
        _same(replace(e, summary=reference.summary), reference)
        assert item.score == pytest.approx(e.prior + sum(h.contribution for h in e.heads), abs=1e-4)
        assert all(m.weight >= round(MATCH_THRESHOLD, 4) for h in e.heads for m in h.matches)
        for h in e.heads:
            assert [m.weight for m in h.matches] == sorted((m.weight for m in h.matches), reverse=True)


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("head_weights", [None, {"color": 0.0, "style": 2.5}])
def test_compiled_pass_equals_the_numpy_pass(planted_model, query, head_weights):
    """`kernels._explain_pass` and `_explain_numpy` add the same floats in the same order: the
    explanations are equal, float for float and line for line."""
    from recsys.kernels import compiled

    if compiled() is None:
        pytest.skip("numba cannot compile here: the numpy pass is the only one")
    index = planted_model.index
    state = index.query_state(query)
    weights = planted_model.head_weight_vector(head_weights)
    items = np.concatenate([np.arange(planted_model.catalog.n_items)[::-1], [3]])
    ranks = list(range(1, len(items) + 1))
    got = {}
    try:
        for use_kernel in (True, False):
            index.use_kernel = use_kernel
            got[use_kernel] = explain_items(index, state, items, weights, ranks)
    finally:
        index.use_kernel = True
    assert got[True] == got[False]
    assert any(h.matches for e in got[True] for h in e.heads) or query in ("", "zzqx unknownword")


def test_batched_explanations_with_lengths_per_head(planted_model):
    """Versions saved before `length_per_item` normalise each head's slot by its own attribute
    count: the batched pass reads the same multiplicities as the per-item reference there too."""
    import copy

    index = copy.copy(planted_model.index)
    index.sets = copy.copy(index.sets)
    index.sets.per_item = False
    weights = planted_model.head_weight_vector({"style": 2.5})
    items = np.arange(planted_model.catalog.n_items)
    for query in QUERIES:
        state = index.query_state(query)
        batched = explain_items(index, state, items, weights)
        for item, got in zip(items, batched):
            _same(got, explain_item(index, state, int(item), weights))
        index.use_kernel = False  # the numpy pass: the same floats
        assert explain_items(index, state, items, weights) == batched
        index.use_kernel = True


def _forward_score(rec, query: str, item: int, facet: str, erased: list[int]) -> float:
    """The model's score of one item with `erased` taken out of its `facet` list: the reference
    an erasure is held to (its length and its prior shrink with it too)."""
    return float(forward_erased(rec, query, item, facet, erased)["scores"][0, 0])


def test_an_erasure_is_what_the_score_loses_without_the_attribute(planted_model):
    """/explain's "removing an attribute changes the score by": its own head's change, and, as the
    item's one length and its prior shrink with it, the other heads' and the prior's."""
    from recsys.explain import detail_item, head_attention

    rec = planted_model
    assert rec.index.sets.per_item  # one length per item: an erasure moves every head
    weights = rec.head_weight_vector(None)
    beyond_its_head = 0.0
    rng = np.random.default_rng(0)
    for query in ("scarlet gown", "azure blouse casual", "red dress acme"):
        state = rec.index.query_state(query)
        for item in rng.choice(rec.catalog.n_items, 5, replace=False).tolist():
            whole = _forward_score(rec, query, item, FACETS[0], [])
            _, _, details = detail_item(rec.index, state, item, weights)
            for h, (f, d) in enumerate(zip(FACETS, details)):
                att = head_attention(rec.index, state, item, f)
                for m, erasure in enumerate(d.erasure):
                    truth = _forward_score(rec, query, item, f, [int(att.attr_idx[m])]) - whole
                    assert erasure.score_change == pytest.approx(truth, abs=2e-4), (query, item, f, erasure)
                    own = float(weights[h] * (att.without(m) - att.output))
                    beyond_its_head = max(beyond_its_head, abs(truth - own))
    assert beyond_its_head > 1e-3  # the other heads and the prior do move: the test can tell
