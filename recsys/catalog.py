"""Items to attribute tokens, per facet.

A `Catalog` holds the items (external ids, titles, text) and, for every facet, a vocabulary of
attributes and a sparse item x attribute incidence matrix. Attribute columns are mapped to facets
by `facets.facet_for_column` (overridable by a schema); numeric columns become bucket tokens.

Words of the title (and description) that the lexicon (`recsys.lexicon`) knows add attributes
too: "Crimson" in a title gives `color: red` (key "title"), "Stainless Steel" gives
`material:stainless steel` in `other`, but only where the item has no value of that facet (for
`other`: of that key) from a column or an `attributes` pair: columns win. What a title gives is
preferred over what a description gives. Extracted attributes are not added to `texts`, which keeps
the item's own words for the lexical baseline.

Finally, title words and every distinct word of the description feed the `other` facet (keys
"title" and "description") unless they are stop words or repeat one of the item's own attribute
values (or an earlier word): the model then matches what BM25 matches, and the description's
words learn their own weight against the title's (`FacetHead.source_bias`).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .errors import InputError, UnknownItemError
from .facets import DESCRIPTION, FACETS, TITLE, WORDS_FACET, facet_for_column
from .gc_pause import paused_gc
from .io.bookkeeping import is_bookkeeping_column
from .io.headers import is_code_column, normalized
from .io.money import MONEY, match_value
from .io.records import json_scalar
from .lexicon import Lexicon, LexiconConfig
from .lru import WordCache
from .tokenize import STOPWORDS, match_key, words

MULTI_VALUE_SEPARATOR = "|"
MAX_ATTRIBUTES_PER_FACET = 256  # a bound on work per item, far above a title's words
_CATEGORICAL_NUMERIC_LIMIT = 10  # a numeric column with this few distinct values stays categorical
_NUMERIC_SHARE = 0.98  # of the non-empty cells that must be numbers for a column to be numeric
# ... or this share, when the column's other cells say only that there is no number: a few
# words without a digit ("POA", "Free", "n/a", "Call for price"; `_are_placeholders`)
_PLACEHOLDER_SHARE = 0.8
_PLACEHOLDERS = 3  # distinct such words (case aside) a number column may hold
_N_BUCKETS = 5


def default_occurrences(key: str) -> tuple[int, int]:
    """An attribute's `occurrences` when nothing was counted: a description word's are one
    description occurrence, anything else's its own value once (what versions saved before
    occurrences were counted mean by every attribute)."""
    return (0, 1) if key == DESCRIPTION else (1, 0)


@dataclass(frozen=True)
class Attribute:
    """One attribute token: where it came from (`key`), its value, and the words that match it.

    `occurrences` is how often the item says it, BM25's term frequency split by field weight:
    (occurrences at par: the value itself and its title words, occurrences in the description).
    Items that say "apple" once and four times hold two attributes of one label, so that every
    table keyed by attribute (the index's distinct sets, logit offsets) needs nothing per item:
    the start's logit offset log(par + description_weight * desc) is BM25F's tf inside the
    softmax (`Featurizer.attribute_buffers`)."""

    facet: str
    key: str
    value: str
    occurrences: tuple[int, int] = None  # type: ignore[assignment]  # None: `default_occurrences`

    def __post_init__(self) -> None:
        if self.occurrences is None:
            object.__setattr__(self, "occurrences", default_occurrences(self.key))

    @property
    def base(self) -> tuple[str, str, str]:
        """What it is, however often an item says it: click statistics pool over this."""
        return (self.facet, self.key, self.value)

    @property
    def shown(self) -> str:
        """The value as a shopper reads it: "yes" for a spec key a yes affirmed, whose value is
        the key itself so that its words match (`_affirmed`); else the value."""
        return "yes" if self.value == _affirmed(self.key, "yes") else self.value

    @property
    def label(self) -> str:
        if self.facet != "other" and not self.key.startswith("#"):
            return self.shown
        return f"{self.key.lstrip('#')}:{self.shown}"

    @property
    def match_keys(self) -> tuple[str, ...]:
        return tuple(match_key(w) for w in words(self.value))


def attribute_entry(a: Attribute) -> list[str | int]:
    """An attribute as a version's catalog.json stores it: [key, value], then its occurrences
    where they are not the default (so versions saved before they were counted read the same)."""
    if a.occurrences == default_occurrences(a.key):
        return [a.key, a.value]
    return [a.key, a.value, *a.occurrences]


def attribute_from_entry(facet: str, entry: object) -> Attribute | None:
    """The `attribute_entry` back, or None where `entry` is not one."""
    if not isinstance(entry, list) or len(entry) not in (2, 4) or not all(isinstance(x, str) for x in entry[:2]):
        return None
    if len(entry) == 2:
        return Attribute(facet, entry[0], entry[1])
    counts = entry[2:]
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts) or sum(counts) == 0:
        return None
    return Attribute(facet, entry[0], entry[1], (counts[0], counts[1]))


def _filter_form(value: str) -> str:
    """A filter value as query words are matched: its words' stems, in order, and a leading "<"
    and a trailing "+" kept: a bucket's "<2" and "5+" (`NumericBuckets.labels`), a grade's "A+",
    are not the value 2, 5 or A, which a filter on those would otherwise select too."""
    text = value.strip()
    form = " ".join(match_key(w) for w in words(text)) or text.lower()
    return f"{'<' if text.startswith('<') else ''}{form}{'+' if text.endswith('+') else ''}"


LABEL_CACHE_ITEMS = 1 << 15  # items whose labels `Catalog.attribute_labels` keeps (a few MB)


def _key_form(key: str) -> str:
    """A filter key as column names are matched: case, accents, separators and the spelling of
    colour left out (`Colour`, `colour` and `color` are one key, `base_colour` and `baseColor`
    another, `categoría` and `categoria` a third)."""
    return normalized(key).replace("colour", "color")


@dataclass(frozen=True)
class NumberRange:
    """A filter on a numeric column's numbers (price, rating): `min <= x <= max`, either bound
    optional."""

    min: float | None = None
    max: float | None = None

    def __post_init__(self) -> None:
        bounds = [b for b in (self.min, self.max) if b is not None]
        if not bounds:
            raise InputError("a range needs min, max or both, e.g. {\"min\": 20, \"max\": 60}")
        if not all(math.isfinite(b) for b in bounds):
            raise InputError("a range's min and max must be finite numbers")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise InputError(f"a range's min ({self.min:g}) is above its max ({self.max:g})")

    def contains(self, x: np.ndarray) -> np.ndarray:
        """Which of `x` are in the range (NaN, an empty cell, never is)."""
        inside: np.ndarray = np.isfinite(x)
        if self.min is not None:
            inside &= x >= self.min
        if self.max is not None:
            inside &= x <= self.max
        return inside


# a filter key's accepted values (OR-ed), or a range of a numeric column's numbers
FilterValues = Sequence[str] | NumberRange


@dataclass
class NumericBuckets:
    """Quantile edges of a numeric column, kept so a catalogue is bucketed the same way again."""

    edges: list[float]

    def token(self, x: float) -> str:
        return self.labels()[int(self.bucket(np.asarray(x)))]

    def bucket(self, x: np.ndarray) -> np.ndarray:
        """Bucket number of each value: how many edges are at or below it."""
        return np.searchsorted(self.edges, x, side="right")

    def labels(self) -> list[str]:
        """Each bucket's token, by bucket number: "<lo", "lo-hi" ..., "hi+"."""
        e = self.edges
        return ([f"<{_fmt(e[0])}"] + [f"{_fmt(lo)}-{_fmt(hi)}" for lo, hi in itertools.pairwise(e)]
                + [f"{_fmt(e[-1])}+"])


def _fmt(x: float) -> str:
    return f"{x:.0f}" if abs(x) >= 100 or float(x).is_integer() else f"{x:.3g}"


_MONEY_SAMPLE = 20  # a column's first cells that are not plain numbers tried as prices


def _as_numbers(series: pd.Series) -> np.ndarray:
    """(n,) float: each cell as a number, NaN where it is none. Prices as exports write them
    (`recsys.io.money`; Google Merchant feeds say "15.00 USD") are numbers when most of the column's
    first cells that are not plain numbers are such prices; a text column (colours, brands) is
    given up on after those."""
    values: np.ndarray = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)
    missed = np.flatnonzero(np.isnan(values) & (series != "").to_numpy(dtype=bool))
    if not len(missed):
        return values
    first = [MONEY.match(str(series.iat[i])) for i in missed[:_MONEY_SAMPLE].tolist()]
    if 2 * sum(m is not None for m in first) <= len(first):
        return values
    values = values.copy()  # pandas may hand out a read-only view
    for i in missed.tolist():
        m = MONEY.match(str(series.iat[i]))
        if m is not None:
            values[i] = match_value(m)
    return values


