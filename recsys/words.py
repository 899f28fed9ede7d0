"""The word table: every word key the model has an id for, and how words become features.

Query words and attribute words share one table so that evidence (exact match, click
association) can be looked up by integer ids. Words never seen get no id (-1) but still get an
embedding, from hashed buckets of the word and its character n-grams.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from .tokenize import match_key, words

NGRAM_SLOTS = 16  # character n-grams kept per word; longer words keep their first ones
MAX_QUERY_TOKENS = 16


def _stable_hash(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def ngrams(key: str, sizes: tuple[int, ...] = (3, 4)) -> list[str]:
    padded = f"<{key}>"
    return [padded[i : i + n] for n in sizes for i in range(len(padded) - n + 1)]


def hashed_features(key: str, word_buckets: int, ngram_buckets: int) -> tuple[int, np.ndarray]:
    """(word bucket, ngram buckets padded with 0); bucket 0 of the n-gram table is padding."""
    grams = ngrams(key)[:NGRAM_SLOTS]
    ids = np.zeros(NGRAM_SLOTS, dtype=np.int64)
    ids[: len(grams)] = [1 + _stable_hash(g) % (ngram_buckets - 1) for g in grams]
    return _stable_hash(key) % word_buckets, ids


@dataclass(frozen=True)
class QueryToken:
    surface: str  # as typed (lower-cased), what explanations show
    key: str  # match key (stem)


def query_tokens(query: str) -> list[QueryToken]:
    """Distinct words of a query, in order, at most MAX_QUERY_TOKENS."""
    seen: set[str] = set()
    out: list[QueryToken] = []
    for w in words(query):
        k = match_key(w)
        if k not in seen:
            seen.add(k)
            out.append(QueryToken(w, k))
    return out[:MAX_QUERY_TOKENS]


@dataclass
class WordTable:
    keys: list[str]
    _ids: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._ids = {k: i for i, k in enumerate(self.keys)}

    @classmethod
    def from_keys(cls, keys: Iterable[str]) -> WordTable:
        return cls(sorted(set(keys)))

    def __len__(self) -> int:
        return len(self.keys)

    def id(self, key: str) -> int:
        return self._ids.get(key, -1)

    def ids(self, keys: Iterable[str]) -> np.ndarray:
        return np.array([self._ids.get(k, -1) for k in keys], dtype=np.int64)
