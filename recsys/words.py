"""The word table: every word key the model has an id for, and how words become features.

Query words and attribute words share one table so that evidence (exact match, click
association) can be looked up by integer ids. Words never seen get no id (-1) but still get an
embedding, from hashed buckets of the word and its character n-grams.
"""

from __future__ import annotations

import string
import zlib
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, NamedTuple

import numpy as np

from .tokenize import STOPWORDS, match_key, words

NGRAM_SLOTS = 16  # character n-grams kept per word; longer words keep their first ones
MAX_QUERY_TOKENS = 16


def _stable_hash(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def ngrams(key: str, sizes: tuple[int, ...] = (3, 4)) -> list[str]:
    padded = f"<{key}>"
    return [padded[i : i + n] for n in sizes for i in range(len(padded) - n + 1)]


UNSEEN_WORD_BUCKET = 0  # the shared word vector of query words no training query had


def hashed_features(key: str, word_buckets: int, ngram_buckets: int,
                    seen: bool = True) -> tuple[int, np.ndarray]:
    """(word bucket, ngram buckets padded with 0); bucket 0 of the n-gram table is padding.

    A word no training query had (`seen=False`) gets the shared unseen-word bucket: its own
    vector was never trained, and training drops words to that bucket now and then, so the heads
    learn to match such words on their evidence (exact, near spelling) and n-grams."""
    grams = ngrams(key)[:NGRAM_SLOTS]
    ids = np.zeros(NGRAM_SLOTS, dtype=np.int64)
    ids[: len(grams)] = [1 + _stable_hash(g) % (ngram_buckets - 1) for g in grams]
    bucket = 1 + _stable_hash(key) % (word_buckets - 1) if seen else UNSEEN_WORD_BUCKET
    return bucket, ids


class QueryToken(NamedTuple):  # a tuple: every query makes a few, and tuples are cheap
    surface: str  # as typed (lower-cased), what explanations show
    key: str  # match key (stem)
    # the shop's synonyms of the word (`synonyms.SynonymUse`, `SynonymBook.tokens`): () for most
    synonyms: tuple[Any, ...] = ()

    @property
    def cache_key(self) -> str:
        """What the per-word caches keep the word's rows under: its key, and with synonyms what
        they make it count as (the rows differ, the word is the same)."""
        if not self.synonyms:
            return self.key
        return self.key + "\x1f" + repr([(u.name, u.phrases) for u in self.synonyms])


MIN_PART = 3  # the shortest part a run-together word is split into ("a", "on" split anything)
MAX_PIECES = 3  # a code's pieces at most: more is an id, not a model's name and number


def _letter_digit_bounds(word: str) -> list[int]:
    """The positions in `word` where letters turn to digits or digits to letters, with its ends."""
    inner = [i for i in range(1, len(word)) if word[i - 1].isdigit() != word[i].isdigit()]
    return [0, *inner, len(word)]


def _as_known(piece: str, vocabulary: Container[str]) -> str:
    """`piece` as `vocabulary` has it, as written or as its match key; "" when it has neither,
    or the piece is a stop word."""
    for form in (piece, match_key(piece)):
        if form in vocabulary and form not in STOPWORDS:
            return form
    return ""


def code_pieces(word: str, vocabulary: Container[str]) -> tuple[tuple[str, str], ...]:
    """A model's name run into its number, or a code typed without its hyphens, that
    `vocabulary` (match keys) lacks: its pieces (as typed, as the vocabulary has it), the fewest
    known words, two or three, cut where its letters turn to digits or back ("iphone15":
    "iphone", "15"; "rtx4090"; "wh1000xm4": "wh", "1000", "xm4", where the catalogue writes
    "WH-1000XM4"), or a name of at least MIN_PART of its first letters and the rest
    ("galaxys23": "galaxy", "s23"). () for a word without digits, one the vocabulary has, or
    one it cannot cut so: a size or a code ("door12" where the catalogue lacks "12").
    Elasticsearch's `word_delimiter_graph` cuts at the same bounds."""
    if not any(c.isdigit() for c in word) or _as_known(word, vocabulary):
        return ()
    bounds = _letter_digit_bounds(word)
    best: dict[int, tuple[tuple[str, str], ...]] = {0: ()}  # bound -> the fewest pieces up to it
    for j in bounds[1:]:
        for i in bounds:
            if i >= j or i not in best:  # (the whole word is not known: checked above)
                continue
            known = _as_known(word[i:j], vocabulary)
            if known and (j not in best or len(best[i]) + 1 < len(best[j])):
                best[j] = (*best[i], (word[i:j], known))
    cut = best.get(len(word), ())
    named: tuple[tuple[str, str], ...] = ()
    letters = len(word) - len(word.lstrip(string.ascii_lowercase))  # the name's letters at most
    for i in range(MIN_PART, letters + 1):  # the shortest name, so that the number keeps its letters
        name, rest = word[:i], word[i:]
        known = _as_known(name, vocabulary) if rest in vocabulary else ""
        if known:
            named = (name, known), (rest, rest)
            break
    # of two cuts into as many pieces, the one whose number keeps its letters: "s23" names the
    # model, where "23" alone is any number and "galaxys" only a stem's match
    found = [c for c in (cut, named) if 2 <= len(c) <= MAX_PIECES]
    return min(found, key=lambda c: (len(c), -len(c[-1][0]))) if found else ()


def query_tokens(query: str, vocabulary: Container[str] = frozenset(), keep: Container[str] = frozenset()
                 ) -> list[QueryToken]:
    """Distinct words of a query that are not stop words, in order, then each pair of adjacent
    words that `vocabulary` (match keys, the catalogue's) has as one word ("shower head" also
    reads "showerhead", "door bell" "doorbell", "rtx 4090" "rtx4090"): at most MAX_QUERY_TOKENS
    in all. Shoppers split words that a catalogue writes together as often as the other way round
    (the other way is a near match, `spelling.NearWords.related`); a pair that begins with a
    number is a size ("4 8"), not a word. A name and a number are read as one only where the
    catalogue lacks one of them alone: where it writes "iPhone 5" too, the few items that
    write "iPhone5" (often a seller's keyword list) would gain a rare word's weight over them.
    The other way round, a name and number the catalogue does not write as one are its pieces
    (`code_pieces`): "iphone15 case" is read as "iphone 15 case" is, unless `keep` (match keys:
    the words a shop's synonyms name) has the word, whose rule then reads it whole."""
    seen: set[str] = set()
    out: list[QueryToken] = []
    typed = words(query)
    for w in typed:
        if w in STOPWORDS:
            continue
        whole = ((w, match_key(w)),)
        for surface, k in (whole if whole[0][1] in keep else code_pieces(w, vocabulary) or whole):
            if k not in seen:
                seen.add(k)
                out.append(QueryToken(surface, k))
    if vocabulary:
        for a, b in pairwise(typed):
            if a in STOPWORDS or b in STOPWORDS or not (a.isalpha() and b.isalnum()):
                continue
            if not b.isalpha() and match_key(a) in vocabulary and match_key(b) in vocabulary:
                continue  # a name and a number the catalogue also writes apart ("iphone 5")
            k = match_key(a + b)
            if k not in seen and k in vocabulary:
                seen.add(k)
                out.append(QueryToken(a + b, k))
    return out[:MAX_QUERY_TOKENS]


def without_joined_parts(tokens: list[QueryToken], unmatched: list[str]) -> list[str]:
    """`unmatched` (surfaces of `tokens`) less the two words of each adjacent pair that
    `query_tokens` also read as one and that one matches: "rtx" and "4090" of "rtx 4090" where
    the catalogue writes "RTX4090" are found, as the shopper meant them."""
    if not unmatched:
        return unmatched
    matched = {t.surface for t in tokens} - set(unmatched)
    found = {w for a, b in pairwise(tokens) if a.surface + b.surface in matched for w in (a.surface, b.surface)}
    return [w for w in unmatched if w not in found]


@dataclass
class WordTable:
    keys: list[str]
    query_words: frozenset[str] = frozenset()  # words that training queries had
    _ids: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._ids = {k: i for i, k in enumerate(self.keys)}

    @classmethod
    def from_keys(cls, keys: Iterable[str], query_words: Iterable[str] = ()) -> WordTable:
        query_words = frozenset(query_words)
        return cls(sorted(set(keys) | query_words), query_words)

    def seen_in_queries(self, key: str) -> bool:
        return key in self.query_words

    def to_json(self) -> dict[str, Any]:
        return {"keys": self.keys, "query_words": sorted(self.query_words)}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> WordTable:
        return cls(list(obj["keys"]), frozenset(obj["query_words"]))

    def __len__(self) -> int:
        return len(self.keys)

    def id(self, key: str) -> int:
        return self._ids.get(key, -1)

    def ids(self, keys: Iterable[str]) -> np.ndarray:
        return np.array([self._ids.get(k, -1) for k in keys], dtype=np.int64)
