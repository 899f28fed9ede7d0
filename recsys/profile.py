"""A shopper's history as query words (issue 32, "for this shopper").

What a shopper clicked, carted and bought says what they like, in the catalogue's own words: the
attributes of those items. So a profile is words, the words each item makes of itself as a query
(`similar.item_query`: its attributes in facet order, the rarest kept), weighted by the events
that touched the item and kept only where the history says them strongly. The words then attend
like typed ones, in the same heads (`Recommender.recommend`'s `history`): every personalised
score is still prior + heads, and each match of a history word is explained as one ("your
history: navy, linen").

An event's weight is its kind's label (`recsys.io.contract.EVENT_LABELS`: click 1, cart 2, purchase 3, an
impression 0), the same grading a retrain from events gives it: a shopper pays more for a
purchase than a click, so it says more. It halves every `HALF_LIFE_DAYS`: tastes drift, and last
week's purchases say more about today than last year's.

What an item's words say is a preference only beyond what the shopper would have chosen
anyway, so a word's weight is its lift: the weight of the chosen items that say it, less the
share of the items they chose among that say it (times the chosen weight). "Among" is what the
answer showed them, when the history has its impressions (`request`): a search for "dress"
shows only dresses, so choosing one says nothing about dresses, and every answer has some
quality grade and price bucket. Without impressions it is the catalogue (the word's share of
items, its document frequency). The words of the query an event answered never count: the
shopper asked for them. On the simulated shoppers of benchmarks/shopper_loop.py, profiles of raw
event weights were quality grades, rating and price buckets and the queries' words; lifts take
most of those out, though from 30 searches they still find a colour preference for only about a
tenth of the colour shoppers (docs/results.md, "For this shopper").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .catalog import Catalog
from .io.contract import EVENT_LABELS
from .similar import ItemQuery, item_query
from .tokenize import words

HALF_LIFE_DAYS = 14.0  # an event's weight halves every two weeks
PROFILE_WORDS = 4  # words at most: more would outweigh a typed query of two or three words
# a word is kept only with more than this share of the strongest word's weight: a word one item
# of many said is what that item was, not what the shopper prefers
MIN_SHARE = 0.5
# a word is a preference only when the shopper chose items saying it in at least this many
# answers (searches, pages): one answer's choice is what that item was, a lasting taste recurs
MIN_ANSWERS = 2
NO_HISTORY = ("no history for this shopper (no click, cart or purchase of an item of this catalogue "
              "beyond what they searched for): this answer is not personalised")


@dataclass(frozen=True)
class HistoryEvent:
    """One event of a shopper's history, as the library sees it."""

    item_idx: int  # the item, in the catalogue's order
    kind: str  # click, cart, purchase (chosen), or impression (shown: the lift's baseline)
    age_days: float  # how long ago, >= 0
    query: str = ""  # what the shopper had searched for: its words are not a preference
    request: str = ""  # the answer it came from (its impressions are what was shown); "": unknown
    position: int | None = None  # 1-based rank it was shown at, if known


@dataclass(frozen=True)
class Profile:
    """A shopper's preferences as query words; empty when the history says nothing."""

    words: list[str]  # strongest first
    weights: dict[str, float]  # word -> its lift (the module's docstring)
    drawn_by: dict[str, list[str]]  # word -> the attributes of the shopper's items it came from
    events: int = 0  # the events that counted (a known item, a kind with a weight)
    note: str = field(default="")  # why the profile is empty, when it is

    def __bool__(self) -> bool:
        return bool(self.words)


def event_weight(kind: str, age_days: float) -> float:
    """The weight of an event of `kind`, `age_days` old (the module's docstring)."""
    return float(EVENT_LABELS.get(kind, 0.0) * 0.5 ** (max(age_days, 0.0) / HALF_LIFE_DAYS))


def examined(position: int | None) -> float:
    """How often a shopper looks at an item shown at `position`: 1 / position (the closed loop's
    examination model, DCG's discount); 1 where the position is unknown."""
    return 1.0 / position if position else 1.0


def build_profile(catalog: Catalog, events: Sequence[HistoryEvent],
                  attribute_df: Callable[[str], np.ndarray], max_words: int = PROFILE_WORDS) -> Profile:
    """The profile of `events`: per word of the chosen items' own query words
    (`similar.item_query`) but their query's, its lift (the module's docstring); at most
    `max_words` words with more than MIN_SHARE of the strongest's lift, strongest first (ties:
    first seen in the newest events first)."""
    asked: dict[int, ItemQuery] = {}

    def item_words(item_idx: int) -> ItemQuery:
        if item_idx not in asked:
            asked[item_idx] = item_query(catalog, item_idx, attribute_df)
        return asked[item_idx]

    # request -> (chosen, shown): an event without its request is an answer of its own
    answers: dict[str, tuple[list[HistoryEvent], dict[int, float]]] = {}
    for order, e in enumerate(sorted(events, key=lambda e: e.age_days)):
        if 0 <= e.item_idx < catalog.n_items:
            chosen, shown = answers.setdefault(e.request or f"#{order}", ([], {}))
            if e.kind == "impression" and e.request:
                shown[e.item_idx] = examined(e.position)
            elif event_weight(e.kind, e.age_days) > 0:
                chosen.append(e)
    lift: dict[str, float] = {}
    drawn_by: dict[str, list[str]] = {}
    support: Counter[str] = Counter()  # answers in which the shopper chose an item saying the word
    for chosen, shown in answers.values():
        said: Counter[str] = Counter()  # shown items saying each word, each as often as it was examined
        for i, p in shown.items():
            said.update({w: p for w in item_words(i).drawn_by})
        seen = sum(shown.values())
        df: dict[str, float] = {}  # the chosen items' words -> items of the catalogue saying them
        for e in chosen:
            item, searched = item_words(e.item_idx), set(words(e.query))
            for word, labels in item.drawn_by.items():
                if word not in searched:
                    lift[word] = lift.get(word, 0.0) + event_weight(e.kind, e.age_days)
                    df[word] = item.df[word]
                    known = drawn_by.setdefault(word, [])
                    known.extend(label for label in labels if label not in known)
        total = sum(event_weight(e.kind, e.age_days) for e in chosen)
        support.update(df.keys())
        for word, n in df.items():
            lift[word] -= total * (said[word] / seen if shown else n / catalog.n_items)
    counted = sum(len(chosen) for chosen, _ in answers.values())
    ranked = sorted((w for w in lift if lift[w] > 0 and support[w] >= MIN_ANSWERS),
                    key=lambda w: -lift[w])  # stable: first seen first
    if not ranked:
        return Profile([], {}, {}, counted, NO_HISTORY)
    kept = [w for w in ranked[:max_words] if lift[w] > MIN_SHARE * lift[ranked[0]]]
    return Profile(kept, {w: round(lift[w], 6) for w in kept}, {w: drawn_by[w] for w in kept}, counted)