def _are_placeholders(words: Iterable[str]) -> bool:
    """Whether the cells of a number column that are no number only say that it has none: at
    most `_PLACEHOLDERS` distinct words (case aside), none with a digit ("POA", "Free", "n/a",
    "-"). A cell with a digit ("from 30", "12-15") is a number written otherwise, not a word."""
    distinct = {w.strip().lower() for w in words}
    return len(distinct) <= _PLACEHOLDERS and not any(c.isdigit() for w in distinct for c in w)


def _numeric_values(series: pd.Series, chunk: int = 65_536) -> np.ndarray | None:
    """The column as floats (NaN where a cell is no number) when (nearly) every non-empty cell
    is a number, or most are and the others are placeholders (`_are_placeholders`: a price list
    that says "POA" for a few items), else None.

    Parsed a chunk at a time: a text column (colours, brands) is given up on as soon as its
    non-numbers exceed what the allowances could absorb, not after parsing all of it."""
    filled = (series != "").to_numpy(dtype=bool)
    n_filled = int(filled.sum())
    if n_filled == 0:
        return None
    strict = (1 - _NUMERIC_SHARE) * n_filled + 1  # beyond any rounding of the share below
    loose = (1 - _PLACEHOLDER_SHARE) * n_filled + 1
    words: set[str] = set()  # the non-numbers, case aside, while they could be placeholders
    parts, bad = [], 0
    for lo in range(0, len(series), chunk):
        values = _as_numbers(series.iloc[lo : lo + chunk])
        missed = filled[lo : lo + chunk] & np.isnan(values)
        bad += int(missed.sum())
        if bad > loose:
            return None
        if missed.any():
            words.update(series.iloc[lo : lo + chunk][missed].str.strip().str.lower().unique().tolist())
        if bad > strict and not _are_placeholders(words):
            return None
        parts.append(values)
    values = np.concatenate(parts)
    numbers = values[~np.isnan(values)]
    share = _PLACEHOLDER_SHARE if _are_placeholders(words) else _NUMERIC_SHARE
    if len(numbers) / n_filled < share or len(np.unique(numbers)) <= _CATEGORICAL_NUMERIC_LIMIT:
        return None
    return values


def fit_buckets(values: np.ndarray) -> NumericBuckets:
    finite = values[np.isfinite(values)]
    qs = np.quantile(finite, np.linspace(0, 1, _N_BUCKETS + 1)[1:-1])
    edges = sorted({float(f"{q:.2g}") for q in qs})
    return NumericBuckets(edges=edges)


