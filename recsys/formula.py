"""The parts of a head's logit formula that every implementation shares, by name.

    logit(t, a) = cap * tanh((q_t . k_a / sqrt(d_k) + bias(a) + sum over kinds of evidence(t, a) * weight(a)) / cap)

with one evidence channel per entry of `EVIDENCE_KINDS` (exact match, click association, near
spelling) and exact evidence scaled by coverage (`covered`). It is computed three times: in torch
(`FacetHead.match_logits`, the reference training differentiates), in numpy
(`ScoringIndex._state_arrays`) and compiled (`kernels._query_logits`); the two fast paths read the
flat tables of `LogitTables`, which `FacetHead.logit_tables` makes from a head's parameters, and
tests/test_index.py holds all three equal on random weights. A new evidence kind is one more name
here, one more row in the index's word rows and one more weight in `FacetHead.evidence_weight`.

Torch-free, so that the numpy side and the kernels read it without torch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# the order of every evidence axis: the model's (..., 3) evidence tensors, `FacetHead.
# evidence_weight`, `LogitTables.weights`' rows and the index's word rows after the dot product
EVIDENCE_KINDS: tuple[str, ...] = ("exact", "assoc", "near")
EXACT, ASSOC, NEAR = (EVIDENCE_KINDS.index(k) for k in ("exact", "assoc", "near"))
N_KINDS = len(EVIDENCE_KINDS)


LENGTH_STEPS = 16  # an item's length is rounded to a step of 2^(1/16) (4.4% apart)


def quantized_length(length: np.ndarray) -> np.ndarray:
    """Item lengths (float64, any shape) as the no-match slot reads them: rounded to the nearest
    step of 2^(1/LENGTH_STEPS). BM25 normalises every item by its own length; rounded, items of
    one attribute set in a facet fall into a few dozen lengths, so the index still scores each
    facet once per (set, length) rather than once per item, and the slot moves by at most 2.2%
    of b * length / mean."""
    steps = np.round(np.log2(np.maximum(np.asarray(length, dtype=np.float64), 0.25)) * LENGTH_STEPS)
    rounded: np.ndarray = np.exp2(steps / LENGTH_STEPS)
    return rounded


def covered(exact: np.ndarray, n_words: np.ndarray) -> np.ndarray:
    """Exact evidence (..., T, M) 0/1 scaled by the share of each attribute's words (n_words,
    broadcast like (..., 1, M)) that the query's T words have: "dining" fully matches "dining
    chair" in "dining chair", half of it in "dining"."""
    scaled: np.ndarray = exact * (exact.sum(axis=-2, keepdims=True) / n_words)
    return scaled


@dataclass
class LogitTables:
    """One head's logit formula as flat tables over its V attributes: what the numpy and
    compiled paths read (the index puts every head's side by side)."""

    dot: np.ndarray  # (D, V) float64: a token vector times this is q . k / sqrt(d_k) per attribute
    no_match: np.ndarray  # (D,) float64: a token vector times this is its no-match pre-activation
    no_match_bias: float  # added to it
    specific_weight: float  # times the word's specificity, added to it
    weights: np.ndarray  # (N_KINDS, V) float32: each evidence kind's weight per attribute (exact's
    # includes the rare-attribute term, rare_weight x the attribute's IDF)
    bias: np.ndarray  # (V,) float32 logit offset per attribute (match bias + source offset)
