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

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

import numpy as np

from .catalog import Catalog
from .item_bits import holds_items, pack_items
from .tokenize import match_keys

KINDS = ("pin", "boost", "bury", "hide")
MATCHES = ("any", "exact", "contains")
# what a rule's `amount` may be at most: a few times the largest head contribution (a head adds
# at most a few units), enough to lift an item over any other; larger is a typo
MAX_AMOUNT = 1000.0
# a pin's position at most: past any page a shopper reaches, and a number every store keeps
# (PostgreSQL's integer column holds 2^31 - 1, SQLite's 2^63 - 1)
MAX_POSITION = 100_000


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
        """Whether the rule's query scope takes `query` (`normalize_query`: case, spacing,
        accents and word endings ignored)."""
        if self.match == "any":
            return True
        if self.match == "exact":
            return normalize_query(query) == normalize_query(self.query)
        return normalize_query(self.query) in query_keys(query)

    def meets(self, other: Rule) -> bool:
        """Whether some search, at some time, has both rules acting: their windows overlap and
        one query can be in both scopes (an exact query takes a word rule that its words hold)."""
        if (self.end is not None and other.start is not None and self.end <= other.start) or \
                (other.end is not None and self.start is not None and other.end <= self.start):
            return False
        for a, b in ((self, other), (other, self)):
            if a.match == "exact":
                return b.applies_to(a.query)
        return True  # any query, or two words: a search can say both

    def target(self) -> str:
        """What it acts on, as a person reads it."""
        return f"item {self.item_id}" if self.item_id is not None else f"items with {self.attribute}"


def normalize_query(query: str) -> str:
    """A query as a rule's scope compares it: its words' match keys (`tokenize.match_keys`), so
    case, spacing, accents and word endings are ignored as search ignores them (a pin on
    "sartén" missed "sarten", and one on "lámpara" missed "lámparas")."""
    return " ".join(query_keys(query))


