"""The running experiment, as this process serves it: its arms' models, loaded once, and the
split of shoppers between them.

The experiment itself lives in the store (`store.experiments`), so every server process sharing
it agrees: the one that starts or ends it acts at once, the others follow at their next poll
(`PointerWatcher`, every RECSYS_WATCH_INTERVAL_S). A request with a `user_id` is answered by
its arm's version (`api.abtest.assign_arm`: a hash of the experiment name and the user id);
one without is answered by the active version and is in no arm.

Memory: an arm whose version is the one being served shares its model; any other arm's model
is loaded once when the experiment starts here and dropped when it ends (the winner's model
becomes the served one without loading it again).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from dataclasses import dataclass, field

from recsys.artifact import read_manifest, revised_from
from recsys.catalog import Catalog
from recsys.errors import ArtifactError
from recsys.promotion import same_catalogue
from recsys.recommender import Recommender
from store.db import Database
from store.events import Event
from store.experiments import (
    Arm,
    Experiment,
    check_startable,
    end_experiment,
    running_experiment,
    start_experiment,
)

from .abtest import assign_arm
from .served_versions import ServedVersions, freeze_heap
from .standby import folder_signature
from .telemetry import Telemetry

log = logging.getLogger("recsys.api.experiments")


class CatalogueChangedError(RuntimeError):
    """Ending an experiment would serve a version that undoes catalogue changes made while it
    ran: a 409 saying so (the message says what to do)."""


class ArmError(ValueError):
    """An arm's version cannot be served; `arm` names it, the message says why."""

    def __init__(self, arm: str, message: str):
        super().__init__(message)
        self.arm = arm


@dataclass(frozen=True)
class Serving:
    """An experiment with its arms' models in memory."""

    experiment: Experiment
    models: dict[str, Recommender]  # arm -> model
    # version -> its folder's files when its arm was loaded (`folder_signature`): an end checks
    # that the winner's are unchanged before serving the model in memory
    signatures: dict[str, tuple] = field(default_factory=dict)
    # the catalogue served when it started (`Experiment.served_at_start`), when this process holds
    # it: the items a catalogue change removes while it runs are told against it
    start_catalog: Catalog | None = None

    @property
    def name(self) -> str:
        return self.experiment.name

    def by_version(self) -> dict[str, Recommender]:
        return {rec.version: rec for rec in self.models.values()}


@dataclass(frozen=True)
class Assignment:
    experiment: str
    arm: str
    model: Recommender
    # the arm catalogue's items the served catalogue no longer has (removed while the experiment
    # runs): left out of the arm's answers, as they are of every other answer
    removed: tuple[str, ...] = ()


