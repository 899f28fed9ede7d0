"""Helpers of the API tests (importable by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from fastapi.testclient import TestClient

from api.config import Settings
from recsys.artifact import set_current

ADMIN_TOKEN = "test-admin-token"


# the events token of `app_client` (tests/api/conftest.py)
EVENTS_APP_TOKEN = "test-events-token"


def make_artifacts(root: Path, *versions: Path) -> Path:
    """A fresh artifacts folder holding copies of `versions`, the first one current (symlinks
    copied as symlinks: a version linking outside its folder stays one)."""
    root.mkdir(parents=True, exist_ok=True)
    for v in versions:
        shutil.copytree(v, root / v.name, symlinks=True)
    set_current(root, versions[0].name)
    return root


def make_settings(artifacts: Path, data_dir: Path, **kw) -> Settings:
    """Settings of an app on `artifacts`, with a store of its own next to it (the data folder
    is shared by the session's apps) unless `database_url` is given."""
    kw.setdefault("database_url", f"sqlite:///{artifacts.parent / (artifacts.name + '-store.db')}")
    kw.setdefault("watch_interval_s", 0)  # no watcher unless a test follows the store
    return Settings(artifacts_dir=artifacts, data_dir=data_dir, default_data_dir=data_dir / "default", **kw)


def wait_ready(client: TestClient, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = client.get("/ready")
        if r.status_code == 200:
            return r.json()
        time.sleep(0.05)
    raise AssertionError(f"not ready after {timeout}s: {r.json()}")


def ids(answer: dict) -> list[str]:
    """The item ids of a /recommend answer, in order."""
    return [it["item_id"] for it in answer["items"]]


def assert_additive(answer: dict) -> None:
    """Each item's score is its prior + its heads' contributions + its rules' amounts."""
    from recsys.explain import ADDITIVE_TOLERANCE

    for it in answer["items"]:
        e = it["explanation"]
        total = e["prior"] + sum(h["contribution"] for h in e["heads"]) + sum(
            r["amount"] or 0.0 for r in e["rules"])
        assert abs(it["score"] - total) <= ADDITIVE_TOLERANCE, it
