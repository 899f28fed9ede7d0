"""The slow, obvious computations the tests hold the fast paths to. Nothing here calls the code
under test: a reference that shared a helper with it would agree with it whatever it did."""

from __future__ import annotations

import numpy as np


def sorted_top_k(scores: np.ndarray, eligible: np.ndarray | None, k: int) -> np.ndarray:
    """Indices of the k best eligible items, best first, ties by catalogue order: a stable sort
    of every eligible item's negated score, cut at k."""
    items = np.arange(len(scores)) if eligible is None else np.flatnonzero(eligible)
    ranked = items[np.argsort(-scores[items], kind="stable")]
    return ranked[: max(k, 0)]


def ties_at_the_cut(scores: np.ndarray, eligible: np.ndarray | None, k: int) -> bool:
    """Whether the k-th best eligible score is shared with an item below the cut: only then
    does the order among equal scores decide which items are in the top k."""
    ranked = sorted_top_k(scores, eligible, len(scores))
    return 0 < k < len(ranked) and scores[ranked[k - 1]] == scores[ranked[k]]


def forward_erased(rec, query: str, item: int, facet: str, erased) -> dict:
    """`FacetScorer.forward` (the model's own reference computation) for one item with the
    attributes `erased` taken out of its `facet` list: its "scores", "contributions" and "prior",
    each (1, 1, ...)."""
    import torch

    fz = rec.featurizer
    enc = fz.encode_queries([query])
    attrs, evidence = fz.item_batch(np.array([[item]]), enc)
    a = attrs[facet].clone()
    a[torch.isin(a, torch.as_tensor(np.asarray(erased, dtype=np.int64)))] = -1
    attrs[facet] = a
    with torch.no_grad():
        out: dict = rec.model(enc.bucket, enc.grams, enc.mask, enc.specificity, attrs, evidence)
    return out
