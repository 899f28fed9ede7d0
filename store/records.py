"""Version decisions, activations and admin jobs: what several server processes must agree on."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, insert, select, update

from .db import Database
from .tables import activations, decisions, jobs

JOB_FIELDS = tuple(c.name for c in jobs.columns)


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def record_decision(db: Database, version: str, job_id: str | None, activated: bool,
                    reason: str) -> None:
    row = {"job_id": job_id, "decided_at": _now(), "activated": activated, "reason": reason}
    with db.engine.begin() as conn:
        if not conn.execute(update(decisions).where(decisions.c.version == version).values(row)).rowcount:
            conn.execute(insert(decisions).values(version=version, **row))


def read_decisions(db: Database) -> dict[str, dict[str, Any]]:
    """version -> {job_id, decided_at, activated, reason}."""
    with db.engine.connect() as conn:
        rows = conn.execute(select(decisions)).mappings().all()
    return {r["version"]: {"job_id": r["job_id"], "decided_at": r["decided_at"].isoformat() + "Z",
                           "activated": r["activated"], "reason": r["reason"]} for r in rows}


def record_activation(db: Database, version: str, reason: str) -> int:
    """Append an activation; returns its id (ids grow: the largest is the newest)."""
    with db.engine.begin() as conn:
        result = conn.execute(insert(activations).values(version=version, activated_at=_now(),
                                                         reason=reason))
        key = result.inserted_primary_key
        return int(key[0]) if key else 0


def latest_activation(db: Database) -> tuple[int, str] | None:
    """(id, version) of the newest activation, None before the first."""
    with db.engine.connect() as conn:
        row = conn.execute(select(activations.c.id, activations.c.version)
                           .order_by(activations.c.id.desc()).limit(1)).first()
    return (int(row[0]), str(row[1])) if row else None


def save_job(db: Database, row: dict[str, Any]) -> None:
    """Insert or update a job's row (`row` has `JOB_FIELDS`; `heartbeat_at` may be left out)."""
    values = {k: row[k] if k != "heartbeat_at" else row.get(k) for k in JOB_FIELDS if k != "id"}
    with db.engine.begin() as conn:
        if not conn.execute(update(jobs).where(jobs.c.id == row["id"]).values(values)).rowcount:
            conn.execute(insert(jobs).values(id=row["id"], **values))


def claim_job_version(db: Database, job_id: str, version: str) -> bool:
    """Records the version a running job trained, unless its row was cancelled meanwhile:
    whether it was recorded (its owner may then publish it). A cancel through the row
    (`cancel_job_row`) takes only a row without a version, so of the two one wins."""
    with db.engine.begin() as conn:
        return bool(conn.execute(
            update(jobs).where(jobs.c.id == job_id, jobs.c.status == "running", jobs.c.version.is_(None))
            .values(version=version)).rowcount == 1)


def cancel_job_row(db: Database, job_id: str, error: str, finished_at: str) -> bool:
    """Cancels a queued or running job through its row, unless its owner has claimed a version
    (`claim_job_version`) or it finished: whether it was cancelled."""
    with db.engine.begin() as conn:
        return bool(conn.execute(
            update(jobs).where(jobs.c.id == job_id, jobs.c.status.in_(("queued", "running")),
                               jobs.c.version.is_(None))
            .values(status="cancelled", error=error, finished_at=finished_at)).rowcount == 1)


def load_jobs(db: Database, job_id: str | None = None) -> list[dict[str, Any]]:
    query = select(jobs).order_by(jobs.c.created_at.desc())
    if job_id is not None:
        query = query.where(jobs.c.id == job_id)
    with db.engine.connect() as conn:
        return [dict(r) for r in conn.execute(query).mappings().all()]


def beat_jobs(db: Database, owner: str, at: str) -> int:
    """`owner`'s queued and running jobs live at `at` (ISO 8601, as the rows' times): how many."""
    with db.engine.begin() as conn:
        return int(conn.execute(
            update(jobs).where(jobs.c.owner == owner, jobs.c.status.in_(("queued", "running")))
            .values(heartbeat_at=at)).rowcount)


def fail_silent_jobs(db: Database, silent_since: str, error: str, finished_at: str) -> int:
    """Mark failed the queued or running jobs with no sign of life (heartbeat, else start, else
    creation) after `silent_since`: their process is gone, on whatever host, and nothing else
    would ever end them. Times are ISO 8601 strings of one form, which sort as the times do."""
    alive_at = func.coalesce(jobs.c.heartbeat_at, jobs.c.started_at, jobs.c.created_at)
    silent = (jobs.c.status.in_(("queued", "running")), alive_at < silent_since)
    # read first: this runs on every read of the jobs, and a write (even of no row) waits for
    # SQLite's write lock, so a listing waited 30 s behind another writer and answered 503
    with db.engine.connect() as conn:
        if not conn.execute(select(func.count()).select_from(jobs).where(*silent)).scalar_one():
            return 0
    with db.engine.begin() as conn:
        return int(conn.execute(
            update(jobs).where(*silent).values(status="failed", error=error, finished_at=finished_at)).rowcount)


def fail_unfinished_jobs(db: Database, owner: str, error: str) -> int:
    """Mark the queued or running jobs of `owner` (a process that is gone) failed."""
    with db.engine.begin() as conn:
        return int(conn.execute(
            update(jobs).where(jobs.c.owner == owner, jobs.c.status.in_(("queued", "running")))
            .values(status="failed", error=error, finished_at=_now().isoformat(timespec="seconds")
                    + "+00:00")).rowcount)