@lru_cache(maxsize=8192)
def query_keys(query: str) -> tuple[str, ...]:
    """The match keys of `query`'s words, in order (kept: every request with rules asks)."""
    return tuple(match_keys(query))


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
    elif rule.item_id is not None and not catalog.has(catalog.canonical(rule.item_id)):
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
        if rule.position is None or not 1 <= rule.position <= MAX_POSITION:
            raise RuleError("position", f"a pin needs a position from 1 (the top) to {MAX_POSITION:,}, "
                                        f"got {rule.position}")
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
    (`RuleBook.for_query` keeps the last used, up to RULE_SET_BYTES): every query with the same rules in
    force shares it, so a request pays only for what its answer needs.

    A query's set is two layers: the rules for any query (`base`: one Adjustments per catalogue
    and window state, shared by every query, where most of the items rules move are) and the
    query's own scoped rules on top, built in proportion to the items they act on. `rules` lists
    the base's first, then the query's, each in the book's order; amounts are summed in that
    order everywhere (`effects`, the offsets, the explanation).

    hidden: sorted indices of the items hidden. pins: (position, item) of the pins, by position
    then `rules`' order (a hidden item is not pinned). offset_items, offset_values: the items
    whose boosts and buries this layer changes (sorted) and their summed change (float64, the
    base's amounts and then this layer's). `indexed` (the rules for any query): the index adds
    these as per-item offsets it bounds (`ScoringIndex.offsets`, once per set); otherwise (a
    query's own) they are scored apart and merged (`apart`). ranked: (n_items,) bool, what the
    index ranks: the items neither hidden nor pinned nor scored apart.
    """

    def __init__(self, rules: Sequence[Rule], items: Sequence[np.ndarray], n_items: int,
                 base: Adjustments | None = None, indexed: bool = False):
        own = list(rules)
        self.base, self.n_items, self.indexed = base, n_items, indexed
        self._summed_items: np.ndarray | None = None  # (n_items,) float64, `_summed`
        self.rules: list[Rule] = [*(base.rules if base is not None else ()), *own]
        self._effects = [effect_of(r) for r in own]
        hides = [ix for r, ix in zip(own, items) if r.kind == "hide"]
        own_hidden = _union(hides)
        self.hidden: np.ndarray = own_hidden if base is None else _union([base.hidden, own_hidden])
        own_pins = [(int(r.position or 1), int(ix[0])) for r, ix in zip(own, items) if r.kind == "pin" and ix.size]
        pins = [*(base.pins if base is not None else ()), *own_pins]
        placed = sorted(((p, i) for p, i in pins if not _holds(self.hidden, i)), key=lambda p: p[0])
        # an item pinned by two rules is placed once, at the higher place (`_pin_at`): listed twice,
        # it took two places of one answer
        self._pin_at: dict[int, int] = {}
        for p, i in placed:
            self._pin_at.setdefault(i, p)
        self.pins: list[tuple[int, int]] = list(dict.fromkeys((p, i) for p, i in placed if self._pin_at[i] == p))
        self.pinned = np.array(sorted({i for _, i in self.pins}), dtype=np.int64)
        self.offset_items, self.offset_values = self._offsets(own, items)
        # this layer's buries, and the items its boosts raise (`lowered`, `raised`, built on use)
        self._own_moves = [(r.delta, ix) for r, ix in zip(own, items) if r.delta != 0.0 and ix.size]
        self._raised_items: np.ndarray | None = None
        self._raised_bits: np.ndarray | None = None  # `raised_bits`
        self._lowered_items: np.ndarray | None = None  # (n_items,) float64, `lowered_of` of a base
        self.ranked: np.ndarray = np.ones(n_items, dtype=bool) if base is None else base.ranked.copy()
        self.ranked[self.hidden] = False
        self.ranked[self.pinned] = False
        # apart, apart_values: the items scored apart (a query's own layer's, neither hidden nor
        # pinned) and their summed changes
        shown = ~(_member(self.hidden, self.offset_items) | _member(self.pinned, self.offset_items))
        self.apart = self.offset_items[shown] if not indexed else self.offset_items[:0]
        self.apart_values = self.offset_values[shown] if not indexed else self.offset_values[:0]
        self.ranked[self.apart] = False
        # (item, rule) pairs of this layer sorted by item, then by the rule's place: `effects`
        pairs_item = np.concatenate([ix for ix in items]) if items else np.zeros(0, dtype=np.int64)
        pairs_rule = np.concatenate([np.full(ix.size, n, dtype=np.int64) for n, ix in enumerate(items)]) \
            if items else np.zeros(0, dtype=np.int64)
        order = np.lexsort((pairs_rule, pairs_item))
        self._pair_items, self._pair_rules = pairs_item[order], pairs_rule[order]

    def _offsets(self, own: list[Rule], items: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(items, summed changes) of this layer's boosts and buries: each item's sum starts at
        the base's and takes this layer's amounts rule by rule, in order."""
        moving = [(r.delta, ix) for r, ix in zip(own, items) if r.delta != 0.0 and ix.size]
        if not moving:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        if len(moving) == 1:  # its items, each changed once: no array over the catalogue
            delta, touched = moving[0]
            start = self.base.offset_of(touched) if self.base is not None else np.zeros(touched.size)
            return touched, start + delta
        touched = _union([ix for _, ix in moving])
        # summed on one array over the catalogue: a colour's thousands of items, each found by
        # index rather than by binary search (a query's own layer cost 0.3-1 ms at 100k items)
        summed = np.zeros(self.n_items, dtype=np.float64)
        if self.base is not None:
            summed[touched] = self.base.offset_of(touched)
        for delta, ix in moving:
            summed[ix] += delta  # a rule's items are distinct: each gets its delta once
        return touched, summed[touched]

    def offset_of(self, items: np.ndarray) -> np.ndarray:
        """(len(items),) float64 the summed boosts and buries of `items`."""
        out: np.ndarray = self._summed()[items]
        return out

    def _summed(self) -> np.ndarray:
        """(n_items,) float64 every item's summed boosts and buries, built on first use (a
        layer for any query is every query's base: its own layers read it)."""
        if self._summed_items is None:
            summed = self.base._summed().copy() if self.base is not None else np.zeros(self.n_items)
            summed[self.offset_items] = self.offset_values
            self._summed_items = summed
        return self._summed_items

    def lowered(self) -> np.ndarray:
        """(n_items,) float64 every item's summed buries alone, of a set for any query (a query's
        own layer asks `lowered_of` for its few items), built once per set."""
        assert self.base is None, "a query's own layer: lowered_of its items"
        if self._lowered_items is None:
            lowered = np.zeros(self.n_items)
            for delta, ix in self._own_moves:
                if delta < 0:
                    lowered[ix] += delta
            self._lowered_items = lowered
        return self._lowered_items

    def raised_items(self) -> np.ndarray:
        """Sorted indices of the items some boost of the set (its base's too) raises."""
        if self._raised_items is None:
            own = [ix for delta, ix in self._own_moves if delta > 0]
            self._raised_items = _union([self.base.raised_items(), *own] if self.base is not None else own)
        return self._raised_items

    def raised_bits(self) -> np.ndarray:
        """`raised_items` as bits (`item_bits.pack_items`), built once per set."""
        if self._raised_bits is None:
            mask = np.zeros(self.n_items, dtype=bool)
            mask[self.raised_items()] = True
            self._raised_bits = pack_items(mask)
        return self._raised_bits

    def raises(self, items: np.ndarray) -> np.ndarray:
        """(len(items),) bool: which of `items` some boost of the set raises: a bit read an item
        in the set for any query's bits (built once per set), a search among a query's own few
        rules' items. A query's layer apart moves thousands of items (a word's boost of a colour);
        searching them among its union of raised items (33k at 100k items) cost 0.2 ms a query."""
        items = np.asarray(items, dtype=np.int64)
        if self.base is None:
            return holds_items(self.raised_bits(), items)
        out = self.base.raises(items)
        for delta, ix in self._own_moves:
            if delta > 0:
                out |= _member(ix, items)
        return out

    def lowered_of(self, items: np.ndarray) -> np.ndarray:
        """(len(items),) float64 the summed buries alone of `items`, in the order `effects` lists
        them: their term where the query leaves their boosts out (`effects_of`'s `unboosted`)."""
        items = np.asarray(items, dtype=np.int64)
        if self.base is None:  # the rules for any query: every item's, summed once per set
            lowered_items: np.ndarray = self.lowered()[items]
            return lowered_items
        out = self.base.lowered_of(items)
        for delta, ix in self._own_moves:  # a query's own: a few rules, for a few items
            if delta < 0:
                out = out + np.where(_member(ix, items), delta, 0.0)
        return out

    @property
    def empty(self) -> bool:
        return not self.rules

    @property
    def nbytes(self) -> int:
        """The bytes of this layer's arrays (not its base's)."""
        arrays = (self.ranked, self.hidden, self.pinned, self.offset_items, self.offset_values, self.apart,
                  self.apart_values, self._pair_items, self._pair_rules)
        return int(sum(a.nbytes for a in arrays))

    def effects(self, item_idx: int, unboosted: bool = False) -> list[RuleEffect]:
        """The rules that act on `item_idx`, in `rules`' order; its boosts left out where the
        query leaves them out (`unboosted`)."""
        return self.effects_of(np.array([item_idx], dtype=np.int64), np.array([unboosted]))[0]

    def effects_of(self, items: np.ndarray, unboosted: np.ndarray | None = None) -> list[list[RuleEffect]]:
        """`effects` of each of `items` (a page's), found in one search: a rule set for any query
        has an (item, rule) pair per item a boost of a colour moves (tens of thousands), and
        searching them item by item cost 20 us an item. `unboosted`: (len(items),) bool, which
        of them the query leaves boosts out for (no word of it matches them:
        `Recommender.unboosted`); their boosts are not among their terms."""
        found = self._effects_of(items)
        if unboosted is None:
            return found
        return [[e for e in effs if e.kind != "boost" or not left] for left, effs in zip(unboosted.tolist(), found)]

    def _effects_of(self, items: np.ndarray) -> list[list[RuleEffect]]:
        items = np.asarray(items, dtype=np.int64)
        lo = np.searchsorted(self._pair_items, items).tolist()
        hi = np.searchsorted(self._pair_items, items + 1).tolist()
        rules, effects = self._pair_rules, self._effects
        own = [[effects[n] for n in rules[a:b].tolist()] if b > a else [] for a, b in zip(lo, hi)]
        found = own if self.base is None else [first + then for first, then in zip(self.base._effects_of(items), own)]
        if not self._pin_at:
            return found
        # a pin that did not place the item (another put it higher) is not one of its terms
        return [[e for e in effs if e.kind != "pin" or e.position == self._pin_at.get(i)]
                for i, effs in zip(items.tolist(), found)]

    def delta_of(self, item_idx: int, unboosted: bool = False) -> float:
        """The summed boosts and buries of one item, in the same order as the offsets sum them."""
        return sum_effects(self.effects(item_idx, unboosted))


def _holds(sorted_items: np.ndarray, item: int) -> bool:
    at = int(np.searchsorted(sorted_items, item))
    return at < sorted_items.size and int(sorted_items[at]) == item


def _member(sorted_items: np.ndarray, items: np.ndarray) -> np.ndarray:
    """(len(items),) bool: which of `items` are in `sorted_items` (np.isin, by binary search)."""
    at = np.searchsorted(sorted_items, items)
    out = at < sorted_items.size
    out[out] = sorted_items[at[out]] == items[out]
    return out


def _union(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """The sorted distinct items of `arrays`, each sorted and distinct itself (np.unique sorting,
    not hashing: 10x faster on the few thousand items of a colour, which a rule set built per
    query pays). One array that is not empty is its own union, returned as it is (not a copy):
    most query sets have one rule of a kind, and sorting its items again was half of building
    the set."""
    filled = [a for a in arrays if a.size]
    if not filled:
        return np.zeros(0, dtype=np.int64)
    if len(filled) == 1:
        return filled[0]
    # each array is a sorted run, which timsort ("stable") merges in one pass: 16 us for two of
    # 6,000 items, where the default introsort took 335 us
    x = np.sort(np.concatenate(filled), kind="stable")
    return x[np.concatenate([[True], x[1:] != x[:-1]])] if x.size else x


def sum_effects(effects: Sequence[RuleEffect]) -> float:
    total = 0.0
    for e in effects:
        total += e.amount or 0.0
    return total


# bytes of the queries' rule sets (a query's own rules on the base) a RuleBook keeps, the least
# recently used dropped first: each exact query or word with rules of its own makes one, of about
# n_items bytes (`Adjustments.ranked`), so 320 sets at 100k items. At 64 sets, the bench's 89
# scoped sets asked in turn were rebuilt at every query
RULE_SET_BYTES = 32 << 20
# sets of rules for any query a RuleBook keeps: one per catalogue, and one more while a window
# opens or closes
BASE_SETS = 4


class RuleBook:
    """The rules in force (the store's, at `revision`), and what each matches per catalogue."""

    def __init__(self, rules: Sequence[Rule] = (), revision: int = 0):
        self.rules, self.revision = tuple(rules), revision
        self._lock = threading.Lock()
        # id(catalog) -> (catalog, per rule its item indices); the catalogue is kept so its id
        # cannot be reused; two entries: the served version and one arm or the one before
        self._matched: dict[int, tuple[Catalog, list[np.ndarray]]] = {}
        # (id(catalog), the applying rules' places in the book) -> their Adjustments
        # (id(catalog), the rules for any query, the query's own: places in the book) -> their
        # Adjustments, the bases (no rule of the query's own) apart
        self._sets: OrderedDict[tuple[int, tuple[int, ...], tuple[int, ...]], Adjustments] = OrderedDict()
        self._bases: OrderedDict[tuple[int, tuple[int, ...], tuple[int, ...]], Adjustments] = OrderedDict()
        self._set_bytes = 0  # of `_sets`
        # id(catalog) -> (catalog, the acting rules for any query: without, with a window)
        self._acting: dict[int, tuple[Catalog, tuple[list[int], list[int]]]] = {}
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
            self._set_bytes = sum(v.nbytes for v in self._sets.values())
            self._bases = OrderedDict((k, v) for k, v in self._bases.items() if k[0] in self._matched)
        return matched

    def _any_acting(self, catalog: Catalog) -> tuple[list[int], list[int]]:
        """The rules for any query that act on some item of `catalog`: (those without a window,
        those with one), computed once per catalogue: a query checks the windowed ones only."""
        hit = self._acting.get(id(catalog))
        if hit is not None and hit[0] is catalog:
            return hit[1]
        matched = self.items(catalog)
        acting = [n for n in self._any if matched[n].size]
        split = ([n for n in acting if self.rules[n].start is None and self.rules[n].end is None],
                 [n for n in acting if self.rules[n].start is not None or self.rules[n].end is not None])
        with self._lock:
            self._acting = {k: v for k, v in self._acting.items() if k in self._matched}
            self._acting[id(catalog)] = (catalog, split)
        return split

    def for_query(self, query: str, catalog: Catalog, now: datetime) -> Adjustments | None:
        """The rules that apply to `query` at `now` and act on some item of `catalog`; None
        when none does (the common case: the ranking is the model's alone)."""
        if not self.rules:
            return None
        matched = self.items(catalog)
        words = query_keys(query)
        scoped = [*self._exact.get(" ".join(words), ()), *(n for w in set(words) for n in self._word.get(w, ()))]
        own = tuple(sorted(n for n in scoped if matched[n].size and self.rules[n].in_window(now)))
        steady, windowed = self._any_acting(catalog)  # the rules for any query: a few, not all, checked
        for_any = tuple(sorted([*steady, *(n for n in windowed if self.rules[n].in_window(now))]))
        base = self._set(catalog, for_any, (), None) if for_any else None
        if not own:
            return base
        return self._set(catalog, for_any, own, base)

    def _set(self, catalog: Catalog, for_any: tuple[int, ...], own: tuple[int, ...],
             base: Adjustments | None) -> Adjustments:
        """The Adjustments of the rules `own` (places in the book) on top of `base` (those of
        `for_any`), kept: the bases apart (BASE_SETS), as every query's set shares one."""
        key = (id(catalog), for_any, own)
        kept = self._bases if not own else self._sets
        with self._lock:
            hit = kept.get(key)
            if hit is not None:
                kept.move_to_end(key)
                return hit
        matched = self.items(catalog)
        chosen = own or for_any
        built = Adjustments([self.rules[n] for n in chosen], [matched[n] for n in chosen], catalog.n_items, base,
                            indexed=not own)
        with self._lock:
            hit = kept.get(key)
            if hit is not None:  # another thread built it meanwhile
                return hit
            kept[key] = built
            if own:
                self._set_bytes += built.nbytes
                while self._set_bytes > RULE_SET_BYTES and len(kept) > 1:
                    self._set_bytes -= kept.popitem(last=False)[1].nbytes
            while len(self._bases) > BASE_SETS:
                self._bases.popitem(last=False)
        return built


def matching_items(rule: Rule, catalog: Catalog) -> np.ndarray:
    """Sorted catalogue indices of the items `rule` acts on (empty when none, or when its key is
    not one of this catalogue's)."""
    if rule.item_id is not None:  # a variant's SKU acts on its product
        item_id = catalog.canonical(rule.item_id)
        return (np.array([catalog.idx(item_id)], dtype=np.int64) if catalog.has(item_id)
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
