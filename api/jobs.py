"""Retraining as background jobs, one at a time, each in its own worker process.

The worker is a fresh interpreter (multiprocessing "spawn"): training cannot block the event
loop, hold the GIL of the serving threads, or leave state behind in the service. It trains into
a hidden staging folder inside the artifacts folder and reports progress through a queue; the
service then moves the new version next to the others (same file system: an atomic rename) and
decides whether to serve it (recsys/promotion.py): only when it was evaluated on the same data
as the served version (same catalogue, the served version replayed on its held-out queries) and
is not worse there, or when forced. The decision and its reason go to the store, with the job. A
failed or cancelled job leaves no version behind and the served model untouched.

Jobs are rows of the store too (`store.records`), written at each change of state and every
second of progress: every server process sees every job, and one whose process died is marked
failed when a process on the same host starts. A job runs in the process that took its request
(with `recsys serve --workers N`, one worker; behind a load balancer, one replica), once; any
process answers its status from the store, and DELETE on another process marks its row
cancelled, which the owner notices within a second and stops the training.

The worker dies with the service (a parent-death signal on Linux, and a watchdog on the parent's
pid everywhere), runs under an address-space limit (RECSYS_TRAIN_MEMORY_MB), and its staging
and upload folders are locked `TempDir`s: whatever a kill leaves, the next start removes.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import os
import queue
import signal
import socket
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from recsys.artifact import TempDir, hold_lock
from recsys.errors import ArtifactError
from recsys.promotion import decide_after_training
from recsys.recommender import Recommender
from store.db import Database, unavailable
from store.records import (
    beat_jobs,
    cancel_job_row,
    claim_job_version,
    fail_silent_jobs,
    fail_unfinished_jobs,
    load_jobs,
    record_decision,
    save_job,
)

from .errors import redact
from .served_versions import NotServedYet, ServedVersions
from .store_outage import StoreOutage
from .telemetry import Telemetry

log = logging.getLogger("recsys.api.jobs")
_POLL_S = 0.2
# trains one job into its staging folder, in the spawned worker process: (the job's arguments,
# the staging folder, a progress callback (step, total, loss)) -> {"version", "metrics",
# "manifest"}; a module-level function, so that it reaches the spawned process by name
TrainRunner = Callable[[dict[str, Any], Path, Callable[[int, int, float], None]], dict[str, Any]]
_PROGRESS_EVERY_S = 0.2
_WATCHDOG_S = 1.0
_SAVE_PROGRESS_EVERY_S = 1.0
# A process says its queued and running jobs live this often (`heartbeat_at`); a job silent for
# JOB_LEASE_S is failed by whichever process reads it (its owner is gone: killed, or its host or
# container replaced, which `recover` at a start on the same host never sees). Longer than a
# publish's wait for the catalogue lock (`CHANGE_WAIT_S`)
HEARTBEAT_S = 5.0
JOB_LEASE_S = 120.0
_PR_SET_PDEATHSIG = 1
_CANCELLED = "cancelled by DELETE /admin/jobs"


class QueueFullError(RuntimeError):
    pass


class JobStateError(RuntimeError):
    """A job that cannot be cancelled any more (it has finished)."""


@dataclass
class TrainSpec:
    items: Path | None  # None: the served version's catalogue (events only)
    interactions: Path | None  # None: from the events of the store at `events_url`
    judgments: Path | None = None
    probes: Path | None = None
    schema: Path | None = None
    # None: TrainConfig's default (the worker builds the config, training/config.py)
    epochs: int | None = None
    seed: int | None = None
    threads: int | None = None
    force: bool = False
    on_bad_lines: str = "error"  # recsys.io.text.ON_BAD_LINES
    upload: TempDir | None = None  # the job's copies of its files, removed when the job ends
    public_names: dict[str, str] = field(default_factory=dict)  # file path -> what errors show
    memory_mb: int = 0  # address-space limit of the worker (0: none)
    events_url: str | None = None  # train from the events of this store
    since: datetime | None = None  # only events at or after this time

    @property
    def upload_dir(self) -> Path | None:
        return self.upload.path if self.upload is not None else None

    def worker_args(self) -> dict[str, Any]:
        paths = ("items", "interactions", "judgments", "probes", "schema")
        args: dict[str, Any] = {p: (str(getattr(self, p)) if getattr(self, p) else None) for p in paths}
        events = None if self.events_url is None else {
            "url": self.events_url, "since": self.since.isoformat() if self.since else None}
        return {**args, "epochs": self.epochs, "seed": self.seed, "threads": self.threads,
                "memory_mb": self.memory_mb, "parent_pid": os.getpid(), "events": events,
                "on_bad_lines": self.on_bad_lines}

    def public(self, message: str) -> str:
        """`message` with the job's file paths replaced by the names the client gave."""
        for path, name in sorted(self.public_names.items(), key=lambda kv: -len(kv[0])):
            message = message.replace(path, name)
        return message


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class Job:
    spec: TrainSpec
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    status: str = "queued"
    created_at: str = field(default_factory=_now)
    started_at: str | None = None
    finished_at: str | None = None
    step: int = 0
    total: int = 0
    loss: float | None = None
    version: str | None = None
    activated: bool = False
    decision: str | None = None
    metrics: dict | None = None
    error: str | None = None
    # its row took the trained version (`JobManager._claim`): publishing, no longer cancellable
    claimed: bool = False

    def row(self, owner: str) -> dict:
        """The job as a row of the store (`store.tables.jobs`)."""
        return {"id": self.id, "owner": owner, "status": self.status, "created_at": self.created_at,
                "started_at": self.started_at, "finished_at": self.finished_at, "step": self.step,
                "total": self.total, "loss": self.loss, "version": self.version,
                "activated": self.activated, "decision": self.decision, "metrics": self.metrics,
                "error": self.error, "heartbeat_at": _now()}  # a save is a sign of life too

    def to_out(self) -> dict:
        return job_out(self.row(""))

    def finish(self, status: str, error: str | None = None) -> None:
        """`error` is stored and answered without server paths or the database's URL (a job from
        the store's events fails with "the store: no events: nothing to train on")."""
        if self.status == "cancelled":
            return
        self.status, self.finished_at = status, _now()
        self.error = redact(error) if error is not None else None

    @property
    def done(self) -> bool:
        return self.status in ("succeeded", "failed", "cancelled")


