"""Shared fixtures: a tiny planted catalogue and one model trained on it, built once."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from recsys.artifact import load_version
from training.fit import TrainConfig
from training.train import TrainInputs, train

from .planted import write_material, write_planted

ROOT = Path(__file__).resolve().parents[1]
FAST = TrainConfig(epochs=4, seed=0)
SYSTEM = ROOT / "tests" / "system"

# tests/api and tests/system are folders of test modules, not packages: their helpers
# (api_support, test_server, load_client, ...) are imported by name, from either folder
for _folder in ("api", "system"):
    sys.path.insert(0, str(ROOT / "tests" / _folder))

# the service's fixtures (data_dir, v1, v2, rec, client, lenient_client, app_client), for
# tests/api and tests/system alike
from .service_fixtures import (  # noqa: E402, F401 - after the helpers' folders are on sys.path
    app_client,
    client,
    data_dir,
    lenient_client,
    rec,
    v1,
    v2,
)


def pytest_collection_modifyitems(items):
    """tests/system's tests (real servers, databases, browsers, several processes, a fresh clone)
    are marked `system`: `pytest -m "not system"` (make test-fast) leaves them out."""
    for item in items:
        if SYSTEM in Path(item.fspath).parents:
            item.add_marker(pytest.mark.system)


def pytest_sessionstart(session):
    """The compiled kernels, compiled once before the test processes start (in the one that
    starts them): in a fresh clone numba's on-disk cache is empty, and every test process and
    server that scored before one of them had written it compiled all kernels again (28 s of
    CPU each on a 2-core machine, 4 December 2026); afterwards each loads them from the cache (1.5 s)."""
    if not hasattr(session.config, "workerinput"):
        from recsys.kernels import compiled

        compiled()


# ---- no test leaves its files behind --------------------------------------------------------------
#
# A CI machine's disk filled at 81% of the suite (saved models of 17 MB in most tests, corrupted
# copies, a fresh clone with its own virtualenv: about 13 GB by the end). pyproject's
# tmp_path_retention_policy = "failed" removes a passing test's tmp_path when it ends; a module's
# shared folder goes when the module ends, unless one of its tests failed (its files then tell why).


@pytest.fixture(scope="module")
def module_tmp(request, tmp_path_factory) -> Iterator[Path]:
    """A folder for one test module's shared fixtures, removed when the module ends."""
    failed_before = request.session.testsfailed
    path = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    yield path
    if request.session.testsfailed == failed_before:
        shutil.rmtree(path, ignore_errors=True)


# ---- no process outlives the session -------------------------------------------------------------
#
# A server a test starts must be stopped by the test (in a finally block, so that a failure or
# pytest-timeout's exception stops it too). What escapes is found here, by an environment variable
# this session sets and every process it starts inherits: children, their children, and daemons
# that left the process tree (nginx and PostgreSQL detach themselves; a SIGKILLed supervisor's
# workers are reparented to init). The variable's name has this process's id, so that a pytest
# inside a test (the fresh clone's `make test`) marks its own and the outer one still sees them.
# RECSYS_* would not do: the tests strip those from the servers' environments.

SESSION_MARK = f"PYTEST_RECSYS_SESSION_{os.getpid()}"
os.environ[SESSION_MARK] = "1"  # before any fixture or test starts a process


def _marked_processes() -> dict[int, str]:
    """pid -> command line of every live process (not a zombie) that carries SESSION_MARK."""
    needle = f"\0{SESSION_MARK}=".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle not in b"\0" + (entry / "environ").read_bytes():
                continue
            state, ppid = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # exited meanwhile, or not ours to read
            continue
        # multiprocessing's helper (torch starts it in this process) lives until this
        # interpreter exits: it is not left behind
        helper = "multiprocessing.resource_tracker" in cmdline or "multiprocessing.forkserver" in cmdline
        if state != "Z" and not (helper and int(ppid) == os.getpid()):
            found[int(entry.name)] = cmdline.strip()
    return found


