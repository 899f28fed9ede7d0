"""`recsys serve`: serve a model from one process or several.

With no model under the artifacts folder and no --model, the command line has the default
synthetic catalogue generated and trained first (cli/serve.py), once, before any worker starts.

One worker (`--workers 1`) is uvicorn in this process. More than one is a supervisor (this
process, which serves nothing) and N spawned worker processes, each a uvicorn with its own model,
accepting on one listening socket the supervisor made and bound:

- the socket is created with proto IPPROTO_TCP and TCP_NODELAY: asyncio sets TCP_NODELAY on an
  accepted connection only when the socket's proto says TCP, and uvicorn's own `--workers`
  socket has proto 0, which costs about 40 ms a request (Nagle, see PERF_NOTES);
- a worker loads its model before it accepts a connection, and the port opens (listen) only when
  every worker has loaded (or failed to load: then /ready says why, as with one process), so
  /ready never answers 200 from a fleet that is still half loading, and no request reaches a
  worker that has no model;
- a worker that dies is replaced by a spare (RECSYS_SPARE_WORKERS, default 1, started once
  the port is open): a worker that has loaded its model and follows the store (the pointer
  watcher runs) but waits for its go without accepting, so the replacement accepts at once
  (benchmarks/worker_replacement.py: 0.21-0.36 s from the SIGKILL to its first answer, where a
  new process took 15.5-19.4 s on this 2-core machine under a load average of 9 to import
  torch and load the model), and a new spare starts loading. A spare still loading is made a
  worker that goes when loaded; with no spare, a new worker starts in its place (it loads,
  then accepts; the others serve meanwhile). The dead worker's connections are closed by the
  kernel: a request in flight on one fails at once (reset), and a retry reaches another
  worker. More than RECSYS_MAX_WORKER_RESTARTS crashes (of workers and spares) within a minute
  stop the service with exit code 1;
- SIGTERM or SIGINT to the supervisor reaches every worker as SIGTERM: each stops accepting,
  finishes its requests (RECSYS_GRACEFUL_TIMEOUT_S) and runs its shutdown; workers die with the
  supervisor even when it is SIGKILLed (parent-death signal, api.jobs.die_with_parent).

Workers agree through the store and the artifacts folder (api/served_versions.py, api/jobs.py), as
replicas on other machines do: an activation on one is followed by the others within
RECSYS_WATCH_INTERVAL_S, and a retraining job runs in the worker that took the request.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import os
import signal
import socket
import time
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import uvicorn

from recsys.artifact import resolve_version_dir
from recsys.errors import InputError
from store.db import Database

from .config import Settings
from .http_protocol import BoundedHttpToolsProtocol
from .jobs import TrainRunner, die_with_parent
from .logs import configure_logging
from .main import create_app

log = logging.getLogger("recsys.api")

_RESTART_WINDOW_S = 60.0
_BACKLOG = 2048  # connections the kernel queues while every worker is busy (uvicorn's default)


def serve(settings: Settings, host: str | None = None, port: int | None = None,
          model: Path | None = None, workers: int | None = None, *,
          train_runner: TrainRunner | None = None,
          ensure_a_model: Callable[[Settings], object] | None = None) -> int:
    """Serve until stopped; returns the exit code (0 after SIGTERM, 1 when workers kept dying).
    `train_runner`: what trains the retrain jobs (api/jobs.py); `ensure_a_model`: builds the
    default model when the artifacts folder has none, once, before any worker exists (both from
    the command line, cli/serve.py)."""
    configure_logging(settings.log_level)
    n = workers if workers is not None else (settings.workers or os.cpu_count() or 1)
    if n < 1:
        raise InputError(f"--workers must be at least 1, got {n}")
    pinned = None
    if model is not None:
        model = Path(model)
        if (model / "manifest.json").is_file():
            pinned = resolve_version_dir(model)
        else:  # an artifacts folder: serve (and activate versions in) that one
            resolve_version_dir(model)  # ArtifactError, a clean CLI message, when it has no model
            settings = settings.model_copy(update={"artifacts_dir": model})
    elif ensure_a_model is not None:
        ensure_a_model(settings)
    host, port = host or settings.host, port or settings.port
    if n == 1:
        _serve_here(settings, pinned, host, port, train_runner)
        return 0
    return Supervisor(settings, pinned, host, port, n, train_runner).run()


# how long an idle kept-alive connection stays open: far above a load balancer's own idle timeout
# for its connections to the replicas (deploy/nginx.conf: 4 s). With uvicorn's 5 s a connection
# nginx took for a request could be closed by the replica as the request went out (a worker's
# loop held up by a version swap), and nginx answered a shopper's POST /recommend 502
KEEP_ALIVE_S = 30


def _uvicorn_config(app: Any, settings: Settings, host: str, port: int) -> uvicorn.Config:
    # httptools (with a bound on a request's head: api/http_protocol.py) and loop="uvloop" by
    # name: uvicorn's "auto" would fall back to h11 and asyncio's own loop without a word if a
    # package were missing, at a third more CPU a request (docs/results.md, "HTTP parser")
    return uvicorn.Config(app, host=host, port=port, workers=1, log_config=None, access_log=False,
                          lifespan="on", http=BoundedHttpToolsProtocol, loop="uvloop",
                          timeout_graceful_shutdown=settings.graceful_timeout_s,
                          timeout_keep_alive=KEEP_ALIVE_S)


def _serve_here(settings: Settings, pinned: Path | None, host: str, port: int,
                train_runner: TrainRunner | None) -> None:
    """One process: requests share the loaded model (plain top-k ones on the event loop, heavier
    ones in its thread pool, see api/routes/recommend.py); asyncio sets TCP_NODELAY on the
    sockets of the server it creates."""
    app = create_app(settings, model_path=pinned, train_runner=train_runner)
    uvicorn.Server(_uvicorn_config(app, settings, host, port)).run()


def listening_socket(host: str, port: int) -> socket.socket:
    """A bound TCP socket with TCP_NODELAY (not listening yet) that worker processes share."""
    try:
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                      flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise InputError(f"--host {host!r} is not an address this machine has ({exc.strerror}); "
                         f"use e.g. 127.0.0.1 or 0.0.0.0") from None
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # set on the listener, Linux copies it to every accepted connection; asyncio sets it again
    # on them because proto is IPPROTO_TCP
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror}; stop what listens "
                         f"there or choose another --port") from None
    return sock


class _Worker:
    """One worker process and the supervisor's end of its pipe; a spare has loaded (or is
    loading) and waits for its go until a worker dies."""

    def __init__(self, slot: int, process: mp.process.BaseProcess, conn: Connection, spare: bool):
        self.slot, self.process, self.conn, self.spare = slot, process, conn, spare
        self.loaded = False


class Supervisor:
    """Starts N workers on one socket, restarts the ones that die, stops them all on SIGTERM."""

    def __init__(self, settings: Settings, pinned: Path | None, host: str, port: int, n: int,
                 train_runner: TrainRunner | None = None):
        self.settings, self.pinned, self.host, self.port, self.n = settings, pinned, host, port, n
        self.train_runner = train_runner
        self._ctx = mp.get_context("spawn")  # fresh interpreters: no torch state forked mid-use
        self._workers: dict[int, _Worker] = {}
        self._slots = iter(range(1 << 30))  # every process started gets a slot of its own
        self._crashes: deque[float] = deque()
        self._wake_r, self._wake_w = os.pipe()
        self._stopping = False
        self._listening = False
        self.sock: socket.socket | None = None

    def run(self) -> int:
        # the schema at Alembic's head once, before N workers race to migrate a fresh store
        db = Database(self.settings.store_url)
        db.upgrade()
        db.dispose()
        self.sock = sock = listening_socket(self.host, self.port)
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            for _ in range(self.n):
                self._start(spare=False)
            log.info("starting workers", extra={"workers": self.n, "host": self.host,
                                                "port": self.port,
                                                "spares": self.settings.spare_workers})
            return self._supervise()
        finally:
            self._stop_all()
            for s, handler in previous.items():
                signal.signal(s, handler)
            sock.close()
            os.close(self._wake_r)
            os.close(self._wake_w)

    def _on_signal(self, signum: int, _frame: Any) -> None:
        self._stopping = True
        os.write(self._wake_w, b"x")  # wakes the supervising loop's wait()

    def _start(self, spare: bool) -> None:
        slot = next(self._slots)
        ours, theirs = self._ctx.Pipe()
        process = self._ctx.Process(
            target=worker_main, name=f"recsys-{'spare' if spare else 'worker'}-{slot}",
            args=(self.settings, self.pinned, self.sock, theirs, os.getpid(), self.train_runner))
        process.start()  # not a daemon: a worker starts training jobs, processes of its own
        theirs.close()
        self._workers[slot] = _Worker(slot, process, ours, spare)

    def _serving(self) -> list[_Worker]:
        return [w for w in self._workers.values() if not w.spare]

    def _add_spares(self) -> None:
        """Start spares up to RECSYS_SPARE_WORKERS; only once the port is open, so that they
        take no CPU from the workers' first load."""
        spares = sum(w.spare for w in self._workers.values())
        for _ in range(self.settings.spare_workers - spares):
            self._start(spare=True)

    def _take_spare(self) -> _Worker | None:
        """A spare made a worker: a loaded one (told to go: it accepts at once), else one still
        loading (it goes when it has loaded, as a restarted worker does); None without spares."""
        spares = sorted((w for w in self._workers.values() if w.spare), key=lambda w: not w.loaded)
        for w in spares:
            if w.loaded:
                try:
                    w.conn.send("go")
                except OSError:
                    continue  # it died meanwhile: its sentinel says so
            w.spare = False
            return w
        return None

    def _supervise(self) -> int:
        while not self._stopping:
            waiting: list[Any] = [self._wake_r]
            for w in self._workers.values():
                waiting += [w.process.sentinel] + ([] if w.loaded else [w.conn])
            ready = wait(waiting, timeout=5.0)
            for w in list(self._workers.values()):
                if not w.loaded and w.conn in ready:
                    self._loaded(w)
                if w.process.sentinel in ready and not self._stopping:
                    code = self._died(w)
                    if code is not None:
                        return code
        log.info("stopping workers", extra={"workers": len(self._workers)})
        return 0

    def _loaded(self, w: _Worker) -> None:
        try:
            w.conn.recv()
        except (EOFError, OSError):
            return  # it died while loading: its sentinel says so
        w.loaded = True
        if w.spare:
            log.info("spare worker loaded", extra={"pid": w.process.pid})
            return  # its go comes when a worker dies
        if self._listening:  # a restarted worker joins the others at once
            w.conn.send("go")
            return
        if all(x.loaded for x in self._serving()):
            # the port opens now, with every worker's model loaded
            assert self.sock is not None
            self.sock.listen(_BACKLOG)
            self._listening = True
            for x in self._serving():
                x.conn.send("go")
            log.info("all workers serving", extra={
                "workers": self.n, "pids": [x.process.pid for x in self._serving()],
                "host": self.host, "port": self.port})
            self._add_spares()

    def _died(self, w: _Worker) -> int | None:
        """Replace a worker that died (by a loaded spare, else a new process); an exit code
        when the service must stop instead."""
        w.process.join(5)  # its sentinel fires as it exits; reap it for the exit code
        code = w.process.exitcode
        w.conn.close()
        del self._workers[w.slot]
        now = time.monotonic()
        self._crashes.append(now)
        while self._crashes and now - self._crashes[0] > _RESTART_WINDOW_S:
            self._crashes.popleft()
        if not self._listening and not w.spare:
            log.error("a worker died before every worker had loaded its model; stopping",
                      extra={"worker": w.slot, "pid": w.process.pid, "exitcode": code})
            return 1
        if len(self._crashes) > self.settings.max_worker_restarts:
            log.error("workers keep dying; stopping the service",
                      extra={"worker": w.slot, "pid": w.process.pid, "exitcode": code,
                             "crashes": len(self._crashes), "within_s": _RESTART_WINDOW_S,
                             "limit": "RECSYS_MAX_WORKER_RESTARTS"})
            return 1
        if w.spare:
            log.error("a spare worker died; starting another",
                      extra={"pid": w.process.pid, "exitcode": code})
        elif (spare := self._take_spare()) is not None:
            log.error("a worker died; a spare replaces it",
                      extra={"worker": w.slot, "pid": w.process.pid, "exitcode": code,
                             "replacement": spare.process.pid, "loaded": spare.loaded})
        else:
            log.error("a worker died; restarting it",
                      extra={"worker": w.slot, "pid": w.process.pid, "exitcode": code})
            self._start(spare=False)
        self._add_spares()
        return None

    def _stop_all(self) -> None:
        """SIGTERM every worker, wait for their graceful shutdown, SIGKILL what is left."""
        alive = [w.process for w in self._workers.values() if w.process.is_alive()]
        for p in alive:
            if p.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signal.SIGTERM)
        for w in self._workers.values():
            w.conn.close()  # a worker still waiting for its go reads EOF and shuts down
        deadline = time.monotonic() + self.settings.graceful_timeout_s + 5
        for p in alive:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                log.error("a worker did not stop in time; killing it", extra={"pid": p.pid})
                p.kill()
                p.join(5)


def worker_main(settings: Settings, pinned: Path | None, sock: socket.socket, conn: Connection,
                parent_pid: int, train_runner: TrainRunner | None = None) -> None:
    """A worker process: load the model, tell the supervisor, wait for its go, then serve."""
    die_with_parent(parent_pid)
    configure_logging(settings.log_level)

    def before_serving() -> None:  # in the lifespan, off the event loop, once the model is loaded
        # "go": every worker has loaded and the socket listens; a closed pipe: the supervisor
        # is stopping, and uvicorn, which has the signal too, shuts down after the startup
        with contextlib.suppress(EOFError, OSError):
            conn.send("loaded")
            conn.recv()

    app = create_app(settings, model_path=pinned, before_serving=before_serving,
                     train_runner=train_runner)
    uvicorn.Server(_uvicorn_config(app, settings, "", 0)).run(sockets=[sock])