def job_out(row: dict) -> dict:
    """`JobOut` of a job's row."""
    done = row["status"] == "succeeded"
    fraction = 1.0 if done else (row["step"] / row["total"] if row["total"] else 0.0)
    return {
        "id": row["id"], "status": row["status"], "created_at": row["created_at"],
        "started_at": row["started_at"], "finished_at": row["finished_at"],
        "progress": {"step": row["step"], "total": row["total"], "loss": row["loss"],
                     "fraction": round(fraction, 4)},
        "version": row["version"], "activated": row["activated"], "decision": row["decision"],
        "metrics": row["metrics"], "error": row["error"],
    }


class JobManager:
    def __init__(self, versions: ServedVersions, telemetry: Telemetry, db: Database, max_queued: int = 8,
                 runner: TrainRunner | None = None):
        """`runner`: what trains a job in its worker process (`training.train_job.run_train_job`,
        handed over by the command line, cli/app.py); without one, a job fails with the reason."""
        self.versions, self.telemetry, self.db, self.max_queued = versions, telemetry, db, max_queued
        self.runner = runner
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        self._saved_at: dict[str, float] = {}
        self._jobs: dict[str, Job] = {}
        self._pending: queue.Queue[Job] = queue.Queue()
        self._stopping = threading.Event()
        self._process: mp.process.BaseProcess | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        # the store unavailable while a job runs: said once, and the job goes on
        self._outage = StoreOutage(log, "saving the training jobs' rows", _SAVE_PROGRESS_EVERY_S)

    # ---- API --------------------------------------------------------------------------------

    def submit(self, spec: TrainSpec) -> Job:
        with self._lock:
            if self._stopping.is_set():
                raise QueueFullError("the service is shutting down")
            if self._pending.qsize() >= self.max_queued:
                raise QueueFullError(f"{self.max_queued} training jobs are already waiting")
            job = Job(spec)
            self._save(job)
            self._jobs[job.id] = job
            self._pending.put(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="training-jobs", daemon=True)
                self._thread.start()
                threading.Thread(target=self._beat, name="training-jobs-heartbeat", daemon=True).start()
        log.info("training job queued", extra={"job": job.id})
        return job

    def get(self, job_id: str) -> Job | None:
        """A job of this process."""
        return self._jobs.get(job_id)

    def out(self, job_id: str) -> dict | None:
        """`JobOut` of any process's job: this one's as it is now, others' as last stored (a
        silent one failed first: `fail_silent`)."""
        job = self._jobs.get(job_id)
        if job is not None:
            return job.to_out()
        self.fail_silent()
        rows = load_jobs(self.db, job_id)
        return job_out(rows[0]) if rows else None

    def all_out(self) -> list[dict]:
        """Every job of the store, newest first (this process's as they are now)."""
        self.fail_silent()
        rows = {r["id"]: job_out(r) for r in load_jobs(self.db)}
        rows.update({j.id: j.to_out() for j in self._jobs.values()})
        return sorted(rows.values(), key=lambda j: j["created_at"], reverse=True)

    def fail_silent(self) -> None:
        """Fail the unfinished jobs of any process that has not said it lives for JOB_LEASE_S:
        gone, on whatever host. Run where jobs are read: a job is never reported running after
        its owner is gone (its own process's jobs say they live every HEARTBEAT_S)."""
        cutoff = (datetime.now(UTC) - timedelta(seconds=JOB_LEASE_S)).isoformat(timespec="seconds")
        n = fail_silent_jobs(self.db, cutoff, f"the server process running it stopped: no sign of it "
                                              f"for {JOB_LEASE_S:.0f} s", _now())
        if n:
            log.warning("failed the jobs of a server process gone silent", extra={"jobs": n})

    def _beat(self) -> None:
        """Say this process's queued and running jobs live, every HEARTBEAT_S until it stops."""
        while not self._stopping.wait(HEARTBEAT_S):
            if not any(not j.done for j in list(self._jobs.values())):
                continue
            try:
                beat_jobs(self.db, self.owner, _now())
            except Exception as exc:
                if not unavailable(exc):
                    log.exception("saying the training jobs live failed")
                # unavailable: its saves say so (`_outage`); the jobs go on

    def recover(self) -> None:
        """Fail the unfinished jobs of this host's processes that are gone (killed mid-job)."""
        host = self.owner.rsplit(":", 1)[0]
        owners = {r["owner"] for r in load_jobs(self.db) if r["status"] in ("queued", "running")}
        for owner in owners:
            name, _, pid = owner.rpartition(":")
            if name == host and pid.isdigit() and owner != self.owner and not _alive(int(pid)):
                n = fail_unfinished_jobs(self.db, owner, "the server process running it stopped")
                log.warning("failed the jobs of a stopped server process",
                            extra={"owner": owner, "jobs": n})

    def _save(self, job: Job) -> None:
        self._saved_at[job.id] = time.monotonic()
        save_job(self.db, job.row(self.owner))

    def _save_meanwhile(self, job: Job) -> None:
        """A save of a running job's row (its start, its progress): skipped while the store is
        unavailable, and the job goes on; the next save writes the row as it is then."""
        try:
            self._save(job)
        except Exception as exc:
            if not unavailable(exc):
                raise
            self._outage.failed(exc)
            return
        self._outage.answered()

    def _save_outcome(self, job: Job) -> None:
        """The finished job's row: with the store unavailable, tried again every second until
        it answers (or the service stops: then `recover` at the next start fails the job). Never
        raises: the runner thread must live on for the next job."""
        self._write_until_answered(lambda: self._save(job), "a training job's outcome",
                                   {"job": job.id, "status": job.status})

    def _write_until_answered(self, write: Callable[[], None], what: str, extra: dict) -> None:
        """`write` to the store, tried again every second while it is unavailable, until it
        answers or the service stops (said in the log, naming `what`). Never raises: any other
        error is logged and the write dropped."""
        while True:
            try:
                write()
                self._outage.answered()
                return
            except Exception as exc:
                if not unavailable(exc):
                    log.exception(f"saving {what} failed", extra=extra)
                    return
                self._outage.failed(exc)
            if self._stopping.wait(_SAVE_PROGRESS_EVERY_S):
                log.warning(f"the service stops with {what} unsaved (the store is unavailable)", extra=extra)
                return

    def cancel(self, job_id: str) -> dict | None:
        """Cancel a queued job, or stop a running one (its worker is killed, nothing is kept):
        its `JobOut`. None for an unknown job; JobStateError for one that has finished. A job of
        another process is cancelled through its row, which its owner follows."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return self._cancel_elsewhere(job_id)
            if job.done:
                raise JobStateError(f"job {job_id} has already {job.status}")
            if job.claimed:  # its version is being compared and served: too late to stop
                raise JobStateError(f"job {job_id} has already finished training")
            running = job.status == "running"
            job.status, job.error, job.finished_at = "cancelled", _CANCELLED, _now()
            proc = self._process if running else None
            self._save(job)
        if proc is not None and proc.is_alive():
            proc.kill()
        log.info("training job cancelled", extra={"job": job.id})
        return job.to_out()

    def _cancel_elsewhere(self, job_id: str) -> dict | None:
        rows = load_jobs(self.db, job_id)
        if not rows:
            return None
        row = rows[0]
        if row["status"] not in ("queued", "running"):
            raise JobStateError(f"job {job_id} has already {row['status']}")
        finished_at = _now()
        if not cancel_job_row(self.db, job_id, _CANCELLED, finished_at):
            # its owner finished training and is serving the version, or it ended meanwhile
            now = load_jobs(self.db, job_id)[0]
            state = now["status"] if now["status"] not in ("queued", "running") else "finished training"
            raise JobStateError(f"job {job_id} has already {state}")
        row.update(status="cancelled", error=_CANCELLED, finished_at=finished_at)
        log.info("training job of another process cancelled", extra={"job": job_id,
                                                                     "owner": row["owner"]})
        return job_out(row)

    def _cancelled_in_store(self, job: Job) -> bool:
        """Another process cancelled `job` through its row: take that over (and keep it). Not
        while the store is unavailable: the job goes on."""
        try:
            rows = load_jobs(self.db, job.id)
        except Exception as exc:
            if not unavailable(exc):
                raise
            self._outage.failed(exc)
            return False
        if not rows or rows[0]["status"] != "cancelled" or job.status == "cancelled":
            return False
        with self._lock:
            job.status, job.error = "cancelled", rows[0]["error"] or _CANCELLED
            job.finished_at = rows[0]["finished_at"] or _now()
        log.info("training job cancelled by another process", extra={"job": job.id})
        return True

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop the running worker and fail what is queued; the served model stays as it is."""
        self._stopping.set()
        proc = self._process
        if proc is not None and proc.is_alive():
            proc.terminate()
            proc.join(timeout)
            if proc.is_alive():
                proc.kill()
        if self._thread is not None:
            self._thread.join(timeout)
        while not self._pending.empty():
            self._fail_cleanup(self._pending.get_nowait(), "the service shut down before it started")

    # ---- the runner thread -----------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                job = self._pending.get(timeout=0.5)
            except queue.Empty:
                continue
            try:
                if job.status == "queued" and not self._cancelled_in_store(job):
                    self._run(job)
            except Exception:  # a job error must not stop the runner
                log.exception("training job crashed", extra={"job": job.id})
                job.finish("failed", "internal error (see the service's log)")
            finally:
                self.telemetry.jobs.labels(job.status).inc()
                self._cleanup(job)
                self._save_outcome(job)

    def _newest(self) -> Recommender | None:
        """The version to train on and replay: the newest change of any process
        (`ServedVersions.latest`), which this one may not have followed yet (a retrain asked
        of one worker right after another acknowledged an item trained on the catalogue
        before it, then was kept "the served catalogue changed while it trained"); what this
        process serves when that newest one cannot be had (the job then says so as before)."""
        try:
            return self.versions.latest()
        except (ArtifactError, NotServedYet):
            return self.versions.current

    def _run(self, job: Job) -> None:
        if self._stopping.is_set():
            job.finish("failed", "the service shut down before it started")
            return
        root = self.versions.artifacts_dir
        root.mkdir(parents=True, exist_ok=True)
        staging = TempDir(root, f".staging-{job.id}.")
        try:
            ctx = mp.get_context("spawn")
            messages = ctx.Queue()
            served = self._newest()
            baseline = self.versions.served_dir()
            args = {**job.spec.worker_args(), "baseline": str(baseline) if baseline else None}
            proc = ctx.Process(target=train_worker, args=(self.runner, args, str(staging.path), messages),
                               name=f"recsys-train-{job.id}", daemon=True)
            with self._lock:
                if job.status != "queued":
                    return  # cancelled just now
                self._process = proc
                proc.start()
                # "running" once the process exists, so a caller that sees it can rely on it
                job.status, job.started_at = "running", _now()
            self._save_meanwhile(job)
            log.info("training job started", extra={"job": job.id, "pid": proc.pid})
            try:
                outcome = self._follow(job, proc, messages)
            finally:
                self._process = None
            if outcome[0] == "done":
                # claimed under the lock a DELETE here takes: one after it answers that the job
                # finished training (as one on another process does, through the claimed row)
                with self._lock:
                    claimed = job.status != "cancelled" and self._claim(job, outcome[1]["version"])
                    job.claimed = claimed
                if not claimed:
                    self._cancelled_in_store(job)  # a DELETE on another process as it finished
            if job.status == "cancelled":
                proc.join(5)
            elif outcome[0] == "done":
                self._publish(job, staging, outcome[1], served.version if served else None,
                              served.manifest if served else None)
            else:  # its folders go first: a caller who sees it failed finds nothing of it left
                staging.remove()
                self._cleanup(job)
                job.finish("failed", job.spec.public(str(outcome[1])))
                log.warning("training job failed", extra={"job": job.id, "error": outcome[1]})
        finally:
            staging.remove()

    def _claim(self, job: Job, version: str) -> bool:
        """Whether the job's row took the trained version (`claim_job_version`): after that, a
        DELETE on another process answers that the job finished training, where before it could
        cancel the row while the version was being served and the outcome then overwrote it.
        With the store unavailable nothing can cancel through it: claimed."""
        try:
            return claim_job_version(self.db, job.id, version)
        except Exception as exc:
            if not unavailable(exc):
                raise
            self._outage.failed(exc)
            return True

    def _follow(self, job: Job, proc, messages) -> tuple[str, Any]:
        """Read progress until the worker reports its outcome or dies (or another process
        cancels the job: its row says so)."""
        checked = time.monotonic()
        while True:
            if time.monotonic() - checked >= _SAVE_PROGRESS_EVERY_S:
                checked = time.monotonic()
                if self._cancelled_in_store(job):
                    proc.kill()
                    return "failed", "cancelled"
            try:
                kind, payload = messages.get(timeout=_POLL_S)
            except queue.Empty:
                if self._stopping.is_set():
                    return "failed", "stopped: the service shut down during training"
                if job.status == "cancelled":
                    return "failed", "cancelled"
                if not proc.is_alive():
                    try:  # the outcome may have arrived just as the process ended
                        kind, payload = messages.get(timeout=_POLL_S)
                    except queue.Empty:
                        return "failed", _death(proc.exitcode, job.spec.memory_mb)
                else:
                    continue
            if kind == "progress":
                job.step, job.total, job.loss = payload
                if time.monotonic() - self._saved_at.get(job.id, 0.0) >= _SAVE_PROGRESS_EVERY_S:
                    self._save_meanwhile(job)
            else:
                proc.join(5)
                return kind, payload

    def _publish(self, job: Job, staging: TempDir, result: dict, served_version: str | None,
                 served_manifest: dict | None) -> None:
        """Move the new version in and serve it when it may replace `served_version` (the one
        served when the job started, which training replayed) or is forced."""
        version = result["version"]
        if job.status == "cancelled":
            return
        os.rename(staging.path / version, self.versions.artifacts_dir / version)
        staging.remove()  # and the upload: a caller who sees the job finished finds nothing of it left
        self._cleanup(job)
        job.version, job.metrics, job.step = version, result["metrics"], job.total
        try:
            # decided on, and replacing, the newest change of any process (a catalogue revision
            # made during the training is not what the job replayed)
            with self.versions.changing():
                self.versions.follow_pointer()
                now = self.versions.current
                decision = decide_after_training(version, result["manifest"], served_version, served_manifest,
                                                 now.version if now is not None else None,
                                                 now.manifest if now is not None else None, force=job.spec.force)
                if decision.activate:
                    self.versions.activate(version, reason=f"job {job.id}: {decision.reason}")
        except Exception as exc:
            if unavailable(exc):  # no decision could be made: the version waits for one
                why = (f"the store was unavailable when it was to be compared and activated; it "
                       f"is kept: POST /admin/versions/{version}/activate serves it")
                log.warning("a trained version could not be served: the store is unavailable",
                            extra={"job": job.id, "version": version})
            else:
                why = getattr(exc, "public", None) or "internal error (see the service's log)"
                log.exception("a trained version could not be served", extra={"job": job.id})
            job.finish("failed", f"trained {version} but could not serve it: {why}")
            try:
                record_decision(self.db, version, job.id, False, f"could not be served: {why}")
            except Exception as store_exc:  # still down: the job's row (saved once it is back) says it
                if not unavailable(store_exc):
                    raise
            return
        job.activated, job.decision = decision.activate, decision.reason
        self._record_decision(job, version, decision.activate, decision.reason)
        job.finish("succeeded")
        log.info("training job succeeded", extra={"job": job.id, "version": version,
                                                  "decision": job.decision})

    def _record_decision(self, job: Job, version: str, activated: bool, reason: str) -> None:
        """The decision's row (`/admin/versions` reads it), once it is made and acted on, tried
        again while the store is unavailable as the job's outcome is. Never raises: the version
        is served or kept already, and the job succeeded either way (a store lost here failed it
        with "internal error" while its version was served)."""
        self._write_until_answered(lambda: record_decision(self.db, version, job.id, activated, reason),
                                   "a trained version's decision", {"job": job.id, "version": version})

    def _fail_cleanup(self, job: Job, error: str) -> None:
        self._cleanup(job)
        job.finish("failed", error)

    @staticmethod
    def _cleanup(job: Job) -> None:
        if job.spec.upload is not None:
            job.spec.upload.remove()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _death(exitcode: int | None, memory_mb: int) -> str:
    why = f"the training process ended without a result (exit code {exitcode})"
    if memory_mb and exitcode is not None and exitcode < 0:
        why += f"; it may have run out of its memory limit of {memory_mb} MB (RECSYS_TRAIN_MEMORY_MB)"
    return why


