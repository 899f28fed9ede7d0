"""The store's rules and synonyms as this service last read them, kept beside the model versions
so that a process started while the store is unavailable serves them.

A replica restarted during a PostgreSQL outage served with no rules and no synonyms until the
store answered: a hide rule for a recalled item was not applied there meanwhile (a reliability
probe, 7 December 2026). Every process that reads the rules or synonyms from the store writes
them here (the artifacts folder, which workers and replicas share); a process that cannot reach
the store at start reads them back, says so, and follows the store once it answers.

One JSON file per kind (`.store-rules.json`, `.store-synonyms.json`), replaced atomically under
an flock: a file is only replaced by a newer revision of the same store (the revision is the
store's newest change id, so it only grows), or by any revision of another store (the folder
pointed at a new database). A file that cannot be written or read costs a warning, never an
answer.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger("recsys.api.snapshot")

_LOCK = ".store-snapshot.lock"


class StoreSnapshot:
    def __init__(self, folder: Path, store: str, writes: bool = True):
        """`folder`: the artifacts folder; `store`: the store's URL without its password (which
        store the revisions count changes of); `writes` False: read only (a process pinned to a
        version by `recsys serve --model` changes nothing in the folder)."""
        self.folder, self.store, self.writes = Path(folder), store, writes
        self._warned: set[str] = set()

    def path(self, kind: str) -> Path:
        return self.folder / f".store-{kind}.json"

    def save(self, kind: str, revision: int, rows: list[dict[str, Any]]) -> None:
        """Keep `rows` (JSON-ready) as `kind` at `revision`, unless the file holds a newer
        revision of this store. Nothing kept and nothing to keep: no file is written."""
        if not self.writes or (not rows and not self.path(kind).exists()):
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(self.folder / _LOCK, "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                try:
                    held = self._read(kind)
                except (ValueError, KeyError, TypeError):
                    held = None  # a file that does not read is replaced
                if held is not None and held["store"] == self.store and held["revision"] >= revision:
                    return
                self._write(kind, {"store": self.store, "revision": revision, "rows": rows})
        except OSError as exc:
            self._warn_once(kind, f"the {kind} read from the store could not be kept in {self.folder} "
                                  f"({exc}); a process started while the store is unavailable will "
                                  f"serve without them")

    def load(self, kind: str) -> tuple[int, list[dict[str, Any]]] | None:
        """(revision, rows) kept for this store, None when there is none (or it does not read)."""
        try:
            held = self._read(kind)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning(f"the {kind} kept in {self.path(kind)} do not read ({exc}); not used",
                        extra={"file": str(self.path(kind))})
            return None
        if held is None or held["store"] != self.store:
            return None
        return int(held["revision"]), list(held["rows"])

    def restore(self, kind: str, parse: Callable[[dict[str, Any]], Any]) -> tuple[int, list[Any]] | None:
        """`load`, each row parsed; a row that no longer parses (a program of another version
        wrote it) drops the whole snapshot, with a warning: half a rule set is worse than none
        said to be none."""
        held = self.load(kind)
        if held is None:
            return None
        revision, rows = held
        try:
            return revision, [parse(r) for r in rows]
        except (KeyError, TypeError, ValueError) as exc:
            log.warning(f"the {kind} kept in {self.path(kind)} do not read ({exc!r}); not used",
                        extra={"file": str(self.path(kind))})
            return None

    def _read(self, kind: str) -> dict[str, Any] | None:
        try:
            text = self.path(kind).read_text()
        except FileNotFoundError:
            return None
        held = json.loads(text)
        if not isinstance(held, dict) or not isinstance(held.get("rows"), list):
            raise ValueError("not a snapshot")
        held["revision"] = int(held["revision"])
        return held

    def _write(self, kind: str, content: dict[str, Any]) -> None:
        fd, tmp = tempfile.mkstemp(prefix=f".store-{kind}.", suffix=".tmp", dir=self.folder)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(content, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path(kind))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _warn_once(self, kind: str, message: str) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            log.warning(message, extra={"folder": str(self.folder)})
