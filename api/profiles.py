"""Shoppers' profiles as this process serves them: built from the store's events
(`recsys.profile.build_profile`), kept a few seconds, dropped everywhere when a shopper is forgotten.

A profile is read from the store at most once per shopper (and served version) per
RECSYS_PROFILE_TTL_S, not per request: a shopper paging or refining a search is answered from
memory. The cache is keyed by user id and version and bounded (RECSYS_PROFILE_USERS, the least
recently used dropped first), so one shopper's history is never another's answer.

Forgetting a shopper (`DELETE /admin/users/{user_id}`) deletes their events and writes a row to
`forgotten_shoppers`; the process that did it drops the profile at once, and every other process
sharing the store drops all its profiles at its next poll (`PointerWatcher` followers, every
RECSYS_WATCH_INTERVAL_S) when the newest row's id has changed. A profile being built while that
happens is not kept (`_generation`): it may have read the events before they were deleted.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from datetime import UTC, datetime

from recsys.profile import HistoryEvent, Profile, build_profile
from recsys.recommender import Recommender
from store.db import Database, unavailable
from store.shoppers import forget_shopper, last_forgotten, shopper_events

NO_STORE = "the store is unavailable: this answer is not personalised"
OFF = "personalize is false: this answer is not personalised"


class Profiles:
    def __init__(self, db: Database, ttl_s: float, capacity: int, max_events: int):
        self.db, self.ttl_s, self.capacity, self.max_events = db, ttl_s, capacity, max_events
        self._cache: OrderedDict[tuple[str, str], tuple[float, Profile]] = OrderedDict()
        self._lock = threading.Lock()
        self._generation = 0  # counts droppings: a build that saw another one is not cached
        self._forgotten: int | None = None  # the newest forgetting seen; None before the first poll

    async def profile(self, user_id: str, rec: Recommender) -> Profile:
        """`user_id`'s profile over `rec`'s catalogue: from memory if fresh, else built from the
        store in a thread; empty with a note when the store cannot be read."""
        cached = self.cached(user_id, rec)
        if cached is not None:
            return cached
        try:
            return await asyncio.to_thread(self.build, user_id, rec)
        except Exception as exc:
            if not unavailable(exc):
                raise
            return Profile([], {}, {}, 0, NO_STORE)

    def cached(self, user_id: str, rec: Recommender) -> Profile | None:
        key = (user_id, rec.version)
        with self._lock:
            hit = self._cache.get(key)
            if hit is None or hit[0] <= time.monotonic():
                return None
            self._cache.move_to_end(key)
            return hit[1]

    def build(self, user_id: str, rec: Recommender) -> Profile:
        """Read `user_id`'s newest events and build the profile (cached unless a shopper was
        forgotten meanwhile)."""
        generation = self._generation
        now = datetime.now(UTC).replace(tzinfo=None)  # naive UTC, as stored
        catalog = rec.catalog
        history = [HistoryEvent(catalog.idx(e.item_id), e.type, (now - e.timestamp).total_seconds() / 86_400,
                                e.query, e.request_id or "", e.position)
                   for e in shopper_events(self.db, user_id, self.max_events) if catalog.has(e.item_id)]
        profile = build_profile(catalog, history, rec.featurizer.attribute_df, rec.matched_attributes)
        with self._lock:
            if generation == self._generation and self.ttl_s > 0:
                self._cache[(user_id, rec.version)] = (time.monotonic() + self.ttl_s, profile)
                while len(self._cache) > self.capacity:
                    self._cache.popitem(last=False)
        return profile

    def forget(self, user_id: str) -> int:
        """Delete `user_id`'s events from the store and their profiles from this process; the
        others follow at their next poll. Returns the events deleted."""
        deleted = forget_shopper(self.db, user_id)
        with self._lock:
            self._generation += 1
            for key in [k for k in self._cache if k[0] == user_id]:
                del self._cache[key]
        return deleted

    def follow(self) -> None:
        """One poll (a `PointerWatcher` follower): drop every profile when a shopper has been
        forgotten through any process since the last poll."""
        newest = last_forgotten(self.db)
        with self._lock:
            # the first poll drops too: a shopper may have been forgotten while this process started
            if newest != self._forgotten:
                self._generation += 1
                self._cache.clear()
            self._forgotten = newest

    def __len__(self) -> int:
        return len(self._cache)


def history_out(profile: Profile | None, used: list[str]) -> dict | None:
    """The answer's `history` (`schemas.HistoryOut`): the profile asked for (None: no user_id;
    empty with a note: no history, personalize false, the store down), `used` the words of it
    that were ranked (`Recommendation.history`)."""
    if profile is None:
        return None
    note = "" if used else profile.note or "the query says every word of the shopper's history already"
    return {"personalized": bool(used), "words": used,
            "weights": {w: profile.weights[w] for w in used},
            "drawn_by": {w: profile.drawn_by[w] for w in used}, "events": profile.events, "note": note}
