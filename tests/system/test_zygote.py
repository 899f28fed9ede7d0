"""The forked servers and CLI runs of the tests (tests/zygote.py) behave as the console script's:
the same output and exit code, their own environment and folder, killed by their signals."""

from __future__ import annotations

import os
import signal
import time

import httpx

from tests import zygote
from tests.live_server import RECSYS, clean_env, free_port, wait_ready


def test_a_forked_cli_run_answers_as_an_executed_one(tmp_path, monkeypatch):
    env = {**os.environ, "RECSYS_ARTIFACTS_DIR": str(tmp_path / "nothing"), "COLUMNS": "200"}
    forked = zygote.run("cli.main", ["recommend", "red dress"], env, cwd=tmp_path)
    monkeypatch.setenv("TESTS_EXEC_SERVERS", "1")
    executed = zygote.run("cli.main", ["recommend", "red dress"], env, cwd=tmp_path)
    assert forked.returncode == executed.returncode == 2
    assert forked.stderr == executed.stderr and str(tmp_path / "nothing") in forked.stderr
    assert forked.stdout == executed.stdout == ""


def test_a_forked_server_has_its_own_settings_and_dies_by_its_signal(tmp_path):
    port, log = free_port(), tmp_path / "server.log"
    env = clean_env(RECSYS_ARTIFACTS_DIR=str(tmp_path / "artifacts"), RECSYS_DEFAULT_DATA_DIR=str(tmp_path / "d"),
                    RECSYS_DEFAULT_ITEMS="60", RECSYS_DEFAULT_QUERIES="80", RECSYS_TRAIN_EPOCHS="1",
                    RECSYS_DATABASE_URL=f"sqlite:///{tmp_path / 'store.db'}")
    proc = zygote.popen([RECSYS, "serve", "--host", "127.0.0.1", "--port", str(port)], env, log, new_session=True)
    try:
        assert os.getpgid(proc.pid) == proc.pid  # a session of its own, as start_new_session gives
        wait_ready(f"http://127.0.0.1:{port}", proc, log, timeout=150)
        assert httpx.get(f"http://127.0.0.1:{port}/model", timeout=10).json()["n_items"] == 60
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM)
        assert '"msg": "service stopped"' in log.read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"{proc.pid} still exists after it was reaped")