@dataclass
class Catalog:
    """Items and their attribute tokens. Built once per model version by `Catalog.build`."""

    item_ids: list[str]
    titles: list[str]
    texts: list[str]  # everything a lexical baseline may read about the item
    vocab: dict[str, list[Attribute]]  # facet -> attributes, index = attribute idx
    item_attrs: dict[str, sp.csr_matrix]  # facet -> (n_items, V_f) 0/1 incidence
    buckets: dict[str, NumericBuckets] = field(default_factory=dict)
    # a bucketed column's key -> each item's number (NaN: empty), for range filters
    numbers: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    # how many items hold a spec list (at least one `key:value` pair in an `attributes` column,
    # `spec_pairs`); 0 for a catalogue loaded from a saved version, which does not keep it
    spec_items: int = field(default=0, compare=False)
    # a bucketed column's cells that are no number ("POA": `_are_placeholders`), kept as words ->
    # how many cells say each, as written, the most first; empty for a saved version
    number_words: dict[str, dict[str, int]] = field(default_factory=dict, repr=False, compare=False)
    # another id an item is known by -> its item_id (`ReadReport.aliases`: a variant's SKU in a
    # product export, folded into its product), so that an event, a judgment or a product page
    # that names the variant finds the product; a version keeps them
    aliases: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    # each item's description as read (`_descriptions`: its description and free-text columns),
    # for a product page; None when the catalogue has none (or a version saved before them)
    descriptions: list[str] | None = field(default=None, repr=False, compare=False)
    # an attribute key (lower-cased, as labels say it) -> its column's name as the file writes it,
    # where the two differ ("articletype" -> "articleType"): how a page puts the key into words
    key_names: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    # a column value's label -> the value as the file first writes it, where the two differ
    # ("brand:núñez & hijos" -> "Núñez & Hijos"): what a shopper is shown (`item_value_names`)
    value_names: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    _index: dict[str, int] = field(default_factory=dict, repr=False)
    _labels: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _label_views: list[tuple[str, memoryview, memoryview, list[str]]] = field(
        default_factory=list, repr=False, compare=False)
    # item idx -> its labels per facet, for the items shown most (`attribute_labels`)
    _label_cache: WordCache[tuple[tuple[str, tuple[str, ...]], ...]] = field(
        default_factory=lambda: WordCache("item labels", LABEL_CACHE_ITEMS), init=False, repr=False, compare=False)
    # facet -> (V,) items per attribute (`items_per_attribute`), counted on first use
    _items_per_attribute: dict[str, np.ndarray] = field(default_factory=dict, init=False, repr=False,
                                                        compare=False)
    # (filter key, value form) -> (facet, attribute idx) pairs; built on the first filter
    _filter_lookup: dict[tuple[str, str], list[tuple[str, int]]] = field(
        default_factory=dict, repr=False, compare=False)
    _key_attributes: dict[str, list[tuple[str, int]]] = field(default_factory=dict, repr=False, compare=False)
    _key_forms: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._index = {item_id: i for i, item_id in enumerate(self.item_ids)}

    @property
    def facets(self) -> tuple[str, ...]:
        """The catalogue's facets, in head order: the keys of `vocab` (every facet has one, empty
        or not), so that the list is held in one place."""
        return tuple(self.vocab)

    def labels(self, facet: str) -> list[str]:
        """Display labels of a facet's attributes, by attribute index (built once: every
        ranked item's explanation reads them)."""
        if facet not in self._labels:
            self._labels[facet] = [a.label for a in self.vocab[facet]]
        return self._labels[facet]

    def base_matrix(self, facet: str) -> sp.csr_matrix:
        """(V, B) 0/1: which of the facet's distinct attributes regardless of occurrences
        (`Attribute.base`) each attribute is. An item holds one variant of a base at most, so
        item_attrs @ base_matrix is 0/1 too."""
        bases: dict[tuple[str, str, str], int] = {}
        cols = np.array([bases.setdefault(a.base, len(bases)) for a in self.vocab[facet]], dtype=np.int64)
        v = len(cols)
        return sp.csr_matrix((np.ones(v, dtype=np.float32), (np.arange(v), cols)), shape=(v, len(bases)))

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    def idx(self, item_id: str) -> int:
        try:
            return self._index[item_id]
        except KeyError:
            stripped = item_id.strip()  # the readers strip every cell: " A1" in a file is A1
            if stripped != item_id and stripped in self._index:
                return self._index[stripped]
            raise UnknownItemError(item_id) from None

    def has(self, item_id: str) -> bool:
        return item_id in self._index

    def canonical(self, item_id: str) -> str:
        """The item_id `item_id` names: itself, the item an alias of it stands for (`aliases`),
        or, when neither, the same id without the spaces around it (the readers strip every
        cell, so " A1" in an items file is item A1). An id the catalogue does not know is
        returned as it is."""
        if item_id in self._index:
            return item_id
        alias = self.aliases.get(item_id)
        if alias is not None:
            return alias
        stripped = item_id.strip()
        if stripped != item_id and (stripped in self._index or stripped in self.aliases):
            return self.canonical(stripped)
        return item_id

    def keep_aliases(self, aliases: Mapping[str, str]) -> None:
        """Keep the `aliases` that name an item of this catalogue and are not an item's own id."""
        self.aliases = {a: i for a, i in aliases.items() if i in self._index and a not in self._index}

    def attributes_of(self, item_idx: int, facet: str) -> np.ndarray:
        """Attribute indices of one item in one facet, in the order they were read."""
        m = self.item_attrs[facet]
        return m.indices[m.indptr[item_idx] : m.indptr[item_idx + 1]]

    def attribute_labels(self, item_idx: int) -> dict[str, list[str]]:
        """Item `item_idx`'s attribute labels per facet, in the order they were read: what
        every shown item carries. Kept for the last LABEL_CACHE_ITEMS items asked (the items a
        shop shows recur), in fresh lists each time; read through memoryviews of the CSR arrays
        otherwise, which give Python ints at half the cost of numpy indexing."""
        kept = self._label_cache.get(item_idx)
        if kept is None:
            if not self._label_views:
                # numpy's stubs do not declare ndarray's buffer protocol (__buffer__) for 3.11
                self._label_views = [(f, memoryview(self.item_attrs[f].indptr),  # type: ignore[arg-type]
                                      memoryview(self.item_attrs[f].indices),  # type: ignore[arg-type]
                                      self.labels(f)) for f in self.facets]
            kept = tuple((f, tuple(labels[a] for a in indices[indptr[item_idx] : indptr[item_idx + 1]]))
                         for f, indptr, indices, labels in self._label_views)
            self._label_cache.put(item_idx, kept)
        return {f: list(labels) for f, labels in kept}

    def item_value_names(self, labels: Mapping[str, Sequence[str]]) -> dict[str, str]:
        """Of an item's attribute `labels` (`attribute_labels`), those a file writes otherwise
        (`value_names`), label -> as written: a page shows "Núñez & Hijos", not the label's
        lower case."""
        names = self.value_names
        if not names:
            return {}
        return {label: names[label] for facet_labels in labels.values() for label in facet_labels if label in names}

    def item_numbers(self, item_idx: int) -> dict[str, float]:
        """Item `item_idx`'s numbers of the number columns (`numbers`: a price, a rating) as its
        file gives them, by key: its attributes hold their ranges (`price:61-95`), which a
        filter and the heads read, and a shopper is shown the number."""
        out: dict[str, float] = {}
        for key, values in self.numbers.items():
            x = float(values[item_idx])
            if x == x:  # not NaN: the item has a number there
                out[key] = x
        return out

    def items_per_attribute(self, facet: str) -> np.ndarray:
        """(V,) how many items have each of `facet`'s attributes."""
        counts = self._items_per_attribute.get(facet)
        if counts is None:
            counts = self._items_per_attribute[facet] = self.item_attrs[facet].getnnz(axis=0)
        return counts

    def filter_mask(self, filters: Mapping[str, FilterValues]) -> np.ndarray:
        """Items that match every filter key (AND) with any of its values (OR), or whose number
        is in its range (`NumberRange`).

        A key is a facet name or a source column / attribute key, by its own name or any spelling
        `filter_key` accepts; a value matches an attribute's value or its label
        case-insensitively, or its words as query words match them (stems: "Dresses" selects
        "dress"). A value that selects nothing is not an error here: `unknown_filter_values`
        says which.
        """
        mask = np.ones(self.n_items, dtype=bool)
        for key, values in filters.items():
            if isinstance(values, NumberRange):
                mask &= self.range_mask(key, values)
                continue
            hit = np.zeros(self.n_items, dtype=bool)
            by_facet: dict[str, list[int]] = {}
            for v in values:
                for facet, a_idx in self.filter_columns(key, v):
                    by_facet.setdefault(facet, []).append(a_idx)
            for facet, cols in by_facet.items():
                hit |= np.asarray(self.item_attrs[facet][:, sorted(set(cols))].sum(axis=1)).ravel() > 0
            mask &= hit
        return mask

    def range_mask(self, key: str, bounds: NumberRange) -> np.ndarray:
        """Items whose number in column `key` is within `bounds`: the column's numbers when it is
        bucketed (`numbers`), else its values read as numbers. InputError for a key that holds
        no numbers."""
        name = self.filter_key(key) or key.strip().lower()
        if name in self.numbers:
            return bounds.contains(self.numbers[name])
        numeric = self._numeric_attributes(name)
        if numeric is None:
            ranged = ", ".join(sorted(self.range_keys())) or "none in this catalogue"
            bucketed = (f": this model keeps only its buckets ({', '.join(self.filter_values(name))});"
                        " filter on those, or retrain for ranges" if name in self.buckets else
                        f", so it takes values, not a range. Numeric columns: {ranged}")
            what = "is a column of codes" if is_code_column(name) else "holds no numbers"
            raise InputError(f"filters: {key.strip()!r} {what}{bucketed}")
        hit = np.zeros(self.n_items, dtype=bool)
        by_facet: dict[str, list[int]] = {}
        for (facet, a_idx), x in numeric:
            if bounds.contains(np.array([x]))[0]:
                by_facet.setdefault(facet, []).append(a_idx)
        for facet, cols in by_facet.items():
            hit |= np.asarray(self.item_attrs[facet][:, cols].sum(axis=1)).ravel() > 0
        return hit

    def range_keys(self) -> set[str]:
        """The filter keys that take a range: bucketed columns, and columns of a few numbers."""
        return set(self.numbers) | {k for k in self.filter_keys() - set(self.facets) - set(self.buckets)
                                    if self._numeric_attributes(k) is not None}

    def _numeric_attributes(self, key: str) -> list[tuple[tuple[str, int], float]] | None:
        """((facet, attribute idx), number) of each attribute of column `key` that is a number,
        when every other value of it is a placeholder (`_are_placeholders`: a rating of 1 to 5
        or "n/a"), else None (a bucket label is no number: "20-50"; nor is a code, a GTIN or a
        part number, however it is written: `is_code_column`)."""
        if is_code_column(key):
            return None
        if key in self.facets:
            return None
        out, words = [], set()
        for facet, a_idx in self.filter_attributes(key):
            value = self.vocab[facet][a_idx].value
            try:
                out.append(((facet, a_idx), float(value)))
            except ValueError:
                words.add(value)
                if not _are_placeholders(words):  # a word column: given up on at once
                    return None
        return out or None

    def filter_key(self, key: str) -> str | None:
        """The catalogue's filter key that `key` names, or None: a key as given (any case) wins,
        else the one of the same `_key_form` (`colour` for a `color` column and the reverse,
        `Base Colour` for `baseColour`)."""
        self._filters()
        lowered = key.strip().lower()
        if lowered in self._key_attributes:
            return lowered
        return self._key_forms.get(_key_form(key))

    def filter_columns(self, key: str, value: str) -> list[tuple[str, int]]:
        """(facet, attribute idx) of every attribute that `value` of filter `key` selects."""
        lookup = self._filters()
        key_l = self.filter_key(key) or key.strip().lower()
        found = lookup.get((key_l, value.strip().lower()), [])
        return found or lookup.get((key_l, _filter_form(value)), [])

    def filter_attributes(self, key: str) -> list[tuple[str, int]]:
        """(facet, attribute idx) of every attribute filter `key` can select."""
        self._filters()
        return self._key_attributes.get(self.filter_key(key) or key.strip().lower(), [])

    def item_filter_attributes(self, item_idx: int, key: str) -> list[tuple[str, int]]:
        """(facet, attribute idx) of item `item_idx`'s attributes that filter `key` can select:
        `filter_attributes(key)` that the item has, read from its own few (a key of thousands of
        values costs nothing more)."""
        name = self.filter_key(key) or key.strip().lower()
        return [(f, a) for f in self.facets for a in self.attributes_of(item_idx, f).tolist()
                if f == name or self.vocab[f][a].key.lstrip("#") == name]

    def item_filter_values(self, item_idx: int, key: str) -> list[str]:
        """The values of filter `key` that item `item_idx` has, as a shopper reads them
        (`Attribute.shown`)."""
        return sorted({self.vocab[f][a].shown for f, a in self.item_filter_attributes(item_idx, key)})

    def filter_values(self, key: str) -> list[str]:
        """The values filter `key` can take, as a shopper reads them (`Attribute.shown`), sorted."""
        return sorted({self.vocab[f][a].shown for f, a in self.filter_attributes(key)})

    def listed_values(self, key: str) -> list[str]:
        """The values a listing of filter `key` shows (facet counts), sorted: `filter_values(key)`,
        but a facet's name lists its own values (`own_listing`) when it has any."""
        listed = self.own_listing(key) or self.filter_attributes(key)
        return sorted({self.vocab[f][a].shown for f, a in listed})

    def own_listing(self, key: str) -> list[tuple[str, int]]:
        """(facet, attribute) a facet's name lists as its own: its own column's values (a filter
        on `quality` selects the whole facet, but the shop's `quality` column is what its listing
        is: the `rating` bands the facet also holds are listed under `rating`), else, but for
        the facet of the text's words (`WORDS_FACET`), the values the lexicon read out of the
        titles and descriptions when they are all it has (colours a catalogue names only in its
        titles; beside a `baseColour` column, whose values are listed under its own key, the few
        read out of titles are no listing). Empty for a key that is no facet's name, or a facet
        with neither."""
        name = self.filter_key(key) or key.strip().lower()
        if name not in self.facets:
            return []
        attrs = self.filter_attributes(key)
        own = [(f, a) for f, a in attrs if self.vocab[f][a].key.lstrip("#") == name]
        if not own and name != WORDS_FACET and all(self.vocab[f][a].key in (TITLE, DESCRIPTION) for f, a in attrs):
            return attrs
        return own

    def unknown_filter_values(self, filters: Mapping[str, FilterValues]) -> list[tuple[str, str]]:
        """(key, value) of the filter values that select no attribute (ranges are not values)."""
        return [(key, v) for key, values in filters.items() if not isinstance(values, NumberRange)
                for v in values if not self.filter_columns(key, v)]

    def _filters(self) -> dict[tuple[str, str], list[tuple[str, int]]]:
        """The one place that says which keys select an attribute (its facet, its source key)
        and which forms of a value do (value, label, the value's stems)."""
        if not self._filter_lookup:
            lookup: dict[tuple[str, str], list[tuple[str, int]]] = {}
            by_key: dict[str, list[tuple[str, int]]] = {f: [] for f in self.facets}
            for f in self.facets:
                for a_idx, a in enumerate(self.vocab[f]):
                    forms = {a.value.lower(), a.label.lower(), _filter_form(a.value)}
                    if a.shown != a.value:  # a key a yes made the value
                        forms |= AFFIRMATIVE_VALUES | {f"{a.key.lstrip('#')}:{a.value}".lower()}
                    for key in {f, a.key.lstrip("#")}:
                        by_key.setdefault(key, []).append((f, a_idx))
                        for form in forms:
                            lookup.setdefault((key, form), []).append((f, a_idx))
            # a facet's name first: `colour` names the color facet when no column is `colour`
            forms_of: dict[str, str] = {}
            for key in by_key:
                forms_of.setdefault(_key_form(key), key)
            self._key_attributes, self._filter_lookup, self._key_forms = by_key, lookup, forms_of
        return self._filter_lookup

    def filter_keys(self) -> set[str]:
        self._filters()
        return set(self._key_attributes)

    # ---- construction -------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        items: pd.DataFrame,
        overrides: Mapping[str, str] | None = None,
        buckets: Mapping[str, NumericBuckets] | None = None,
        *,
        lexicon: Lexicon | LexiconConfig | None = None,
        facets: Sequence[str] = FACETS,
    ) -> Catalog:
        """From a validated items table (all cells strings). `buckets` reuses earlier edges.

        `facets`: the heads the catalogue is built for, in order (a schema's `Schema.facets`); a
        column `overrides` maps to a facet outside them is an `InputError`.

        `lexicon`: what to read facet values out of titles and descriptions with. None takes the
        lexicon of the schema the `overrides` come from (`Schema.columns` carries it), else the
        built-in one; `LexiconConfig(enabled=False)` turns extraction off.
        """
        if lexicon is None:
            lexicon = LexiconConfig()
        if isinstance(lexicon, LexiconConfig):
            lexicon = lexicon.build()
        with paused_gc():
            return _CatalogBuilder(items, overrides or {}, dict(buckets or {}), lexicon,
                                   tuple(facets)).build()


