"""The merchandising rules as this process serves them: the store's, followed within a poll.

The rules live in the store (`store.rules`). The process that changes them reads them back at
once; every other process sharing the store (workers, replicas) compares the store's rules
revision (the newest change's id) with its own at each poll (`PointerWatcher` followers, every
RECSYS_WATCH_INTERVAL_S, 0.5 s by default) and reads them all when it differs. No model is
retrained or reloaded: a rule acts on the scores at request time (`recsys.rules`).
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime

from recsys.recommender import Recommender
from recsys.rules import Adjustments, RuleBook
from store.db import Database
from store.rules import list_rules, rule_from_json, rule_json, rules_revision

from .served_versions import ServedVersions
from .store_snapshot import StoreSnapshot

log = logging.getLogger("recsys.api.rules")


def utc_now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)  # naive UTC, as stored


class ServedRules:
    kind = "rules"  # what they are called in the store's snapshot and in lines that name them

    def __init__(self, db: Database, versions: ServedVersions | None = None,
                 snapshot: StoreSnapshot | None = None):
        """`snapshot`: where the rules read are kept for a process that starts with the store
        unavailable (`restore`)."""
        self.db, self.versions, self.snapshot = db, versions, snapshot
        self.book = RuleBook()
        self._lock = threading.Lock()  # one read of the store at a time in this process

    def follow(self, force: bool = False) -> None:
        """Read the rules when the store's revision is not this process's (or `force`)."""
        with self._lock:
            if not force and rules_revision(self.db) == self.book.revision:
                return
            revision, stored = list_rules(self.db)
            if revision != self.book.revision or force:
                self._use(RuleBook([s.item for s in stored], revision))
                log.info("rules followed", extra={"revision": revision, "rules": len(stored)})
                if self.snapshot is not None:
                    self.snapshot.save(self.kind, revision, [rule_json(s.item) for s in stored])

    def restore(self) -> int | None:
        """Serve the rules the last process to read the store kept (the store unavailable at
        start); how many, None when none were kept. The store's revision differs from theirs
        once it answers, if a rule changed meanwhile, and `follow` reads them then."""
        held = self.snapshot.restore(self.kind, rule_from_json) if self.snapshot is not None else None
        if held is None:
            return None
        revision, kept = held
        with self._lock:
            self._use(RuleBook(kept, revision))
        return len(kept)

    def _use(self, book: RuleBook) -> None:
        current = self.versions.current if self.versions is not None else None
        if current is not None:  # the items each rule acts on, found here, not in a request
            book.items(current.catalog)
        self.book = book

    def for_query(self, query: str, rec: Recommender) -> Adjustments | None:
        """The rules that act on this query's answer from `rec` now; None when none does."""
        book = self.book
        if not book:  # most shops, most of the time: no clock read on every request
            return None
        return book.for_query(query, rec.catalog, utc_now())
