"""A shopper's history as query words (issue 32, "for this shopper").

What a shopper clicked, carted and bought says what they like, in the catalogue's own words: the
attributes of those items. So a profile is words, the words each item makes of itself as a query
(`similar.item_query`: its attributes in facet order, the rarest kept), weighted by the events
that touched the item and kept only where the history says them strongly. The words then attend
like typed ones, in the same heads (`Recommender.recommend`'s `history`): every personalised
score is still prior + heads, and each match of a history word is explained as one ("your
history: navy, linen").

An event's weight is its kind's label (`dataio.EVENT_LABELS`: click 1, cart 2, purchase 3, an
impression 0), the same grading a retrain from events gives it: a shopper pays more for a
purchase than a click, so it says more. It halves every `HALF_LIFE_DAYS`: tastes drift, and last
week's purchases say more about today than last year's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .catalog import Catalog
from .dataio import EVENT_LABELS
from .similar import item_query

HALF_LIFE_DAYS = 14.0  # an event's weight halves every two weeks
PROFILE_WORDS = 4  # words at most: more would outweigh a typed query of two or three words
# a word is kept only with more than this share of the strongest word's weight: a word one item
# of many said is what that item was, not what the shopper prefers
MIN_SHARE = 0.5
NO_HISTORY = ("no history for this shopper (no click, cart or purchase of an item of this catalogue): "
              "this answer is not personalised")


@dataclass(frozen=True)
class HistoryEvent:
    """One event of a shopper's history, as the library sees it."""

    item_idx: int  # the item, in the catalogue's order
    kind: str  # click, cart, purchase (an impression counts for nothing)
    age_days: float  # how long ago, >= 0


@dataclass(frozen=True)
class Profile:
    """A shopper's preferences as query words; empty when the history says nothing."""

    words: list[str]  # strongest first
    weights: dict[str, float]  # word -> its decayed event weight
    drawn_by: dict[str, list[str]]  # word -> the attributes of the shopper's items it came from
    events: int = 0  # the events that counted (a known item, a kind with a weight)
    note: str = field(default="")  # why the profile is empty, when it is

    def __bool__(self) -> bool:
        return bool(self.words)


def event_weight(kind: str, age_days: float) -> float:
    """The weight of an event of `kind`, `age_days` old (the module's docstring)."""
    return float(EVENT_LABELS.get(kind, 0.0) * 0.5 ** (max(age_days, 0.0) / HALF_LIFE_DAYS))


def build_profile(catalog: Catalog, events: Sequence[HistoryEvent],
                  attribute_df: Callable[[str], np.ndarray], max_words: int = PROFILE_WORDS) -> Profile:
    """The profile of `events`: each item's own query words (`similar.item_query`) weighted by
    the sum of its events' weights, at most `max_words` of them with more than MIN_SHARE of the strongest's
    weight, strongest first (ties: first seen in the newest events first)."""
    per_item: dict[int, float] = {}
    counted = 0
    for e in sorted(events, key=lambda e: e.age_days):
        w = event_weight(e.kind, e.age_days)
        if w > 0 and 0 <= e.item_idx < catalog.n_items:
            per_item[e.item_idx] = per_item.get(e.item_idx, 0.0) + w
            counted += 1
    if not per_item:
        return Profile([], {}, {}, 0, NO_HISTORY)
    weights: dict[str, float] = {}
    drawn_by: dict[str, list[str]] = {}
    for item_idx, w in per_item.items():
        asked = item_query(catalog, item_idx, attribute_df)
        for word, labels in asked.drawn_by.items():
            weights[word] = weights.get(word, 0.0) + w
            known = drawn_by.setdefault(word, [])
            known.extend(label for label in labels if label not in known)
    order = {w: i for i, w in enumerate(weights)}
    ranked = sorted(weights, key=lambda w: (-weights[w], order[w]))
    strongest = weights[ranked[0]]
    kept = [w for w in ranked[:max_words] if weights[w] > MIN_SHARE * strongest]
    return Profile(kept, {w: round(weights[w], 6) for w in kept}, {w: drawn_by[w] for w in kept}, counted)
