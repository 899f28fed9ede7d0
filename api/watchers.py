"""The threads that poll while a process serves: `PointerWatcher` follows the store's newest
activation and the artifacts' `current` pointer (and the running experiment), `StoreFollower`
the rules, synonyms and profiles, `StandbyLoader` loads versions ahead (`api.standby`)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from store.db import unavailable

from .served_versions import ServedVersions
from .standby import Standby
from .store_outage import StoreOutage

log = logging.getLogger("recsys.api.model")
standby_logger = logging.getLogger("recsys.api.standby")


class PointerWatcher:
    """Polls the artifacts' `current` pointer in a daemon thread until stopped; `followers`
    run first at every poll (the running experiment, `api.experiments`).

    The store being unavailable (its server down, the SQLite file locked: `store.db.unavailable`)
    is an outage, not a bug: one warning when it starts, naming the error and saying the watcher
    keeps trying, the polls quiet meanwhile (debug), and one info line when the store answers
    again. The `current` pointer, in the artifacts folder, is followed all the same. Any other
    error of a poll is logged with its traceback, every time."""

    def __init__(self, versions: ServedVersions, interval_s: float,
                 followers: Sequence[Callable[[], None]] = (), outage: StoreOutage | None = None):
        """`outage`: another loop's, so that a process says an outage once."""
        self.versions, self.interval_s, self.followers = versions, interval_s, tuple(followers)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pointer-watcher", daemon=True)
        self.started = False
        self.outage: StoreOutage = outage or StoreOutage(log, "following the store", interval_s)

    def start(self) -> None:
        self.started = True
        if self.interval_s > 0 and self.versions.pinned is None:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.poll()

    def poll(self) -> None:
        """One look at the store (the followers, the newest activation), then at the pointer."""
        self._follow((*self.followers, self.versions.follow_activations))
        try:
            self.versions.follow_pointer()  # the artifacts folder: followed with the store down too
        except Exception:  # a failed poll must not kill the watcher
            log.exception("watching the current pointer failed")


    def _follow(self, steps: Sequence[Callable[[], None]]) -> None:
        """Each step in turn, until the store is found unavailable (the next would only wait
        for it); the outage said once when it starts and once when it ends."""
        store_ok = True
        for follow in steps:
            try:
                follow()
            except Exception as exc:  # a failed poll must not kill the watcher
                if not unavailable(exc):
                    log.exception("following the store failed")
                elif store_ok:
                    self.outage.failed(exc)
                store_ok = False
                if unavailable(exc):
                    break  # the next step would only wait for the same store
        if store_ok:
            self.outage.answered()


class StoreFollower(PointerWatcher):
    """The followers that load no model (rules, synonyms, profiles) polled in a thread of
    their own: in the pointer watcher's they waited for each version it loaded, and while a
    shop's catalogue changed every second a synonym another process had acknowledged was
    missing here for 3.6-15.5 s (a probe of two workers, 7 December 2026)."""

    def __init__(self, versions: ServedVersions, interval_s: float, followers: Sequence[Callable[[], None]],
                 outage: StoreOutage):
        """`outage`: the pointer watcher's, so a process says an outage once."""
        super().__init__(versions, interval_s, followers, outage)
        self._thread.name = "store-follower"

    def poll(self) -> None:
        self._follow(self.followers)


class StandbyLoader(PointerWatcher):
    """Keeps a store's standby up to date, polling like the PointerWatcher but in a thread of
    its own: a load (seconds) never delays the watcher's polls of the store."""

    def __init__(self, versions: ServedVersions, standby: Standby, interval_s: float):
        super().__init__(versions, interval_s)
        self.standby = standby
        self._thread.name = "standby-loader"

    def refresh(self) -> None:
        try:
            self.standby.refresh(self._served)
        except Exception:  # a failed refresh must not kill the loader; the next one tries again
            standby_logger.exception("loading versions ahead failed")

    def _served(self) -> str | None:
        current = self.versions.current
        return current.version if current else None

    def start(self) -> None:
        if self.standby.size:
            super().start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.refresh()
