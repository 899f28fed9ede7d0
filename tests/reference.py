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
