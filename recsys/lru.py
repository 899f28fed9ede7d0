"""A bounded cache, the least recently used key dropped first: per query word in the index, per
item for the catalogue's labels."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")  # what a WordCache holds per key


class WordCache(Generic[V]):
    """What is computed per key (a query word, mostly), at most `capacity` keys, the least
    recently used dropped first (a dict keeps insertion order: a hit moves its key to the end).
    Safe to share between threads: a race at worst drops a key or computes it twice. `name` says
    what it holds (its owner's attribute: `QueryTables.word_rows`, `ScoringIndex.word_parts`,
    `Catalog`'s item labels)."""

    def __init__(self, name: str, capacity: int):
        self.name, self.capacity = name, capacity
        self._rows: dict[Hashable, V] = {}

    def __repr__(self) -> str:
        return f"WordCache({self.name!r}: {len(self._rows)} of {self.capacity} words)"

    def get(self, key: Hashable) -> V | None:
        rows = self._rows.pop(key, None)
        if rows is not None:
            self._rows[key] = rows
        return rows

    def put(self, key: Hashable, rows: V) -> None:
        self._rows[key] = rows
        while len(self._rows) > self.capacity:
            try:
                self._rows.pop(next(iter(self._rows)), None)
            except (StopIteration, RuntimeError):  # emptied or changed by another thread
                break

    def clear(self) -> None:
        self._rows.clear()

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._rows
