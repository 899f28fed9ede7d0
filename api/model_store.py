"""The model being served, and how it is replaced without a failed or mixed request.

A request reads `ModelStore.current` once, at its start, and uses that `Recommender` to the end;
a swap only rebinds the attribute (atomic in Python), so a request in flight keeps the version it
started with and the next one gets the new version. Loading happens before the swap, outside
the request path; swaps are serialised by a lock.
"""

from __future__ import annotations

import gc
import logging
import re
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from recsys.artifact import current_version, load_version, read_manifest, resolve_version_dir, set_current
from recsys.errors import ArtifactError
from recsys.recommender import Recommender

log = logging.getLogger("recsys.api.model")
_VERSION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,127}$")


def held_out_ndcg(manifest: dict) -> float | None:
    """The held-out NDCG@10 of the model, the number retrains are compared on."""
    try:
        return float(manifest["metrics"]["held_out"]["model"]["ndcg@10"])
    except (KeyError, TypeError, ValueError):
        return None


class ModelStore:
    def __init__(self, artifacts_dir: Path, pinned: Path | None = None,
                 on_swap: Callable[[Recommender], None] | None = None):
        """`pinned`: a version folder to serve instead of the artifacts' current version."""
        self.artifacts_dir = Path(artifacts_dir)
        self.pinned = pinned
        self.on_swap = on_swap
        self.loaded_at: str | None = None
        self.error: str | None = None  # why the first load failed
        self._current: Recommender | None = None
        self._lock = threading.Lock()
        self._unloadable: set[str] = set()  # versions `current` named that failed to load

    @property
    def current(self) -> Recommender | None:
        return self._current

    def install(self, rec: Recommender) -> None:
        """Serve `rec` from now on."""
        self._current = rec
        self.loaded_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.error = None
        freeze_heap()
        log.info("serving model", extra={"model_version": rec.version})
        if self.on_swap:
            self.on_swap(rec)

    def load_initial(self) -> None:
        """Load the pinned version or the current one; on failure keep the reason for /ready."""
        try:
            with self._lock:
                self.install(load_version(self.pinned or self.artifacts_dir))
        except Exception as exc:  # noqa: BLE001 - any failure must leave the service up and say why
            self.error = str(exc)
            log.error("model failed to load", extra={"error": self.error})

    def version_dir(self, version: str) -> Path:
        if not _VERSION_NAME.match(version):
            raise ArtifactError(f"{version!r} is not a version name")
        folder = self.artifacts_dir / version
        resolve_version_dir(folder)  # raises ArtifactError when there is no version there
        return folder

    def activate(self, version: str) -> tuple[Recommender, str | None]:
        """Load `version`, point `current` at it and serve it. Returns (new, previous version)."""
        with self._lock:
            previous = self._current.version if self._current else None
            rec = load_version(self.version_dir(version))
            set_current(self.artifacts_dir, version)
            self.install(rec)
            return rec, previous

    def follow_pointer(self) -> None:
        """Serve what `current` names when something else (e.g. `recsys train`) moved it."""
        if self.pinned is not None:
            return
        name = current_version(self.artifacts_dir)
        served = self._current.version if self._current else None
        if name is None or name == served or name in self._unloadable:
            return
        with self._lock:
            if self._current is not None and self._current.version != served:
                return  # someone swapped meanwhile
            try:
                rec = load_version(self.artifacts_dir / name)
            except Exception as exc:  # noqa: BLE001
                self._unloadable.add(name)
                log.error("new current version failed to load; still serving the old one",
                          extra={"version": name, "error": str(exc)})
                return
            self.install(rec)

    def manifest_of(self, version: str) -> dict:
        return read_manifest(self.version_dir(version))


def freeze_heap() -> None:
    """Take everything alive now, above all the served model's catalogue (about 300k Python
    objects at 100k items), out of the cyclic garbage collector's reach. Otherwise every full
    collection, which requests' garbage triggers every few seconds under load, walks them all
    and holds the GIL for about 140 ms: that was the p99 of /recommend. Refcounting still frees
    a replaced model; what it leaves in cycles is collected here at the next swap."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


class PointerWatcher:
    """Polls the artifacts' `current` pointer in a daemon thread until stopped."""

    def __init__(self, store: ModelStore, interval_s: float):
        self.store, self.interval_s = store, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pointer-watcher", daemon=True)

    def start(self) -> None:
        if self.interval_s > 0 and self.store.pinned is None:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.store.follow_pointer()
            except Exception:  # noqa: BLE001 - a failed poll must not kill the watcher
                log.exception("watching the current pointer failed")
