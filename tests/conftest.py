"""Shared fixtures: a tiny planted catalogue and one model trained on it, built once."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recsys.artifact import load_version
from training.fit import TrainConfig
from training.train import TrainInputs, train

from .planted import write_material, write_planted

ROOT = Path(__file__).resolve().parents[1]
FAST = TrainConfig(epochs=4, seed=0)


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


@pytest.fixture(params=["sqlite", "postgresql"])
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
        [sys.executable, "-m", "training.cli", "train", "--items", p["items"], "--interactions",
         p["interactions"], "--schema", p["schema"], "--epochs", "2", "--out", str(out), "--json"],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    return out, json.loads(done.stdout)
