"""The README's two quick-start commands, run from a fresh clone of the committed tree.

`make run` must set everything up, build the default model and serve it; `make test` must set up,
hand PYTEST_ARGS to pytest and leave `git status` clean. Its pytest only collects the suite (every
test module imports in the clone's own virtualenv): the suite runs each test once, in the run
this file belongs to, never again inside itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.live_server import free_port

ROOT = Path(__file__).resolve().parents[2]
INNER = "RECSYS_INSIDE_FRESH_CLONE"


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]


def test_quick_start_has_exactly_two_commands():
    assert quick_start_commands() == ["make run", "make test"]


def test_ci_runs_the_readme_test_command():
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    assert [line for line in script if line and not line.startswith(("#", "set ", "cd "))] == ["make test"]


@pytest.fixture(scope="module")
def fresh_clone(module_tmp):
    if os.environ.get(INNER) or shutil.which("git") is None:
        pytest.skip("already inside a fresh clone" if os.environ.get(INNER) else "git is missing")
    if subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True).returncode:
        pytest.skip("not a git checkout")
    dest = module_tmp / "repo"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True)
    return dest


def _env(clone: Path, port: int) -> dict:
    # make's own variables carry an outer `make test PYTEST_ARGS=...` into the inner make, where a
    # command-line variable beats the environment's: the inner run then ran the whole suite
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH", "RECSYS_", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"))}
    env.update({INNER: "1", "RECSYS_PORT": str(port), "RECSYS_DEFAULT_ITEMS": "600",
                "RECSYS_DEFAULT_QUERIES": "800"})
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if ".venv" not in p)
    return env


# pyproject's per-test timeout (600 s) is shorter than these tests' own deadlines (15 and 13
# minutes): a fresh clone installs the whole virtualenv, which on a loaded 2-core machine took
# over 600 s (207 s when idle), so the tests keep their own deadlines
@pytest.mark.timeout(1000)
def test_make_run_serves_the_default_model(fresh_clone):
    port = free_port()
    proc = subprocess.Popen(["make", "run"], cwd=fresh_clone, env=_env(fresh_clone, port),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stdout.read().decode(errors="replace")[-3000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(2)
        else:
            pytest.fail("the service did not become ready within 15 minutes")
        body = json.dumps({"query": "red dress", "k": 3}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/recommend", data=body,
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            answer = json.load(r)
        assert len(answer["items"]) == 3
        assert (fresh_clone / "artifacts" / "current").is_file()
    finally:  # make, its `recsys serve` and whatever that started: one process group
        _stop_group(proc)


def _stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group, SIGKILL to what is left of it after 30 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)
    with contextlib.suppress(ProcessLookupError):  # make exited; a child may not have
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.mark.timeout(900)
def test_make_test_sets_up_and_runs_the_suite(fresh_clone):
    env = _env(fresh_clone, free_port())
    # collected, not run: the whole suite imports in the clone (the test extra has what it
    # needs), and no test runs twice (the outer run took 61 minutes when this ran the suite)
    env["PYTEST_ARGS"] = "-q --collect-only"
    proc = subprocess.Popen(["make", "test"], cwd=fresh_clone, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=800)
    finally:  # a timed-out inner run leaves no pytest or install step behind
        _stop_group(proc)
    assert proc.returncode == 0, stdout[-3000:] + stderr[-3000:]
    collected = re.search(r"(\d+) tests? collected", stdout)
    assert collected and int(collected.group(1)) >= 500, stdout[-2000:]  # the suite, all of it
    assert not re.search(r"\d+ (passed|failed)", stdout), stdout[-2000:]  # and nothing ran
    status = subprocess.run(["git", "status", "--porcelain"], cwd=fresh_clone, capture_output=True,
                            text=True, check=True).stdout
    assert status == "", f"make test changed the clone:\n{status}"
