"""Experiments between model versions (admin token): start one, read its figures, end it.

One experiment runs at a time (a second start is a 409 until the first ends) and names are
unique forever, so a report's name always means the same users and window. Ending activates
the winner's version and sends all traffic there.
"""

from __future__ import annotations

import math
import re

from fastapi import APIRouter, HTTPException

from recsys.artifact import VERSION_NAME
from recsys.errors import ArtifactError
from store.db import Database
from store.experiments import (
    Arm,
    Experiment,
    ExperimentConflict,
    get_experiment,
    list_experiments,
)

from ..deps import AdminDep, DatabaseDep, ExperimentsDep
from ..experiment_report import describe, report
from ..experiments import ArmError, CatalogueChangedError
from ..limits import field_error
from ..schemas import (
    EndExperimentOut,
    EndExperimentRequest,
    ExperimentReportOut,
    ExperimentRequest,
    ExperimentsOut,
    error_responses,
)

router = APIRouter(prefix="/admin/experiments", tags=["admin"], dependencies=[AdminDep],
                   responses=error_responses(401, 403, 404, 500, 503))

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,63}$")  # it is a path segment of the routes
ARM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,31}$")
MAX_ARMS = 8
SHARE_TOLERANCE = 1e-6


@router.post("", status_code=201, response_model=ExperimentReportOut,
             responses=error_responses(409, 422))
def start(req: ExperimentRequest, experiments: ExperimentsDep, db: DatabaseDep) -> dict:
    """Start splitting shoppers (by a hash of their user_id) between the arms' versions. Every
    version is loaded before anything is stored: a missing or broken one is a 422 naming its
    arm. 409 when the name is taken or another experiment is running."""
    arms = checked_arms(req)
    try:
        exp = experiments.start(req.name, arms)
    except ArmError as exc:
        raise field_error(("arms", exc.arm), str(exc)) from None
    except ExperimentConflict as exc:
        raise HTTPException(409, detail=str(exc)) from None
    return report(db, exp)


def checked_arms(req: ExperimentRequest) -> list[Arm]:
    if not NAME.match(req.name):
        raise field_error(("name",), f"{req.name[:80]!r} is not a usable name: 1-64 letters, "
                                     f"digits, '.', '_' or '-', starting with a letter or digit")
    if not 2 <= len(req.arms) <= MAX_ARMS:
        raise field_error(("arms",), f"an experiment needs 2 to {MAX_ARMS} arms, got "
                                     f"{len(req.arms)}: name each arm's version, e.g. "
                                     f"{{\"A\": \"V1\", \"B\": \"V2\"}}")
    for arm, version in req.arms.items():
        if not ARM.match(arm):
            raise field_error(("arms", arm[:40]), "an arm name is 1-32 letters, digits, '_' or "
                                                  "'-', starting with a letter or digit")
        if not VERSION_NAME.match(version):
            raise field_error(("arms", arm), f"{version[:80]!r} is not a version name; see GET "
                                             f"/admin/versions")
    traffic = req.traffic if req.traffic is not None else {a: 1 / len(req.arms) for a in req.arms}
    for arm in traffic:
        if arm not in req.arms:
            raise field_error(("traffic", arm[:40]), f"no arm {arm[:40]!r} in arms "
                                                     f"({', '.join(req.arms)}): remove it or add the arm")
    for arm in req.arms:
        share = traffic.get(arm)
        if share is None:
            raise field_error(("traffic",), f"arm {arm!r} has no share: give every arm one")
        if not (math.isfinite(share) and 0 < share <= 1):
            raise field_error(("traffic", arm), f"a share is above 0 and at most 1, got {share}")
    total = sum(traffic.values())
    if abs(total - 1) > SHARE_TOLERANCE:
        raise field_error(("traffic",), f"the shares sum to {total:g}, not 1: e.g. "
                                        + ", ".join(f"{a}: {1 / len(req.arms):.4g}" for a in req.arms))
    return [Arm(arm, version, float(traffic[arm])) for arm, version in req.arms.items()]


@router.get("", response_model=ExperimentsOut)
def list_all(db: DatabaseDep) -> dict:
    """Every experiment, newest first, without figures (GET /admin/experiments/{name} has them)."""
    exps = list_experiments(db)
    running = next((e.name for e in exps if e.running), None)
    return {"running": running, "experiments": [describe(e) for e in exps]}


@router.get("/{name}", response_model=ExperimentReportOut)
def get(name: str, db: DatabaseDep, experiments: ExperimentsDep) -> dict:
    """Per arm impressions, CTR, cart and purchase rates with 95% intervals, and every arm
    against the first: the difference, its 95% interval and whether it is significant."""
    exp = _known(db, name)
    out = report(db, exp)
    problem = experiments.problem
    if exp.running and problem is not None and problem[0] == name:
        out["serving"] = f"this process answers with the active version: {problem[1]}"
    return out


@router.post("/{name}/end", response_model=EndExperimentOut, responses=error_responses(409, 422))
def end(name: str, req: EndExperimentRequest, db: DatabaseDep, experiments: ExperimentsDep) -> dict:
    """Stop the experiment and activate the winner's version (recorded like every activation:
    a rollback is activating the version before). 409 when it has ended already."""
    exp = _known(db, name)
    if not exp.running:
        raise HTTPException(409, detail=f"experiment {name!r} ended at {exp.ended_at} with winner "
                                        f"{exp.winner!r}; to serve another version, POST "
                                        f"/admin/versions/VERSION/activate")
    arms = [a.arm for a in exp.arms]
    if req.winner not in arms:
        raise field_error(("winner",), f"no arm {req.winner[:40]!r} in experiment {name!r}: "
                                       f"one of {', '.join(arms)}")
    try:
        ended, previous, serving = experiments.end(exp, req.winner)
    except ArtifactError as exc:
        raise HTTPException(409, detail=f"the winner's version cannot be activated, the experiment "
                                        f"keeps running: {exc.public}") from None
    except CatalogueChangedError as exc:
        raise HTTPException(409, detail=f"{exc}; the experiment keeps running") from None
    if ended is None:
        raise HTTPException(409, detail=f"experiment {name!r} was ended by another request "
                                        f"meanwhile; see GET /admin/experiments/{name}")
    return {"serving": serving, "previous": previous, "experiment": report(db, ended)}


def _known(db: Database, name: str) -> Experiment:
    exp = get_experiment(db, name) if NAME.match(name) else None
    if exp is None:
        raise HTTPException(404, detail=f"no experiment {name[:64]!r}; see GET /admin/experiments")
    return exp

