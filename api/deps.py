"""Dependencies of the routes, as `Annotated` aliases.

They are `async def` on purpose: they only read app state, and an async dependency runs on the
event loop instead of costing a thread-pool hop per request.
"""

from __future__ import annotations

import secrets
from typing import Annotated

import anyio
from fastapi import Depends, HTTPException, Request, Response

from recsys.recommender import Recommender
from store.db import Database

from .config import Settings
from .experiments import Experiments
from .jobs import JobManager
from .middleware import MODEL_VERSION_HEADER
from .rules import ServedRules
from .served_versions import ServedVersions


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_versions(request: Request) -> ServedVersions:
    return request.app.state.versions


async def get_jobs(request: Request) -> JobManager:
    return request.app.state.jobs


async def get_scoring(request: Request) -> anyio.CapacityLimiter:
    """The limiter of the threads that score requests (made on first use, inside the loop)."""
    limiter = getattr(request.app.state, "scoring", None)
    if limiter is None:
        limiter = request.app.state.scoring = anyio.CapacityLimiter(
            request.app.state.settings.scoring_threads)
    return limiter


def served_model(request: Request) -> Recommender:
    """The model this request uses from start to end, read once (see `ServedVersions`); a 503
    while none is loaded."""
    rec: Recommender | None = request.app.state.versions.current
    if rec is None:
        raise HTTPException(503, detail="no model is loaded yet; see GET /ready",
                            headers={"Retry-After": "5"})
    return rec


async def get_model(request: Request, response: Response) -> Recommender:
    """`served_model`, its version in the answer's header."""
    rec = served_model(request)
    response.headers[MODEL_VERSION_HEADER] = rec.version
    return rec


async def get_experiments(request: Request) -> Experiments:
    return request.app.state.experiments


async def get_rules(request: Request) -> ServedRules:
    return request.app.state.rules


async def get_db(request: Request) -> Database:
    return request.app.state.db


def _check_bearer(request: Request, token: str | None, what: str, setting: str) -> None:
    """404 when `token` is unset (the feature is off), 401 without a bearer token, 403 for a wrong one."""
    if token is None:
        raise HTTPException(404, detail=f"{what} is off: set {setting} to turn it on")
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not given:
        raise HTTPException(401, detail=f"{what} needs 'Authorization: Bearer <token>'",
                            headers={"WWW-Authenticate": "Bearer"})
    if not secrets.compare_digest(given.strip().encode(), token.encode()):
        raise HTTPException(403, detail=f"wrong {what} token")


async def require_admin(request: Request) -> None:
    _check_bearer(request, request.app.state.settings.admin_token, "admin", "RECSYS_ADMIN_TOKEN")


async def require_events(request: Request) -> None:
    _check_bearer(request, request.app.state.settings.events_token, "events",
                  "RECSYS_EVENTS_TOKEN")


SettingsDep = Annotated[Settings, Depends(get_settings)]
VersionsDep = Annotated[ServedVersions, Depends(get_versions)]
JobsDep = Annotated[JobManager, Depends(get_jobs)]
ModelDep = Annotated[Recommender, Depends(get_model)]
ScoringDep = Annotated[anyio.CapacityLimiter, Depends(get_scoring)]
DatabaseDep = Annotated[Database, Depends(get_db)]
ExperimentsDep = Annotated[Experiments, Depends(get_experiments)]
RulesDep = Annotated[ServedRules, Depends(get_rules)]
AdminDep = Depends(require_admin)
EventsDep = Depends(require_events)
