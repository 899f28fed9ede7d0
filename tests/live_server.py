"""A real server process on 127.0.0.1, for the tests and the benchmarks alike: a free port, the
`recsys` console script of this interpreter, an environment without the caller's RECSYS_*
settings, waiting for /ready, and stopping it.

The benchmarks put the repository's root on sys.path and import it as `tests.live_server`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

import httpx

RECSYS = shutil.which("recsys", path=str(Path(sys.executable).parent)) or "recsys"


class ServerError(AssertionError):
    """The server exited or did not become ready (an AssertionError: a test fails, not errors)."""


# Each pytest-xdist process takes its ports from a range of its own, below the kernel's
# ephemeral ports, one after the other. An ephemeral port from the kernel was free when asked,
# but a server that trains its first model binds minutes later: meanwhile another process's
# test was given the same port, and the first test's /ready was answered by the other's server.
PORTS_PER_PROCESS = 3000
FIRST_PORT = 12000
_next_port: list[int] = []


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now, and that no other test process is
    given (`PORTS_PER_PROCESS`)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    lo = FIRST_PORT + (int(worker) % 6 if worker.isdigit() else 0) * PORTS_PER_PROCESS
    if not _next_port:  # a place in the range of its own per run: an earlier run's servers are gone
        _next_port.append(lo + (os.getpid() * 7) % PORTS_PER_PROCESS)
    for _ in range(PORTS_PER_PROCESS):
        port = lo + (_next_port[0] - lo) % PORTS_PER_PROCESS
        _next_port[0] = port + 1
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise ServerError(f"no free port in {lo}-{lo + PORTS_PER_PROCESS - 1}")


def clean_env(**settings: str) -> dict[str, str]:
    """This process's environment without its RECSYS_* variables, plus `settings`."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("RECSYS_")}, **settings}


def _tail(log: Path | None) -> str:
    if log is None or not log.is_file():
        return ""
    return ":\n" + log.read_text(errors="replace")[-3000:]


def wait_ready(base: str, proc: subprocess.Popen, log: Path | None, timeout: float,
               interval: float = 0.1) -> dict:
    """Poll `base`/ready until it answers 200: its JSON. ServerError (with the log's tail) when
    `proc` exits first or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerError(f"the server exited with code {proc.returncode}{_tail(log)}")
        with contextlib.suppress(httpx.TransportError):
            r = httpx.get(f"{base}/ready", timeout=2)
            if r.status_code == 200:
                return dict(r.json())
        time.sleep(interval)
    raise ServerError(f"the server was not ready after {timeout:g} s{_tail(log)}")


def stop(proc: subprocess.Popen, timeout: float = 30.0, group: bool = False) -> int:
    """SIGTERM (to the process group when `group`: the server and whatever it started), then
    SIGKILL after `timeout` seconds; its exit code."""
    if proc.poll() is not None:
        return int(proc.returncode)

    def send(sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            if group:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)

    send(signal.SIGTERM)
    try:
        return int(proc.wait(timeout=timeout))
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL)
        return int(proc.wait())


# ---- answers under load, and when each worker switched versions ------------------------------


@dataclass(frozen=True)
class Answer:
    started: float  # time.monotonic() when the request was sent
    status: int  # 0: no HTTP answer (a transport error)
    version: str | None  # the body's model_version
    header_version: str | None  # X-Model-Version
    worker: str | None  # X-Worker-PID: which process answered
    finished: float  # time.monotonic() when the answer had arrived
    error: str | None = None


def recommend(http: httpx.Client, body: dict) -> Answer:
    """POST /recommend once, recorded as an Answer (never raises for a failed request)."""
    started = time.monotonic()
    try:
        r = http.post("/recommend", json=body)
    except httpx.HTTPError as exc:
        return Answer(started, 0, None, None, None, time.monotonic(), f"{type(exc).__name__}: {exc}")
    worker = r.headers.get("x-worker-pid")
    if r.status_code != 200:
        return Answer(started, r.status_code, None, None, worker, time.monotonic(), r.text[:200])
    return Answer(started, 200, r.json().get("model_version"), r.headers.get("x-model-version"),
                  worker, time.monotonic())


class Load:
    """`threads` clients posting /recommend (the queries in turn) until `stop()`, `max_requests`
    answers in all, or `max_seconds`; every answer is kept. `fresh_connections`: a new
    connection per request, so that the answers come from every worker, not the one each
    client's kept-alive connection landed on."""

    def __init__(self, base: str, queries: list[str], body: dict, threads: int, max_requests: int,
                 max_seconds: float, fresh_connections: bool = False):
        self.base, self.queries, self.body = base, queries, body
        self.max_requests, self.max_seconds = max_requests, max_seconds
        self.fresh = fresh_connections
        self.answers: list[Answer] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._client, args=(n, threads), daemon=True)
                         for n in range(threads)]

    def start(self) -> Load:
        self._deadline = time.monotonic() + self.max_seconds
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> list[Answer]:
        self._stop.set()
        for t in self._threads:
            t.join()
        return self.answers

    def _more(self) -> bool:
        return (not self._stop.is_set() and time.monotonic() < self._deadline
                and len(self.answers) < self.max_requests)

    def _client(self, n: int, step: int) -> None:
        limits = httpx.Limits(max_keepalive_connections=0) if self.fresh else httpx.Limits()
        with httpx.Client(base_url=self.base, timeout=30, limits=limits) as http:
            i = n
            while self._more():
                answer = recommend(http, {"query": self.queries[i % len(self.queries)], **self.body})
                i += step
                with self._lock:
                    self.answers.append(answer)