class _CatalogBuilder:
    """Rows (an item's attribute indices in one facet, in the order they are added) are built in
    passes over the items: the columns are parsed a column at a time (a distinct cell once), then
    each later source (attribute pairs, what the lexicon extracts, title and description words)
    is added in a pass over the items, as the rows so far allow (`_each_item`). Between passes
    the rows are flat arrays (`_Rows`): a list per item and facet took about 100 bytes each, most
    of the build's memory. Vocabulary indices are numbered in the order attributes are first met:
    source by source, item by item, as when each source was a pass of its own."""

    def __init__(self, items: pd.DataFrame, overrides: Mapping[str, str], buckets: dict[str, NumericBuckets],
                 lexicon: Lexicon | None = None, facets: tuple[str, ...] = FACETS):
        self.items = items
        self.overrides = {k.lower(): v for k, v in overrides.items()}
        self.facets = facets
        for column, facet in self.overrides.items():
            if facet != "ignore" and facet not in facets:
                raise InputError(f"column {column!r} is mapped to facet {facet!r}, which is not one of "
                                 f"this catalogue's ({', '.join(facets)}); add it with [facets] add")
        self.buckets: dict[str, NumericBuckets] = buckets
        self.numbers: dict[str, np.ndarray] = {}
        self.value_names: dict[str, str] = {}  # `Catalog.value_names`
        self.number_words: dict[str, Counter[str]] = {}  # a number column's cells that are words
        self.lexicon = lexicon
        self.vocab: dict[str, dict[Attribute, int]] = {f: {} for f in facets}
        self.attr_list: dict[str, list[Attribute]] = {f: [] for f in facets}
        self.keys: dict[str, list[tuple[str, ...]]] = {f: [] for f in facets}  # match keys by index
        self.content_keys: dict[str, list[frozenset[str]]] = {f: [] for f in facets}  # filled on demand
        self.rows = {f: _Rows() for f in facets}
        self.row: dict[str, array[int]] = {f: array("i") for f in facets}  # the item in hand's
        self.extracted: dict[int, set[tuple[str, int]]] = {}  # item -> what the lexicon gave it
        # per parsed column: its facet and each item's attribute indices (shared by equal cells)
        self.cells: list[tuple[str, list[tuple[int, ...]]]] = []
        self.descriptions: list[str] | None = None  # each item's description (`_descriptions`), set by build

    def add(self, item_idx: int, attr: Attribute) -> bool:
        """Adds the attribute to the item; False if the item had it already or is full."""
        return self.add_index(item_idx, attr.facet, self.index_of(attr))

    def index_of(self, attr: Attribute) -> int:
        """The attribute's index in its facet's vocabulary, new ones numbered as they come."""
        ids = self.vocab[attr.facet]
        a_idx = ids.get(attr)
        if a_idx is None:
            a_idx = ids[attr] = len(ids)
            self.attr_list[attr.facet].append(attr)
            self.keys[attr.facet].append(attr.match_keys)
        return a_idx

    def add_index(self, item_idx: int, facet: str, a_idx: int) -> bool:
        """To the rows of the item in hand (`item_idx`: the item of the pass, see `_each_item`)."""
        row = self.row[facet]
        if a_idx not in row and len(row) < MAX_ATTRIBUTES_PER_FACET:
            row.append(a_idx)
            return True
        return False

    def _each_item(self) -> Iterator[int]:
        """One pass over the items: while item i is in hand, `self.row` holds its rows so far;
        what the pass adds to them is kept when it moves on. The first pass starts each row with
        the item's column attributes (they are numbered already), in column order."""
        row = self.row
        last = [(f, self.rows[f].restart()) for f in self.facets]
        reads = [(f, read[0], read[1]) for f, read in last if read is not None]
        fresh = [f for f, read in last if read is None]
        keep = [(f, self.rows[f].indices, self.rows[f].indptr) for f in self.facets]
        cells, self.cells = self.cells, []
        for i in range(len(self.items)):
            for f, indices, indptr in reads:
                row[f] = indices[indptr[i] : indptr[i + 1]]
            for f in fresh:
                row[f] = array("i")
            for facet, split in cells:
                for a_idx in split[i]:
                    self.add_index(i, facet, a_idx)
            yield i
            for f, indices, indptr in keep:
                indices.extend(row[f])
                indptr.append(len(indices))

    def build(self) -> Catalog:
        n = len(self.items)
        kinds = column_kinds(self.items, self.overrides)
        self.descriptions = _descriptions(self.items, kinds.prose)
        for column in kinds.columns:
            self._add_column(column, kinds.separators.get(column))
        having = np.zeros(n, dtype=bool)
        for column in kinds.specs:
            having |= self._add_pairs(self.items[column])
        spec_items = int(having.sum())
        self._add_extracted()
        texts = self._add_titles_and_texts()
        vocab = {}
        item_attrs = {}
        for f in self.facets:
            indptr, indices = self.rows[f].arrays()
            # an attribute every holder of which says it more often than once is a variant no
            # item has (`_claim_occurrences`): numbered again without the unused ones
            used = np.zeros(len(self.attr_list[f]), dtype=bool)
            used[indices] = True
            new_idx = np.cumsum(used) - 1
            vocab[f] = [a for a, u in zip(self.attr_list[f], used.tolist(), strict=True) if u]
            data = np.ones(len(indices), dtype=np.float32)
            item_attrs[f] = sp.csr_matrix((data, new_idx[indices].astype(np.int32), indptr),
                                          shape=(n, len(vocab[f])))
        return Catalog(
            item_ids=list(self.items["item_id"]),
            titles=list(self.items[TITLE]),
            texts=texts,
            vocab=vocab,
            item_attrs=item_attrs,
            buckets=self.buckets,
            numbers=self.numbers,
            spec_items=spec_items,
            number_words={k: dict(c.most_common()) for k, c in self.number_words.items()},
            descriptions=self.descriptions,
            key_names=self._key_names(),
            value_names=self.value_names,
        )

    def _key_names(self) -> dict[str, str]:
        """The columns whose keys (lower-cased) are not written so: `Catalog.key_names`."""
        names: dict[str, str] = {}
        for column in self.items.columns:
            written = str(column).strip()
            key = written.lower()
            if key != written and facet_for_column(written, self.overrides) is not None:
                names.setdefault(key, written)
        return names

    def _add_column(self, column: str, paths: re.Pattern[str] | None = None) -> None:
        """Numbers the column's attributes; the first pass over the items adds them to the rows
        (`_each_item`). `paths`: its values are category paths, a value per level, separated so."""
        facet = facet_for_column(column, self.overrides)
        assert facet is not None  # build() adds the columns that feed a facet
        key = column.strip().lower()
        cells = self.items[column].astype(str)
        numeric, floats = self.buckets.get(key), None
        if numeric is None and key not in self.buckets and not is_code_column(key):
            floats = _numeric_values(cells)
            if floats is not None:
                numeric = self.buckets[key] = fit_buckets(floats)
        if numeric is not None:
            if floats is None:
                floats = _as_numbers(cells)
            self.numbers[key] = np.where(np.isfinite(floats), floats, np.nan)
            have = np.flatnonzero(np.isfinite(floats))
            labels = numeric.labels()
            bucket_attr: dict[int, tuple[int, ...]] = {}  # bucket number -> (attribute index,)
            numbered: list[tuple[int, ...]] = [()] * len(cells)
            for i, b in zip(have.tolist(), numeric.bucket(floats[have]).tolist()):
                a_idx = bucket_attr.get(b)
                if a_idx is None:
                    a_idx = bucket_attr[b] = (self.index_of(Attribute(facet, "#" + key, labels[b])),)
                numbered[i] = a_idx
            # a cell that is no number ("POA") is a value of the column as a word column's are:
            # it can be searched and filtered on, and is in no range
            words = np.flatnonzero(~np.isfinite(floats) & (cells != "").to_numpy(dtype=bool))
            said: list[str] = cells.iloc[words].tolist()
            as_words = {cell: tuple(self.index_of(Attribute(facet, key, v)) for v in _split(cell))
                        for cell in dict.fromkeys(said)}
            for i, cell in zip(words.tolist(), said, strict=True):
                numbered[i] = as_words[cell]
            if said:
                self.number_words[key] = Counter(cell.strip() for cell in said)
            self.cells.append((facet, numbered))
            return
        # cells repeat (colours, brands, sizes): each distinct cell is split and indexed once
        parsed: dict[str, tuple[int, ...]] = {}
        split = []
        separators = _TAG_SEPARATORS if _is_tag_column(key) or _comma_lists(cells) else (
            _PATH_LIST_SEPARATORS if paths is not None else MULTI_VALUE_SEPARATOR)
        tops = path_tops(cells, paths) if paths is not None else set()
        for cell in cells.tolist():
            indices = parsed.get(cell)
            if indices is None:
                written = _split_written(cell, separators)
                values = [v.lower() for v in written]
                if paths is not None:
                    values = list(dict.fromkeys(level for value in values for one in joined_paths(value, paths, tops)
                                                for level in path_levels(one, paths)))
                attrs = [Attribute(facet, key, value) for value in values]
                if paths is None:
                    for attr, as_written in zip(attrs, written, strict=True):
                        if as_written != attr.value:
                            self.value_names.setdefault(attr.label, as_written)
                indices = parsed[cell] = tuple(self.index_of(attr) for attr in attrs)
            split.append(indices)
        self.cells.append((facet, split))

    def _add_pairs(self, cells: pd.Series) -> np.ndarray:
        """Each item's spec pairs as attributes; (n_items,) bool which items have any."""
        having = np.zeros(len(self.items), dtype=bool)
        for i, cell in zip(self._each_item(), cells.astype(str), strict=True):
            pairs = spec_pairs(cell)
            having[i] = bool(pairs)
            for key, value in pairs:
                facet = facet_for_column(key, self.overrides)
                if facet is not None:
                    self.add(i, Attribute(facet, key.lower(), value.lower()))
        return having

    def _add_extracted(self) -> None:
        """Facet values the lexicon finds in the title, then the description: only for facets
        (for `other`: keys) the item has no value of from a column, and only kinds the title did
        not already give."""
        if self.lexicon is None:
            return
        sources = [(TITLE, self.items[TITLE].astype(str).tolist())]
        if self.descriptions is not None:
            sources.append((DESCRIPTION, self.descriptions))
        for i in self._each_item():
            filled = {f for f in self.facets if f != "other" and self.row[f]}
            other_keys = {self.attr_list["other"][a].key for a in self.row["other"]}
            found: set[str] = set()
            for source, texts in sources:
                here: set[str] = set()
                for m in self.lexicon.matches(texts[i]):
                    key, facet = m.key(source, self.facets), m.facet(self.facets)
                    if m.kind in found or facet in filled:
                        continue
                    if facet == "other" and key in other_keys:
                        continue
                    attr = Attribute(facet, key, m.value)
                    if self.add(i, attr):
                        self.extracted.setdefault(i, set()).add((facet, self.vocab[facet][attr]))
                    here.add(m.kind)
                found |= here

    def _add_titles_and_texts(self) -> list[str]:
        """The item's text (what the lexical baseline reads: its title, description and the
        values of its attributes that are not read out of those), then term frequencies.

        Every content word of the title and description is an occurrence, and the item's
        attributes claim them, in row order: an attribute whose words the text repeats
        ("Apple" as brand, in the title and twice in the description) counts those
        occurrences (`Attribute.occurrences`); title words left unclaimed feed `other` (key
        "title"), then description words (key "description"), each word once with its count.
        So a word counts once per occurrence and in one attribute, as in BM25 over the text."""
        title_mapped = facet_for_column(TITLE, self.overrides) is not None
        descs = self.descriptions
        titles = self.items[TITLE].tolist()
        texts = []
        no_extracted: set[tuple[str, int]] = set()
        for i in self._each_item():
            title = titles[i]
            extracted = self.extracted.get(i, no_extracted)
            parts = [title]
            if descs is not None:
                parts.append(descs[i])
            for f in self.facets:
                attrs = self.attr_list[f]
                for a_idx in self.row[f]:  # what item_attrs holds, in the same order
                    a = attrs[a_idx]
                    if a.key not in (TITLE, DESCRIPTION) and (f, a_idx) not in extracted:
                        parts.append(a.value)
            texts.append(" ".join(parts))
            in_title = [] if title_mapped else _content_words(title)
            in_desc = _content_words(descs[i]) if descs is not None else []
            left_title = Counter(k for _, k in in_title)
            left_desc = Counter(k for _, k in in_desc)
            for f in self.facets:
                self._claim_occurrences(f, extracted, left_title, left_desc)
            for w, k in in_title:
                if left_title[k] > 0:
                    self.add(i, Attribute(WORDS_FACET, TITLE, w, (left_title[k], left_desc[k])))
                    left_title[k] = left_desc[k] = 0
            for w, k in in_desc:
                if left_desc[k] > 0:
                    self.add(i, Attribute(WORDS_FACET, DESCRIPTION, w, (0, left_desc[k])))
                    left_desc[k] = 0
        return texts

    def _claim_occurrences(self, facet: str, extracted: set[tuple[str, int]], left_title: Counter[str],
                           left_desc: Counter[str]) -> None:
        """The item in hand's attributes of `facet` take the title and description occurrences
        of their words (a phrase as often as its rarest word), each attribute then numbered as
        the variant with its count. A value the lexicon read out of the text is not an
        occurrence of its own, but the words it was read from are its (a colour "stainless" and
        a material "stainless steel" out of one "Stainless Steel" leave no title word "steel");
        one it read from a synonym ("crimson" -> red) keeps its default."""
        row = self.row[facet]
        attrs = self.attr_list[facet]
        for p, a_idx in enumerate(row):
            a = attrs[a_idx]
            keys = self._content_keys(facet, a_idx)
            in_title = min((left_title[k] for k in keys), default=0)
            in_desc = min((left_desc[k] for k in keys), default=0)
            read_out = (facet, a_idx) in extracted
            for k in keys:
                left_title[k] -= in_title
                left_desc[k] -= in_desc
                if read_out and in_title + in_desc == 0:
                    left = left_title if left_title[k] > 0 else left_desc
                    left[k] = max(left[k] - 1, 0)
            occurrences = (in_title + (0 if read_out else 1), in_desc)
            if occurrences == (0, 0):
                occurrences = default_occurrences(a.key)
            if occurrences != a.occurrences:
                row[p] = self.index_of(replace(a, occurrences=occurrences))

    def _content_keys(self, facet: str, a_idx: int) -> frozenset[str]:
        """The match keys of an attribute's value words that are not stop words (once each)."""
        cache = self.content_keys[facet]
        while len(cache) <= a_idx:
            a = self.attr_list[facet][len(cache)]
            cache.append(frozenset(k for w, k in _content_words(a.value)))
        return cache[a_idx]


