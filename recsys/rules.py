"""Merchandising rules: a shop's pins, boosts, buries and hides, as terms of the explained score.

A rule names the items it acts on (an attribute `key:value` as a filter takes it, e.g.
`brand:acme`, or one `item_id`), the queries it applies to (`exact` query, query `contains` a
word, `any` query) and a time window (`start <= now < end`, either open). Outside its window or
its queries it does nothing. What it does:

- boost / bury: adds `+amount` / `-amount` to each matching item's score. The amount is a term of
  the explanation (`RuleEffect`), so `score == prior + sum(heads) + sum(rules)` holds exactly as
  the heads' additivity does;
- hide: the matching items are not returned (as an exclusion is: `total` does not count them);
- pin: the item is shown at `position` (1-based) of the ranking whenever it passes the request's
  filters, exclusions and candidates; its explanation says "pinned at position p" instead of a
  number (its score is left as the model and the other rules made it).

Rules are data, read from the store (`store.rules`); this module decides which apply and what
they change. A rule matches items of a catalogue through `Catalog.filter_mask`, computed once
per catalogue and rule book (`RuleBook.items`), so a request pays only for the rules of its query.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from .catalog import Catalog

KINDS = ("pin", "boost", "bury", "hide")
MATCHES = ("any", "exact", "contains")
# what a rule's `amount` may be at most: a few times the largest head contribution (a head adds
# at most a few units), enough to lift an item over any other; larger is a typo
MAX_AMOUNT = 1000.0
_WORDS = re.compile(r"\w+")


class RuleError(ValueError):
    """A rule that cannot be stored: `field` names the bad field, the message the fix."""

    def __init__(self, field_name: str, message: str):
        super().__init__(message)
        self.field = field_name


@dataclass(frozen=True)
class Rule:
    name: str
    kind: str  # one of KINDS
    attribute: str | None = None  # "key:value" (a filter key and one of its values)
    item_id: str | None = None  # or one item
    amount: float | None = None  # boost and bury: how much (positive); bury subtracts it
    position: int | None = None  # pin: 1-based rank
    match: str = "any"  # one of MATCHES
    query: str = ""  # the exact query, or the word it must contain
    start: datetime | None = None  # naive UTC; None: since ever
    end: datetime | None = None  # naive UTC, exclusive; None: for ever

    @property
    def delta(self) -> float:
        """The signed score change of a boost or bury; 0 for a pin or a hide."""
        if self.kind == "boost":
            return float(self.amount or 0.0)
        if self.kind == "bury":
            return -float(self.amount or 0.0)
        return 0.0

    def in_window(self, now: datetime) -> bool:
        return (self.start is None or self.start <= now) and (self.end is None or now < self.end)

    def applies_to(self, query: str) -> bool:
        """Whether the rule's query scope takes `query` (case and spacing ignored)."""
        if self.match == "any":
            return True
        if self.match == "exact":
            return normalize_query(query) == normalize_query(self.query)
        return normalize_query(self.query) in _WORDS.findall(query.lower())

    def target(self) -> str:
        """What it acts on, as a person reads it."""
        return f"item {self.item_id}" if self.item_id is not None else f"items with {self.attribute}"


def normalize_query(query: str) -> str:
    return " ".join(_WORDS.findall(query.lower()))


def split_attribute(attribute: str) -> tuple[str, str]:
    key, sep, value = attribute.partition(":")
    if not sep or not key.strip() or not value.strip():
        raise RuleError("attribute", f"{attribute[:80]!r} is not key:value: write the filter key "
                                     f"and one of its values, e.g. brand:acme or color:red")
    return key.strip(), value.strip()


def check_rule(rule: Rule, catalog: Catalog) -> str | None:
    """RuleError naming the field when `rule` cannot be stored; else a warning when it matches no
    item of `catalog` (accepted: the catalogue may change), or None."""
    _check_shape(rule)
    if rule.attribute is not None:
        key, value = split_attribute(rule.attribute)
        if catalog.filter_key(key) is None:
            keys = ", ".join(sorted(catalog.filter_keys()))
            raise RuleError("attribute", f"unknown attribute key {key[:80]!r}: use one of {keys}")
        if not catalog.filter_columns(key, value):
            return (f"rule {rule.name!r}: no item of the catalogue has {key}:{value} (its values: "
                    f"{', '.join(catalog.filter_values(key)[:20])}); it is stored and does nothing "
                    f"until one has")
    elif rule.item_id is not None and not catalog.has(rule.item_id):
        return (f"rule {rule.name!r}: item {rule.item_id!r} is not in the catalogue; it is stored "
                f"and does nothing until the item is added")
    return None


