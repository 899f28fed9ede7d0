"""Retraining as background jobs, one at a time, each in its own worker process.

The worker is a fresh interpreter (multiprocessing "spawn"): training cannot block the event
loop, hold the GIL of the serving threads, or leave state behind in the service. It trains into
a hidden staging folder inside the artifacts folder and reports progress through a queue; the
service then moves the new version next to the others (same file system: an atomic rename) and
decides whether to serve it: only when its held-out NDCG@10 beats the served version's, or when
forced. A failed or cancelled job leaves no version behind and the served model untouched.

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
import sys
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from recsys.artifact import TempDir, hold_lock

from .model_store import ModelStore, held_out_ndcg
from .telemetry import Telemetry

log = logging.getLogger("recsys.api.jobs")
_POLL_S = 0.2
_PROGRESS_EVERY_S = 0.2
_WATCHDOG_S = 1.0
_PR_SET_PDEATHSIG = 1


class QueueFullError(RuntimeError):
    pass


class JobStateError(RuntimeError):
    """A job that cannot be cancelled any more (it has finished)."""


@dataclass
class TrainSpec:
    items: Path
    interactions: Path
    judgments: Path | None = None
    probes: Path | None = None
    schema: Path | None = None
    # None: TrainConfig's default (the worker builds the config, training/config.py)
    epochs: int | None = None
    seed: int | None = None
    threads: int | None = None
    force: bool = False
    upload: TempDir | None = None  # the job's copies of its files, removed when the job ends
    public_names: dict[str, str] = field(default_factory=dict)  # file path -> what errors show
    memory_mb: int = 0  # address-space limit of the worker (0: none)

    @property
    def upload_dir(self) -> Path | None:
        return self.upload.path if self.upload is not None else None

    def worker_args(self) -> dict[str, Any]:
        paths = ("items", "interactions", "judgments", "probes", "schema")
        args: dict[str, Any] = {p: (str(getattr(self, p)) if getattr(self, p) else None) for p in paths}
        return {**args, "epochs": self.epochs, "seed": self.seed, "threads": self.threads,
                "memory_mb": self.memory_mb, "parent_pid": os.getpid()}

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

    def to_out(self) -> dict:
        done = self.status == "succeeded"
        fraction = 1.0 if done else (self.step / self.total if self.total else 0.0)
        return {
            "id": self.id, "status": self.status, "created_at": self.created_at,
            "started_at": self.started_at, "finished_at": self.finished_at,
            "progress": {"step": self.step, "total": self.total, "loss": self.loss,
                         "fraction": round(fraction, 4)},
            "version": self.version, "activated": self.activated, "decision": self.decision,
            "metrics": self.metrics, "error": self.error,
        }

    def finish(self, status: str, error: str | None = None) -> None:
        if self.status == "cancelled":
            return
        self.status, self.error, self.finished_at = status, error, _now()

    @property
    def done(self) -> bool:
        return self.status in ("succeeded", "failed", "cancelled")


class JobManager:
    def __init__(self, store: ModelStore, telemetry: Telemetry, max_queued: int = 8):
        self.store, self.telemetry, self.max_queued = store, telemetry, max_queued
        self._jobs: dict[str, Job] = {}
        self._pending: queue.Queue[Job] = queue.Queue()
        self._stopping = threading.Event()
        self._process: mp.process.BaseProcess | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    # ---- API --------------------------------------------------------------------------------

    def submit(self, spec: TrainSpec) -> Job:
        with self._lock:
            if self._stopping.is_set():
                raise QueueFullError("the service is shutting down")
            if self._pending.qsize() >= self.max_queued:
                raise QueueFullError(f"{self.max_queued} training jobs are already waiting")
            job = Job(spec)
            self._jobs[job.id] = job
            self._pending.put(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="training-jobs", daemon=True)
                self._thread.start()
        log.info("training job queued", extra={"job": job.id})
        return job

    def get(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id)

    def all(self) -> list[Job]:
        return sorted(self._jobs.values(), key=lambda j: j.created_at, reverse=True)

    def cancel(self, job_id: str) -> Job | None:
        """Cancel a queued job, or stop a running one (its worker is killed, nothing is kept).
        None for an unknown job; JobStateError for one that has finished."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return None
            if job.done:
                raise JobStateError(f"job {job_id} has already {job.status}")
            running = job.status == "running"
            job.status, job.error, job.finished_at = "cancelled", "cancelled by DELETE /admin/jobs", _now()
            proc = self._process if running else None
        if proc is not None and proc.is_alive():
            proc.kill()
        log.info("training job cancelled", extra={"job": job.id})
        return job

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
                if job.status == "queued":  # not cancelled meanwhile
                    self._run(job)
            except Exception:  # a job error must not stop the runner
                log.exception("training job crashed", extra={"job": job.id})
                job.finish("failed", "internal error (see the service's log)")
            finally:
                self.telemetry.jobs.labels(job.status).inc()
                self._cleanup(job)

    def _run(self, job: Job) -> None:
        if self._stopping.is_set():
            job.finish("failed", "the service shut down before it started")
            return
        root = self.store.artifacts_dir
        root.mkdir(parents=True, exist_ok=True)
        staging = TempDir(root, f".staging-{job.id}.")
        try:
            ctx = mp.get_context("spawn")
            messages = ctx.Queue()
            proc = ctx.Process(target=train_worker,
                               args=(job.spec.worker_args(), str(staging.path), messages),
                               name=f"recsys-train-{job.id}", daemon=True)
            with self._lock:
                if job.status != "queued":
                    return  # cancelled just now
                self._process = proc
                proc.start()
                # "running" once the process exists, so a caller that sees it can rely on it
                job.status, job.started_at = "running", _now()
            log.info("training job started", extra={"job": job.id, "pid": proc.pid})
            try:
                outcome = self._follow(job, proc, messages)
            finally:
                self._process = None
            if job.status == "cancelled":
                proc.join(5)
            elif outcome[0] == "done":
                self._publish(job, staging.path, outcome[1])
            else:
                job.finish("failed", job.spec.public(str(outcome[1])))
                log.warning("training job failed", extra={"job": job.id, "error": outcome[1]})
        finally:
            staging.remove()

    def _follow(self, job: Job, proc, messages) -> tuple[str, Any]:
        """Read progress until the worker reports its outcome or dies."""
        while True:
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
            else:
                proc.join(5)
                return kind, payload

    def _publish(self, job: Job, staging: Path, result: dict) -> None:
        """Move the new version in and serve it when it is better or forced."""
        version = result["version"]
        if job.status == "cancelled":
            return
        os.rename(staging / version, self.store.artifacts_dir / version)
        job.version, job.metrics, job.step = version, result["metrics"], job.total
        serving = self.store.current
        new = held_out_ndcg({"metrics": result["metrics"]})
        old = held_out_ndcg(serving.manifest) if serving is not None else None
        if job.spec.force:
            reason = "activated: forced"
        elif serving is None or old is None:
            reason = "activated: no model with held-out metrics was being served"
        elif new is not None and new > old:
            reason = f"activated: held-out ndcg@10 {new:.4f} beats {old:.4f} of {serving.version}"
        else:
            job.decision = (f"kept, not served: held-out ndcg@10 {_fmt(new)} does not beat {old:.4f} "
                            f"of {serving.version}; POST /admin/versions/{version}/activate?force=true "
                            f"serves it anyway")
            job.finish("succeeded")
            return
        try:
            self.store.activate(version)
        except Exception as exc:
            why = getattr(exc, "public", None) or "internal error (see the service's log)"
            log.exception("a trained version could not be served", extra={"job": job.id})
            job.finish("failed", f"trained {version} but could not serve it: {why}")
            return
        job.activated, job.decision = True, reason
        job.finish("succeeded")
        log.info("training job succeeded", extra={"job": job.id, "version": version,
                                                  "decision": job.decision})

    def _fail_cleanup(self, job: Job, error: str) -> None:
        job.finish("failed", error)
        self._cleanup(job)

    @staticmethod
    def _cleanup(job: Job) -> None:
        if job.spec.upload is not None:
            job.spec.upload.remove()


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4f}"


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


