"""Completions of what a shopper is typing (issue 31, suggestions): logged searches first, then the
catalogue's own words and values, by popularity, with one typo forgiven.

Two sources, each a sorted list searched by prefix (`bisect`):
- **searches** shoppers made (`queries`: text -> how many distinct shoppers made it). Only a
  search at least `MIN_SHOPPERS` shoppers made is ever suggested: one shopper's words are never
  shown to another. Completed as a whole: "red d" -> "red dress".
- **catalogue terms**: every content word of the items' texts and every attribute value of
  several words ("navy blue"), by how many items say it. A value completes the whole text
  ("navy bl" -> "navy blue"); a word completes the last word typed, the words before it kept
  ("linen dre" -> "linen dress").

Then, while fewer than asked were found, searches and values with a later word that the text
begins, whole ("cama" -> "ropa de cama", "de cama" too; never from a stop word alone).
When the last word begins no term of the catalogue and fewer than asked were found, it is taken
as a typo of one edit (a letter dropped, added, changed or two swapped) and its completions
follow, below the exact ones ("dersses" finds "dresses"). A prefix's completions are a range of
the sorted terms, its most counted read off a table of range maxima: a few look-ups however long
the range.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from .catalog import Catalog
from .facets import DESCRIPTION
from .io.headers import is_code_column
from .lru import WordCache
from .tokenize import STOPWORDS, fold, surface_words, words

MIN_SHOPPERS = 2  # a logged search is suggested once this many distinct shoppers made it
MIN_TYPO_CHARS = 3  # a shorter last word is not taken as a typo: too many words are one edit away
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
TYPO_MEMO = 4096  # last words whose typo prefixes are kept, per catalogue's terms (100 kB or so)


@dataclass(frozen=True)
class Suggestion:
    text: str
    source: str  # "search": shoppers typed it; "catalogue": the catalogue's own words
    count: int  # shoppers who made the search, or items that say the term
    corrected: bool = False  # reached through a one-edit typo of the last word


def _unsaid(key: str) -> bool:
    """Whether a key's values are no words a shopper types: codes, and the bounds of a number
    column's ranges (`#price`: "14 22" of a price bucket offered for "harry potter 1")."""
    return is_code_column(key) or key.startswith("#")


def _unsaid_words(catalog: Catalog) -> tuple[set[str], set[str]]:
    """(the words the catalogue says only inside codes, the words of its number ranges' labels).
    A code's parts (`is_code_column`: a SKU, a GTIN; "wc" and "pdo" of "WC-PDO-000") are no words
    a shopper means: a WooCommerce shop whose every SKU starts "WC-" offered "wc" first for "w"; a
    code's whole value is completed by no term either, typed whole the search finds it. A range's
    bounds ("<2000", "14-22") are in every item's text, and no shopper typed them."""
    in_codes: set[str] = set()
    bounds: set[str] = set()
    elsewhere = {w for title in catalog.titles for w in words(title)}
    for facet in catalog.facets:
        for attr in catalog.vocab[facet]:
            said = words(attr.value)
            (in_codes if is_code_column(attr.key) else bounds if attr.key.startswith("#") else elsewhere).update(said)
    return in_codes - elsewhere, bounds


def normalise(text: str) -> str:
    """Lower case, runs of white space as one space, no leading space (a trailing one kept: it
    says the last word is finished)."""
    lowered = " ".join(text.lower().split())
    return lowered + " " if text[-1:].isspace() and lowered else lowered


