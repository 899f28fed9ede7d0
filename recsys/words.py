"""The word table: every word key the model has an id for, and how words become features.

Query words and attribute words share one table so that evidence (exact match, click
association) can be looked up by integer ids. Words never seen get no id (-1) but still get an
embedding, from hashed buckets of the word and its character n-grams.
"""

from __future__ import annotations

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


def query_tokens(query: str, vocabulary: Container[str] = frozenset()) -> list[QueryToken]:
    """Distinct words of a query that are not stop words, in order, then each pair of adjacent
    words that `vocabulary` (match keys, the catalogue's) has as one word ("shower head" also
    reads "showerhead", "door bell" "doorbell", "rtx 4090" "rtx4090"): at most MAX_QUERY_TOKENS
    in all. Shoppers split words that a catalogue writes together as often as the other way round
    (the other way is a near match, `spelling.NearWords.related`); a pair that begins with a
    number is a size ("4 8"), not a word. A name and a number are read as one only where the
    catalogue lacks one of them alone: where it writes "iPhone 5" too, the few items that
    write "iPhone5" (often a seller's keyword list) would gain a rare word's weight over them."""
    seen: set[str] = set()
    out: list[QueryToken] = []
    typed = words(query)
    for w in typed:
        if w in STOPWORDS:
            continue
        k = match_key(w)
        if k not in seen:
            seen.add(k)
            out.append(QueryToken(w, k))
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
