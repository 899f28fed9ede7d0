"""The fixtures of tests/api and tests/system (tests/conftest.py registers them): one small
synthetic catalogue and two trained versions for the whole test session.

`v1` (2 epochs, seed 0) is what the apps serve; `v2` (1 epoch, seed 1) is the other version the
hot-swap and admin tests activate. Tests that change versions get their own artifacts folder
(`make_artifacts`), so the shared one never moves.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cli.app import create_app
from recsys.artifact import load_version
from recsys.synthetic import generate
from training.fit import TrainConfig
from training.train import TrainInputs, train

from api_support import ADMIN_TOKEN, EVENTS_APP_TOKEN, make_artifacts, make_settings

N_ITEMS, N_QUERIES = 400, 600


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("data")
    generate(root / "shop", n_items=N_ITEMS, n_queries=N_QUERIES, seed=0)
    return root


def _train(data_dir: Path, out: Path, epochs: int, seed: int) -> Path:
    shop = data_dir / "shop"
    inputs = TrainInputs(items=shop / "items.csv", interactions=shop / "interactions.csv")
    return train(inputs, out, TrainConfig(epochs=epochs, seed=seed)).version_dir


@pytest.fixture(scope="session")
def v1(data_dir, tmp_path_factory) -> Path:
    return _train(data_dir, tmp_path_factory.mktemp("v1"), epochs=2, seed=0)


@pytest.fixture(scope="session")
def v2(data_dir, tmp_path_factory) -> Path:
    return _train(data_dir, tmp_path_factory.mktemp("v2"), epochs=1, seed=1)


@pytest.fixture(scope="session")
def rec(v1):
    return load_version(v1)


@pytest.fixture(scope="session")
def client(rec, v1, data_dir, tmp_path_factory):
    """The app serving v1, preloaded; admin off."""
    artifacts = make_artifacts(tmp_path_factory.mktemp("artifacts") / "a", v1)
    app = create_app(make_settings(artifacts, data_dir), recommender=rec)
    with TestClient(app) as c:
        yield c


@pytest.fixture(scope="session")
def lenient_client(rec, v1, data_dir, tmp_path_factory):
    """Like `client`, but a server error comes back as a 500 response instead of an exception."""
    artifacts = make_artifacts(tmp_path_factory.mktemp("artifacts") / "a", v1)
    app = create_app(make_settings(artifacts, data_dir, max_body_bytes=100_000), recommender=rec)
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


@pytest.fixture
def app_client(tmp_path, v1, data_dir, rec, store_url):
    """A client of an app serving a copy of v1 on `store_url` (SQLite, then PostgreSQL), admin
    and event ingestion on (ADMIN_TOKEN, EVENTS_APP_TOKEN), at most 20 events a batch."""
    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN, events_token=EVENTS_APP_TOKEN,
                             database_url=store_url, max_event_batch=20)
    with TestClient(create_app(settings, recommender=rec)) as c:
        yield c
