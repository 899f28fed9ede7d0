"""The cost of stray attention: weight a word puts on attributes it has no evidence for."""

from __future__ import annotations

import numpy as np
import torch

from training.fit import TrainConfig, stray_attention, train_recommender
from training.train import TrainInputs, load_training_data


def test_stray_attention_counts_only_attributes_without_evidence():
    # one item, two words, three attributes and the no-match slot
    attention = {"color": torch.tensor([[[[0.5, 0.2, 0.1, 0.2], [0.0, 0.3, 0.3, 0.4]]]])}  # (1, 1, 2, 4)
    evidence = torch.zeros(1, 1, 2, 3, 3)  # (B, I, T, M, kinds)
    evidence[0, 0, 0, 0, 0] = 1.0  # word 0 matches attribute 0 exactly
    evidence[0, 0, 1, 2, 1] = 0.4  # word 1 is associated with attribute 2
    stray = stray_attention(attention, {"color": evidence})
    # word 0: attributes 1 and 2 are stray (0.2 + 0.1); word 1: attributes 0 and 1 (0.0 + 0.3)
    np.testing.assert_allclose(stray.numpy(), [[[0.3, 0.3]]], atol=1e-7)


def test_the_penalty_moves_attention_off_attributes_without_evidence(planted_paths):
    """On the planted catalogue, the fitted weights (served whole: alpha 1) put less attention on
    attributes without evidence when the fit pays for it, and rank as well."""
    catalog, rows, _ = load_training_data(TrainInputs(planted_paths["items"], planted_paths["interactions"]))
    queries = sorted(rows["query"].unique())[:40]
    stray = {}
    for penalty in (0.0, 5.0):
        rec, report = train_recommender(catalog, rows, TrainConfig(epochs=4, seed=0, leak_penalty=penalty,
                                                                   alphas=(1.0,)))
        assert report.alpha == 1.0
        enc = rec.featurizer.encode_queries(queries)
        attrs, evidence = rec.featurizer.item_batch(np.tile(np.arange(catalog.n_items), (len(queries), 1)), enc)
        with torch.no_grad():
            out = rec.model(enc.bucket, enc.grams, enc.mask, enc.specificity, attrs, evidence,
                            return_attention=True)
        per_word = stray_attention(out["attention"], evidence)  # (queries, items, T)
        stray[penalty] = float(per_word[enc.mask[:, None, :].expand_as(per_word)].mean())
        # the synonym query still finds red dresses first
        top = rec.recommend("scarlet gown", k=4).items
        assert all(it.attributes["color"] == ["red"] and "category:dress" in it.attributes["other"] for it in top)
    assert stray[5.0] < 0.6 * stray[0.0], stray
