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

A choice is evidence of a lasting taste only where the query left it free. A shopper who
searched "crimson dress" clicked a red dress because she asked for red, not because she likes
red: so in each answer, the kinds of attribute the query named (`attribute_kind`: colour, style,
material, category, ...; those its words match on the answer's items, `Matched`, which finds
"crimson" drawing `red`) say nothing, neither in what was chosen nor in what was shown, and neither do the
query's own words. A word's weight is then its lift over exposure: the weight of the chosen
items that say it (an item chosen from one answer once, at its strongest event: `_Answer.choices`),
less what a shopper without the taste would have given it, each answer's chosen weight times
the word's share of its peers (the shown items matching at least what every chosen one matched,
examined as 1 / position: `_read`), over every answer where the word's kind was free, chosen
or not. Without impressions the share is the catalogue's (the word's document frequency). A
word recurs in MIN_ANSWERS answers' choices at least, or it is what one item was.

A typed query is ranked only with the words the history is sure of (`Profile.confident`,
`Profile.sure`): chosen in CONFIDENT_ANSWERS answers and CONFIDENT_LIFT times as often as
exposure predicts. A typed query's own words are a strong signal, and a wrong history word
re-orders its best items away from them; a home page has no words of its own, so there every
profile word helps more than it costs. On the simulated shoppers of benchmarks/shopper_loop.py,
30 searches rarely show a shopper's colour or style where the query left it free, so few
profiles are sure of anything, and most sure words were wrong at looser gates (docs/results.md,
"For this shopper").
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

import numpy as np

from .catalog import Catalog
from .facets import DESCRIPTION, TITLE
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
# a word is sure enough for a typed query when chosen in this many answers where its kind was
# free, at least CONFIDENT_LIFT times the weight exposure predicts (the module's docstring)
CONFIDENT_ANSWERS = 6
CONFIDENT_LIFT = 2.5
# a query word matching a title's or description's word names that word, not a kind of attribute
FREE_TEXT = frozenset({TITLE, DESCRIPTION})
NO_HISTORY = ("no history for this shopper (no click, cart or purchase of an item of this catalogue "
              "beyond what they searched for): this answer is not personalised")
NOT_SURE = (f"no word of this shopper's history is sure enough for a typed query yet (chosen in "
            f"{CONFIDENT_ANSWERS} searches that did not ask for it, {CONFIDENT_LIFT:g} times as often as "
            f"shown): this answer is not personalised; personalize true ranks it with the history anyway")

# (query, catalogue indices of an answer's items) -> per item, the labels of its attributes a word
# of the query names, as `similar.item_query` names them (`Recommender.matched_attributes`)
Matched = Callable[[str, Sequence[int]], Sequence[Collection[str]]]
# (word, the labels of the attributes that drew it) -> whether an answer's query left it free
Free = Callable[[str, list[str]], bool]


@dataclass(frozen=True)
class HistoryEvent:
    """One event of a shopper's history, as the library sees it."""

    item_idx: int  # the item, in the catalogue's order
    kind: str  # click, cart, purchase (chosen), or impression (shown: the lift's baseline)
    age_days: float  # how long ago, >= 0
    query: str = ""  # what the shopper had searched for: what it named is not a preference
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
    # those of `words` a typed query is ranked with (the module's docstring), strongest first
    confident: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.words)

    def sure(self) -> Profile:
        """This profile as a typed query is ranked with it: its `confident` words alone, or none
        with a note saying why (an empty profile as it is)."""
        if not self or self.confident == self.words:
            return self
        if not self.confident:
            return Profile([], {}, {}, self.events, NOT_SURE)
        return Profile(self.confident, {w: self.weights[w] for w in self.confident},
                       {w: self.drawn_by[w] for w in self.confident}, self.events, confident=self.confident)


@dataclass
class _Answer:
    """One answer of the history: what was asked, chosen and shown."""

    query: str
    chosen: list[HistoryEvent] = field(default_factory=list)
    shown: dict[int, float] = field(default_factory=dict)  # item -> how often examined

    def choices(self) -> dict[int, float]:
        """Chosen item -> the weight of its strongest event: an item clicked, carted and bought
        from one answer is one choice, its strongest event the most it says. Summed, the three
        would weigh a whole match of the query (the only kind shoppers cart) six times a click
        and so whatever goes with such matches (their price band, their rating)."""
        out: dict[int, float] = {}
        for e in self.chosen:
            out[e.item_idx] = max(out.get(e.item_idx, 0.0), event_weight(e.kind, e.age_days))
        return out


def event_weight(kind: str, age_days: float) -> float:
    """The weight of an event of `kind`, `age_days` old (the module's docstring)."""
    return float(EVENT_LABELS.get(kind, 0.0) * 0.5 ** (max(age_days, 0.0) / HALF_LIFE_DAYS))


def examined(position: int | None) -> float:
    """How often a shopper looks at an item shown at `position`: 1 / position (the closed loop's
    examination model, DCG's discount); 1 where the position is unknown."""
    return 1.0 / position if position else 1.0


def attribute_kind(label: str) -> str:
    """What a named attribute label (`color:navy`, `material:linen`, `price:20-50`) is about:
    the part before its colon."""
    return label.split(":", 1)[0]


