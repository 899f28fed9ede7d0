"""Training jobs: cancel, limits of their input, paths checked on the opened file, no server paths
in their errors, and no worker or temporary folder outliving a SIGKILLed server."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from cli.app import create_app
from recsys.artifact import TempDir, current_version, remove_stale_temp

from api_support import ADMIN_TOKEN, make_artifacts, make_settings
from test_admin import AUTH, version_dirs, wait_job
from test_server import running, stop, wait_ready

DATA_JOB = {"items": "shop/items.csv", "interactions": "shop/interactions.csv"}


@pytest.fixture
def admin(tmp_path, data_dir, v1, rec):
    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN, train_epochs=1)
    app = create_app(settings, recommender=rec)
    with TestClient(app) as c:
        yield c, artifacts, app


def _wait_running(c, job_id: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = c.get(f"/admin/jobs/{job_id}", headers=AUTH).json()
        if job["status"] != "queued":
            return job
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_cancel_a_running_and_a_queued_job(admin, v1):
    c, artifacts, app = admin
    before = version_dirs(artifacts)
    running = c.post("/admin/train", json={**DATA_JOB, "epochs": 50}, headers=AUTH).json()["id"]
    queued = c.post("/admin/train", json={**DATA_JOB, "epochs": 50}, headers=AUTH).json()["id"]
    assert _wait_running(c, running)["status"] == "running"
    process = app.state.jobs._process
    r = c.delete(f"/admin/jobs/{queued}", headers=AUTH)
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    r = c.delete(f"/admin/jobs/{running}", headers=AUTH)
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    process.join(10)
    assert not process.is_alive()
    deadline = time.monotonic() + 10
    while version_dirs(artifacts) != before:  # the runner removes the staging and upload folders
        assert time.monotonic() < deadline, version_dirs(artifacts)
        time.sleep(0.05)
    for job_id in (running, queued):
        job = c.get(f"/admin/jobs/{job_id}", headers=AUTH).json()
        assert job["status"] == "cancelled" and job["version"] is None
        assert c.delete(f"/admin/jobs/{job_id}", headers=AUTH).status_code == 409
    assert c.delete("/admin/jobs/nope", headers=AUTH).status_code == 404
    assert c.get("/model").json()["version"] == v1.name and current_version(artifacts) == v1.name


def test_rows_over_the_limit_are_refused(tmp_path, data_dir, v1, rec):
    """The limit here is 2,000 rows; the shop's interactions have more."""
    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN, max_train_rows=2_000)
    with TestClient(create_app(settings, recommender=rec)) as c:
        _refuse_rows(c, artifacts, data_dir)


def _refuse_rows(c, artifacts, data_dir):
    before = version_dirs(artifacts)
    r = c.post("/admin/train", json=DATA_JOB, headers=AUTH)
    assert r.status_code == 422 and "interactions" in r.json()["message"]
    assert "RECSYS_MAX_TRAIN_ROWS" in r.json()["message"]
    big = (data_dir / "shop" / "interactions.csv").read_bytes()
    r = c.post("/admin/train", headers=AUTH, files={
        "items": ("items.csv", (data_dir / "shop" / "items.csv").read_bytes()),
        "interactions": ("interactions.csv", big)})
    assert r.status_code == 422 and "more than 2000 rows" in r.json()["message"]
    assert version_dirs(artifacts) == before