def _check_shape(rule: Rule) -> None:
    """The checks that need no catalogue."""
    if rule.kind not in KINDS:
        raise RuleError("kind", f"unknown kind {rule.kind[:40]!r}: one of {', '.join(KINDS)}")
    if rule.match not in MATCHES:
        raise RuleError("match", f"unknown match {rule.match[:40]!r}: one of {', '.join(MATCHES)}")
    if rule.match != "any" and not normalize_query(rule.query):
        raise RuleError("query", f"match {rule.match!r} needs a query with a word")
    if rule.match == "contains" and len(normalize_query(rule.query).split()) != 1:
        raise RuleError("query", f"match 'contains' takes one word, got {rule.query[:80]!r}; use "
                                 f"match 'exact' for a whole query")
    if (rule.attribute is None) == (rule.item_id is None):
        raise RuleError("attribute", "name exactly one of attribute (key:value) and item_id")
    if rule.kind == "pin":
        if rule.item_id is None:
            raise RuleError("item_id", "a pin places one item: give its item_id")
        if rule.position is None or rule.position < 1:
            raise RuleError("position", f"a pin needs a position of 1 or more (1 is the top), got "
                                        f"{rule.position}")
    elif rule.position is not None:
        raise RuleError("position", f"only a pin has a position, not a {rule.kind}")
    if rule.kind in ("boost", "bury"):
        if rule.amount is None or not 0 < rule.amount <= MAX_AMOUNT:
            raise RuleError("amount", f"a {rule.kind} needs an amount above 0 and at most "
                                      f"{MAX_AMOUNT:g} (a bury subtracts it), got {rule.amount}")
    elif rule.amount is not None:
        raise RuleError("amount", f"only a boost or a bury has an amount, not a {rule.kind}")
    if rule.start is not None and rule.end is not None and rule.end <= rule.start:
        raise RuleError("end", f"the window ends ({rule.end.isoformat()}) before it starts "
                               f"({rule.start.isoformat()}): end must be after start")


@dataclass(frozen=True)
class RuleEffect:
    """One rule as a term of one item's explanation."""

    name: str
    kind: str
    amount: float | None  # the score change (signed); None for a pin or a hide
    position: int | None  # a pin's position
    note: str  # "boost 'acme-week': +2.00 (brand:acme)", "pinned at position 1 by rule 'x'"


def effect_of(rule: Rule) -> RuleEffect:
    what = rule.attribute or rule.item_id
    if rule.kind == "pin":
        return RuleEffect(rule.name, "pin", None, rule.position,
                          f"pinned at position {rule.position} by rule {rule.name!r}")
    if rule.kind == "hide":
        return RuleEffect(rule.name, "hide", None, None, f"hidden by rule {rule.name!r} ({what})")
    return RuleEffect(rule.name, rule.kind, rule.delta, None,
                      f"{rule.kind} {rule.name!r}: {rule.delta:+.2f} ({what})")


class Adjustments:
    """What one set of applying rules does over one catalogue, built once per set
    (`RuleBook.for_query` keeps the last RULE_SETS of them): every query with the same rules in
    force shares it, so a request pays only for what its answer needs.

    hidden: sorted indices of the items hidden. pins: (position, item) of the pins, by position
    then the book's order (a hidden item is not pinned). moved, delta: the items whose score the
    boosts and buries change (neither hidden nor pinned), sorted, and their summed change
    (float64, summed in the book's order as `effects` lists the amounts). unmoved: (n_items,)
    bool, the items none of the rules touch, which the index's pruned top-k ranks as they are.
    """

    def __init__(self, rules: Sequence[Rule], items: Sequence[np.ndarray], n_items: int):
        self.rules = list(rules)
        self._effects = [effect_of(r) for r in self.rules]
        self.n_items = n_items
        hides = [ix for r, ix in zip(self.rules, items) if r.kind == "hide"]
        self.hidden = np.unique(np.concatenate(hides)) if hides else np.zeros(0, dtype=np.int64)
        is_hidden = np.zeros(n_items, dtype=bool)
        is_hidden[self.hidden] = True
        self.pins = sorted(((int(r.position or 1), int(ix[0])) for r, ix in zip(self.rules, items)
                            if r.kind == "pin" and ix.size and not is_hidden[ix[0]]), key=lambda p: p[0])
        self.pinned = np.array(sorted({i for _, i in self.pins}), dtype=np.int64)
        dense = np.zeros(n_items, dtype=np.float64)
        touched = np.zeros(n_items, dtype=bool)
        for r, ix in zip(self.rules, items):
            if r.delta != 0.0:
                dense[ix] += r.delta  # rule by rule: each item's sum in the book's order
                touched[ix] = True
        touched[self.hidden] = False
        touched[self.pinned] = False
        self.moved = np.flatnonzero(touched & (dense != 0.0))
        self.delta = dense[self.moved]
        self.unmoved = ~(touched | is_hidden)
        self.unmoved[self.pinned] = False
        # (item, rule) pairs sorted by item, then by the rule's place in the book: `effects`
        pairs_item = np.concatenate([ix for ix in items]) if items else np.zeros(0, dtype=np.int64)
        pairs_rule = np.concatenate([np.full(ix.size, n, dtype=np.int64) for n, ix in enumerate(items)]) \
            if items else np.zeros(0, dtype=np.int64)
        order = np.lexsort((pairs_rule, pairs_item))
        self._pair_items, self._pair_rules = pairs_item[order], pairs_rule[order]

    @property
    def empty(self) -> bool:
        return not self.rules

    def effects(self, item_idx: int) -> list[RuleEffect]:
        """The rules that act on `item_idx`, in the book's order."""
        lo, hi = np.searchsorted(self._pair_items, [item_idx, item_idx + 1])
        return [self._effects[n] for n in self._pair_rules[lo:hi].tolist()]

    def delta_of(self, item_idx: int) -> float:
        """The summed boosts and buries of one item, in the same order as `delta` sums them."""
        return sum_effects(self.effects(item_idx))


