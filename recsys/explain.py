"""Per-item explanations read straight off the scorer: attention, contributions, erasure.

Everything here recomputes the item's head outputs from the same query state the ranking used,
so contributions add up exactly to the score.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .facets import FACETS
from .index import QueryState, ScoringIndex

NO_MATCH = "(no match)"
MATCH_THRESHOLD = 0.1  # attention weight below which a pair is not listed as a match


@dataclass
class Match:
    query_token: str
    attribute: str
    weight: float


@dataclass
class HeadExplanation:
    head: str
    contribution: float
    matches: list[Match]


@dataclass
class Explanation:
    prior: float
    summary: str
    heads: list[HeadExplanation]


@dataclass
class Erasure:
    attribute: str
    score_change: float


@dataclass
class HeadDetail:
    head: str
    contribution: float
    attributes: list[str]  # the item's attributes of this facet, then NO_MATCH
    attention: list[list[float]]  # one row per query token over `attributes`
    erasure: list[Erasure]
    matches: list[Match] = field(default_factory=list)


@dataclass
class HeadAttention:
    """One item, one head: attention (T, M + 1) with the no-match slot last, values (M,)."""

    attr_idx: np.ndarray
    labels: list[str]
    weights: np.ndarray
    exps: np.ndarray  # (T, M) exp(logits), for erasure
    den: np.ndarray  # (T,)
    values: np.ndarray

    @property
    def output(self) -> float:
        return float((self.weights[:, :-1] * self.values).sum())

    def without(self, m: int) -> float:
        """The head output if attribute m were removed from the item."""
        num = (self.exps * self.values).sum(1) - self.exps[:, m] * self.values[m]
        return float((num / (self.den - self.exps[:, m])).sum())


def head_attention(index: ScoringIndex, state: QueryState, item_idx: int, facet: str) -> HeadAttention:
    catalog = index.featurizer.catalog
    attrs = catalog.attributes_of(item_idx, facet)
    all_labels = catalog.labels(facet)
    labels = [all_labels[a] for a in attrs]
    values = index.tables[facet].values[attrs]
    if not state.tokens:
        empty = np.zeros((0, len(attrs)))
        return HeadAttention(attrs, labels, np.zeros((0, len(attrs) + 1)), empty, np.zeros(0), values)
    exps = np.exp(state.logits[facet][:, attrs].astype(np.float64))  # (T, M)
    e_none = np.exp(state.no_match[facet].astype(np.float64))  # (T,)
    den = exps.sum(1) + e_none  # (T,)
    weights = np.concatenate([exps, e_none[:, None]], 1) / den[:, None]
    return HeadAttention(attrs, labels, weights, exps, den, values)


def matches_of(att: HeadAttention, state: QueryState) -> list[Match]:
    found = [
        Match(tok.surface, att.labels[m], round(float(att.weights[t, m]), 4))
        for t, tok in enumerate(state.tokens)
        for m in range(len(att.labels))
        if att.weights[t, m] >= MATCH_THRESHOLD
    ]
    return sorted(found, key=lambda x: -x.weight)


def explain_item(index: ScoringIndex, state: QueryState, item_idx: int, head_weights: np.ndarray,
                 rank: int | None = None) -> Explanation:
    heads = []
    for h, f in enumerate(FACETS):
        att = head_attention(index, state, item_idx, f)
        heads.append(HeadExplanation(f, float(head_weights[h] * att.output), matches_of(att, state)))
    prior = float(index.prior[item_idx])
    return Explanation(prior, summarize(heads, prior, rank), heads)


def detail_item(index: ScoringIndex, state: QueryState, item_idx: int,
                head_weights: np.ndarray) -> tuple[float, float, list[HeadDetail]]:
    """(score, prior, per-head details with attention matrices and erasure)."""
    details = []
    for h, f in enumerate(FACETS):
        att = head_attention(index, state, item_idx, f)
        out = att.output
        erasure = [
            Erasure(att.labels[m], float(head_weights[h] * (att.without(m) - out)))
            for m in range(len(att.labels))
        ]
        details.append(HeadDetail(
            head=f,
            contribution=float(head_weights[h] * out),
            attributes=att.labels + [NO_MATCH],
            attention=np.round(att.weights, 6).tolist(),
            erasure=erasure,
            matches=matches_of(att, state),
        ))
    prior = float(index.prior[item_idx])
    return prior + sum(d.contribution for d in details), prior, details


def summarize(heads: list[HeadExplanation], prior: float, rank: int | None) -> str:
    lead = f"ranked {_ordinal(rank)}" if rank is not None else "scored"
    best = max(heads, key=lambda h: h.contribution)
    if best.contribution < 0.05 or not best.matches:
        return f"{lead} on its prior ({prior:+.2f}): no query word matched its attributes"
    m = best.matches[0]
    return f"{lead} mostly for {best.head}: '{m.query_token}' matched {m.attribute}"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