def _descriptions(items: pd.DataFrame, prose: Sequence[str]) -> list[str] | None:
    """Each item's description: its `description` cell, then its cells of the `prose` columns
    (`prose_columns`), in column order; None when it has neither."""
    columns = ([DESCRIPTION] if DESCRIPTION in items.columns else []) + list(prose)
    if not columns:
        return None
    if len(columns) == 1:
        return items[columns[0]].astype(str).tolist()
    return [" ".join(c for c in row if c.strip()) for row in items[columns].astype(str).itertuples(index=False)]


class _Rows:
    """One facet's rows between passes over the items: every row's attribute indices one after
    the other, and where each row ends."""

    def __init__(self) -> None:
        self.indices, self.indptr = array("i"), array("q", [0])
        self._passes = 0

    def restart(self) -> tuple[array[int], array[int]] | None:
        """For a new pass, which writes the rows anew: the last pass's rows (None before the
        first)."""
        last = (self.indices, self.indptr) if self._passes else None
        self.indices, self.indptr = array("i"), array("q", [0])
        self._passes += 1
        return last

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(indptr, indices) as `sp.csr_matrix` takes them."""
        return np.array(self.indptr, dtype=np.int64), np.array(self.indices, dtype=np.int32)


# A spec list says what an item lacks as often as what it has ("apple_docking: Not supported"):
# such a value names no property a shopper could ask for, so it is no attribute and no text.
NEGATIVE_VALUES = frozenset({"no", "none", "not supported", "unsupported", "not applicable", "n/a",
                             "na", "0", "false", "not included", "without", "-"})
# ... and what it has as often by a key and a yes ("bluetooth_enabled: Yes"): there the key is
# the property, so the pair's value is the key, written as one word ("bluetooth_enabled": its
# words match as a shopper asks, each at its own share, `formula.is_phrase`)
AFFIRMATIVE_VALUES = frozenset({"yes", "true", "supported", "included", "available", "built-in", "built in"})
_PAIR_SEPARATORS = re.compile(r"[|;]")
_MAGENTO_SEPARATORS = re.compile(r"[,|]")
_KEY_SPACES = re.compile(r"\s+")


def spec_pairs(cell: str) -> list[tuple[str, str]]:
    """(key, value) pairs of an `attributes` cell: `key:value` pairs separated by `|` or `;`
    (or Magento's `key=value,key=value`: `_pair_parts`), or a JSON object (`{"brand": "Acme",
    "ports": ["usb", "hdmi"]}`). A list value gives one pair per element; lone words without a
    key, empty and negative values (`NEGATIVE_VALUES`) give none. The key is context only: its
    words never match a query (`Attribute.match_keys`), except where the value only affirms it
    (`AFFIRMATIVE_VALUES`): then the value is the key, as one word, `("Bluetooth Enabled",
    "Bluetooth_Enabled")`."""
    text = cell.strip()
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except ValueError:
            obj = None
        # a nested object's keys are joined by dots ({"dims": {"w": 30}}: dims.w 30), as the
        # JSON records reader names its columns; an object cut short or broken gives its
        # complete "key": value pairs, its tail no attribute
        raw: list[tuple[str, str]] | None = None
        if isinstance(obj, dict):
            raw = list(_json_pairs(obj))
        elif obj is None and '"' in text:  # JSON's quotes: never the key:value form below
            raw = [(key.strip(), (quoted or bare).strip()) for key, quoted, bare in _JSON_PAIR.findall(text)]
        if raw is not None:
            return [(k, _affirmed(k, v)) for k, v in raw if _is_value(k, v)]
    pairs = []
    for key, sep, value in _pair_parts(text):
        key, value = key.strip(), value.strip()
        if sep and _is_value(key, value):
            pairs.append((key, _affirmed(key, value)))
    return pairs


def is_broken_json(cell: str) -> bool:
    """A spec cell that starts as a JSON object and is not one (cut short, a quote missing):
    `spec_pairs` reads its complete pairs alone, and `recsys train` says how many there are."""
    text = cell.strip()
    if not text.startswith("{"):
        return False
    try:
        json.loads(text)
    except ValueError:
        return True
    return False


def _json_pairs(obj: Mapping[str, object], prefix: str = "") -> Iterator[tuple[str, str]]:
    """(key, value) of every scalar in a JSON object, a list's elements one pair each, a nested
    object's keys after its own and a dot."""
    for k, v in obj.items():
        key = prefix + str(k).strip()
        for x in v if isinstance(v, list) else [v]:
            if isinstance(x, Mapping):
                yield from _json_pairs(x, key + ".")
            elif not isinstance(x, list):
                yield key, json_scalar(x)


# a complete "key": "value" (or "key": number / true / false) pair of a JSON object
_JSON_PAIR = re.compile(r'"((?:[^"\\]|\\.)+)"\s*:\s*(?:"((?:[^"\\]|\\.)*)"|(-?[\w.]+))\s*(?=[,}])')


def _pair_parts(text: str) -> list[tuple[str, str, str]]:
    """(key, separator, value) of each part of a spec-list cell: `key:value` parts separated by
    `|` or `;`; in a cell with `=` and no `:`, `key=value` parts separated by `;` (`thread=M8;
    length=40 mm`) or else Magento's `additional_attributes` form:
    `key=value` parts separated by `,`, a key's several values by `|` (`color=Blue,activity=Yoga|Gym`;
    a product's variants' cells joined with `|`, `color=Black,size=XS|color=Blue,size=S`, read alike)."""
    if "=" in text and ":" not in text and ";" in text:
        return [part.partition("=") for part in _PAIR_SEPARATORS.split(text)]
    if "=" in text and ":" not in text:
        parts, key = [], ""
        for part in _MAGENTO_SEPARATORS.split(text):
            if "=" in part:
                key, _, part = part.partition("=")
            parts.append((key, "=" if key else "", part))  # without `=`: the key before's next value
        return parts
    return [part.partition(":") for part in _PAIR_SEPARATORS.split(text)]


def _affirmed(key: str, value: str) -> str:
    """The value of a kept pair: the key, its spaces joined, where the value only says yes to
    it. Not its words as a phrase: a phrase a query covers whole is a full match for each word
    (the mouse's `rechargeable_battery` above the batteries for "rechargeable batteries")."""
    if value.lower() not in AFFIRMATIVE_VALUES:
        return value
    return _KEY_SPACES.sub("_", key.strip())


def spec_list_summary(items: pd.DataFrame, overrides: Mapping[str, str] | None = None) -> dict[str, object] | None:
    """What the spec-list columns (`spec_list_columns`) hold, as `recsys train` reports it: how
    many items have at least one pair (`spec_pairs`), how many distinct keys (lower case) there
    are, the columns, and how many cells are broken JSON objects (`is_broken_json`), when any;
    None without any spec-list column."""
    columns = spec_list_columns(items, overrides or {})
    if not columns:
        return None
    keys: set[str] = set()
    having = np.zeros(len(items), dtype=bool)
    broken = 0
    for column in columns:
        cells = items[column].astype(str).tolist()
        has_pairs: dict[str, bool] = {}
        for cell, n in Counter(cells).items():  # each distinct cell once: spec lists repeat
            pairs = spec_pairs(cell)
            keys.update(k.lower() for k, _ in pairs)
            has_pairs[cell] = bool(pairs)
            broken += n * is_broken_json(cell)
        having |= np.array([has_pairs[cell] for cell in cells], dtype=bool)
    summary: dict[str, object] = {"items": int(having.sum()), "keys": len(keys), "columns": columns}
    if broken:
        summary["broken_json"] = broken
    return summary


# a column no schema maps is read as a spec list when at least this share of its non-empty cells
# (of the first SPEC_SAMPLE) is one: a JSON object, or two or more `key:value` pairs
SPEC_SHARE = 0.9
SPEC_SAMPLE = 2000
_SPEC_KEY = re.compile(r"[^\W\d_][\w\s\-/().&]{0,59}")


@dataclass(frozen=True)
class ColumnKinds:
    """How the items' columns other than the contract's own feed the facets."""

    columns: list[str]  # read a value per cell (`|`-separated; a tags column's commas too)
    # of `columns`: category paths, a value per level, each with how it separates its levels
    # (`path_separators`)
    separators: dict[str, re.Pattern[str]]
    specs: list[str]  # spec lists, a pair per attribute (`spec_list_columns`)
    links: list[str]  # left out (`link_columns`)
    bookkeeping: list[str]  # left out: the shop's own records (`bookkeeping_columns`)
    prose: list[str]  # free text, read as the description's words (`prose_columns`)

    @property
    def paths(self) -> list[str]:
        return list(self.separators)


def column_kinds(items: pd.DataFrame, overrides: Mapping[str, str]) -> ColumnKinds:
    specs = spec_list_columns(items, overrides)
    kept = bookkeeping_columns(items, overrides)
    links = [c for c in link_columns(items, overrides) if c not in kept]
    columns = [c for c in items.columns
               if facet_for_column(c, overrides) is not None and c not in specs and c not in links and c not in kept]
    separators = path_separators(items[columns], overrides)
    prose = prose_columns(items[[c for c in columns if c not in separators]], overrides)
    columns = [c for c in columns if c not in prose]
    return ColumnKinds(columns, separators, specs, links, kept, prose)


# a column whose values run to this many words at the median, of which at least PROSE_DISTINCT
# are distinct, is free text (`prose_columns`)
PROSE_WORDS = 8
PROSE_DISTINCT = 0.5


def prose_columns(items: pd.DataFrame, overrides: Mapping[str, str]) -> list[str]:
    """The facet columns of free text that are not the contract's `description` (a book's
    `synopsis`, a `features` column, Amazon's `bullet_point_1..5`, WooCommerce's `Short
    description`), unless a schema's `[columns]` maps them: their values' median is at least
    PROSE_WORDS words and at least PROSE_DISTINCT of their filled cells differ. Read as one value
    per cell, each was one long phrase attribute: the whole text one unit of the item's length
    against one per title word, its words in no other head's claim, and a word alone in the title
    counted as rarer than it is, since the phrases that say it are other attributes. On known-item
    searches over CrowdFlower with its description named `features` the start was 0.952 of BM25's
    MRR (1.014 as `description`); so such a column is the description's words, as BM25 reads them.
    A column of codes or tags is not free text, however long."""
    out = []
    for column in items.columns:
        key = column.strip().lower()
        if key in overrides or is_code_column(key) or _is_tag_column(key):
            continue
        filled = _filled_sample(items[column])
        if len(filled) < 3 or len(set(filled)) < PROSE_DISTINCT * len(filled):
            continue
        words = [len(value.split()) for cell in filled for value in _split(cell)]
        if words and float(np.median(words)) >= PROSE_WORDS:
            out.append(column)
    return out


def bookkeeping_columns(items: pd.DataFrame, overrides: Mapping[str, str]) -> list[str]:
    """The columns left out because they are the shop's own records (stock, cost, tax, SEO:
    `recsys.io.bookkeeping`), unless a schema's `[columns]` maps them."""
    return [column for column in items.columns
            if column.strip().lower() not in overrides and facet_for_column(column, overrides) is not None
            and is_bookkeeping_column(column)]


def spec_list_columns(items: pd.DataFrame, overrides: Mapping[str, str]) -> list[str]:
    """The columns read as spec lists (`spec_pairs`): `attributes`, and any other column that
    would feed a facet, is not mapped by a schema's `[columns]`, and whose cells are spec lists
    (`SPEC_SHARE`): an export names the column `specs`, `Specifications` or `properties` as
    often as `attributes`, and read as one facet value per cell, each item's whole list was one
    long phrase attribute (a 3,000-item fashion catalogue with a `specs` column of JSON
    objects: 5% below BM25 on its held-out searches, 3% above with the column read as specs).
    A cell of one pair is not enough to tell (`ratio:16:9`, a link's `https://...`)."""
    # `attributes` is the contract's own (an export's `product_attributes` is mapped to it)
    return [column for column in items.columns
            if column == "attributes" or (column.strip().lower() not in overrides
                                          and facet_for_column(column, overrides) is not None
                                          and not is_bookkeeping_column(column)
                                          and _cells_are(items[column], _is_spec_cell))]


