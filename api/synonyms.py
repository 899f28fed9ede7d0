"""The shop's synonyms as this process serves them: a file's (RECSYS_SYNONYMS_FILE) and the
store's (the admin API), both followed within a poll.

The process that changes the store's reads them back at once; every other process sharing the
store (workers, replicas) compares the store's synonyms revision with its own at each poll
(`PointerWatcher` followers, every RECSYS_WATCH_INTERVAL_S) and reads them all when it differs.
At the same polls each process looks at the file's modification time and size, and reads it
again when either changed: a file that no longer reads (a bad line, gone) keeps the last good
one in force, and the warning says why (`SynonymsFile`).
The book in force is handed to every model this process serves (`Recommender.use_synonyms`): the
served version when it is installed, and at each poll the running experiment's arms. No model
is retrained or reloaded: synonyms act on a query's evidence at request time (`recsys.synonyms`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from recsys.recommender import Recommender
from recsys.synonyms import Synonym, SynonymBook, SynonymError, read_synonyms_file
from store.db import Database
from store.synonyms import SYNONYMS, synonym_from_json, synonym_json

from .config import Settings
from .store_snapshot import StoreSnapshot

log = logging.getLogger("recsys.api.synonyms")


def read_synonyms(settings: Settings) -> SynonymsFile:
    """The synonyms file (RECSYS_SYNONYMS_FILE), none without one; a file that cannot be read or
    has a bad line stops the start with the line and the fix (`SynonymError`)."""
    return SynonymsFile(settings.synonyms_file)


class SynonymsFile:
    """The synonyms file's rules as last read well, read again when the file changes (its
    modification time or size: a poll is a stat, not a read)."""

    def __init__(self, path: Path | None):
        self.path = path
        self.synonyms: tuple[Synonym, ...] = ()
        self._seen = self._stamp()  # before the read: a change while reading is read next time
        if path is not None:
            self.synonyms = tuple(read_synonyms_file(path))
            log.info("synonyms file read", extra={"file": str(path), "synonyms": len(self.synonyms)})

    def _stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat() if self.path is not None else None
        except OSError:
            return None  # gone: a change, which the read reports
        return None if st is None else (st.st_mtime_ns, st.st_size)

    def reread(self) -> bool:
        """Read the file again if it changed since the last look; True when its synonyms did. A
        file that does not read keeps the last good synonyms, with a warning saying why (once
        per change of the file)."""
        if self.path is None:
            return False
        stamp = self._stamp()
        if stamp == self._seen:
            return False
        self._seen = stamp
        try:
            synonyms = tuple(read_synonyms_file(self.path))
        except SynonymError as exc:
            log.warning("synonyms file not read again; the last good one stays in force",
                        extra={"file": str(self.path), "error": str(exc), "synonyms": len(self.synonyms)})
            return False
        log.info("synonyms file read again", extra={"file": str(self.path), "synonyms": len(synonyms)})
        changed, self.synonyms = synonyms != self.synonyms, synonyms
        return changed


class ServedSynonyms:
    kind = "synonyms"  # what they are called in the store's snapshot and in lines that name them

    def __init__(self, db: Database, served: Callable[[], Iterable[Recommender | None]],
                 file: SynonymsFile | None = None, snapshot: StoreSnapshot | None = None):
        """`served`: the models this process answers with now; `file`: the synonyms file, whose
        synonyms the store's replace name for name; `snapshot`: where the store's synonyms are
        kept for a process that starts with the store unavailable (`restore`)."""
        self.db, self.served, self.file, self.snapshot = db, served, file or SynonymsFile(None), snapshot
        self._stored: tuple[Synonym, ...] = ()
        self.book = SynonymBook(self.from_file, revision=-1)  # -1: the store not read yet
        self._lock = threading.Lock()  # one read of the store at a time in this process

    @property
    def from_file(self) -> tuple[Synonym, ...]:
        """The synonyms file's synonyms in force (the last good read)."""
        return self.file.synonyms

    def follow(self, force: bool = False) -> None:
        """Read the synonyms when the store's revision is not this process's (or `force`), and
        the file when it changed, and hand the book to every model served. A changed file is
        taken before the store is asked, so it is followed with the store unavailable too."""
        with self._lock:
            if self.file.reread():
                self.book = self.combined(self._stored, self.book.revision)
                log.info("synonyms followed", extra={"revision": self.book.revision, "synonyms": len(self.book)})
            if force or SYNONYMS.revision(self.db) != self.book.revision:
                revision, stored = SYNONYMS.read(self.db)
                self._stored = tuple(s.item for s in stored)
                self.book = self.combined(self._stored, revision)
                log.info("synonyms followed", extra={"revision": revision, "synonyms": len(self.book)})
                if self.snapshot is not None:
                    self.snapshot.save(self.kind, revision, [synonym_json(s) for s in self._stored])
        self._hand_out()

    def restore(self) -> int | None:
        """Serve the store's synonyms as the last process to read them kept them (the store
        unavailable at start), beside the file's; how many, None when none were kept."""
        held = self.snapshot.restore(self.kind, synonym_from_json) if self.snapshot is not None else None
        if held is None:
            return None
        revision, kept = held
        with self._lock:
            self._stored = tuple(kept)
            self.book = self.combined(self._stored, revision)
        self._hand_out()
        return len(kept)

    def _hand_out(self) -> None:
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