class _Prefixes:
    """Sorted (text, count) pairs: the most counted entries starting with a prefix. The entries
    of a prefix are one range of the sorted texts, found by bisection; its most counted are read
    off a sparse table of range maxima (each level holds the argmax of windows of 2^j entries),
    so that a one-letter prefix, whose range is a twentieth of the catalogue's terms, costs n
    look-ups rather than a scan of its range."""

    def __init__(self, counts: Mapping[str, int]):
        self.keys = sorted(counts)
        self.counts = [counts[k] for k in self.keys]
        # ties: the earlier text first, so a count's key is (count, -position)
        order = np.asarray(self.counts, dtype=np.float64) - np.arange(len(self.keys)) / (len(self.keys) + 1.0)
        self._rank = order  # (N,) higher is better, all distinct
        levels = [np.arange(len(self.keys), dtype=np.int32)]
        width = 1
        while 2 * width <= len(self.keys):
            prev = levels[-1]
            left, right = prev[:-width], prev[width:]
            levels.append(np.where(order[left] >= order[right], left, right).astype(np.int32))
            width *= 2
        self._levels = levels
        # last word -> its typo prefixes (`Suggester._typo_prefixes`)
        self.typo_memo: WordCache[list[str]] = WordCache("typo prefixes", TYPO_MEMO)

    def _best(self, lo: int, hi: int) -> int:
        """The index of the best entry in keys[lo:hi] (hi > lo)."""
        j = (hi - lo).bit_length() - 1
        level = self._levels[j]
        a, b = int(level[lo]), int(level[hi - (1 << j)])
        return a if self._rank[a] >= self._rank[b] else b

    def starting(self, prefix: str, n: int) -> list[tuple[str, int]]:
        lo = bisect.bisect_left(self.keys, prefix)
        hi = bisect.bisect_left(self.keys, prefix + "\uffff", lo)
        out: list[tuple[str, int]] = []
        heap: list[tuple[float, int, int, int]] = []  # (-rank, best, lo, hi) of disjoint ranges
        if hi > lo:
            best = self._best(lo, hi)
            heap.append((-self._rank[best], best, lo, hi))
        while heap and len(out) < n:
            _, best, lo, hi = heapq.heappop(heap)
            out.append((self.keys[best], self.counts[best]))
            for a, b in ((lo, best), (best + 1, hi)):
                if b > a:
                    i = self._best(a, b)
                    heapq.heappush(heap, (-self._rank[i], i, a, b))
        return out

    def has_prefix(self, prefix: str) -> bool:
        i = bisect.bisect_left(self.keys, prefix)
        return i < len(self.keys) and self.keys[i].startswith(prefix)


class _Inside:
    """Texts of several words found by a prefix of a later word: "cama" -> "ropa de cama", "de
    cama" too. Each text is kept once under each of its words after the first (stop words
    aside: "de" alone offers nothing), as that word and the rest, then the text itself after a
    NUL (which sorts before every letter, so the key still begins with what was typed)."""

    def __init__(self, counts: Mapping[str, int]):
        inner: dict[str, int] = {}
        for text, count in counts.items():
            parts = text.split(" ")
            for i in range(1, len(parts)):
                if parts[i] and parts[i] not in STOPWORDS:
                    inner[f"{' '.join(parts[i:])}\x00{text}"] = count
        self._prefixes = _Prefixes(inner)

    def starting(self, prefix: str, n: int) -> list[tuple[str, int]]:
        """The most counted texts with a later word (and what follows it) that `prefix` begins."""
        if "\x00" in prefix:
            return []
        return [(key.split("\x00", 1)[1], count) for key, count in self._prefixes.starting(prefix, n)]


