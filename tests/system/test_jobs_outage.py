"""A training job outlives a database outage (issue 27's leftovers), on a real PostgreSQL server
stopped while the job trains: the job goes on (its progress rows wait for the store), its
outcome is stored once the store answers, and the process runs the next job.

Before: the first progress save during the outage raised out of the job runner; the job was
failed as an "internal error" (its training process left running), the runner thread then died
on saving that outcome, and every job accepted after (202) stayed queued forever."""

from __future__ import annotations

import time

from fastapi.testclient import TestClient

from cli.app import create_app
from recsys.synthetic import generate
from store.db import Database
from store.records import load_jobs

from api_support import ADMIN_TOKEN, make_artifacts, make_settings
from test_admin import AUTH, wait_job
from test_store_failures import _pg_ctl, own_postgres  # noqa: F401 - a fixture, asked by name

DATA_JOB = {"items": "big/items.csv", "interactions": "big/interactions.csv"}
OUTAGE_S = 4.0  # progress is saved every second: several saves fail


def _stored(url: str, job_id: str) -> dict:
    db = Database(url)
    try:
        return load_jobs(db, job_id)[0]
    finally:
        db.dispose()


def test_a_job_trains_through_an_outage_and_the_next_one_runs(request, tmp_path, v1, rec):
    url, folder, port = request.getfixturevalue("own_postgres")
    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    # a catalogue whose training lasts well past the outage (the session's trains in seconds)
    data = tmp_path / "data"
    generate(data / "big", n_items=2000, n_queries=600, seed=3)
    settings = make_settings(artifacts, data, admin_token=ADMIN_TOKEN, database_url=url)
    with TestClient(create_app(settings, recommender=rec), raise_server_exceptions=False) as c:
        r = c.post("/admin/train", json={**DATA_JOB, "epochs": 3}, headers=AUTH)
        assert r.status_code == 202, r.text
        job_id = r.json()["id"]
        for _ in range(600):  # bounded: until it has reported progress
            job = c.get(f"/admin/jobs/{job_id}", headers=AUTH).json()
            if job["status"] == "running":
                break
            assert job["status"] in ("queued", "running"), job
            time.sleep(0.1)
        _pg_ctl(folder, "-m", "fast", "-w", "stop")
        try:
            time.sleep(OUTAGE_S)
            during = c.get(f"/admin/jobs/{job_id}", headers=AUTH).json()  # this process's own
            assert during["status"] in ("running", "succeeded") or "store was unavailable" in (
                during.get("error") or ""), during
        finally:
            _pg_ctl(folder, "-l", f"{folder}/server.log", "-w", "-t", "60", "-o",
                    f"-c listen_addresses=127.0.0.1 -p {port} -k {folder}", "start")
        first = wait_job(c, job_id, timeout=300)
        # trained to the end: served or kept by the comparison, or (finished during the
        # outage) kept and said why; never an internal error
        assert first["status"] == "succeeded" or "store was unavailable" in first["error"], first
        # the outcome reached the store (what every other process answers)
        for _ in range(100):
            if _stored(url, job_id)["status"] == first["status"]:
                break
            time.sleep(0.2)
        assert _stored(url, job_id)["status"] == first["status"]

        # the runner lives on: the next job runs
        r = c.post("/admin/train", json={**DATA_JOB, "epochs": 1}, headers=AUTH)
        assert r.status_code == 202, r.text
        second = wait_job(c, r.json()["id"], timeout=300)
        assert second["status"] == "succeeded", second
