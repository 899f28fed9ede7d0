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
from store.rules import list_rules, rules_revision

from .served_versions import ServedVersions

log = logging.getLogger("recsys.api.rules")


def utc_now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)  # naive UTC, as stored


class ServedRules:
    def __init__(self, db: Database, versions: ServedVersions | None = None):
        self.db, self.versions = db, versions
        self.book = RuleBook()
        self._lock = threading.Lock()  # one read of the store at a time in this process

    def follow(self, force: bool = False) -> None:
        """Read the rules when the store's revision is not this process's (or `force`)."""
        with self._lock:
            if not force and rules_revision(self.db) == self.book.revision:
                return
            revision, stored = list_rules(self.db)
            if revision != self.book.revision or force:
                book = RuleBook([s.item for s in stored], revision)
                current = self.versions.current if self.versions is not None else None
                if current is not None:  # the items each rule acts on, found here, not in a request
                    book.items(current.catalog)
                self.book = book
                log.info("rules followed", extra={"revision": revision, "rules": len(stored)})

    def for_query(self, query: str, rec: Recommender) -> Adjustments | None:
        """The rules that act on this query's answer from `rec` now; None when none does."""
        book = self.book
        if not book:  # most shops, most of the time: no clock read on every request
            return None
        return book.for_query(query, rec.catalog, utc_now())