@dataclass
class Switch:
    """What the answers show about one activation of `new` over `old` at `activated`."""

    failed: list[Answer]  # no 200
    mixed: list[Answer]  # a version other than old or new, or the body and header disagree
    back: list[Answer]  # `old`, asked of a worker after it had answered another request `new`
    switched_s: dict[str, float | None]  # worker -> seconds from the activation to its switch

    @property
    def all_switched_s(self) -> float | None:
        """Seconds until every worker answered `new` (None if one never did)."""
        times = list(self.switched_s.values())
        return None if not times or None in times else max(t for t in times if t is not None)


def switch_of(answers: list[Answer], old: str, new: str, activated: float) -> Switch:
    """Per worker, when it switched: the first request answered with `new` that started after
    its last request answered with `old` (requests in flight at the swap keep the old
    version, by design)."""
    ok = [a for a in answers if a.status == 200]
    out = Switch(failed=[a for a in answers if a.status != 200],
                 mixed=[a for a in ok if a.version not in (old, new) or a.version != a.header_version],
                 back=[], switched_s={})
    for worker in sorted({a.worker for a in ok if a.worker}):
        mine = sorted((a for a in ok if a.worker == worker), key=lambda a: a.started)
        last_old = max((a.started for a in mine if a.version == old), default=float("-inf"))
        first_new = min((a.finished for a in mine if a.version == new), default=None)
        firsts = [a.started for a in mine if a.version == new and a.started > last_old]
        out.switched_s[worker] = (max(0.0, min(firsts) - activated) if firsts else None)
        if first_new is not None:
            out.back += [a for a in mine if a.version == old and a.started > first_new]
    return out


# ---- one answer from each worker behind a port -------------------------------------------------

# A new connection goes to whichever worker accepts it first. Bounded by time, not by a count of
# connections: on a loaded machine one worker can lose that race a hundred times in a row (a CI
# run saw it) while the other is not.
REACH_WORKER_S = 60.0


def answers_by_worker(send: Callable[[], httpx.Response], want: int | Collection[str],
                      within_s: float = REACH_WORKER_S) -> dict[str, httpx.Response]:
    """worker pid -> its last answer to `send()` (which opens a new connection each call), sent
    until `want` workers (a number, or these pids) have each answered; an AssertionError naming
    who answered how often when they have not within `within_s`."""
    answers: dict[str, httpx.Response] = {}
    counts: dict[str, int] = {}
    deadline = time.monotonic() + within_s
    while True:
        r = send()
        pid = r.headers["x-worker-pid"]
        answers[pid] = r
        counts[pid] = counts.get(pid, 0) + 1
        if len(answers) >= want if isinstance(want, int) else set(want) <= set(answers):
            return answers
        if time.monotonic() > deadline:
            raise AssertionError(f"workers {want} not reached in {within_s:.0f} s; answers per worker: {counts}")


def answer_of(send: Callable[[], httpx.Response], worker: str | None) -> httpx.Response:
    """The answer to `send()` of the worker with pid `worker` (any worker's when None)."""
    return send() if worker is None else answers_by_worker(send, [worker])[worker]


# ---- a worker killed: how its clients see it, and how soon a replacement answers ---------------


