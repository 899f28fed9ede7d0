"""The shop's synonyms as this process serves them: a file's (RECSYS_SYNONYMS_FILE, read at start)
and the store's (the admin API), the store's followed within a poll.

The process that changes them reads them back at once; every other process sharing the store
(workers, replicas) compares the store's synonyms revision with its own at each poll
(`PointerWatcher` followers, every RECSYS_WATCH_INTERVAL_S) and reads them all when it differs.
The book in force is handed to every model this process serves (`Recommender.use_synonyms`): the
served version when it is installed, and at each poll the running experiment's arms. No model
is retrained or reloaded: synonyms act on a query's evidence at request time (`recsys.synonyms`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence

from recsys.recommender import Recommender
from recsys.synonyms import Synonym, SynonymBook, read_synonyms_file
from store.db import Database
from store.synonyms import SYNONYMS

from .config import Settings

log = logging.getLogger("recsys.api.synonyms")


def read_synonyms(settings: Settings) -> list[Synonym]:
    """The synonyms file's rules (RECSYS_SYNONYMS_FILE), none without one; a file that cannot be
    read or has a bad line stops the start with the line and the fix (`SynonymError`)."""
    if settings.synonyms_file is None:
        return []
    synonyms = read_synonyms_file(settings.synonyms_file)
    log.info("synonyms file read", extra={"file": str(settings.synonyms_file), "synonyms": len(synonyms)})
    return synonyms


class ServedSynonyms:
    def __init__(self, db: Database, served: Callable[[], Iterable[Recommender | None]],
                 from_file: Sequence[Synonym] = ()):
        """`served`: the models this process answers with now; `from_file`: the file's synonyms,
        which the store's replace name for name."""
        self.db, self.served, self.from_file = db, served, tuple(from_file)
        self.book = SynonymBook(self.from_file, revision=-1)  # -1: the store not read yet
        self._lock = threading.Lock()  # one read of the store at a time in this process

    def follow(self, force: bool = False) -> None:
        """Read the synonyms when the store's revision is not this process's (or `force`), and
        hand the book to every model served."""
        with self._lock:
            if force or SYNONYMS.revision(self.db) != self.book.revision:
                revision, stored = SYNONYMS.read(self.db)
                self.book = self.combined([s.item for s in stored], revision)
                log.info("synonyms followed", extra={"revision": revision, "synonyms": len(self.book)})
        for rec in self.served():
            if rec is not None:
                self.apply(rec)

    def combined(self, stored: Sequence[Synonym], revision: int) -> SynonymBook:
        names = {s.name for s in stored}
        return SynonymBook([*(s for s in self.from_file if s.name not in names), *stored], revision)

    def apply(self, rec: Recommender) -> None:
        """Serve `rec` with the synonyms in force (a reference: cheap, done at every poll)."""
        if rec.synonyms is not self.book:
            rec.use_synonyms(self.book)