@pytest.fixture(scope="session", autouse=True)
def no_process_left_behind():
    """At the end of the session: every process the tests started has exited; those that have
    not are killed and named, and the session fails."""
    from tests import zygote

    yield
    zygote.close()  # what the servers were forked from (tests/zygote.py) goes first
    # a server stopped by the last teardown may still be exiting (PostgreSQL's backends follow
    # their postmaster): a moment's grace before anything counts as left behind
    deadline = time.monotonic() + 5
    while (left := _marked_processes()) and time.monotonic() < deadline:
        time.sleep(0.2)
    if not left:
        return
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _marked_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    listing = "\n".join(f"  {pid}: {cmd[:300]}" for pid, cmd in sorted(left.items()))
    pytest.fail(f"{len(left)} process(es) the tests started were still running at the end of "
                f"the session (killed now):\n{listing}", pytrace=False)


# ---- several processes (pytest-xdist: `make test` runs `-n 3 --dist loadfile`) --------------------
#
# Each test file is one unit of work, run by one process, so that a module's fixtures (a trained
# model, a server, a fresh clone's virtualenv) are built once; except the files of SPREAD, which
# share no module fixture and whose long cases go one by one to whichever process is free. (Not
# `--dist loadgroup` with marks: with pytest 9.2 it silently stops grouping, pytest-xdist#1386.)
# Every process builds the session fixtures for itself, in temporary folders of its own, and at
# its end checks that no process it started is left (no_process_left_behind: its own id).

SPREAD = frozenset({"tests/system/test_catalogue_lock.py", "tests/system/test_events_durability.py",
                    "tests/system/test_chaos.py", "tests/system/test_change_order.py",
                    "tests/system/test_no_server_paths.py"})

