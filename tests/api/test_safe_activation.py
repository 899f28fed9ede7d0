"""Safe activation through the admin API: the 36-item case of issue 15, and what the store lets
several server processes agree on (jobs, decisions, activations)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient

from cli.app import create_app
from recsys.artifact import current_version
from recsys.synthetic import generate

from api_support import ADMIN_TOKEN, make_artifacts, make_settings
from test_admin import AUTH, wait_job


@pytest.fixture
def two_processes(tmp_path, data_dir, v1, rec):
    """Two apps on one artifacts folder and one store, like two server processes."""
    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN, train_epochs=1,
                             max_upload_bytes=2_000_000)
    with TestClient(create_app(settings, recommender=rec)) as a, \
         TestClient(create_app(settings, recommender=rec)) as b:
        yield a, b, artifacts


def test_a_retrain_on_a_36_item_catalogue_is_kept_and_not_served(two_processes, tmp_path, v1):
    a, b, artifacts = two_processes
    small = tmp_path / "small"
    generate(small, n_items=36, n_queries=60, seed=2)
    files = {name: (f"{name}.csv", (small / f"{name}.csv").read_bytes())
             for name in ("items", "interactions")}
    r = a.post("/admin/train", files=files, headers=AUTH)
    assert r.status_code == 202, r.text
    job = wait_job(a, r.json()["id"])
    assert job["status"] == "succeeded", job
    new = job["version"]
    assert (artifacts / new / "manifest.json").is_file()  # trained and kept
    assert not job["activated"]
    assert job["decision"].startswith("kept, not served: trained on another catalogue (36 items")
    assert f"the served {v1.name} (400 items" in job["decision"]
    assert a.get("/model").json()["version"] == v1.name and current_version(artifacts) == v1.name

    # the other process sees the same job and the same decision, from the store
    assert b.get(f"/admin/jobs/{job['id']}", headers=AUTH).json() == job
    listed = {v["version"]: v for v in b.get("/admin/versions", headers=AUTH).json()["versions"]}
    assert listed[new]["decision"]["reason"] == job["decision"]
    assert listed[new]["decision"]["activated"] is False and listed[new]["decision"]["job_id"] == job["id"]
    assert listed[v1.name]["decision"] is None and listed[v1.name]["serving"]

    # a new catalogue is served by an explicit call; the other process follows the activation
    r = a.post(f"/admin/versions/{new}/activate", headers=AUTH)
    assert r.status_code == 200 and r.json() == {"serving": new, "previous": v1.name}
    assert b.get("/model").json()["version"] == v1.name
    b.app.state.versions.follow_activations()
    assert b.get("/model").json()["version"] == new
    # rollback stays one call
    r = b.post(f"/admin/versions/{v1.name}/activate", headers=AUTH)
    assert r.status_code == 200 and r.json() == {"serving": v1.name, "previous": new}
    a.app.state.versions.follow_activations()
    assert a.get("/model").json()["version"] == v1.name == current_version(artifacts)


def test_a_job_of_a_process_that_died_is_marked_failed_at_the_next_start(tmp_path, data_dir, v1, rec):
    from store.records import load_jobs, save_job

    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN)
    with TestClient(create_app(settings, recommender=rec)) as c:
        db, owner = c.app.state.db, c.app.state.jobs.owner
        host = owner.rsplit(":", 1)[0]
        row = {"id": "gone1", "owner": f"{host}:999999999", "status": "running",
               "created_at": "2026-12-01T10:00:00+00:00", "started_at": None, "finished_at": None,
               "step": 1, "total": 10, "loss": None, "version": None, "activated": False,
               "decision": None, "metrics": None, "error": None}
        save_job(db, row)
        now = datetime.now(UTC).isoformat(timespec="seconds")  # another host's, alive: it said so just now
        save_job(db, {**row, "id": "elsewhere", "owner": "another-host:1", "heartbeat_at": now})
    with TestClient(create_app(settings, recommender=rec)) as c:
        jobs = {j["id"]: j for j in c.get("/admin/jobs", headers=AUTH).json()}
        assert jobs["gone1"]["status"] == "failed"
        assert jobs["gone1"]["error"] == "the server process running it stopped"
        assert jobs["elsewhere"]["status"] == "running"  # another host's: judged by its heartbeat alone
        assert len(load_jobs(c.app.state.db)) == 2