def sum_effects(effects: Sequence[RuleEffect]) -> float:
    total = 0.0
    for e in effects:
        total += e.amount or 0.0
    return total


# rule sets whose Adjustments a RuleBook keeps per catalogue: the rules for any query make one,
# and each exact query or word with rules of its own one more
RULE_SETS = 64


class RuleBook:
    """The rules in force (the store's, at `revision`), and what each matches per catalogue."""

    def __init__(self, rules: Sequence[Rule] = (), revision: int = 0):
        self.rules, self.revision = tuple(rules), revision
        self._lock = threading.Lock()
        # id(catalog) -> (catalog, per rule its item indices); the catalogue is kept so its id
        # cannot be reused; two entries: the served version and one arm or the one before
        self._matched: dict[int, tuple[Catalog, list[np.ndarray]]] = {}
        # (id(catalog), the applying rules' places in the book) -> their Adjustments
        self._sets: OrderedDict[tuple[int, tuple[int, ...]], Adjustments] = OrderedDict()
        # the rules by query scope, their queries normalised once: a request looks up its own
        self._any = [n for n, r in enumerate(self.rules) if r.match == "any"]
        self._exact: dict[str, list[int]] = {}
        self._word: dict[str, list[int]] = {}
        for n, r in enumerate(self.rules):
            if r.match != "any":
                (self._exact if r.match == "exact" else self._word).setdefault(
                    normalize_query(r.query), []).append(n)

    def __len__(self) -> int:
        return len(self.rules)

    def items(self, catalog: Catalog) -> list[np.ndarray]:
        """Per rule, the indices of `catalog`'s items it acts on (computed once per catalogue)."""
        hit = self._matched.get(id(catalog))
        if hit is not None and hit[0] is catalog:
            return hit[1]
        matched = [matching_items(r, catalog) for r in self.rules]
        with self._lock:
            if len(self._matched) >= 2:
                self._matched.pop(next(iter(self._matched)))
            self._matched[id(catalog)] = (catalog, matched)
            self._sets = OrderedDict((k, v) for k, v in self._sets.items() if k[0] in self._matched)
        return matched

    def for_query(self, query: str, catalog: Catalog, now: datetime) -> Adjustments | None:
        """The rules that apply to `query` at `now` and act on some item of `catalog`; None
        when none does (the common case: the ranking is the model's alone)."""
        if not self.rules:
            return None
        matched = self.items(catalog)
        words = _WORDS.findall(query.lower())
        scoped = [*self._any, *self._exact.get(" ".join(words), ()),
                  *(n for w in set(words) for n in self._word.get(w, ()))]
        chosen = tuple(n for n in sorted(scoped) if matched[n].size and self.rules[n].in_window(now))
        if not chosen:
            return None
        key = (id(catalog), chosen)
        with self._lock:
            hit = self._sets.get(key)
            if hit is not None:
                self._sets.move_to_end(key)
                return hit
        built = Adjustments([self.rules[n] for n in chosen], [matched[n] for n in chosen], catalog.n_items)
        with self._lock:
            self._sets[key] = built
            while len(self._sets) > RULE_SETS:
                self._sets.popitem(last=False)
        return built


def matching_items(rule: Rule, catalog: Catalog) -> np.ndarray:
    """Sorted catalogue indices of the items `rule` acts on (empty when none, or when its key is
    not one of this catalogue's)."""
    if rule.item_id is not None:
        return (np.array([catalog.idx(rule.item_id)], dtype=np.int64) if catalog.has(rule.item_id)
                else np.zeros(0, dtype=np.int64))
    key, value = split_attribute(rule.attribute or "")
    if catalog.filter_key(key) is None:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(catalog.filter_mask({key: [value]})).astype(np.int64)


def place_pins(ranked: np.ndarray, pins: Sequence[tuple[int, int]], n: int) -> np.ndarray:
    """The first `n` of the ranking with each pinned item at its position (1-based): `ranked`
    (without the pinned items) fills the other places in order. Two pins at one position: the
    later in `pins` takes the next free place. Places the ranking cannot fill close up, so a pin
    beyond its end comes last."""
    slots: list[int | None] = [None] * n
    for position, item in pins:
        at = position - 1
        while at < n and slots[at] is not None:
            at += 1
        if at < n:  # else beyond this page: a later page shows it
            slots[at] = item
    rest = iter(ranked.tolist())
    for at in range(n):
        if slots[at] is None:
            slots[at] = next(rest, None)
    return np.array([s for s in slots if s is not None], dtype=np.int64)