def link_columns(items: pd.DataFrame, overrides: Mapping[str, str]) -> list[str]:
    """The columns left out of the attributes because their cells are links (`SPEC_SHARE` of
    the filled ones `http(s)://...` or `www....`, or several such), unless a schema's `[columns]` maps them: an
    export's `image_link` or `Image Src` put `https`, the image host and the file name's words
    on every item, and a shopper's "black" could be explained by a picture's file name."""
    return [column for column in items.columns
            if column.strip().lower() not in overrides and facet_for_column(column, overrides) is not None
            and _cells_are(items[column], _is_links)]


_LINK = re.compile(r"(?:https?://|www\.)\S+", re.I)
_LINK_SEPARATORS = re.compile(r"[\s,|]+")  # WooCommerce lists a product's images with commas


def _is_links(text: str) -> bool:
    return all(_LINK.fullmatch(part) for part in _LINK_SEPARATORS.split(text) if part)


def path_columns(items: pd.DataFrame, overrides: Mapping[str, str]) -> list[str]:
    """The facet columns whose values are category paths (`path_separator`), read as a value per
    level (`path_levels`): Google Merchant's `product_type` and `google_product_category` and a
    shop's breadcrumbs say "Home & Garden > Kitchen > Cookware", and read as one value, a
    shopper's "cookware" was a word of a five-word phrase on every such item, its level not a
    value to filter or count by. A schema maps such a column to a facet as any other; its cells
    are still read a level each."""
    return list(path_separators(items, overrides))