# ---- the worker process -------------------------------------------------------------------------


def die_with_parent(parent_pid: int) -> None:
    """End this process when `parent_pid` (the service) ends, even by SIGKILL: a parent-death
    signal on Linux, and everywhere a watchdog thread that polls the parent's pid."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before the signal was set up
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(_WATCHDOG_S)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def _limit_memory(mb: int) -> None:
    if mb <= 0:
        return
    try:
        import resource

        limit = mb << 20
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, ValueError, OSError):
        pass


def failure_message(exc: Exception) -> str:
    """The job's error for an exception training did not expect. A store that is down is said
    so: its driver's own message names the database's host and port."""
    if unavailable(exc):
        return ("training failed: the store was unavailable while the job read from it; train again "
                "once it is back")
    return f"training failed: {type(exc).__name__}: {exc}"


def train_worker(runner: TrainRunner | None, args: dict, staging: str, messages) -> None:
    """Runs in the spawned process: train into `staging` (`runner`), report progress and the
    outcome."""
    die_with_parent(args["parent_pid"])
    lock = hold_lock(Path(staging))  # noqa: F841 - held until this process ends
    with contextlib.suppress(OSError):
        os.nice(10)  # serving requests come first
    _limit_memory(args.get("memory_mb", 0))
    from recsys.errors import RecsysError

    last = 0.0

    def on_step(step: int, total: int, loss: float) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= _PROGRESS_EVERY_S or step == total:
            last = now
            messages.put(("progress", (int(step), int(total), float(loss))))

    try:
        if runner is None:
            raise RecsysError("this service was built without a trainer: create_app(train_runner=...), "
                              "as `recsys serve` builds it (cli/app.py)")
        messages.put(("done", runner(args, Path(staging), on_step)))
    except RecsysError as exc:
        messages.put(("failed", str(exc)))
    except MemoryError:
        messages.put(("failed", f"training ran out of its memory limit of {args.get('memory_mb')} MB "
                                f"(RECSYS_TRAIN_MEMORY_MB): use fewer rows or raise the limit"))
    except Exception as exc:  # noqa: BLE001 - whatever happens, the service gets a message
        traceback.print_exc()  # to the service's stderr: its log
        messages.put(("failed", failure_message(exc)))
    finally:
        messages.close()
        messages.join_thread()
