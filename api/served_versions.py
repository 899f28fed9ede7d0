"""The model being served, and how it is replaced without a failed or mixed request.

A request reads `ServedVersions.current` once, at its start, and uses that `Recommender` to the end;
a swap only rebinds the attribute (atomic in Python), so a request in flight keeps the version it
started with and the next one gets the new version. Loading happens before the swap, outside
the request path; swaps are serialised by a lock.

Every activation is also a row of the store (`store.records.activations`); each process follows
the newest one, as it follows the artifacts' `current` pointer (which `recsys train` moves), so
several server processes serve the same version: whichever changed last wins.

What changes the served version (an activation, a catalogue revision, a retrain's activation)
holds the store's catalogue lock (`ServedVersions.changing`), one change at a time across every
process sharing the store: a change decided on the version `current` named when it started is
applied before the next one starts. Unlocked, an activation landing while another process
revised the catalogue was undone by that revision (made of the version before), or the
revision's change by the activation.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path

from recsys.artifact import (
    VERSION_NAME,
    current_version,
    list_versions,
    load_version,
    read_manifest,
    set_current,
)
from recsys.errors import ArtifactError
from recsys.recommender import Recommender
from store.db import CATALOGUE_LOCK, Database, HeldLock, unavailable
from store.records import latest_activation, record_activation

from .standby import Standby, folder_signature

log = logging.getLogger("recsys.api.model")
# how long a change waits for the store's catalogue lock before it is a StoreError (a 503 with
# Retry-After): every other process has at most one change waiting there (its others wait for
# its own thread lock), and a change took 1-3 s on a busy 2-core machine: room for dozens
CHANGE_WAIT_S = 60.0


class PinnedError(RuntimeError):
    """A change of the served version asked of a process pinned to one version folder
    (`recsys serve --model VERSION_DIR`): a 409 naming the reason (`public`)."""

    def __init__(self, version: str):
        self.public = (f"this process serves {version}, pinned by `recsys serve --model`: it does "
                       f"not change what it serves (a change would be gone at its restart, and "
                       f"would move the artifacts' current version under the other processes); "
                       f"change the catalogue or activate through a process serving the artifacts "
                       f"folder (no --model, or --model ARTIFACTS_DIR)")
        super().__init__(self.public)


class Superseded(RuntimeError):
    """A catalogue revision made from a version that `current` no longer names: another change
    was made meanwhile (a process whose store lock died with PostgreSQL's restart ran beside
    another). Activated, it would undo that change; answered 503, nothing moved (sent again,
    it is made on the newest version)."""

    def __init__(self, version: str, base: str, now: str | None):
        self.public = (f"the catalogue changed while this change was made (it was made on {base}, "
                       f"{now or 'no version'} is served now): nothing was applied; send it again")
        super().__init__(f"{version}: {self.public}")


class NotServedYet(RuntimeError):
    """`current` names a version this process has not loaded yet, after waiting for the load
    in progress and trying itself: a passing state (a version another process activated a
    moment ago, or the process's own first load), answered 503 with Retry-After, never a 409
    (which says the request conflicts with the service's state, and a retry would not help)."""

    retry_after_s = 1

    def __init__(self, version: str):
        self.version = version
        self.public = (f"current names {version}, which this process is still loading: nothing "
                       f"was changed; try again in {self.retry_after_s} s")
        super().__init__(self.public)


# times `latest` follows the pointer before it says NotServedYet: each waits for the load in
# progress (another thread's) and then loads what `current` names; under the catalogue lock
# `current` moves only by `recsys train` (no lock), so the second try nearly always serves it
LATEST_TRIES = 3


def held_out_ndcg(manifest: dict) -> float | None:
    """The held-out NDCG@10 of the model, the number retrains are compared on."""
    try:
        return float(manifest["metrics"]["held_out"]["model"]["ndcg@10"])
    except (KeyError, TypeError, ValueError):
        return None


class ServedVersions:
    def __init__(self, artifacts_dir: Path, pinned: Path | None = None,
                 on_swap: Callable[[Recommender], None] | None = None, db: Database | None = None,
                 standby: Standby | None = None):
        """`pinned`: a version folder to serve instead of the artifacts' current version.
        `db`: the store activations are recorded in and followed from. `standby`: versions
        loaded ahead (api/standby.py): serving one of them is a swap, not a load."""
        self.artifacts_dir = Path(artifacts_dir)
        self.standby = standby
        self.pinned = pinned
        self.on_swap = on_swap
        self.db = db
        # id of the newest activation row this process has acted on; None: not read yet (the
        # store was unavailable at start), the first poll that reads it takes it as history
        self._seen_activation: int | None = 0
        self.loaded_at: str | None = None
        self.error: str | None = None  # why the first load failed
        self.pointer_problem: str | None = None  # why what `current` names is not served
        self._current: Recommender | None = None
        self._lock = threading.Lock()
        # one change at a time in this process, taken before the store's lock: the threads
        # waiting for a change of this process wait here, not holding a pooled connection each
        self._changing = threading.Lock()
        self._changer: int | None = None  # the thread holding `changing()`
        self._held = HeldLock(None)  # the store's lock `changing()` holds, checked before a change
        # versions that failed to load: name -> (their files' signature, the problem); a version
        # rewritten in place since is tried again
        self._refused: dict[str, tuple[tuple, str]] = {}
        # what `current` named when this process last served it: the watcher follows a move of
        # the pointer, not a difference (`follow_pointer`)
        self._pointer_seen: str | None = None

    @property
    def current(self) -> Recommender | None:
        return self._current

    def install(self, rec: Recommender) -> None:
        """Serve `rec` from now on. `on_swap` sees it first: a version answered without the
        synonyms in force for the 0.1-0.5 s until the hook gave them (4 of 5 swaps under load,
        a probe of two workers, 7 December 2026), so whatever it hands over is there before a
        request can reach the model."""
        if self.on_swap:
            self.on_swap(rec)
        old, self._current = self._current, rec
        if self.standby is not None and old is not None and old.version != rec.version:
            self.standby.keep(old, served=rec.version)  # a rollback to it stays a swap
        del old  # before freeze_heap: a replaced model nobody keeps is collected there
        self.loaded_at = datetime.now(UTC).isoformat(timespec="seconds")
        self.error = None
        freeze_heap()
        log.info("serving model", extra={"model_version": rec.version})

    def load_initial(self) -> None:
        """Load the pinned version or the current one; on failure keep the reason for /ready."""
        self.mark_activations_seen()
        try:
            with self._lock:
                self.install(self._load(self.pinned or self.artifacts_dir))
                if self.pinned is None and self._current is not None:
                    self._pointer_seen = self._current.version
        except ArtifactError as exc:
            self.error = exc.public
            log.error("model failed to load", extra={"error": str(exc)})
        except Exception:  # any failure must leave the service up and say why
            self.error = "the model failed to load (internal error, see the service's log)"
            log.exception("model failed to load")

    def _load(self, path: Path) -> Recommender:
        """`load_version`, remembering which versions failed and why."""
        folder = Path(path)
        if self.pinned is None and folder == self.artifacts_dir:
            name = current_version(folder)
            folder = folder / name if name else folder
        warm = self.standby.take(folder) if self.standby is not None else None
        if warm is not None:
            return warm
        try:
            return load_version(folder)
        except ArtifactError as exc:
            self._refused[folder.name] = (folder_signature(folder), exc.public)
            raise

    def mark_activations_seen(self) -> None:
        """At start: the activations so far are history, the `current` pointer says what to
        serve. With the store unavailable, the first poll that reads them does this (the model
        is loaded meanwhile: /recommend needs no store)."""
        if self.db is not None:
            try:
                latest = latest_activation(self.db)
            except Exception as exc:
                if not unavailable(exc):
                    raise
                self._seen_activation = None
                log.warning("the store is unavailable at start; serving what current names, "
                            "following the store's activations once it answers",
                            extra={"error": type(getattr(exc, "orig", None) or exc).__name__})
                return
            self._seen_activation = latest[0] if latest else 0

    def served_dir(self) -> Path | None:
        """The folder of the version being served."""
        rec = self._current
        if rec is None:
            return None
        if self.pinned is not None:
            return self.pinned
        folder = self.artifacts_dir / rec.version
        return folder if folder.is_dir() else None

    def latest(self) -> Recommender | None:
        """The version `current` names, which is the newest change any process made (an
        activation, a catalogue revision, `recsys train`), served from now on; the served model
        when this process is pinned to a folder. A process may not have followed the newest
        change yet; what revises the catalogue must start from it, or a change made through
        another process is lost. ArtifactError when `current` names a version that does not
        load (a 409); NotServedYet when it is still not served after LATEST_TRIES (a 503)."""
        if self.pinned is not None:
            return self._current
        # following it now, as the watcher would at its next poll: under the swap lock, so a
        # load the watcher has started is waited for, not done twice. That load may be of an
        # older version (an activation read before `current` moved again, the process's first
        # load): then this follows again
        for _ in range(LATEST_TRIES):
            self.follow_pointer(moved_only=False)
            name = current_version(self.artifacts_dir)
            served = self._current
            if name is None or (served is not None and served.version == name):
                return served
            if self.pointer_problem is not None and self.refused(name) is not None:
                raise ArtifactError(self.pointer_problem)  # a broken version: a 409
        assert name is not None  # with no version named, the loop returned
        raise NotServedYet(name)

    def version_dir(self, version: str) -> Path:
        """The folder of `version`; ArtifactError when there is no such version."""
        if not VERSION_NAME.match(version):
            raise ArtifactError(f"{version[:60]!r} is not a version name")
        folder = self.artifacts_dir / version
        if not folder.is_dir():
            raise ArtifactError(f"no model version {version!r}")
        return folder

    def load(self, version: str) -> Recommender:
        """`version` loaded (ArtifactError when it is missing or broken), not served."""
        return self._load(self.version_dir(version))

    @contextlib.contextmanager
    def changing(self) -> Iterator[None]:
        """Hold the catalogue lock for the block: no other thread or process (worker, replica
        sharing the store) changes the served version meanwhile. A block that decides on what
        is served (a revision of it, an activation compared with it) takes this first, then
        `follow_pointer` to see the newest change; `activate` takes it too (a nested call in
        the same thread holds it already). StoreError when the lock is not had within
        `CHANGE_WAIT_S` (the store is busy or down: a 503); PinnedError in a process pinned
        to a version folder."""
        if self.pinned is not None:
            raise PinnedError(self.pinned.name)
        if self._changer == threading.get_ident():
            yield
            return
        shared = (self.db.exclusive(CATALOGUE_LOCK, CHANGE_WAIT_S) if self.db
                  else contextlib.nullcontext(HeldLock(None)))
        with self._changing, shared as held:
            self._changer, self._held = threading.get_ident(), held
            try:
                yield
            finally:
                self._changer, self._held = None, HeldLock(None)

    def activate(self, version: str, reason: str = "activated", loaded: Recommender | None = None,
                 base: str | None = None) -> tuple[Recommender, str | None]:
        """Load `version` (or take `loaded`, that version already in memory), record the
        activation (with `reason`), point `current` at it and serve it, under the catalogue lock.
        Returns (new, previous version). A broken version raises ArtifactError, a store that
        cannot record it a store error (a 503): either way nothing moved and the served model
        stays. The record comes first because the pointer is what every process follows: moved
        before a failed record, it served a version whose activation was answered 503.
        `base`: the version `version` was made from (a catalogue revision); Superseded when
        `current` names another by now, and nothing moves. With the store's lock lost (its
        connection died with a restart of PostgreSQL) another process may have changed it."""
        with self.changing(), self._lock:
            previous = self._current.version if self._current else None
            rec = loaded if loaded is not None and loaded.version == version else self.load(version)
            self._held.check()  # a lost lock: a 503 before anything moves
            if base is not None and (now := current_version(self.artifacts_dir)) not in (None, base):
                raise Superseded(version, base, now)
            if self.db is not None:
                self._seen_activation = max(self._seen_activation or 0,
                                            record_activation(self.db, version, reason))
            try:
                set_current(self.artifacts_dir, version)
                self._pointer_seen = version
            except (OSError, ArtifactError):
                if self.db is not None and previous is not None:  # the record said otherwise
                    self._seen_activation = record_activation(
                        self.db, previous, f"{reason}: undone, `current` could not be moved")
                raise
            self.install(rec)
            self.pointer_problem = None
            return rec, previous

    def follow_activations(self, loaded: Mapping[str, Recommender] | None = None) -> None:
        """Serve the version another process activated since this one last looked; from
        `loaded` (version -> model) when it is already in memory (an experiment's arm)."""
        if self.pinned is not None or self.db is None:
            return
        latest = latest_activation(self.db)
        if self._seen_activation is None:  # unread at start: these are history
            self._seen_activation = latest[0] if latest else 0
            return
        if latest is None or latest[0] <= self._seen_activation:
            return
        self._seen_activation = latest[0]
        served = self._current.version if self._current else None
        if latest[1] != served and self.refused(latest[1]) is None:
            try:
                with self._lock:
                    rec = (loaded or {}).get(latest[1]) or self.load(latest[1])
                    self.install(rec)
            except ArtifactError as exc:
                log.error("the newest activation names no loadable version; still serving the old one",
                          extra={"version": latest[1], "error": str(exc)})

    def follow_pointer(self, moved_only: bool = True) -> None:
        """Serve what `current` names when something else (e.g. `recsys train`) moved it.

        An activation is recorded in the store before `current` moves, so for a moment a
        process that followed the record (`follow_activations`) serves a newer version than
        `current` names; following the difference then served the old version again until the
        next poll (an activation through the load balancer: an answer of the old version after
        one of the new, on the replica that did not take it). So the watcher follows only a
        move of the pointer (`moved_only`); under the catalogue lock (`changing`), where no
        change is half made, and for `latest`, `current` is followed whatever this process last
        saw."""
        if self.pinned is not None:
            return
        try:
            name = current_version(self.artifacts_dir)
        except ArtifactError as exc:
            self._pointer_refused(exc.public, str(exc))
            return
        served = self._current.version if self._current else None
        if name is None or name == served:
            if name is not None:
                self._pointer_seen = name
            self.pointer_problem = None
            return
        if moved_only and name == self._pointer_seen and self._changer != threading.get_ident():
            return  # not moved since this process served it: what it serves now is newer
        known = self.refused(name)
        if known:
            self._pointer_refused(f"current names {name}, which was refused: {known}", known)
            return
        with self._lock:
            if self._current is not None and self._current.version != served:
                return  # someone swapped meanwhile
            try:
                rec = self._load(self.artifacts_dir / name)
            except ArtifactError as exc:
                self._pointer_refused(f"current names {name}, which was refused: {exc.public}", str(exc))
                return
            except Exception:
                self._refused[name] = (folder_signature(self.artifacts_dir / name), "internal error")
                log.exception("new current version failed to load; still serving the old one")
                return
            self.install(rec)
            self._pointer_seen = name
            self.pointer_problem = None

    def _pointer_refused(self, public: str, full: str) -> None:
        if public != self.pointer_problem:
            log.error("the current pointer names no loadable version; still serving the old one",
                      extra={"error": full})
        self.pointer_problem = public

    def refused(self, version: str) -> str | None:
        """Why `version` failed to load, unless its files changed since."""
        seen = self._refused.get(version)
        if seen is None or seen[0] != folder_signature(self.artifacts_dir / version):
            return None
        return seen[1]

    def manifest_of(self, version: str) -> dict:
        return read_manifest(self.version_dir(version))

    def versions(self) -> list[dict]:
        """Every version folder, those that failed to load marked broken with the reason."""
        out = list_versions(self.artifacts_dir)
        for v in out:
            problem = self.refused(v["version"])
            if v["ok"] and problem:
                v["ok"], v["problem"] = False, problem
        return out


def freeze_heap() -> None:
    """Take everything alive now, above all the served model's catalogue (about 300k Python
    objects at 100k items), out of the cyclic garbage collector's reach. Otherwise every full
    collection, which requests' garbage triggers every few seconds under load, walks them all
    and holds the GIL for about 140 ms: that was the p99 of /recommend. Refcounting still frees
    a replaced model; what it leaves in cycles is collected here at the next swap."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