def train_worker(args: dict, staging: str, messages) -> None:
    """Runs in the spawned process: train into `staging`, report progress and the outcome."""
    die_with_parent(args["parent_pid"])
    lock = hold_lock(Path(staging))  # noqa: F841 - held until this process ends
    with contextlib.suppress(OSError):
        os.nice(10)  # serving requests come first
    _limit_memory(args.get("memory_mb", 0))
    from recsys.errors import RecsysError
    from training.config import TrainConfig
    from training.train import TrainInputs, train

    last = 0.0

    def on_step(step: int, total: int, loss: float) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= _PROGRESS_EVERY_S or step == total:
            last = now
            messages.put(("progress", (int(step), int(total), float(loss))))

    def path(name: str) -> Path | None:
        return Path(args[name]) if args.get(name) else None

    try:
        inputs = TrainInputs(items=Path(args["items"]), interactions=Path(args["interactions"]),
                             schema=path("schema"), judgments=path("judgments"), probes=path("probes"))
        cfg = TrainConfig().overriding(epochs=args["epochs"], seed=args["seed"], threads=args["threads"])
        result = train(inputs, staging, cfg, on_step)
        messages.put(("done", {"version": result.version_dir.name, "metrics": result.metrics}))
    except RecsysError as exc:
        messages.put(("failed", str(exc)))
    except MemoryError:
        messages.put(("failed", f"training ran out of its memory limit of {args.get('memory_mb')} MB "
                                f"(RECSYS_TRAIN_MEMORY_MB): use fewer rows or raise the limit"))
    except Exception as exc:  # noqa: BLE001 - whatever happens, the service gets a message
        traceback.print_exc()  # to the service's stderr: its log
        messages.put(("failed", f"training failed: {type(exc).__name__}: {exc}"))
    finally:
        messages.close()
        messages.join_thread()
