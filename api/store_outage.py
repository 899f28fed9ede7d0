"""A loop's view of a store it keeps polling: one warning when the store becomes unavailable,
one line when it answers again, debug lines between (the version watcher, the training jobs'
saves)."""

from __future__ import annotations

import logging
import os
import threading
import time


class StoreOutage:
    """Says once that the store became unavailable to a loop that keeps polling it, and once
    that it answers again; the failures between are debug lines."""

    def __init__(self, logger: logging.Logger, what: str, interval_s: float):
        self.log, self.what, self.interval_s = logger, what, interval_s
        self.since: float | None = None  # time.monotonic() of the first failure, while down
        self.failures = 0
        # the loops of one process that poll the store share one (api.watchers): the outage is
        # said once a process, whichever of them meets it first
        self._lock = threading.Lock()

    def failed(self, exc: BaseException) -> None:
        cause = type(getattr(exc, "orig", None) or exc).__name__
        with self._lock:
            self.failures += 1
            if self.since is not None:
                self.log.debug("the store is still unavailable", extra={"error": cause})
                return
            self.since = time.monotonic()
        self.log.warning(f"the store is unavailable ({cause}): {self.what} is paused and tried "
                         f"again every {self.interval_s:g} s until it answers; routes that need "
                         f"the store answer 503 meanwhile",
                         extra={"error": cause, "detail": _first_line(exc), "pid": os.getpid()})

    def answered(self) -> None:
        with self._lock:
            if self.since is None:
                return
            down_s, failures = round(time.monotonic() - self.since, 1), self.failures
            self.since, self.failures = None, 0
        self.log.info(f"the store answers again: {self.what} resumed",
                      extra={"down_s": down_s, "failed_polls": failures, "pid": os.getpid()})


def _first_line(exc: BaseException) -> str:
    """The driver's message, first line (SQLAlchemy appends the statement and a link)."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
