"""The compose file's load balancer for real: Debian's nginx with deploy/nginx.conf
(scripts/lb.sh) on 127.0.0.1 in front of two `recsys serve` replicas that share one store and
one artifacts folder. An activation through the load balancer reaches one replica; within the
issue's 2 s every answer through the load balancer has the new version, and no request fails."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.live_server import Load, free_port, switch_of

from api_support import ADMIN_TOKEN, make_artifacts
from test_server import running, stop, wait_ready

ROOT = Path(__file__).resolve().parents[2]
LB = ROOT / "scripts" / "lb.sh"
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
QUERIES = ["red casual cotton dress", "navy formal jacket", "premium leather boots", "blue jeans"]
# every replica follows an activation; how fast (2 s, issue 27) is a speed goal, measured by
# `benchmarks/http_bench.py --activate`; this bounds a hang only
FOLLOWED_WITHIN_S = 30.0

if not (shutil.which("nginx") or Path("/usr/sbin/nginx").exists()):
    pytest.skip("nginx is missing: run `bash scripts/lb.sh install` (as root; `make test` does)",
                allow_module_level=True)


@contextlib.contextmanager
def load_balancer(port: int, upstreams: list[str], log: Path) -> Iterator[str]:
    with open(log, "wb") as err:
        out = subprocess.run(["bash", str(LB), "start", str(port), *upstreams], stdout=subprocess.PIPE,
                             stderr=err, text=True, timeout=60)
    assert out.returncode == 0, log.read_text()
    folder = out.stdout.strip().splitlines()[-1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        subprocess.run(["bash", str(LB), "stop", folder], check=True, timeout=60)


@contextlib.contextmanager
def two_replicas(tmp_path: Path, env: dict) -> Iterator[tuple[str, list[str]]]:
    """Two `recsys serve --workers 1` replicas of `env`, ready, behind the load balancer: (its
    URL, the replicas' URLs); stopped cleanly (SIGTERM, drained) at the end of the block."""
    logs = [tmp_path / "replica-1.log", tmp_path / "replica-2.log"]
    with running(["--workers", "1"], env, logs[0]) as (base1, proc1), \
            running(["--workers", "1"], env, logs[1]) as (base2, proc2):
        wait_ready(base1, proc1, logs[0], timeout=180)
        wait_ready(base2, proc2, logs[1], timeout=180)
        replicas = [b.removeprefix("http://") for b in (base1, base2)]
        with load_balancer(free_port(), replicas, tmp_path / "lb.log") as lb:
            yield lb, [base1, base2]
        stop(proc1, logs[0])
        stop(proc2, logs[1])


def test_an_activation_through_the_load_balancer_reaches_every_replica(tmp_path, v1, v2, data_dir):
    artifacts = make_artifacts(tmp_path / "artifacts", v1, v2)
    env = {"RECSYS_DATA_DIR": str(data_dir), "RECSYS_ADMIN_TOKEN": ADMIN_TOKEN,
           "RECSYS_ARTIFACTS_DIR": str(artifacts),
           "RECSYS_DATABASE_URL": f"sqlite:///{tmp_path / 'shared-store.db'}"}
    with two_replicas(tmp_path, env) as (lb, replicas):
        body = {"k": 5, "explain": True}
        load = Load(lb, QUERIES, body, threads=2, max_requests=4000, max_seconds=60).start()
        try:
            time.sleep(0.5)
            r = httpx.post(f"{lb}/admin/versions/{v2.name}/activate", params={"force": "true"},
                           headers=AUTH, timeout=60)
            activated = time.monotonic()
            assert r.status_code == 200, r.text
            until = activated + FOLLOWED_WITHIN_S
            while time.monotonic() < until and any(
                    httpx.get(f"{base}/ready", timeout=5).json()["model_version"] != v2.name for base in replicas):
                time.sleep(0.2)
            time.sleep(0.5)  # answers after the switch show that no replica went back
        finally:
            answers = load.stop()
        s = switch_of(answers, v1.name, v2.name, activated)
        assert not s.failed, s.failed[:3]
        assert not s.mixed and not s.back, (s.mixed[:3], s.back[:3])
        assert len(s.switched_s) == 2, s.switched_s  # nginx sent requests to both replicas
        assert all(t is not None for t in s.switched_s.values()), s.switched_s
        for base in replicas:
            assert httpx.get(f"{base}/ready", timeout=5).json()["model_version"] == v2.name


def _upstream(answer: bool, seen: list[str], stop: threading.Event) -> tuple[str, threading.Thread]:
    """A replica stand-in on 127.0.0.1: reads each request's first line into `seen`, then answers
    204, or (answer False) closes the connection unanswered, as a worker killed mid-request."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)

    def run() -> None:
        with server:
            while not stop.is_set():
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    continue
                with conn:
                    conn.settimeout(5)
                    data = b""
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                    if data:
                        seen.append(data.split(b"\r\n", 1)[0].decode())
                    if answer and data:
                        conn.sendall(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return f"127.0.0.1:{server.getsockname()[1]}", thread


def test_an_admin_call_a_replica_dropped_is_not_sent_to_the_other(tmp_path):
    """A DELETE /admin/synonyms/NAME that a replica committed before its worker died was sent
    again to the other replica by nginx (PUT and DELETE count as safe to repeat there), which
    answered 404 for a delete that had succeeded. An admin call a replica drops is answered 502
    (its outcome unknown) and reaches no other replica; a shopper's GET is still sent on."""
    stop = threading.Event()
    dropped, answered = [], []
    dropping, t1 = _upstream(False, dropped, stop)
    answering, t2 = _upstream(True, answered, stop)
    try:
        with load_balancer(free_port(), [dropping, answering], tmp_path / "lb.log") as lb:
            codes = [httpx.delete(f"{lb}/admin/synonyms/s{n}", timeout=10).status_code for n in range(6)]
            admin = [line for line in dropped + answered if "/admin/" in line]
            assert len(admin) == 6, (dropped, answered)  # each sent once, to one replica
            assert 502 in codes and 204 in codes, codes
            gets = [httpx.get(f"{lb}/health", timeout=10).status_code for _ in range(4)]
            assert gets == [204] * 4  # a dropped GET goes on to the other replica
    finally:
        stop.set()
        t1.join(timeout=5), t2.join(timeout=5)