@pytest.mark.parametrize("name, message", [
    ("shop/" + "x" * 300 + ".csv", "items: a path component is over 255 characters"),
    ("x" * 5000, "items: a path component is over 255 characters"),
    ("shop/\\udcff.csv", "body: Invalid JSON: lone leading surrogate"),  # JSON cannot hold it
    ("shop/items.csv/x", "items: no such file in the data folder"),
])
def test_unusable_paths_are_422_and_the_connection_goes_on(admin, name, message):
    c, _, _ = admin
    body = f'{{"items": "{name}", "interactions": "shop/interactions.csv"}}'
    r = c.post("/admin/train", content=body, headers={**AUTH, "content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert r.json()["message"].startswith(message), r.json()["message"]
    assert c.get("/admin/versions", headers=AUTH).status_code == 200


def test_the_job_reads_the_file_it_checked(admin, data_dir, tmp_path):
    """A symlink swapped in after the request cannot lead the job out of the data folder: the
    job trains from a copy made from the very descriptor that was checked."""
    c, _, app = admin
    shop = data_dir / "swap"
    shop.mkdir(exist_ok=True)
    for f in ("items.csv", "interactions.csv"):
        (shop / f).write_bytes((data_dir / "shop" / f).read_bytes()[:20_000].rsplit(b"\n", 1)[0] + b"\n")
    original = (shop / "items.csv").read_bytes()
    r = c.post("/admin/train", json={"items": "swap/items.csv", "interactions": "swap/interactions.csv",
                                     "epochs": 1}, headers=AUTH)
    assert r.status_code == 202, r.text
    secret = tmp_path / "secret.csv"
    secret.write_text("item_id,title\nS,secret\n")
    (shop / "items.csv").unlink()
    os.symlink(secret, shop / "items.csv")
    spec = app.state.jobs.get(r.json()["id"]).spec
    assert spec.items.read_bytes() == original  # the job's own copy
    assert spec.items.parent.name.startswith(".upload-")
    wait_job(c, r.json()["id"])


def test_job_errors_name_no_server_path(admin, data_dir):
    c, artifacts, _ = admin
    broken = b"item_id,title\nA1,Red shirt\nA1,Green shirt\n"
    r = c.post("/admin/train", headers=AUTH, files={
        "items": ("items.csv", broken), "interactions": ("i.csv", b"query,item_id,label\nred,A1,1\n")})
    job = wait_job(c, r.json()["id"])
    assert job["status"] == "failed" and job["error"].startswith("items.csv, row 3"), job["error"]
    assert str(artifacts) not in job["error"] and str(data_dir) not in job["error"]


def test_stale_temporary_folders_are_removed_unless_locked(tmp_path):
    root = tmp_path / "artifacts"
    root.mkdir()
    for name in (".v20260101-000000-000000.abc", ".staging-1234", ".upload-xyz"):  # older releases'
        (root / name).mkdir()
        os.utime(root / name, (0, 0))
    live = TempDir(root, ".staging-live.")
    dead = TempDir(root, ".tmp-v1.")
    dead.release()  # what a killed writer leaves: a lock nobody holds
    (root / "v1").mkdir()
    removed = remove_stale_temp(root)
    assert sorted(removed) == sorted([".v20260101-000000-000000.abc", ".staging-1234", ".upload-xyz",
                                      dead.path.name])
    assert live.path.is_dir() and (root / "v1").is_dir()
    live.remove()


def _children(pid: int) -> set[int]:
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.add(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_sigkill_of_the_server_leaves_no_worker_and_no_leftovers(tmp_path, v1, data_dir):
    artifacts, log = make_artifacts(tmp_path / "artifacts", v1), tmp_path / "server.log"
    env = {"RECSYS_ARTIFACTS_DIR": str(artifacts), "RECSYS_DATA_DIR": str(data_dir),
           "RECSYS_ADMIN_TOKEN": ADMIN_TOKEN}
    with running([], env, log) as (base, proc):
        wait_ready(base, proc, log, timeout=120)
        with httpx.Client(base_url=base, timeout=30, headers=AUTH) as http:
            job_id = http.post("/admin/train", json={**DATA_JOB, "epochs": 50}).json()["id"]
            deadline = time.monotonic() + 60
            while http.get(f"/admin/jobs/{job_id}").json()["progress"]["step"] == 0:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        workers = _children(proc.pid)
        assert workers, "no training process found"
        during = [p.name for p in artifacts.iterdir()]
        assert any(n.startswith(".staging-") for n in during) and any(
            n.startswith(".upload-") for n in during), during
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in workers):
            assert time.monotonic() < deadline, f"workers still running: {workers}"
            time.sleep(0.1)
    leftovers = {p.name for p in artifacts.iterdir() if p.name.startswith(".")}
    assert any(n.startswith(".staging-") for n in leftovers), leftovers  # what the kill left
    with running([], env, log) as (base, proc):
        assert wait_ready(base, proc, log, timeout=120)["model_version"] == v1.name
        assert {p.name for p in artifacts.iterdir()} == {v1.name, "current"}
        stop(proc, log)