# The longest units, in seconds (a unit's setup, calls and teardown, measured in `make test` on
# 2 cores under load 9-11 from other work, 3 December 2026; test_lint.py with mypy's cache empty,
# as in a fresh clone): they start first, longest first, so that none of them begins near the
# end. xdist's own order (most tests first) started the files of a few long tests, and every case
# of SPREAD, last. Every other unit follows in xdist's order. Only an order: a stale figure costs
# time, never a result.
LOCK = "tests/system/test_catalogue_lock.py::test_concurrent_changes_through_two_"
DURABLE = "tests/system/test_events_durability.py::test_every_event_answered_202_survives_a_sigkill"
CHAOS = "tests/system/test_chaos.py::test_kills_under_mixed_load_lose_no_acknowledged_write"
ORDER = "tests/system/test_change_order.py::test_activations_retrains_and_changes_are_one_history"
PATHS = "tests/system/test_no_server_paths.py::test_no_answer_names_a_server_path"
LONGEST = {
    "tests/system/test_readme_commands.py": 194,
    "tests/system/test_experiments_loop.py": 190,
    "tests/system/test_cli.py": 177,
    "tests/system/test_web_page.py": 167,
    "tests/system/test_added_facet.py": 137,
    "tests/test_lint.py": 130,
    "tests/system/test_closed_loop.py": 120,
    "tests/api/test_admin.py": 100,
    "tests/api/test_events.py": 99,
    f"{ORDER}[postgresql]": 98,
    "tests/system/test_distributed.py": 96,
    f"{CHAOS}[postgresql]": 94,
    f"{ORDER}[sqlite]": 89,
    "tests/system/test_jobs_lifecycle.py": 86,
    "tests/system/test_jobs_outage.py": 84,
    "tests/system/test_schemathesis.py": 84,
    f"{PATHS}[relative]": 83,
    f"{CHAOS}[sqlite]": 83,
    "tests/system/test_corrupt_versions.py": 80,
    "tests/system/test_workers.py": 79,
    f"{PATHS}[absolute]": 79,
    "tests/system/test_server.py": 77,
    f"{LOCK}workers_are_all_kept[postgresql]": 75,
    "tests/system/test_store_failures.py": 71,
    f"{LOCK}workers_are_all_kept[sqlite]": 69,
    f"{LOCK}replicas_are_all_kept[postgresql]": 64,
    "tests/api/test_experiments.py": 54,
    "tests/system/test_store_outage.py": 54,
    "tests/system/test_worker_replacement.py": 48,
    f"{LOCK}replicas_are_all_kept[sqlite]": 44,
    f"{DURABLE}[sqlite]": 43,
    f"{DURABLE}[postgresql]": 32,
}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FileScheduling(LoadFileScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if path in SPREAD else path

        def _assign_work_unit(self, node) -> None:
            if not self.ordered:  # the first assignment: the queue is complete
                units = sorted(self.workqueue.items(), key=lambda unit: -LONGEST.get(unit[0], 0))
                self.workqueue.clear()
                self.workqueue.update(units)
                self.ordered = True
            super()._assign_work_unit(node)

    return FileScheduling(config, log)


@pytest.fixture(scope="session")
def planted_paths(tmp_path_factory):
    return write_planted(tmp_path_factory.mktemp("planted"))


@pytest.fixture(scope="session")
def planted_artifacts(planted_paths, tmp_path_factory):
    out = tmp_path_factory.mktemp("artifacts")
    result = train(TrainInputs(planted_paths["items"], planted_paths["interactions"],
                               judgments=planted_paths["judgments"]), out, FAST)
    return out, result


@pytest.fixture(scope="session")
def planted_model(planted_artifacts):
    return load_version(planted_artifacts[0])


# ---- the store: SQLite always, PostgreSQL on a real throwaway server ----------------------------

POSTGRES_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "postgres.sh"


@pytest.fixture(scope="session")
def postgres_server():
    """(URL of its `recsys` database, folder) of a PostgreSQL server scripts/postgres.sh starts
    for the session on 127.0.0.1 (`make test` installs Debian's postgresql first)."""
    started = subprocess.run(["bash", str(POSTGRES_SCRIPT), "start"], capture_output=True,
                             text=True, timeout=120)
    if started.returncode != 0:
        pytest.fail(f"scripts/postgres.sh start failed (scripts/postgres.sh install, which `make "
                    f"test` runs, installs PostgreSQL): {started.stderr[-2000:]}")
    url, folder = started.stdout.split()[:2]
    try:
        yield url
    finally:
        subprocess.run(["bash", str(POSTGRES_SCRIPT), "stop", folder], timeout=60, check=False)


_databases = itertools.count()


# the PostgreSQL cases need a database server: system tests (`make test-fast` leaves them out)
@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.system)])
def store_url(request, tmp_path) -> str:
    """A fresh, empty store: a SQLite file, or a new database on the session's PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    import psycopg

    server = request.getfixturevalue("postgres_server")
    name = f"t{os.getpid()}_{next(_databases)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server.rsplit("/", 1)[0] + "/" + name


@pytest.fixture
def db(store_url):
    """The fresh store of `store_url`, migrated to Alembic's head."""
    from store.db import Database

    db = Database(store_url)
    db.upgrade()
    yield db
    db.dispose()


@pytest.fixture(scope="session")
def material_paths(tmp_path_factory):
    """The planted catalogue whose schema adds a fifth facet, `material` (tests/planted.py)."""
    return write_material(tmp_path_factory.mktemp("material"))


@pytest.fixture(scope="session")
def material_trained(material_paths, tmp_path_factory):
    """(artifacts folder, what `recsys train --json` printed) for the material catalogue, trained
    through the command line."""
    out = tmp_path_factory.mktemp("material-artifacts")
    p = {k: str(v) for k, v in material_paths.items()}
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "train", "--items", p["items"], "--interactions",
         p["interactions"], "--schema", p["schema"], "--epochs", "2", "--out", str(out), "--json"],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    return out, json.loads(done.stdout)