def build_profile(catalog: Catalog, events: Sequence[HistoryEvent],
                  attribute_df: Callable[[str], np.ndarray], matched: Matched | None = None,
                  max_words: int = PROFILE_WORDS) -> Profile:
    """The profile of `events`: per word of the chosen items' own query words
    (`similar.item_query`), its lift over exposure where the answer's query left its kind free
    (`matched`; None: only the query's own words are taken out); at most `max_words` words with
    more than MIN_SHARE of the strongest's lift, strongest first (ties: first seen in the newest
    events first), the sure ones of them `confident` (the module's docstring)."""
    answers = _answers(catalog, events)
    tally = _Tally(catalog, attribute_df)
    for answer in answers:
        if answer.chosen:  # the lift is of what a choice says: no choice, nothing to weigh
            tally.add(answer, *_read(answer, matched))
    tally.add_blind(catalog.n_items)
    lift = {w: tally.chosen[w] - tally.expected[w] for w in tally.chosen}
    counted = sum(len(a.chosen) for a in answers)
    ranked = sorted((w for w in lift if lift[w] > 0 and tally.support[w] >= MIN_ANSWERS),
                    key=lambda w: -lift[w])  # stable: first seen first
    if not ranked:
        return Profile([], {}, {}, counted, NO_HISTORY)
    kept = [w for w in ranked[:max_words] if lift[w] > MIN_SHARE * lift[ranked[0]]]
    sure = [w for w in kept
            if tally.support[w] >= CONFIDENT_ANSWERS and tally.chosen[w] >= CONFIDENT_LIFT * tally.expected[w]]
    return Profile(kept, {w: round(lift[w], 6) for w in kept}, {w: tally.drawn_by[w] for w in kept}, counted,
                   confident=sure)


def _answers(catalog: Catalog, events: Sequence[HistoryEvent]) -> list[_Answer]:
    """The events grouped by the answer they were of, newest first; an event without its request
    is an answer of its own."""
    answers: dict[str, _Answer] = {}
    for order, e in enumerate(sorted(events, key=lambda e: e.age_days)):
        if 0 <= e.item_idx < catalog.n_items:
            answer = answers.setdefault(e.request or f"#{order}", _Answer(e.query))
            if e.kind == "impression" and e.request:
                answer.shown[e.item_idx] = examined(e.position)
            elif event_weight(e.kind, e.age_days) > 0:
                answer.chosen.append(e)
    return list(answers.values())


class _Tally:
    """Per word, what the shopper's choices said of it and what their exposure predicts."""

    def __init__(self, catalog: Catalog, attribute_df: Callable[[str], np.ndarray]):
        self.catalog, self.attribute_df = catalog, attribute_df
        self.asked: dict[int, ItemQuery] = {}
        self.chosen: defaultdict[str, float] = defaultdict(float)  # weight of the chosen items saying it
        self.expected: defaultdict[str, float] = defaultdict(float)  # what exposure predicts of it
        self.support: Counter[str] = Counter()  # answers in which a chosen item said the word
        self.drawn_by: dict[str, list[str]] = {}
        self.df: dict[str, float] = {}  # items of the catalogue saying the word
        self.blind: list[tuple[float, Free]] = []  # answers without impressions

    def item_words(self, item_idx: int) -> ItemQuery:
        if item_idx not in self.asked:
            self.asked[item_idx] = item_query(self.catalog, item_idx, self.attribute_df)
        return self.asked[item_idx]

    def add(self, answer: _Answer, free: Free, peers: list[int]) -> None:
        """One answer's choices, and (with impressions) what its examined peers said."""
        choices = answer.choices()
        total = sum(choices.values())
        saying: set[str] = set()
        for i, weight in choices.items():
            item = self.item_words(i)
            for word, labels in item.drawn_by.items():
                if free(word, labels):
                    self.chosen[word] += weight
                    saying.add(word)
                    self.df[word] = item.df[word]
                    known = self.drawn_by.setdefault(word, [])
                    known.extend(label for label in labels if label not in known)
        self.support.update(saying)
        if not answer.shown:
            self.blind.append((total, free))
            return
        said: Counter[str] = Counter()  # peers saying each word, each as often as examined
        for i in peers:
            p = answer.shown[i]
            said.update({w: p for w, labels in self.item_words(i).drawn_by.items() if free(w, labels)})
        seen = sum(answer.shown[i] for i in peers)
        for word, n in said.items():
            self.expected[word] += total * n / seen

    def add_blind(self, n_items: int) -> None:
        """The answers without impressions: the catalogue was the exposure, each chosen word by
        its share of it (after every answer, so that every chosen word is known)."""
        for total, free in self.blind:
            for word in self.chosen:
                if free(word, self.drawn_by[word]):
                    self.expected[word] += total * self.df[word] / n_items


def _read(answer: _Answer, matched: Matched | None) -> tuple[Free, list[int]]:
    """What the answer's query left free, and the shown items to weigh its choices against.

    A word of an item, drawn by its attributes' named `labels`, is free when it is not one of the
    query's words and of no kind the query named (`matched` on any of the answer's items; a
    title's or description's words are free text, not a kind). The peers are the shown items
    that match at least the kinds every chosen item matched: a shopper chooses what answers her
    query best, so against the whole answer, whatever goes with a full match (a price band with
    a category and a quality) would look like a taste."""
    searched = set(words(answer.query))
    named: set[str] = set()
    peers = list(answer.shown)
    if matched is not None and searched:
        items = list(dict.fromkeys([*answer.shown, *(e.item_idx for e in answer.chosen)]))
        kinds = {i: {attribute_kind(label) for label in labels} - FREE_TEXT
                 for i, labels in zip(items, matched(answer.query, items))}
        named = set().union(*kinds.values())
        demanded = set.intersection(*(kinds[e.item_idx] for e in answer.chosen))
        peers = [i for i in answer.shown if kinds[i] >= demanded]

    def free(word: str, labels: list[str]) -> bool:
        return word not in searched and not any(attribute_kind(label) in named for label in labels)

    return free, peers
