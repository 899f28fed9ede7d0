"""`recsys serve` as a real process on 127.0.0.1: start, become ready, answer, log, stop cleanly."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import zygote
from tests.live_server import RECSYS, clean_env, free_port, wait_ready
from tests.live_server import stop as stop_process
from tests.zygote import ForkedProcess

from api_support import make_artifacts

__all__ = ["free_port", "running", "start", "stop", "wait_ready"]  # the other server tests' helpers


def start(args: list[str], env: dict, log: Path, exec_script: bool = False) -> subprocess.Popen | ForkedProcess:
    """`recsys serve ARGS`; its store is a SQLite file next to `log` unless `env` names one. In a
    process group of its own, so that `kill_all` reaches its workers and training processes.
    Forked from the test process's warm interpreter (tests/zygote.py) unless `exec_script`."""
    env = {"RECSYS_DATABASE_URL": f"sqlite:///{log.parent / 'store.db'}", **env}
    return zygote.popen([RECSYS, "serve", *args], clean_env(**env), log, new_session=True, exec_script=exec_script)


def kill_all(proc: subprocess.Popen) -> None:
    """SIGKILL to the server's process group: the server, and the workers and training processes
    a server killed mid-test (or one a test SIGKILLed) would otherwise leave running."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def stop(proc: subprocess.Popen, log: Path) -> None:
    """SIGTERM; uvicorn drains, runs the lifespan shutdown, then re-raises the signal."""
    code = stop_process(proc, timeout=20)
    assert code in (0, -signal.SIGTERM), code
    assert '"msg": "service stopped"' in log.read_text()


@contextlib.contextmanager
def running(args: list[str], env: dict, log: Path,
            exec_script: bool = False) -> Iterator[tuple[str, subprocess.Popen | ForkedProcess]]:
    """`recsys serve ARGS` on a free port of 127.0.0.1: (base URL, process); its process group is
    killed at the end (whatever of it still runs)."""
    port = free_port()
    proc = start(["--host", "127.0.0.1", "--port", str(port), *args], env, log, exec_script)
    try:
        yield f"http://127.0.0.1:{port}", proc
    finally:  # a failed or timed-out test too: nothing of the server outlives it
        kill_all(proc)


@pytest.fixture
def server(tmp_path, v1, data_dir):
    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    log = tmp_path / "server.log"
    # from the console script itself, as a user starts it; the other server tests fork theirs
    with running(["--model", str(artifacts)], {"RECSYS_DATA_DIR": str(data_dir)}, log,
                 exec_script=True) as (base, proc):
        yield base, proc, log


def test_real_server(server, v1):
    base, proc, log = server
    # 120 s like the other servers: at load 10 on 2 cores, 60 s was not enough to start
    assert wait_ready(base, proc, log, timeout=120)["model_version"] == v1.name
    with httpx.Client(base_url=base, timeout=10) as http:
        r = http.post("/recommend", json={"query": "red casual cotton dress", "k": 5},
                      headers={"X-Request-ID": "real-server-1"})
        assert r.status_code == 200 and r.headers["x-request-id"] == "real-server-1"
        body = r.json()
        assert len(body["items"]) == 5 and body["model_version"] == v1.name
        item = body["items"][0]
        parts = item["explanation"]["prior"] + sum(h["contribution"] for h in item["explanation"]["heads"])
        assert item["score"] == pytest.approx(parts, abs=1e-4)
        assert http.post("/recommend", json={"query": "dress", "k": 1000}).status_code == 422
        assert http.get("/admin/versions").status_code == 404  # no token configured
        assert "recsys_http_requests_total" in http.get("/metrics").text
    stop(proc, log)  # graceful shutdown on SIGTERM
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    access = [x for x in lines if x.get("logger") == "recsys.access" and x.get("request_id") == "real-server-1"]
    assert access and access[0]["status"] == 200 and access[0]["model_version"] == v1.name
    assert access[0]["route"] == "/recommend" and access[0]["duration_ms"] > 0


def test_serve_without_a_model_builds_the_default_one(tmp_path):
    """A fresh checkout: no model anywhere, so `recsys serve` generates and trains one first."""
    port, log = free_port(), tmp_path / "server.log"
    artifacts, default = tmp_path / "artifacts", tmp_path / "default-data"
    env = {"RECSYS_ARTIFACTS_DIR": str(artifacts), "RECSYS_DEFAULT_DATA_DIR": str(default),
           "RECSYS_DEFAULT_ITEMS": "120", "RECSYS_DEFAULT_QUERIES": "150", "RECSYS_TRAIN_EPOCHS": "1",
           "RECSYS_PORT": str(port)}
    proc = start([], env, log)
    try:
        ready = wait_ready(f"http://127.0.0.1:{port}", proc, log, timeout=150)
        assert (default / "items.csv").is_file()
        assert (artifacts / ready["model_version"] / "manifest.json").is_file()
        assert "training the default model" in log.read_text()
        r = httpx.get(f"http://127.0.0.1:{port}/model", timeout=5).json()
        assert r["n_items"] == 120
        stop(proc, log)
    finally:
        kill_all(proc)


def test_serve_with_a_missing_model_fails_cleanly(tmp_path):
    r = subprocess.run([RECSYS, "serve", "--model", str(tmp_path / "nothing")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2
    assert "no model" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("fmt, items_dir, stale", [
    (1, "default-data", True),  # the default model of an older release: trained again
    (1, "shop", False),  # the user's own model is never replaced
    ("current", "default-data", False),
])
def test_only_a_default_model_of_an_older_format_is_retrained(tmp_path, fmt, items_dir, stale):
    from api.config import Settings
    from cli.serve import _stale_default
    from recsys.artifact import FORMAT_VERSION

    version = tmp_path / "artifacts" / "v1"
    version.mkdir(parents=True)
    manifest = {"format": FORMAT_VERSION if fmt == "current" else fmt,
                "data": {"items": {"file": str(tmp_path / items_dir / "items.csv")}}}
    (version / "manifest.json").write_text(json.dumps(manifest))
    (tmp_path / "artifacts" / "current").write_text("v1")
    settings = Settings(artifacts_dir=tmp_path / "artifacts", default_data_dir=tmp_path / "default-data")
    assert _stale_default(settings) is stale


def test_serve_with_current_on_a_broken_manifest_reports_it(tmp_path, v1):
    """No traceback: the service comes up, /ready answers 503 naming the file and the problem."""
    artifacts, log = make_artifacts(tmp_path / "artifacts", v1), tmp_path / "server.log"
    (artifacts / v1.name / "manifest.json").write_text('{"format": 3, "config": ')
    with running([], {"RECSYS_ARTIFACTS_DIR": str(artifacts)}, log) as (base, proc):
        deadline = time.monotonic() + 60
        while True:
            try:
                r = httpx.get(f"{base}/ready", timeout=1)
                if r.json()["status"] == "failed":
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline and proc.poll() is None, log.read_text()[-2000:]
            time.sleep(0.1)
        assert r.status_code == 503
        assert r.json()["detail"].startswith(f"{v1.name}/manifest.json: not valid JSON")
        assert str(artifacts) not in r.json()["detail"]
        stop(proc, log)
    assert "Traceback" not in log.read_text()
