"""Builds the FastAPI app; the model is loaded in the lifespan, not at import."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from recsys.artifact import remove_stale_temp
from recsys.recommender import Recommender
from store.db import Database, unavailable

from . import errors, openapi
from .config import Settings, get_settings
from .experiments import Experiments
from .jobs import JobManager, TrainRunner
from .middleware import BodyLimitMiddleware, RequestContextMiddleware
from .profiles import Profiles
from .routes import (
    admin,
    admin_items,
    admin_users,
    compare,
    docs,
    events,
    experiments,
    explain,
    health,
    items,
    metrics,
    model,
    page,
    recommend,
    rules,
    similar,
    suggest,
)
from .routes import synonyms as synonyms_routes
from .routes.page import STATIC
from .rules import ServedRules
from .served_versions import ServedVersions
from .standby import Standby
from .store_snapshot import StoreSnapshot
from .suggestions import Suggestions
from .synonyms import ServedSynonyms, read_synonyms
from .telemetry import Telemetry
from .watchers import PointerWatcher, StandbyLoader, StoreFollower

log = logging.getLogger("recsys.api")


def create_app(settings: Settings | None = None, *, model_path: Path | None = None,
               recommender: Recommender | None = None,
               before_serving: Callable[[], None] | None = None,
               train_runner: TrainRunner | None = None) -> FastAPI:
    """`model_path`: a version folder to serve (pinned) instead of the artifacts' current one.
    `recommender`: an already loaded model to serve from the start (tests, embedding).
    `before_serving`: a worker of several (api/server.py): the model is loaded before the app
    accepts a request, then this is called (off the event loop) and serving starts when it
    returns.
    `train_runner`: what trains the retrain jobs (api/jobs.py); the command line's app
    (cli/app.py) has training's, an app without one fails its jobs with the reason."""
    settings = settings or get_settings()
    telemetry = Telemetry()
    # connects on first use (the lifespan migrates it first); a statement waits for a lock
    # another process holds on a SQLite file at most a request's budget, then answers 503: its
    # client would have given up on a longer wait. Jobs retry what the store could not take.
    db = Database(settings.store_url, busy_timeout_s=settings.request_timeout_s)
    standby = Standby(settings.artifacts_dir, settings.standby_versions)
    snapshot = StoreSnapshot(settings.artifacts_dir, db.public_url, writes=model_path is None)
    synonyms = ServedSynonyms(db, lambda: _served_models(app), read_synonyms(settings), snapshot)
    suggestions = Suggestions(db)
    versions = ServedVersions(settings.artifacts_dir, pinned=model_path,
                       on_swap=lambda rec: _on_swap(rec, synonyms, suggestions, telemetry), db=db,
                       standby=standby if model_path is None else None)
    app = FastAPI(title="Explainable facet-attention recommender", version="0.1.0", lifespan=_lifespan,
                  docs_url=None, redoc_url=None)  # api.routes.docs: the same pages, without a CDN
    app.state.settings, app.state.telemetry, app.state.versions = settings, telemetry, versions
    app.state.db = db
    app.state.experiments = Experiments(versions, db, telemetry)
    app.state.suggestions = suggestions
    app.state.rules = ServedRules(db, versions, snapshot)
    app.state.synonyms = synonyms
    app.state.profiles = Profiles(db, settings.profile_ttl_s, settings.profile_users, settings.profile_events)
    app.state.standby = StandbyLoader(versions, standby, settings.watch_interval_s)
    app.state.jobs = JobManager(versions, telemetry, db, settings.max_queued_jobs, train_runner)
    app.state.initial_model = recommender
    app.state.before_serving = before_serving
    errors.install(app)
    openapi.install(app, settings)
    app.add_middleware(BodyLimitMiddleware, limit=settings.max_body_bytes,
                       upload_limit=settings.max_upload_bytes, upload_paths=("/admin/train",))
    app.add_middleware(RequestContextMiddleware, telemetry=telemetry)  # outermost: sees every answer
    for r in (health, recommend, explain, compare, similar, suggest, items, model, metrics, events, admin, admin_items,
              admin_users, experiments, rules, synonyms_routes, page, docs):
        app.include_router(r.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.mount(docs.ASSETS, docs.assets(), name="docs-assets")
    return app


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    versions: ServedVersions = app.state.versions
    db: Database = app.state.db
    standby: StandbyLoader = app.state.standby
    # the schema at Alembic's head before anything reads or writes it; with the store
    # unavailable the process starts all the same (/recommend needs no store: a worker replacing
    # one, or a replica restarted, during a database outage serves; the store's routes answer
    # 503) and the watcher's first poll that reaches the store migrates it
    schema = _Schema(db, app.state.jobs.recover)
    schema.ensure(at_start=True)
    removed = remove_stale_temp(settings.artifacts_dir)  # what killed writers left behind
    if removed:
        log.info("removed stale temporary folders", extra={"removed": removed})
    if settings.torch_threads:
        import torch

        torch.set_num_threads(settings.torch_threads)
    experiments: Experiments = app.state.experiments
    # the rules in force before the first answer (else the watcher reads them), or those kept
    # when the store was last read, while it is unavailable
    unread = [served for served in (app.state.rules, app.state.synonyms)
              if not (schema.done and _follow_rules(served))]
    if unread:
        _restore_rules(unread)
    # the running experiment first: when it has ended, the winner's activation is taken from
    # its arms already in memory
    watcher = PointerWatcher(versions, settings.watch_interval_s, followers=(schema.ensure, experiments.follow))
    follower = StoreFollower(versions, settings.watch_interval_s,
                             followers=(schema.ensure, app.state.profiles.follow, app.state.rules.follow,
                                        app.state.synonyms.follow), outage=watcher.outage)
    if app.state.initial_model is not None:
        versions.mark_activations_seen()
        versions.install(app.state.initial_model)
        _follow_experiment(experiments)  # an experiment running when this process starts
    elif app.state.before_serving is not None:
        # one worker of several: no connection reaches it before its model (and the versions
        # it keeps loaded ahead) are loaded, or the model has failed to load (/ready then says
        # why); the supervisor opens the port once every worker is there
        await asyncio.to_thread(_load_then_follow, versions, experiments)
        await asyncio.to_thread(standby.refresh)
        # following the store while it waits for its go: a spare worker (api/server.py) may
        # wait long, and serves what the others serve when it replaces one of them
        watcher.start()
        follower.start()
        standby.start()
        await asyncio.to_thread(app.state.before_serving)
    else:  # load off the event loop: /health answers and /ready says 503 meanwhile
        def load() -> None:
            _load_then_follow(versions, experiments)
            standby.refresh()

        threading.Thread(target=load, name="model-loader", daemon=True).start()
    if not watcher.started:
        watcher.start()
        follower.start()
        standby.start()
    log.info("service started", extra={"artifacts_dir": str(settings.artifacts_dir)})
    try:
        yield
    finally:
        standby.stop()
        watcher.stop()
        follower.stop()
        app.state.jobs.shutdown()
        db.dispose()
        log.info("service stopped")


def _on_swap(rec: Recommender, synonyms: ServedSynonyms, suggestions: Suggestions, telemetry: Telemetry) -> None:
    """A model about to be served (`ServedVersions.install`): given the synonyms in force,
    its suggestions built in the background, and said so."""
    synonyms.apply(rec)
    suggestions.prepare(rec)
    telemetry.model_served(rec.version)


def _served_models(app: FastAPI) -> list[Recommender | None]:
    """The models this process answers with now: the served version, the running experiment's arms."""
    serving = app.state.experiments.serving
    return [app.state.versions.current, *(serving.by_version().values() if serving is not None else ())]


def _follow_rules(served: ServedRules | ServedSynonyms) -> bool:
    """Read them from the store; False when it is unavailable."""
    try:
        served.follow()
    except Exception as exc:
        if not unavailable(exc):
            raise
        return False
    return True


def _restore_rules(unread: list[ServedRules | ServedSynonyms]) -> None:
    """The store unavailable at start: the rules and synonyms it could not give as another
    process last read them (`api.store_snapshot`), said either way."""
    what = " and ".join(served.kind for served in unread)
    kept = [(served, served.restore()) for served in unread]
    if all(n is None for _, n in kept):
        log.warning(f"no {what} of this store were kept in the artifacts folder: serving none until "
                    f"the store answers")
        return
    counts = ", ".join(f"{n or 0} {served.kind}" for served, n in kept)
    log.warning(f"serving the {what} kept when the store was last read ({counts}) until the store answers",
                extra={"revisions": [served.book.revision for served, _ in kept]})


def _load_then_follow(versions: ServedVersions, experiments: Experiments) -> None:
    """The served model, then the running experiment's arms (sharing the served model)."""
    versions.load_initial()
    _follow_experiment(experiments)


def _follow_experiment(experiments: Experiments) -> None:
    """The experiment running at start; with the store unavailable, the watcher follows it
    once the store answers (and says so)."""
    try:
        experiments.follow()
    except Exception as exc:
        if not unavailable(exc):
            log.exception("following the running experiment failed")


class _Schema:
    """The store migrated to Alembic's head and the jobs of stopped processes failed
    (`JobManager.recover`), once: at start, or at the first poll that reaches a store that was
    unavailable at start."""

    def __init__(self, db: Database, recover: Callable[[], None]):
        self.db, self.recover, self.done = db, recover, False
        self._lock = threading.Lock()  # the pointer watcher and the store follower both ask

    def ensure(self, at_start: bool = False) -> None:
        if self.done:
            return
        with self._lock:
            if not self.done:
                self._migrate(at_start)

    def _migrate(self, at_start: bool) -> None:
        try:
            self.db.upgrade()
            self.recover()
            self.done = True
        except Exception as exc:
            if not at_start or not unavailable(exc):
                raise  # the watcher says the store is unavailable (once), or logs a bug
            log.warning("the store is unavailable at start; serving without it (its routes "
                        "answer 503) and migrating it once it answers",
                        extra={"error": type(exc.__cause__ or exc).__name__,
                               "detail": str(exc).splitlines()[0][:300]})
