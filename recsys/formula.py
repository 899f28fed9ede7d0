"""The parts of a head's logit formula that every implementation shares, by name.

    logit(t, a) = cap * tanh((q_t . k_a / sqrt(d_k) + bias(a) + sum over kinds of evidence(t, a) * weight(a)) / cap)
                  - unmatched_offset * [no kind of evidence links t to a]  (`unlinked`)

with one evidence channel per entry of `EVIDENCE_KINDS` (exact match, click association, near
spelling) and exact evidence after coverage (`covered`). It is computed three times: in torch
(`FacetHead.match_logits`, the reference training differentiates), in numpy
(`ScoringIndex._state_arrays`) and compiled (`kernels._query_logits`); the two fast paths read the
flat tables of `LogitTables`, which `FacetHead.logit_tables` makes from a head's parameters, and
tests/recsys/test_index.py holds all three equal on random weights. A new evidence kind is one more name
here, one more row in the index's word rows and one more weight in `FacetHead.evidence_weight`.

Torch-free, so that the numpy side and the kernels read it without torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np

if TYPE_CHECKING:  # the reference applies `unlinked` to tensors; this module stays torch-free
    import torch

ArrayT = TypeVar("ArrayT", np.ndarray, "torch.Tensor")

# the order of every evidence axis: the model's (..., 3) evidence tensors, `FacetHead.
# evidence_weight`, `LogitTables.weights`' rows and the index's word rows after the dot product
EVIDENCE_KINDS: tuple[str, ...] = ("exact", "assoc", "near")
EXACT, ASSOC, NEAR = (EVIDENCE_KINDS.index(k) for k in ("exact", "assoc", "near"))
N_KINDS = len(EVIDENCE_KINDS)


LENGTH_STEPS = 16  # an item's length is rounded to a step of 2^(1/16) (4.4% apart)
# The rounded lengths as a table, from 2^-2 (every length below it is read as it) to 2^40: the
# compiled explanations read the same floats numpy does (`length_step`, `kernels._explain_pass`)
MIN_LENGTH_STEP = -2 * LENGTH_STEPS
LENGTH_LEVELS = np.exp2(np.arange(MIN_LENGTH_STEP, 40 * LENGTH_STEPS + 1, dtype=np.float64) / LENGTH_STEPS)


def length_step(length: np.ndarray) -> np.ndarray:
    """(same shape) int64 the row of `LENGTH_LEVELS` an item's length rounds to."""
    x = np.maximum(np.asarray(length, dtype=np.float64), 0.25)
    steps: np.ndarray = np.round(np.log2(x) * LENGTH_STEPS).astype(np.int64) - MIN_LENGTH_STEP
    capped: np.ndarray = np.minimum(steps, len(LENGTH_LEVELS) - 1)
    return capped


def quantized_length(length: np.ndarray) -> np.ndarray:
    """Item lengths (float64, any shape) as the no-match slot reads them: rounded to the nearest
    step of 2^(1/LENGTH_STEPS). BM25 normalises every item by its own length; rounded, items of
    one attribute set in a facet fall into a few dozen lengths, so the index still scores each
    facet once per (set, length) rather than once per item, and the slot moves by at most 2.2%
    of b * length / mean."""
    rounded: np.ndarray = np.asarray(LENGTH_LEVELS[length_step(length)])
    return rounded


def bm25_idf(df: np.ndarray, n_items: int) -> np.ndarray:
    """BM25's (Lucene's) IDF of terms in df of n_items items: log(1 + (N - df + 0.5) / (df + 0.5))."""
    df = np.asarray(df, dtype=np.float64)
    idf: np.ndarray = np.log1p((n_items - df + 0.5) / (df + 0.5))
    return idf


def partial_worth(word_idf: np.ndarray, attr_idf: np.ndarray, exact_weight: float, k1: float) -> np.ndarray:
    """The exact evidence (float32, in (0, 1]) of a query word on an attribute of several words
    when the query does not have them all: "blue" on `color:navy blue`. An attribute is worth its
    own (the phrase's) IDF; BM25 over the text counts the word at the word's IDF, lower when other
    items say it too. So the start puts the match below a full one by the logit x at which, at
    the average length, the phrase's IDF times the saturation e^x / (e^x + k1) is the word's IDF
    times a full match's 1 / (1 + k1): with r = word IDF / phrase IDF and s = r / (1 + k1),
    e^x = k1 s / (1 - s). At the starting exact weight (`exact_weight`) the evidence
    1 + x / exact_weight moves the logit by x. A word only the phrase has ("gifts" of "free
    gifts": r = 1) is a full match; training moves the weight and the offset with it."""
    ratio = np.minimum(np.asarray(word_idf, dtype=np.float64) / np.maximum(attr_idf, 1e-12), 1.0)
    share = np.maximum(ratio, 1e-12) / (1.0 + k1)
    offset = np.log(k1 * share / (1.0 - share))  # 0 at r = 1
    out: np.ndarray = np.clip(1.0 + offset / exact_weight, MIN_PARTIAL_WORTH, 1.0).astype(np.float32)
    return out


MIN_PARTIAL_WORTH = 1e-3  # above 0: a stored evidence value says the word is one of the attribute's


