"""Retraining as background jobs, one at a time, each in its own worker process.

The worker is a fresh interpreter (multiprocessing "spawn"): training cannot block the event
loop, hold the GIL of the serving threads, or leave state behind in the service. It trains into
a hidden staging folder inside the artifacts folder and reports progress through a queue; the
service then moves the new version next to the others (same file system: an atomic rename) and
decides whether to serve it: only when its held-out NDCG@10 beats the served version's, or when
forced. A failed job leaves no version behind and the served model untouched.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import queue
import shutil
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .model_store import ModelStore, held_out_ndcg
from .telemetry import Telemetry

log = logging.getLogger("recsys.api.jobs")
_POLL_S = 0.2
_PROGRESS_EVERY_S = 0.2


class QueueFullError(RuntimeError):
    pass


@dataclass
class TrainSpec:
    items: Path
    interactions: Path
    judgments: Path | None = None
    probes: Path | None = None
    schema: Path | None = None
    epochs: int = 8
    seed: int = 0
    threads: int = 1
    force: bool = False
    upload_dir: Path | None = None  # uploaded files, removed when the job ends

    def worker_args(self) -> dict[str, Any]:
        paths = ("items", "interactions", "judgments", "probes", "schema")
        args: dict[str, Any] = {p: (str(getattr(self, p)) if getattr(self, p) else None) for p in paths}
        return {**args, "epochs": self.epochs, "seed": self.seed, "threads": self.threads}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


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
        self.status, self.error, self.finished_at = status, error, _now()


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
                self._run(job)
            except Exception as exc:  # noqa: BLE001 - a job error must not stop the runner
                log.exception("training job crashed", extra={"job": job.id})
                job.finish("failed", f"internal error: {exc}")
            finally:
                self.telemetry.jobs.labels(job.status).inc()
                self._cleanup(job)

    def _run(self, job: Job) -> None:
        if self._stopping.is_set():
            job.finish("failed", "the service shut down before it started")
            return
        root = self.store.artifacts_dir
        root.mkdir(parents=True, exist_ok=True)
        staging = root / f".staging-{job.id}"
        ctx = mp.get_context("spawn")
        messages = ctx.Queue()
        proc = ctx.Process(target=train_worker, args=(job.spec.worker_args(), str(staging), messages),
                           name=f"recsys-train-{job.id}", daemon=True)
        try:
            self._process = proc
            proc.start()
            # "running" once the process exists, so a caller that sees it can rely on it
            job.status, job.started_at = "running", _now()
            log.info("training job started", extra={"job": job.id})
            outcome = self._follow(job, proc, messages)
        finally:
            self._process = None
        try:
            if outcome[0] == "done":
                self._publish(job, staging, outcome[1])
            else:
                job.finish("failed", outcome[1])
                log.warning("training job failed", extra={"job": job.id, "error": job.error})
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _follow(self, job: Job, proc, messages) -> tuple[str, Any]:
        """Read progress until the worker reports its outcome or dies."""
        while True:
            try:
                kind, payload = messages.get(timeout=_POLL_S)
            except queue.Empty:
                if self._stopping.is_set():
                    return "failed", "stopped: the service shut down during training"
                if not proc.is_alive():
                    try:  # the outcome may have arrived just as the process ended
                        kind, payload = messages.get(timeout=_POLL_S)
                    except queue.Empty:
                        return "failed", ("the training process ended without a result "
                                          f"(exit code {proc.exitcode})")
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
        except Exception as exc:  # noqa: BLE001
            job.finish("failed", f"trained {version} but could not serve it: {exc}")
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
        if job.spec.upload_dir is not None:
            shutil.rmtree(job.spec.upload_dir, ignore_errors=True)


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4f}"


# ---- the worker process -------------------------------------------------------------------------


def train_worker(args: dict, staging: str, messages) -> None:
    """Runs in the spawned process: train into `staging`, report progress and the outcome."""
    try:
        os.nice(10)  # serving requests come first
    except OSError:
        pass
    from recsys.errors import RecsysError
    from training.fit import TrainConfig
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
        cfg = TrainConfig(epochs=args["epochs"], seed=args["seed"], threads=args["threads"])
        result = train(inputs, staging, cfg, on_step)
        messages.put(("done", {"version": result.version_dir.name, "metrics": result.metrics}))
    except RecsysError as exc:
        messages.put(("failed", str(exc)))
    except Exception as exc:  # noqa: BLE001 - whatever happens, the service gets a message
        messages.put(("failed", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=5)}"))
    finally:
        messages.close()
        messages.join_thread()