def worker_pids(base: str, want: int, tries: int | None = None) -> set[str]:
    """The X-Worker-PID of the workers answering `base`, asked on new connections until `want`
    answered: at most `tries` connections when given (a probe), else for at most REACH_WORKER_S
    (`answers_by_worker`). A connection refused or cut (a worker dying) is asked again."""
    seen: set[str] = set()
    deadline, asked = time.monotonic() + REACH_WORKER_S, 0
    while len(seen) < want and (asked < tries if tries is not None else time.monotonic() < deadline):
        asked += 1
        with contextlib.suppress(httpx.TransportError):
            seen.add(httpx.get(f"{base}/health", timeout=5).headers["x-worker-pid"])
    return seen


def kill_a_worker(base: str, workers: int, kept_alive: int = 3, timeout: float = 60.0) -> dict:
    """SIGKILL one of `workers` workers while `kept_alive` clients have a request in flight on a
    connection to it and `kept_alive` more hold an idle kept-alive connection to it.

    The victim is stopped (SIGSTOP) first, so that the in-flight requests are sent and unread
    when it dies. Returns, in seconds from the kill: `replaced_s` (a worker that is neither the
    dead one nor one of the others answers /ready with 200 on a new connection, or None after
    `timeout`), `workers_after` (the workers that answer then, asked on new connections); for
    the in-flight clients `in_flight` (what each request got: an exception's name, or "answered
    STATUS") and `in_flight_s` (when, from the kill), for the idle ones `idle` (what their next
    request got) and `idle_s` (how long it took); `retried`: the status of each client's request
    once more (the same client: a new connection)."""
    pids = worker_pids(base, workers)
    assert len(pids) == workers, f"only workers {sorted(pids)} answered"
    victim = sorted(pids)[0]
    clients: list[httpx.Client] = []

    def outcome(http: httpx.Client, path: str) -> str:
        try:
            r = http.get(path) if path != "/recommend" else \
                http.post(path, json={"query": "red dress", "k": 5})
        except httpx.TransportError as exc:
            return type(exc).__name__
        return f"answered {r.status_code} from {r.headers.get('x-worker-pid')}"

    try:
        for _ in range(400):
            if len(clients) == 2 * kept_alive:
                # uvicorn closes a connection idle for 5 s: on a loaded machine the first ones
                # found may be gone by now (a client then reconnects to any worker)
                still = [http for http in clients if http.get("/health").headers["x-worker-pid"] == victim]
                if len(still) == len(clients):
                    break
                for http in clients:
                    if http not in still:
                        http.close()
                clients[:] = still
            http = httpx.Client(base_url=base, timeout=30)
            if http.get("/health").headers["x-worker-pid"] == victim:
                clients.append(http)
            else:
                http.close()
        assert len(clients) == 2 * kept_alive, f"400 connections gave {len(clients)} to {victim}"
        flying, idle = clients[:kept_alive], clients[kept_alive:]
        in_flight: list[tuple[str, float]] = []
        os.kill(int(victim), signal.SIGSTOP)
        threads = [threading.Thread(target=lambda h=h: in_flight.append(
            (outcome(h, "/recommend"), time.monotonic())), daemon=True) for h in flying]
        for t in threads:
            t.start()
        time.sleep(0.5)  # the requests are sent: in the stopped worker's receive buffers
        replaced: list[float] = []

        def poll() -> None:  # from the kill on, new connections until a new worker answers
            while time.monotonic() - killed < timeout:
                with contextlib.suppress(httpx.TransportError):
                    r = httpx.get(f"{base}/ready", timeout=5)
                    if r.headers.get("x-worker-pid") not in pids and r.status_code == 200:
                        replaced.append(round(time.monotonic() - killed, 3))
                        return
                time.sleep(0.02)

        poller = threading.Thread(target=poll, daemon=True)
        killed = time.monotonic()
        os.kill(int(victim), signal.SIGKILL)
        poller.start()
        for t in threads:
            t.join(timeout=40)
        idle_out, idle_s = [], []
        for http in idle:
            started = time.monotonic()
            idle_out.append(outcome(http, "/ready"))
            idle_s.append(round(time.monotonic() - started, 3))
        retried = [outcome(http, "/ready").split(" from ")[0] for http in clients]
        poller.join(timeout + 10)
        return {"victim": victim, "replaced_s": replaced[0] if replaced else None,
                "workers_after": sorted(worker_pids(base, workers)),
                "in_flight": [o for o, _ in in_flight] + ["no answer"] * (kept_alive - len(in_flight)),
                "in_flight_s": [round(at - killed, 3) for _, at in in_flight],
                "idle": idle_out, "idle_s": idle_s, "retried": retried}
    finally:
        for http in clients:
            http.close()
