"""The scorer: shapes, exact additivity, and the fast index against the reference computation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from recsys.facets import FACETS
from recsys.tokenize import match_key

QUERIES = ["scarlet gown", "azure blouse casual", "red", "zzqx unknownword", "", "kicks onyx onyx"]


def reference(rec, query, head_weights=None):
    """FacetScorer.forward over every item: the straightforward per-item computation."""
    fz = rec.featurizer
    enc = fz.encode_queries([query])
    attrs, evidence = fz.item_batch(np.arange(rec.catalog.n_items)[None, :], enc)
    with torch.no_grad():
        return rec.model(enc.bucket, enc.grams, enc.mask, enc.specificity, attrs, evidence, head_weights,
                         return_attention=True)


def test_forward_shapes_and_attention_rows(planted_model):
    out = reference(planted_model, "scarlet gown casual")
    n, h = planted_model.catalog.n_items, len(FACETS)
    assert out["scores"].shape == (1, n)
    assert out["contributions"].shape == (1, n, h)
    assert out["prior"].shape == (1, n)
    for f in FACETS:
        att = out["attention"][f]  # (B, I, T, M + 1)
        assert att.shape[:3] == (1, n, 3)
        assert torch.allclose(att.sum(-1), torch.ones(1, n, 3), atol=1e-5)


def test_scores_split_exactly_into_prior_and_heads(planted_model):
    out = reference(planted_model, "scarlet gown")
    rebuilt = out["prior"] + out["contributions"].sum(-1)
    assert torch.allclose(out["scores"], rebuilt, atol=1e-5)


@pytest.mark.parametrize("query", QUERIES)
def test_fast_index_equals_reference(planted_model, query):
    ref = reference(planted_model, query)["scores"][0].numpy()
    fast = planted_model.scores(query)
    np.testing.assert_allclose(fast, ref, atol=1e-4, rtol=1e-5)


def test_head_weights_scale_contributions(planted_model):
    weights = torch.tensor([1.0, 0.0, 2.0, 1.0])
    out = reference(planted_model, "scarlet gown casual", weights)
    plain = reference(planted_model, "scarlet gown casual")
    assert torch.all(out["contributions"][..., 1] == 0)
    assert torch.allclose(out["contributions"][..., 2], 2 * plain["contributions"][..., 2], atol=1e-5)
    fast = planted_model.scores("scarlet gown casual", dict(zip(FACETS, weights.tolist())))
    np.testing.assert_allclose(fast, out["scores"][0].numpy(), atol=1e-4)


def test_words_never_seen_still_get_scores(planted_model):
    scores = planted_model.scores("qwertyuiop")
    assert scores.shape == (planted_model.catalog.n_items,)
    # it matches nothing: every item keeps its prior but for the heads' leak (a match is ~0.5)
    assert np.abs(scores - planted_model.index.prior).max() < 0.05
    items = planted_model.recommend("qwertyuiop", k=planted_model.catalog.n_items).items
    assert not [h.matches for i in items for h in i.explanation.heads if h.matches]


def test_model_without_attributes_in_a_facet(tmp_path):
    import pandas as pd

    from recsys.catalog import Catalog
    from training.fit import TrainConfig, train_recommender

    items = pd.DataFrame({"item_id": ["a", "b", "c"], "title": ["red shirt", "blue shirt", "red hat"],
                          "color": ["red", "blue", "red"]})
    catalog = Catalog.build(items)
    assert len(catalog.vocab["quality"]) == 0 and len(catalog.vocab["style"]) == 0
    rows = pd.DataFrame({"query": ["red", "blue"], "item_idx": [0, 1], "label": [1.0, 1.0],
                         "weight": [1.0, 1.0]})
    rec, _ = train_recommender(catalog, rows, TrainConfig(epochs=1))
    result = rec.recommend("red", k=3)
    for item in result.items:
        e = item.explanation
        assert [h.head for h in e.heads] == list(FACETS)
        assert abs(item.score - e.prior - sum(h.contribution for h in e.heads)) < 1e-4


def test_the_no_match_slot_is_bm25s_length_normalisation():
    """Untrained, a word's one exact match sits log(k1) below the no-match slot, and the slot
    counts 1 - b + b n / mean times: the attention on the match is BM25's term saturation
    1 / (1 + k1 (1 - b + b n / avgdl)), and shorter items than the average give it more."""
    from recsys.model import FacetHead, ModelConfig

    cfg = ModelConfig(vocab_sizes={f: 1 for f in FACETS})
    head = FacetHead(cfg)
    mean, b, k1 = torch.tensor(6.0), cfg.init_length, cfg.bm25_k1
    shares = []
    for n in (1, 6, 30):
        match = torch.tensor([0.0])  # the word's match; the other n - 1 attributes do not match
        others = torch.full((n - 1,), cfg.init_match_bias - cfg.init_exact)
        slot = match + np.log(k1) + head.slot_log_count(torch.tensor(n), mean)
        att = torch.softmax(torch.cat([match, others, slot.reshape(1)]), 0)
        expected = 1.0 / (1.0 + k1 * (1 - b + b * n / 6.0))
        assert float(att[0].detach()) == pytest.approx(expected, rel=2e-3)
        shares.append(float(att[0].detach()))
    assert shares[0] > shares[1] > shares[2]


def test_word_specificity_is_the_idf_of_what_the_word_names(planted_model):
    """Planted titles are "<brand> <category>": every category word names a third of the items
    (category column and title), every brand word half of them; a synonym names nothing."""
    fz = planted_model.featurizer
    spec = fz.word_specificity()
    n = planted_model.catalog.n_items
    scaled_idf = lambda count: np.log((n + 1) / (count + 1)) / np.log(n + 1)  # noqa: E731
    assert spec[fz.words.id("dress")] == pytest.approx(scaled_idf(n / 3), rel=1e-5)
    acme = fz.words.id(match_key("acme"))
    assert spec[acme] == pytest.approx(scaled_idf(n / 2), rel=1e-5)
    assert spec[fz.words.id("gown")] == 0.0  # a query word only: no item has it
    enc = fz.encode_queries(["gown acme"])
    np.testing.assert_allclose(enc.specificity[0].numpy(), [0.0, spec[acme]])


def test_a_specific_word_raises_the_no_match_bar():
    from recsys.model import FacetHead, ModelConfig

    head = FacetHead(ModelConfig(vocab_sizes={f: 1 for f in FACETS}, init_specific=4.0))
    tok = torch.zeros(2, head.q_proj.in_features)
    with torch.no_grad():
        _, no_match = head.queries(tok, torch.tensor([0.0, 0.5]))
    cap = head.cap  # logits are soft-capped: cap * tanh(x / cap)
    c = float(head.no_match.bias.detach())
    expected = cap * (np.tanh((c + 2.0) / cap) - np.tanh(c / cap))
    assert float(no_match[1] - no_match[0]) == pytest.approx(expected, rel=1e-5)