def partial_share(word_idf: np.ndarray, attr_idf: np.ndarray) -> np.ndarray:
    """The share (float32, in (0, 1]) of an attribute's value that a query word of it is worth
    when the query does not have all of its words (`ModelOptions.partial_value`): the word's BM25
    IDF over the phrase's, so that "camera" on `device_compatibility:gopro camera` is worth what
    the word camera is worth, as one more occurrence of it in BM25 over the text. The match
    itself is a full one (`logit_evidence`): its attention saturates with the word's other
    matches in the head as BM25's term frequency does, where an evidence below 1 added a small
    attention on the phrase's large value on top of them (an accessory that names "camera" in
    its title and its spec list outranked the camera)."""
    ratio = np.asarray(word_idf, dtype=np.float64) / np.maximum(attr_idf, 1e-12)
    out: np.ndarray = np.clip(ratio, MIN_PARTIAL_WORTH, 1.0).astype(np.float32)
    return out


def logit_evidence(exact: ArrayT, partial_value: bool) -> ArrayT:
    """The exact evidence a logit reads from exact evidence after coverage (`covered`): the
    stored value, or (`partial_value`: the tables store `partial_share`s) 1 wherever the word is
    one of the attribute's."""
    if not partial_value:
        return exact
    if isinstance(exact, np.ndarray):
        return (exact > 0).astype(np.float32)
    present: ArrayT = (exact > 0).to(exact.dtype)
    return present


def value_share(exact: ArrayT) -> ArrayT:
    """Per (word, attribute) pair, the share of the attribute's value its attention is worth,
    from exact evidence after coverage under `partial_value`: a covered word's stored
    `partial_share` where 0 < it < 1, else 1 (a whole match, any other evidence, or none)."""
    partial = (exact > 0) & (exact < 1)
    if isinstance(exact, np.ndarray):
        return np.where(partial, exact, np.float32(1.0)).astype(np.float32, copy=False)
    share: ArrayT = exact.where(partial, exact.new_ones(()))
    return share


def covered(exact: np.ndarray, n_words: np.ndarray, partial: bool, phrase: np.ndarray | None = None) -> np.ndarray:
    """Exact evidence (..., T, M) after coverage: a query with all of an attribute's words
    (n_words, broadcast like (..., 1, M)) matches it fully, 1 for each of them ("navy blue" on
    `color:navy blue`). Otherwise each word that is one of them keeps its stored evidence, its
    `partial_worth` or `partial_share` (`partial`), or (not `partial`: versions saved before,
    whose tables store 1) the share of the attribute's words the query has: "dining" half of
    "dining chair". `exact` is 0 where the word is not one of the attribute's. `phrase`
    (broadcast like n_words; None: all 1): 0 where the value is one word as written
    (`is_phrase`), whose words keep their stored evidence even when the query has them all."""
    if not partial:
        shared: np.ndarray = exact * (exact.sum(axis=-2, keepdims=True) / n_words)
        return shared
    present = exact > 0
    whole = present.sum(axis=-2, keepdims=True) >= n_words  # (..., 1, M)
    if phrase is not None:
        whole = whole & (phrase > 0)
    scaled: np.ndarray = np.where(whole, present, exact).astype(np.float32)
    return scaled


# a value written as one word that the tokeniser splits into several ("4K", "USB-C", "2160p"):
# letters and digits, joined by nothing, hyphens, points or underscores (a spec key that a
# yes made the value: `bluetooth_enabled`, `recsys.catalog.spec_pairs`)
_ONE_WORD = re.compile(r"[^\W_]+(?:[-._][^\W_]+)*")


def is_phrase(value: str, n_words: int) -> bool:
    """Whether a query with all `n_words` words of an attribute's value matches it whole, each
    word worth all of it (`covered`): a phrase ("navy blue", "hdmi cables", whose match whole
    finds the product's kind). Not a value written as one word that the tokeniser splits ("4K"
    is "4" and "k", as a query's "4k" is, under `ModelOptions.partial_value`; a spec key a yes
    made the value, `rechargeable_battery`, is "rechargeable" and "battery"): each part keeps
    its `partial_share`, so "4k" counts "4" and "k" at their own IDFs, as BM25 over the text
    does, where each counting the whole value put HDMI cables whose spec says
    `maximum_resolution:4k` above the 4K monitors."""
    return n_words < 2 or _ONE_WORD.fullmatch(value.strip()) is None


def assoc_scales(said: np.ndarray, share: float) -> np.ndarray:
    """(...) float32 the factor on each query word's click-association evidence, from whether
    the catalogue says the word (`said`, bool: it matches some attribute exactly): `share` for
    one it says (`ModelOptions.said_assoc_share`), 1 for one it never says (a learned synonym)."""
    return np.where(np.asarray(said, dtype=bool), np.float32(share), np.float32(1.0)).astype(np.float32)


def unlinked(exact: ArrayT, assoc: ArrayT, near: ArrayT) -> ArrayT:
    """Where no evidence links a query word to an attribute (no exact, association or near
    match; arrays of one shape, exact after coverage): the cells the head's `unmatched_offset`
    is subtracted from, after the cap. The cap keeps such a logit above -cap (the start's -8 is
    -7 capped: each one leaks e^-7 of a word's attention against a match's e^0); the offset
    takes it below that without touching the logits training moves."""
    mask: ArrayT = (exact <= 0) & (assoc <= 0) & (near <= 0)
    return mask


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
    # subtracted after the cap where `unlinked` (0: nothing; the model's `unmatched_offset`)
    unmatched_offset: float = 0.0
