"""Versions loaded ahead of their activation, so that an activation is a swap in every process.

Loading a version takes about a second at 100,000 items on an idle core and several under load
(checks, the index, the explanations' tables). An activation on one worker is followed by the
others when they next poll the store (RECSYS_WATCH_INTERVAL_S), and if each then had to load the
version, "every process serves it within 2 s" would not hold. So each process keeps the
RECSYS_STANDBY_VERSIONS newest versions other than the served one loaded (and the version a
swap replaced, while it is among them: a rollback is a swap too). `ServedVersions._load` takes a
version from here when its files are unchanged since it was loaded; otherwise it loads it.

A version that appears while the service runs (a retrain's) is loaded here within a poll; one
activated before that, by the process that trained it, is loaded by the others when they
follow (one load time).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from recsys.artifact import VERSION_NAME, load_version
from recsys.errors import ArtifactError
from recsys.recommender import Recommender

log = logging.getLogger("recsys.api.standby")


class Standby:
    def __init__(self, artifacts_dir: Path, size: int):
        self.artifacts_dir, self.size = Path(artifacts_dir), size
        self._models: dict[str, tuple[tuple, Recommender]] = {}  # name -> (files' signature, model)
        self._failed: dict[str, tuple] = {}  # name -> signature of files that did not load
        self._lock = threading.Lock()

    def take(self, folder: Path) -> Recommender | None:
        """The model of `folder`, loaded ahead, if its files are unchanged since. It stays here
        too (shared, not copied: an experiment's arm and the standby hold one model) until a
        refresh finds it served or no longer wanted."""
        folder = Path(folder)
        if folder.parent != self.artifacts_dir:
            return None
        with self._lock:
            entry = self._models.get(folder.name)
            if entry is None:
                return None
            if entry[0] != folder_signature(folder):  # rewritten in place since: load it anew
                del self._models[folder.name]
                return None
            return entry[1]

    def keep(self, rec: Recommender, served: str) -> None:
        """`rec` was just replaced by `served`: keep it loaded if it is one of the versions
        wanted."""
        folder = self.artifacts_dir / rec.version
        if self.size and rec.version in self._wanted(exclude=served):
            with self._lock:
                self._models[rec.version] = (folder_signature(folder), rec)

    def loaded(self) -> list[str]:
        with self._lock:
            return sorted(self._models)

    def _wanted(self, exclude: str | None) -> list[str]:
        """The `size` newest version folders (by modification time), `exclude` left out."""
        try:
            entries = [(d.stat().st_mtime_ns, d.name) for d in self.artifacts_dir.iterdir()
                       if VERSION_NAME.match(d.name) and not d.name.startswith(".")
                       and (d / "manifest.json").is_file()]
        except OSError:
            return []
        names = [name for _, name in sorted(entries, reverse=True) if name != exclude]
        return names[: self.size]

    def refresh(self, served: Callable[[], str | None]) -> None:
        """Load the wanted versions that are not loaded yet; drop the others. `served`: the
        version served now, asked again before each step (a swap may happen meanwhile)."""
        now = served()
        wanted = self._wanted(exclude=now) if self.size else []
        with self._lock:
            if served() != now:
                return  # swapped meanwhile: the next refresh sees what it kept
            for name in [n for n in self._models if n not in wanted]:
                del self._models[name]
        for name in wanted:
            folder = self.artifacts_dir / name
            signature = folder_signature(folder)
            with self._lock:
                have = self._models.get(name)
            if (have is not None and have[0] == signature) or self._failed.get(name) == signature:
                continue
            if served() != now:
                return
            try:
                rec = load_version(folder)
            except Exception as exc:  # noqa: BLE001 - the store says why when asked to serve it
                self._failed[name] = signature
                why = exc.public if isinstance(exc, ArtifactError) else f"{type(exc).__name__}: {exc}"
                log.info("a version could not be loaded ahead", extra={"version": name,
                                                                       "error": why})
                continue
            with self._lock:
                if served() == now:
                    self._models[name] = (signature, rec)
                    log.info("version loaded ahead", extra={"model_version": name})


def folder_signature(folder: Path) -> tuple:
    """Size and modification time of the folder's files: changes when any is rewritten."""
    try:
        return tuple(sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in os.scandir(folder)))
    except OSError:
        return ()