def path_separators(items: pd.DataFrame, overrides: Mapping[str, str]) -> dict[str, re.Pattern[str]]:
    """`path_columns`, each with how it separates its levels (`path_separator`)."""
    found = {column: path_separator(items[column], column) for column in items.columns
             if facet_for_column(column, overrides) is not None}
    return {column: separator for column, separator in found.items() if separator is not None}


# a column is read as category paths when at least this share of its filled cells is one: fewer
# than spec lists' SPEC_SHARE, since a feed files some items under a top level alone
PATH_SHARE = 0.5
_PATH_SEPARATOR = re.compile(r"\s*[>›»]\s*")
# a slash separates levels too (Wayfair's "Furniture / Living Room Furniture / Chairs & Seating",
# Magento's "Default Category/Gear/Bags", several paths joined by a bare comma), but also the
# parts of one value ("Black/White", "S/M", "Indoor/Outdoor"): a column is read as slash paths
# only when most of its cells have three levels or more, or two in a column named for categories
SLASH_SEPARATOR = re.compile(r"\s*/\s*|,(?=\S)")
_CATEGORY_NAME = re.compile(r"categor|breadcrumb|taxonomy|hierarch|producttype|department|path")


def path_separator(cells: pd.Series, column: str) -> re.Pattern[str] | None:
    """How the column's cells separate a category path's levels (`A > B > C`, also with `›` or
    `»`; else a slash, `SLASH_SEPARATOR`), or None when `PATH_SHARE` of its filled cells are no
    paths."""
    if _cells_are(cells, _is_path_cell, PATH_SHARE):
        return _PATH_SEPARATOR
    levels = 2 if _CATEGORY_NAME.search(normalized(column)) else 3
    if _cells_are(cells, lambda text: _path_parts(text, SLASH_SEPARATOR) >= levels, PATH_SHARE):
        return SLASH_SEPARATOR
    return None