class Suggester:
    """Completions over the catalogue's terms (term -> items) and logged searches (text ->
    distinct shoppers); see the module's docstring."""

    def __init__(self, terms: Mapping[str, int], searches: Mapping[str, int] | None = None,
                 written: Mapping[str, str] | None = None):
        """`terms`: accent-folded term -> items; `written`: such a term -> how the catalogue
        writes it ("kuchenwaage" -> "küchenwaage"), where it has accents. Prefixes are looked up
        accents aside, as words match: "kü" and "ku" both complete "küche"."""
        folded = {fold(normalise(t)): c for t, c in terms.items() if normalise(t).strip()}
        self.terms = _Prefixes(folded)
        self.terms_inside = _Inside(folded)  # a term of one word has no later word
        self.written = dict(written or {})
        shared: dict[str, int] = {}
        for text, shoppers in (searches or {}).items():
            shown = normalise(text).strip()
            key = fold(shown)
            if key and shoppers >= MIN_SHOPPERS:
                if shoppers > shared.get(key, 0):
                    self.written[key] = shown  # the search as its most shoppers wrote it
                shared[key] = max(shared.get(key, 0), int(shoppers))
        self.searches = _Prefixes(shared)
        self.searches_inside = _Inside(shared)

    def with_searches(self, searches: Mapping[str, int]) -> Suggester:
        """The same catalogue terms (shared, not rebuilt) with other logged searches."""
        other = Suggester({}, searches, self.written)
        other.terms, other.terms_inside = self.terms, self.terms_inside
        return other

    @classmethod
    def from_catalog(cls, catalog: Catalog, searches: Mapping[str, int] | None = None) -> Suggester:
        """Terms of `catalog`: each content word of an item's text (title, description, values)
        counted once per item, and each attribute value of several words by the items that have
        it."""
        counts: dict[str, int] = {}
        unsaid, bounds = _unsaid_words(catalog)
        written: dict[str, dict[str, int]] = {}  # folded word -> its accented forms, counted
        # a range's bound counts where the item's title or description says it
        said = catalog.titles if catalog.descriptions is None else [
            f"{t} {d}" for t, d in zip(catalog.titles, catalog.descriptions)]
        for text, own in zip(catalog.texts, said):
            found = {w for w in words(text) if w not in STOPWORDS and w not in unsaid}
            if not found.isdisjoint(bounds):
                found -= bounds - set(words(own))
            for w in found:
                counts[w] = counts.get(w, 0) + 1
            if not text.isascii():
                for w in surface_words(text):
                    if not w.isascii():
                        forms = written.setdefault(fold(w), {})
                        forms[w] = forms.get(w, 0) + 1
        for facet in catalog.facets:
            for attr, items in zip(catalog.vocab[facet], catalog.items_per_attribute(facet).tolist()):
                value = " ".join(words(attr.value))
                if attr.key != DESCRIPTION and " " in value and items and not _unsaid(attr.key):
                    counts[value] = counts.get(value, 0) + items
        # a word is shown as most items write it; a folded word no item writes otherwise as it is
        shown = {w: max(forms, key=lambda f: (forms[f], f)) for w, forms in written.items()}
        for value in [v for v in counts if " " in v]:
            parts = [shown.get(w, w) for w in value.split(" ")]
            if any(p != w for p, w in zip(parts, value.split(" "))):
                shown[value] = " ".join(parts)
        return cls(counts, searches, shown)

    def suggest(self, typed: str, n: int = 8) -> list[Suggestion]:
        """At most `n` completions of `typed`, best first: searches, then catalogue terms, then
        the same through a typo of the last word."""
        typed_text = normalise(typed)
        text = fold(typed_text)  # looked up accents aside; the words before the last shown as typed
        if not text.strip() or n <= 0:
            return []
        out: dict[str, Suggestion] = {}
        said = self.written.get

        def add(found: Iterable[Suggestion]) -> None:
            for s in found:
                if len(out) < n and fold(s.text) != text.strip():
                    out.setdefault(fold(s.text), s)

        add(Suggestion(said(t, t), "search", c) for t, c in self.searches.starting(text, n))
        head, last = (text, "") if text.endswith(" ") else _split_last(text)
        shown_head = typed_text if text.endswith(" ") else _split_last(typed_text)[0]
        if len(shown_head) != len(head):  # a letter that folds into two: the head as folded
            shown_head = head
        if head:  # a value of several words that the text begins: "navy bl" -> "navy blue"
            add(Suggestion(said(t, t), "catalogue", c) for t, c in self.terms.starting(text, n))
        if last:
            add(Suggestion(shown_head + said(t, t), "catalogue", c) for t, c in self.terms.starting(last, n))
        if len(out) < n:  # a search or value with a later word the text begins: "cama" -> "ropa de cama"
            add(Suggestion(said(t, t), "search", c) for t, c in self.searches_inside.starting(text, n))
            add(Suggestion(said(t, t), "catalogue", c) for t, c in self.terms_inside.starting(text, n))
        if len(out) < n and len(last) >= MIN_TYPO_CHARS and not self.terms.has_prefix(last):
            near = [(t, c) for v in self._typo_prefixes(last) for t, c in self.terms.starting(v, n)]
            near.sort(key=lambda p: (-p[1], p[0]))
            add(Suggestion(shown_head + said(t, t), "catalogue", c, corrected=True) for t, c in near)
        return list(out.values())

    def _typo_prefixes(self, last: str) -> list[str]:
        """Prefixes one edit from `last` that some term starts with: about 60 bisections per
        letter of it (0.3-0.5 ms at 100k items), kept per word (the terms' `typo_memo`), as a
        misspelling, like any word, comes back."""
        found = self.terms.typo_memo.get(last)
        if found is None:
            found = self._typo_prefixes_of(last)
            self.terms.typo_memo.put(last, found)
        return found

    def _typo_prefixes_of(self, last: str) -> list[str]:
        # the first letter is kept (but for a swap with the second): shoppers rarely mistype the
        # letter a word starts with, and without it the rest is another word's start ("cama",
        # bed, offered "amarillo", yellow)
        edits = {last[:i] + last[i + 1:] for i in range(1, len(last))}
        edits |= {last[:i] + last[i + 1] + last[i] + last[i + 2:] for i in range(len(last) - 1)}
        for i in range(1, len(last) + 1):
            for c in _ALPHABET:
                edits.add(last[:i] + c + last[i:])
                if i < len(last):
                    edits.add(last[:i] + c + last[i + 1:])
        edits.discard(last)
        return sorted(e for e in edits if len(e) >= 2 and self.terms.has_prefix(e))


def _split_last(text: str) -> tuple[str, str]:
    """("red ", "dre") of "red dre": the words before the last (with their space) and the last."""
    cut = text.rfind(" ")
    return text[: cut + 1], text[cut + 1:]
