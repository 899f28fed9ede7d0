"""Experiments between model versions: their rows, and the events counted per user in a window.

Which arm a user is in is not stored: it is a hash of the user id (`api.abtest`), so the
service derives it from the events' `user_id` and the store only groups events by user.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Row, and_, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from .db import Database
from .tables import events, experiments


class ExperimentConflict(RuntimeError):
    """The name is taken, or another experiment is running; the message says which and what to do."""


@dataclass(frozen=True)
class Arm:
    arm: str
    version: str
    traffic: float


@dataclass(frozen=True)
class Experiment:
    name: str
    arms: tuple[Arm, ...]  # the split's order; the first arm is the control
    status: str  # running | ended
    started_at: datetime  # naive UTC, as stored
    ended_at: datetime | None
    winner: str | None
    served_at_start: str | None = None  # the version served when it started (None: not kept)

    @property
    def running(self) -> bool:
        return self.status == "running"


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _experiment(row: Row[Any]) -> Experiment:
    m = row._mapping
    arms = tuple(Arm(str(a["arm"]), str(a["version"]), float(a["traffic"])) for a in m["arms"])
    return Experiment(name=m["name"], arms=arms, status=m["status"], started_at=m["started_at"],
                      ended_at=m["ended_at"], winner=m["winner"], served_at_start=m["served_at_start"])


def start_experiment(db: Database, name: str, arms: list[Arm], served: str | None = None) -> Experiment:
    """Store a running experiment, started while `served` was the version served;
    ExperimentConflict when `name` exists or one is running."""
    row = {"name": name, "arms": [asdict(a) for a in arms], "status": "running",
           "running_slot": 1, "started_at": _now(), "ended_at": None, "winner": None,
           "served_at_start": served}
    try:
        with db.engine.begin() as conn:
            _check_free(conn, name)
            conn.execute(insert(experiments).values(row))
    except IntegrityError:  # a concurrent start won between the check and the insert
        check_startable(db, name)
        raise ExperimentConflict(f"experiment {name!r} could not be started: another start "
                                 f"happened at the same time; try again") from None
    return _experiment(_row(db, name))


def check_startable(db: Database, name: str) -> None:
    """ExperimentConflict when `name` exists or an experiment is running (checked again, in
    the same transaction as the insert, by `start_experiment`)."""
    with db.engine.connect() as conn:
        _check_free(conn, name)


def _check_free(conn: Any, name: str) -> None:
    taken = conn.execute(select(experiments.c.status).where(experiments.c.name == name)).first()
    if taken is not None:
        raise ExperimentConflict(f"an experiment named {name!r} exists already ({taken[0]}): "
                                 f"choose another name")
    running = conn.execute(select(experiments.c.name)
                           .where(experiments.c.status == "running")).first()
    if running is not None:
        raise ExperimentConflict(f"experiment {running[0]!r} is running, and one runs at a time: "
                                 f"end it first (POST /admin/experiments/{running[0]}/end)")


def _row(db: Database, name: str) -> Row[Any]:
    with db.engine.connect() as conn:
        row = conn.execute(select(experiments).where(experiments.c.name == name)).one()
    return row


def get_experiment(db: Database, name: str) -> Experiment | None:
    with db.engine.connect() as conn:
        row = conn.execute(select(experiments).where(experiments.c.name == name)).first()
    return _experiment(row) if row is not None else None


def running_experiment(db: Database) -> Experiment | None:
    with db.engine.connect() as conn:
        row = conn.execute(select(experiments).where(experiments.c.status == "running")).first()
    return _experiment(row) if row is not None else None


def list_experiments(db: Database) -> list[Experiment]:
    """Newest first."""
    with db.engine.connect() as conn:
        rows = conn.execute(select(experiments).order_by(experiments.c.started_at.desc())).all()
    return [_experiment(r) for r in rows]


def end_experiment(db: Database, name: str, winner: str) -> Experiment | None:
    """Mark `name` ended with `winner`; None when it was not running (ended meanwhile)."""
    with db.engine.begin() as conn:
        done = conn.execute(
            update(experiments).where(experiments.c.name == name, experiments.c.status == "running")
            .values(status="ended", running_slot=None, ended_at=_now(), winner=winner)).rowcount
    return _experiment(_row(db, name)) if done else None


@dataclass(frozen=True)
class UserCounts:
    """One user's events of one type in a window."""

    user_id: str
    type: str
    events: int
    answers: int  # distinct request_ids among them


def counts_by_user(db: Database, since: datetime, until: datetime | None) -> list[UserCounts]:
    """Events with a user_id and `since <= timestamp <= until` (open-ended without `until`),
    counted per user and type."""
    window = [events.c.timestamp >= since, events.c.user_id.is_not(None)]
    if until is not None:
        window.append(events.c.timestamp <= until)
    query = (select(events.c.user_id, events.c.type, func.count(),
                    func.count(events.c.request_id.distinct()))
             .where(and_(*window)).group_by(events.c.user_id, events.c.type))
    with db.engine.connect() as conn:
        rows = conn.execute(query).all()
    return [UserCounts(str(u), str(t), int(n), int(a)) for u, t, n, a in rows]