def _path_parts(text: str, separator: re.Pattern[str]) -> int:
    """How many levels `text` has by `separator`; 0 when one is empty (not "> 10", "<5 kg", "->")."""
    parts = separator.split(text)
    return len(parts) if all(p.strip() for p in parts) else 0


def _is_path_cell(text: str) -> bool:
    return _path_parts(text, _PATH_SEPARATOR) >= 2


def path_tops(cells: pd.Series, separator: re.Pattern[str]) -> set[str]:
    """The top levels of a column's paths (lower case): what starts a cell."""
    return {separator.split(cell, maxsplit=1)[0].strip().lower() for cell in cells.unique().tolist()}


def joined_paths(value: str, separator: re.Pattern[str], tops: set[str]) -> list[str]:
    """The paths of a value that joins several with ", " (WooCommerce's "Clothing > Hoodies,
    Music"): it is split where what follows the comma starts with a top level of the column's
    paths (`path_tops`: "music" starts a cell elsewhere), so that a level with a comma of its
    own ("Food, Beverages & Tobacco > Beverages", Google's taxonomy) stays whole."""
    parts = value.split(", ")
    paths = [parts[0]]
    for part in parts[1:]:
        if separator.split(part, maxsplit=1)[0].strip().lower() in tops:
            paths.append(part)
        else:
            paths[-1] += ", " + part
    return paths


def path_levels(value: str, separator: re.Pattern[str] = _PATH_SEPARATOR) -> list[str]:
    """A category path's levels, each once, from the top: "apparel > watches > watches" gives
    apparel, watches."""
    return list(dict.fromkeys(p.strip() for p in separator.split(value) if p.strip()))


def _cells_are(cells: pd.Series, test: Callable[[str], object], share: float = SPEC_SHARE) -> bool:
    """Whether `share` of the column's filled cells (of the first SPEC_SAMPLE, at least 3) pass `test`."""
    filled = _filled_sample(cells)
    if len(filled) < 3:
        return False
    return sum(bool(test(c)) for c in filled) >= share * len(filled)


def _filled_sample(cells: pd.Series) -> list[str]:
    """The column's first SPEC_SAMPLE filled cells, stripped."""
    return [c.strip() for c in cells.head(SPEC_SAMPLE * 4).astype(str).tolist()
            if c.strip() and c.strip().lower() not in ("nan", "none", "null")][:SPEC_SAMPLE]


def _is_spec_cell(text: str) -> bool:
    if text.startswith("{"):
        try:
            return isinstance(json.loads(text), dict)
        except ValueError:
            return False
    parts = [p for p in _pair_parts(text) if "".join(p).strip()]
    pairs = 0
    for key, sep, value in parts:
        value = value.strip()
        pairs += bool(sep and _SPEC_KEY.fullmatch(key.strip()) and value and not value.startswith("//"))
    # two pairs at least, and most parts pairs (`sizes:S;M` has a value's second part)
    return pairs >= 2 and 2 * pairs >= len(parts)


def _is_value(key: str, value: str) -> bool:
    """A stripped pair that says something: a key, and a value that is not a negative one."""
    return bool(key) and bool(value) and value.lower() not in NEGATIVE_VALUES


def _content_words(text: str) -> list[tuple[str, str]]:
    """(word, match key) of each word of `text` that is not a stop word, in order."""
    return [(w, match_key(w)) for w in words(text) if w not in STOPWORDS]


def _split(cell: str, separators: str = MULTI_VALUE_SEPARATOR) -> list[str]:
    """A cell's values (lower case), split at any of `separators` that no backslash escapes
    (WooCommerce writes a comma inside a category's or a tag's name as `\\,`)."""
    return [v.lower() for v in _split_written(cell, separators)]


def _split_written(cell: str, separators: str = MULTI_VALUE_SEPARATOR) -> list[str]:
    """`_split` with each value as the cell writes it ("Núñez & Hijos")."""
    between = f"[{re.escape(separators)}]"
    if "\\" not in cell:  # nothing escaped, as in nearly every cell
        return [v.strip() for v in re.split(between, cell) if v.strip()]
    parts = (re.sub(f"\\\\({between})", r"\1", v).strip() for v in re.split(f"(?<!\\\\){between}", cell))
    return [v for v in parts if v]


# a tags column (Shopify's and WooCommerce's `Tags`, a `keywords` column) lists its values with
# commas ("summer, cotton, casual"): each is a value of its own, as `|` separates them elsewhere
# (a brand "Smith, Jones & Co" in any other column stays one value)
_TAG_COLUMNS = frozenset({"tags", "tag", "producttags", "keywords", "searchkeywords",
                          "categories"})  # WooCommerce's: "Kitchen > Cookware, Sale", a comma in a name `\,`
_TAG_SEPARATORS = ",|"
# a category path column's several paths: `|`, or `;` as BigCommerce joins them ("Shop
# All/Camping/Tents;Shop All/Sale")
_PATH_LIST_SEPARATORS = "|;"


def _is_tag_column(name: str) -> bool:
    return normalized(name) in _TAG_COLUMNS


# a comma between two letters: "vegan, gluten-free" (not "1,5 l", not "1,299")
_LIST_COMMA = re.compile(r"[^\W\d_]\s*,\s*[^\W\d_]")
_LIST_SAMPLE = 2000  # distinct cells read to tell a column of lists
_LIST_PART_WORDS = 3  # a listed value has at most this many words


def _comma_lists(cells: pd.Series) -> bool:
    """Whether a column of any name lists its values with commas, as a tags column does: a fifth
    of its distinct cells or more hold a comma between words, nearly all of those split into
    short values (`_LIST_PART_WORDS`), and the values recur across cells ("vegan, gluten-free",
    "vegan, organic"). A dietary column read whole offered a "vegan" filter 35 of its 189 vegan
    products; a brand "Smith, Jones & Co" (its parts said by no other cell) stays one value."""
    distinct = [c for c in dict.fromkeys(cells.tolist()) if c][:_LIST_SAMPLE]
    listed = [c for c in distinct if _LIST_COMMA.search(c)]
    if not listed or len(listed) < 0.2 * len(distinct):
        return False
    parts = [[p.strip() for p in c.split(",")] for c in listed]
    short = sum(all(p and len(p.split()) <= _LIST_PART_WORDS for p in ps) for ps in parts)
    if short < 0.9 * len(listed):
        return False
    seen = Counter(p.lower() for ps in parts for p in set(ps))
    for c in distinct:  # a value said alone in a cell of its own recurs too
        if c.strip().lower() in seen and not _LIST_COMMA.search(c):
            seen[c.strip().lower()] += 1
    return sum(n > 1 for n in seen.values()) * 2 >= len(seen)