class Experiments:
    def __init__(self, versions: ServedVersions, db: Database, telemetry: Telemetry):
        self.versions, self.db, self.telemetry = versions, db, telemetry
        self._serving: Serving | None = None
        self._lock = threading.Lock()  # one start, end or follow at a time in this process
        # arm's version -> (the served version, the ids `removed_since` found for it), replaced
        # whole, so a request reads a pair that belongs together
        self._removed: dict[str, tuple[str, tuple[str, ...]]] = {}
        # the running experiment whose arms this process could not load: (name, why), not retried
        self.problem: tuple[str, str] | None = None

    @property
    def serving(self) -> Serving | None:
        return self._serving

    def choose(self, user_id: str | None) -> Assignment | None:
        """The arm that answers `user_id`, None for the active version (no experiment, or no user)."""
        serving = self._serving  # read once: a swap meanwhile does not mix two experiments
        if serving is None or not user_id:
            return None
        exp = serving.experiment
        arm = assign_arm(exp.name, user_id, [(a.arm, a.traffic) for a in exp.arms])
        self.telemetry.arm_answered(exp.name, arm)
        model = serving.models[arm]
        return Assignment(exp.name, arm, model, self.removed_since(serving, model))

    def removed_since(self, serving: Serving, model: Recommender) -> tuple[str, ...]:
        """The ids of the arm `model`'s catalogue that a catalogue change removed while the
        experiment runs: in the catalogue served when it started, not in the one served now (the
        arms keep the catalogue they started with; an arm's own items that were never served
        stay its own). Worked out once per served version and arm."""
        current, start = self.versions.current, serving.start_catalog
        if current is None or start is None or current.catalog is start or current is model:
            return ()
        kept = self._removed.get(model.version)
        if kept is not None and kept[0] == current.version:
            return kept[1]
        served, own = current.catalog, model.catalog
        removed = tuple(i for i in start.item_ids if not served.has(i) and own.has(i))
        self._removed = {**self._removed, model.version: (current.version, removed)}
        return removed

    def count_events(self, batch: list[Event]) -> None:
        """The Prometheus count of a stored batch's events per arm (those with a user_id)."""
        serving = self._serving
        if serving is None:
            return
        exp = serving.experiment
        split = [(a.arm, a.traffic) for a in exp.arms]
        # counted per user and type first: a batch of 1,000 events holds a few users, and this
        # runs on the event loop
        per_user = Counter((e.user_id, e.type) for e in batch if e.user_id)
        per_arm: Counter[tuple[str, str]] = Counter()
        for (user, kind), n in per_user.items():
            per_arm[assign_arm(exp.name, str(user), split), kind] += n
        for (arm, kind), n in per_arm.items():
            self.telemetry.arm_event(exp.name, arm, kind, n)

    def _load_arms(self, arms: list[Arm]) -> tuple[dict[str, Recommender], dict[str, tuple]]:
        """The arms' models (arm -> model; a version loaded once however many arms name it, the
        served one shared) and each version's files as they were loaded (`Serving.signatures`)."""
        current = self.versions.current
        by_version: dict[str, Recommender] = {current.version: current} if current else {}
        signatures: dict[str, tuple] = {}
        for a in arms:
            try:
                if a.version not in signatures:  # taken before loading: a change during it is seen
                    signatures[a.version] = folder_signature(self.versions.version_dir(a.version))
                if a.version not in by_version:
                    by_version[a.version] = self.versions.load(a.version)
            except ArtifactError as exc:
                raise ArmError(a.arm, f"version {a.version!r} cannot be served: {exc.public}; "
                                      f"see GET /admin/versions") from None
        freeze_heap()  # the arms' catalogues out of the collector's reach, as a served model's
        return {a.arm: by_version[a.version] for a in arms}, signatures

    def start(self, name: str, arms: list[Arm]) -> Experiment:
        """Load the arms, store the experiment (ExperimentConflict when the name is taken or one
        runs) and serve it here at once. Nothing is stored when an arm cannot be loaded."""
        with self._lock:
            check_startable(self.db, name)  # before loading: that takes seconds on a large model
            models, signatures = self._load_arms(arms)
            current = self.versions.current
            exp = start_experiment(self.db, name, arms, current.version if current else None)
            self._serving = Serving(exp, models, signatures, current.catalog if current else None)
            self.problem = None
            log.info("experiment started", extra={"experiment": name,
                                                  "arms": {a.arm: a.version for a in arms}})
            return exp

    def end(self, exp: Experiment, winner: str) -> tuple[Experiment | None, str | None, str | None]:
        """Activate the winner's version (ServedVersions.activate, recorded like any activation),
        then mark the experiment ended; from then on all traffic goes to the active version.
        Decided under the catalogue lock, on the store's newest state: an end that another
        request made meanwhile leaves this one with nothing to do. When the served catalogue
        was changed while the experiment ran, the winner's version would undo those changes:
        the served version is kept when it is the winner's revised since
        (`revised_from`), else CatalogueChangedError. Returns (the ended experiment or None when
        another request ended it, the version served before, the version served now).
        ArtifactError when the winner cannot be activated (its files changed since its arm was
        loaded are loaded again, and checked): the experiment keeps running."""
        arm = next(a for a in exp.arms if a.arm == winner)
        with self._lock, self.versions.changing():
            self.versions.follow_pointer()  # a revision another process made meanwhile
            running = running_experiment(self.db)
            if running is None or running.name != exp.name:
                return None, None, None
            serving = self._serving if self._serving and self._serving.name == exp.name else None
            loaded = serving.models.get(winner) if serving else None
            if loaded is not None and serving is not None and \
                    serving.signatures.get(arm.version) != folder_signature(self.versions.version_dir(arm.version)):
                loaded = None  # rewritten since its arm was loaded: loaded (and checked) again
            current = self.versions.current
            version = self._kept_or_winner(arm, current, loaded, running.served_at_start)
            previous = current.version if current else None
            if current is None or version != current.version:
                # activated first: a process that then sees the experiment ended also sees the
                # activation, and never serves the version before in between
                _, previous = self.versions.activate(version, f"experiment {exp.name} ended: arm "
                                                              f"{winner} won", loaded=loaded)
            ended = end_experiment(self.db, exp.name, winner)
            if serving is not None:
                self._serving = None
            log.info("experiment ended", extra={"experiment": exp.name, "winner": winner,
                                                "version": version})
            return ended, previous, version

    def _catalog_of(self, version: str | None, models: dict[str, Recommender]) -> Catalog | None:
        """The catalogue of `version` when this process holds it (an arm's, or the served one)."""
        held = [m for m in (*models.values(), self.versions.current) if m is not None and m.version == version]
        return held[0].catalog if held else None

    def _kept_or_winner(self, arm: Arm, current: Recommender | None, loaded: Recommender | None,
                        started_on: str | None) -> str:
        """The version an end that `arm` won serves: the arm's, or the served one when that is the
        arm's with the catalogue changes made while the experiment ran (`started_on` was served
        when it started); CatalogueChangedError when the served catalogue changed meanwhile and
        the arm's version would undo that. Arms on catalogues of their own from the start are
        what the experiment tests: nothing changed meanwhile, the winner is served as it is."""
        if current is None or current.version == arm.version or started_on is None or current.version == started_on:
            return arm.version
        winner = loaded.manifest if loaded is not None else read_manifest(self.versions.version_dir(arm.version))
        if same_catalogue(current.manifest, winner):
            return arm.version
        if arm.version == started_on and revised_from(current.manifest, arm.version, self.versions.artifacts_dir):
            return current.version
        raise CatalogueChangedError(
            f"the served catalogue changed while the experiment ran ({current.version} is served, "
            f"on another catalogue than arm {arm.arm}'s {arm.version}): serving {arm.version} would "
            f"undo those changes; end it with the arm the served version was revised from, or "
            f"POST /admin/versions/{arm.version}/activate?force=true first to serve it as it is")

    def follow(self) -> None:
        """Serve what the store says runs: load a new experiment's arms, drop an ended one's
        (taking the winner's activation from the arms already loaded)."""
        with self._lock:
            # read under the lock: read before a start here commits and acted on after it, the
            # store's "nothing runs" would drop the experiment just started
            exp = running_experiment(self.db)
            serving = self._serving
            if serving is not None and (exp is None or exp.name != serving.name):
                self.versions.follow_activations(loaded=serving.by_version())
                self._serving = None
                log.info("experiment ended elsewhere", extra={"experiment": serving.name})
            if exp is None or (self._serving is not None) or (
                    self.problem is not None and self.problem[0] == exp.name):
                return
            try:
                models, signatures = self._load_arms(list(exp.arms))
                self._serving = Serving(exp, models, signatures, self._catalog_of(exp.served_at_start, models))
                self.problem = None
                log.info("following experiment", extra={"experiment": exp.name})
            except ArmError as exc:
                self.problem = (exp.name, str(exc))
                log.error("cannot serve the running experiment; answering with the active "
                          "version", extra={"experiment": exp.name, "error": str(exc)})
