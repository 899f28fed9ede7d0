"""Admin: the token, retrain jobs (uploaded or server-side CSVs), versions and rollback."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.served_versions import held_out_ndcg
from cli.app import create_app
from recsys.artifact import current_version, read_manifest
from recsys.synthetic import generate

from api_support import ADMIN_TOKEN, make_artifacts, make_settings

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@pytest.fixture
def admin(tmp_path, data_dir, v1, v2, rec):
    artifacts = make_artifacts(tmp_path / "artifacts", v1, v2)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN, max_upload_bytes=2_000_000,
                             train_epochs=1)
    with TestClient(create_app(settings, recommender=rec)) as c:
        yield c, artifacts


def wait_job(client, job_id: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"/admin/jobs/{job_id}", headers=AUTH).json()
        if job["status"] in ("succeeded", "failed"):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} still {job['status']} after {timeout}s")


def version_dirs(artifacts: Path) -> set[str]:
    return {p.name for p in artifacts.iterdir()}


# ---- the token ----------------------------------------------------------------------------------


def test_admin_is_off_without_a_token(client):
    for method, path in (("get", "/admin/versions"), ("post", "/admin/train"), ("get", "/admin/jobs/x"),
                         ("post", "/admin/versions/v/activate")):
        r = getattr(client, method)(path, headers=AUTH)
        assert r.status_code == 404 and "admin is off" in r.json()["detail"]


def test_blank_token_setting_means_off(tmp_path, data_dir):
    assert make_settings(tmp_path, data_dir, admin_token="  ").admin_token is None


def test_missing_and_wrong_token(admin):
    c, _ = admin
    r = c.get("/admin/versions")
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert c.get("/admin/versions", headers={"Authorization": "Bearer nope"}).status_code == 403
    assert c.get("/admin/versions", headers={"Authorization": f"Basic {ADMIN_TOKEN}"}).status_code == 401
    r = c.post("/admin/train", json={"items": "shop/items.csv", "interactions": "shop/interactions.csv"},
               headers={"Authorization": "Bearer nope"})
    assert r.status_code == 403


# ---- versions and rollback ----------------------------------------------------------------------


def test_versions_and_activation(admin, v1, v2):
    c, artifacts = admin
    body = c.get("/admin/versions", headers=AUTH).json()
    assert body["serving"] == v1.name
    assert {v["version"] for v in body["versions"]} == {v1.name, v2.name}
    by_name = {v["version"]: v for v in body["versions"]}
    assert by_name[v1.name]["serving"] and by_name[v1.name]["current"]
    n1, n2 = (held_out_ndcg(read_manifest(v)) for v in (v1, v2))
    assert by_name[v2.name]["held_out_ndcg"] == pytest.approx(n2)

    worse, better = (v2, v1) if n2 < n1 else (v1, v2)
    if better.name != v1.name:  # serve the better one first, so activating the worse one is a downgrade
        assert c.post(f"/admin/versions/{better.name}/activate", headers=AUTH).status_code == 200
    r = c.post(f"/admin/versions/{worse.name}/activate", headers=AUTH)
    if n1 != n2:
        assert r.status_code == 409 and "force=true" in r.json()["detail"]
        r = c.post(f"/admin/versions/{worse.name}/activate?force=true", headers=AUTH)
    assert r.status_code == 200 and r.json() == {"serving": worse.name, "previous": better.name}
    assert c.get("/model").json()["version"] == worse.name
    assert current_version(artifacts) == worse.name


def test_activate_unknown_version(admin):
    c, _ = admin
    for name in ("v-nope", ".hidden", "..", "a%2F..%2F..", "current"):
        r = c.post(f"/admin/versions/{name}/activate", headers=AUTH)
        assert r.status_code == 404, (name, r.text)


def test_unknown_job(admin):
    c, _ = admin
    assert c.get("/admin/jobs/nope", headers=AUTH).status_code == 404


def test_a_job_of_a_process_gone_silent_is_read_as_failed(admin):
    """A replica killed mid-job on another host left its job "running" in what every other
    process answered, for ever. Read after its lease without a sign of life, it is failed."""
    from datetime import UTC, datetime, timedelta

    from api.jobs import JOB_LEASE_S
    from store.records import save_job

    c, _ = admin
    db = c.app.state.jobs.db
    long_ago = (datetime.now(UTC) - timedelta(seconds=JOB_LEASE_S + 60)).isoformat(timespec="seconds")
    just_now = datetime.now(UTC).isoformat(timespec="seconds")
    row = {"id": "elsewhere1", "owner": "replaced-host:41", "status": "running", "created_at": long_ago,
           "started_at": long_ago, "finished_at": None, "step": 3, "total": 9, "loss": None, "version": None,
           "activated": False, "decision": None, "metrics": None, "error": None, "heartbeat_at": long_ago}
    save_job(db, row)
    save_job(db, {**row, "id": "elsewhere2", "heartbeat_at": just_now})
    gone = c.get("/admin/jobs/elsewhere1", headers=AUTH).json()
    assert gone["status"] == "failed" and "the server process running it stopped" in gone["error"], gone
    listed = {j["id"]: j["status"] for j in c.get("/admin/jobs", headers=AUTH).json()}
    assert listed["elsewhere1"] == "failed" and listed["elsewhere2"] == "running"


def test_a_process_says_its_unfinished_jobs_live(admin, monkeypatch):
    """Between its saves (a worker building its tables says nothing for minutes), the owner beats
    its queued and running jobs' rows, so that no reader takes them for a gone process's."""
    import threading

    import api.jobs as jobs
    from store.records import load_jobs, save_job

    c, _ = admin
    manager = c.app.state.jobs
    monkeypatch.setattr(jobs, "HEARTBEAT_S", 0.05)
    job = jobs.Job(spec=None, status="running")  # type: ignore[arg-type]
    save_job(manager.db, {**job.row(manager.owner), "heartbeat_at": "2026-01-01T00:00:00+00:00"})
    manager._jobs[job.id] = job
    threading.Thread(target=manager._beat, daemon=True).start()
    deadline = time.monotonic() + 10
    while load_jobs(manager.db, job.id)[0]["heartbeat_at"].startswith("2026-01-01") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not load_jobs(manager.db, job.id)[0]["heartbeat_at"].startswith("2026-01-01")
    del manager._jobs[job.id]


# ---- retraining ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name, status", [
    ("../shop/items.csv", 403), ("/etc/passwd", 403), ("shop/../../x.csv", 403),
    ("shop/missing.csv", 422), ("", 422), ("shop", 422),
])
def test_paths_outside_the_data_folder_are_refused(admin, name, status):
    c, _ = admin
    r = c.post("/admin/train", json={"items": name, "interactions": "shop/interactions.csv"}, headers=AUTH)
    assert r.status_code == status, r.text
    assert "items" in r.text


def test_symlink_out_of_the_data_folder_is_refused(admin, data_dir, tmp_path):
    c, _ = admin
    outside = tmp_path / "secret.csv"
    outside.write_text("item_id,title\nA,a\n")
    link = data_dir / "link.csv"
    if not link.exists():
        os.symlink(outside, link)
    r = c.post("/admin/train", json={"items": "link.csv", "interactions": "shop/interactions.csv"}, headers=AUTH)
    assert r.status_code == 403


@pytest.mark.parametrize("body, field", [
    ({"interactions": "shop/interactions.csv"}, "items"),
    ({"items": "shop/items.csv", "interactions": "shop/interactions.csv", "epochs": 0}, "epochs"),
    ({"items": "shop/items.csv", "interactions": "shop/interactions.csv", "epochs": 51}, "epochs"),
    ({"items": "shop/items.csv", "interactions": "shop/interactions.csv", "colour": 1}, "colour"),
])
def test_train_request_validation(admin, body, field):
    c, _ = admin
    r = c.post("/admin/train", json=body, headers=AUTH)
    assert r.status_code == 422 and field in r.json()["message"]


def test_upload_validation(admin, data_dir):
    c, _ = admin
    items = (data_dir / "shop" / "items.csv").read_bytes()
    r = c.post("/admin/train", files={"interactions": ("x.csv", b"query,item_id,label")}, headers=AUTH)
    assert r.status_code == 422 and "items" in r.json()["message"]
    r = c.post("/admin/train", files={"items": ("i.csv", items), "interactions": ("x.csv", b"q")},
               data={"epochs": "many"}, headers=AUTH)
    assert r.status_code == 422 and "epochs" in r.json()["message"]
    r = c.post("/admin/train", content=b"items", headers={**AUTH, "content-type": "text/csv"})
    assert r.status_code == 415


def test_upload_too_large(admin):
    c, artifacts = admin
    before = version_dirs(artifacts)
    big = b"item_id,title\n" + b"A,a\n" * 600_000  # 2.4 MB, the upload limit here is 2 MB
    r = c.post("/admin/train", files={"items": ("items.csv", big), "interactions": ("i.csv", b"q")},
               headers=AUTH)
    assert r.status_code == 413
    assert version_dirs(artifacts) == before  # no upload folder left behind


def test_broken_csv_fails_the_job_and_keeps_the_model(admin, v1, data_dir):
    c, artifacts = admin
    before = version_dirs(artifacts)
    broken = b"item_id,title\nA1,Red shirt\nA2,Blue shirt\nA1,Green shirt\n"
    interactions = (data_dir / "shop" / "interactions.csv").read_bytes()
    r = c.post("/admin/train", headers=AUTH,
               files={"items": ("items.csv", broken), "interactions": ("interactions.csv", interactions)})
    assert r.status_code == 202, r.text
    assert r.headers["location"] == f"/admin/jobs/{r.json()['id']}"
    job = wait_job(c, r.json()["id"])
    assert job["status"] == "failed"
    assert "row 4" in job["error"] and "item_id" in job["error"] and "A1" in job["error"], job["error"]
    assert job["version"] is None and not job["activated"]
    assert c.get("/model").json()["version"] == v1.name
    assert current_version(artifacts) == v1.name
    assert version_dirs(artifacts) == before  # no version, staging or upload folder left behind
    metrics = c.get("/metrics").text
    assert 'recsys_training_jobs_total{status="failed"} 1.0' in metrics


def test_a_search_logs_bad_rows_are_skipped_when_asked_as_on_the_command_line(admin, data_dir):
    """A report's "Grand total" row (no item) and a search without a query failed the job, whose
    message named the command line's `--on-bad-lines skip`, which the route had no field for."""
    c, _ = admin
    items = (data_dir / "shop" / "items.csv").read_bytes()
    log = (data_dir / "shop" / "interactions.csv").read_bytes().rstrip(b"\n") + b"\n,P000,1\n"
    files = {"items": ("items.csv", items), "interactions": ("interactions.csv", log)}
    job = wait_job(c, c.post("/admin/train", headers=AUTH, files=files).json()["id"])
    assert job["status"] == "failed" and '"on_bad_lines": "skip"` in POST /admin/train' in job["error"], job
    r = c.post("/admin/train", headers=AUTH, files=files, data={"on_bad_lines": "skip", "epochs": "1"})
    job = wait_job(c, r.json()["id"])
    assert job["status"] == "succeeded", job
    r = c.post("/admin/train", headers=AUTH, files=files, data={"on_bad_lines": "maybe"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "on_bad_lines", r.text


def test_a_catalogue_with_no_search_log_trains_its_untrained_start(admin, v1, data_dir):
    """`items` alone, as `recsys train --items`: the job writes the untrained start, judged on
    searches drawn from the items' own words, and keeps it beside the served version (nothing was
    held out to compare the two on)."""
    c, artifacts = admin
    items = (data_dir / "shop" / "items.csv").read_bytes()
    r = c.post("/admin/train", files={"items": ("items.csv", items)}, headers=AUTH)
    assert r.status_code == 202, r.text
    job = wait_job(c, r.json()["id"])
    assert job["status"] == "succeeded", job
    known = job["metrics"]["known_item"]
    assert known["model"]["queries"] > 0 and known["bm25"]["queries"] == known["model"]["queries"]
    assert job["metrics"]["held_out"]["model"]["queries"] == 0
    assert not job["activated"] and "no searches were held out" in job["decision"], job["decision"]
    assert current_version(artifacts) == v1.name
    r = c.post("/admin/train", json={"items": "shop/items.csv"}, headers=AUTH)  # the data folder's
    assert r.status_code == 202, r.text
    job = wait_job(c, r.json()["id"])
    assert job["status"] == "succeeded" and job["metrics"]["known_item"]["model"]["queries"] > 0, job


def test_retrain_from_the_data_folder(admin, v1, rec):
    """A retrain of the same catalogue is compared with the served version replayed on its own
    held-out queries: served when not worse there, else kept (and served when forced)."""
    c, artifacts = admin
    r = c.post("/admin/train", headers=AUTH,
               json={"items": "shop/items.csv", "interactions": "shop/interactions.csv", "seed": 3})
    assert r.status_code == 202, r.text
    first = c.get(f"/admin/jobs/{r.json()['id']}", headers=AUTH).json()
    assert first["status"] in ("queued", "running")
    job = wait_job(c, r.json()["id"])
    assert job["status"] == "succeeded", job
    assert job["progress"]["step"] == job["progress"]["total"] > 0 and job["progress"]["fraction"] == 1.0
    new = job["version"]
    assert (artifacts / new / "manifest.json").is_file()
    assert read_manifest(artifacts / new)["training"]["epochs"] == 1
    new_ndcg = job["metrics"]["held_out"]["model"]["ndcg@10"]
    replayed = job["metrics"]["replayed"]
    assert replayed["version"] == v1.name and replayed["held_out_queries"] > 0
    served_ndcg = replayed["held_out"]["ndcg@10"]
    serving = c.get("/model").json()["version"]
    decision = c.get("/admin/versions", headers=AUTH).json()["versions"]
    assert {v["version"]: v["decision"] for v in decision}[new]["reason"] == job["decision"]
    if new_ndcg >= served_ndcg:
        assert job["activated"] and serving == new and current_version(artifacts) == new
        assert f"{new_ndcg:.4f} is not below {served_ndcg:.4f}" in job["decision"]
    else:
        assert not job["activated"] and job["decision"].startswith("kept")
        assert serving == v1.name and current_version(artifacts) == v1.name
        r = c.post(f"/admin/versions/{new}/activate?force=true", headers=AUTH)
        assert r.status_code == 200 and c.get("/model").json()["version"] == new
    assert not [p for p in artifacts.iterdir() if p.name.startswith((".staging", ".upload"))]
    listed = c.get("/admin/jobs", headers=AUTH).json()
    assert [j["id"] for j in listed] == [job["id"]]


def test_shutdown_stops_a_running_job(tmp_path, v1, rec):
    """Leaving the app (SIGTERM) ends the training process; nothing half-written stays behind."""
    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    big = tmp_path / "data"
    generate(big / "big", n_items=2000, n_queries=30000, seed=1)  # a job that outlasts the check
    app = create_app(make_settings(artifacts, big, admin_token=ADMIN_TOKEN), recommender=rec)
    with TestClient(app) as c:
        r = c.post("/admin/train", headers=AUTH,
                   json={"items": "big/items.csv", "interactions": "big/interactions.csv", "epochs": 5})
        job_id = r.json()["id"]
        deadline = time.monotonic() + 60
        while c.get(f"/admin/jobs/{job_id}", headers=AUTH).json()["status"] != "running":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        process = app.state.jobs._process
        assert process is not None and process.is_alive(), app.state.jobs.get(job_id)
    assert not process.is_alive()
    job = app.state.jobs.get(job_id)
    assert job.status == "failed" and "shut down" in job.error
    assert version_dirs(artifacts) == {v1.name, "current"}
    assert current_version(artifacts) == v1.name


def test_an_xml_feed_or_json_records_upload_as_the_items(admin, v1):
    """A shop's Google Merchant feed, a search engine's JSON export and an Excel workbook are
    items files too (a workbook is a search log too): the header check before the job reads
    them, and the job trains on them."""
    import openpyxl

    c, artifacts = admin
    products = [("f1", "Oak Chair"), ("f2", "Oak Table"), ("f3", "Linen Sofa"), ("f4", "Wool Rug")]
    feed = ('<rss xmlns:g="http://base.google.com/ns/1.0"><channel><title>Shop</title>'
            + "".join(f"<item><g:id>{i}</g:id><g:title>{t}</g:title><g:brand>Acme</g:brand></item>"
                      for i, t in products) + "</channel></rss>").encode()
    records = json.dumps([{"objectID": i, "name": t, "brand": "Acme"} for i, t in products]).encode()
    book = openpyxl.Workbook()
    for row in [("SKU", "Product Name", "Brand"), *[(i, t, "Acme") for i, t in products]]:
        book.active.append(row)
    sheet = io.BytesIO()
    book.save(sheet)
    log = openpyxl.Workbook()  # a search report saved as a workbook goes with the last one
    for row in [("Search Term", "SKU", "Clicks"), ("oak", "f1", 2.0), ("oak", "f2", 1.0)]:
        log.active.append(row)
    report = io.BytesIO()
    log.save(report)
    for name, body in (("feed.xml", feed), ("export.json", records), ("products.xlsx", sheet.getvalue())):
        files = {"items": (name, body)}
        if name.endswith(".xlsx"):
            files["interactions"] = ("searches.xlsx", report.getvalue())
        r = c.post("/admin/train", files=files, headers=AUTH)
        assert r.status_code == 202, r.text
        job = wait_job(c, r.json()["id"])
        assert job["status"] == "succeeded", job
        if "interactions" in files:  # the workbook's search log was read: its 2 rows, not none
            assert read_manifest(artifacts / job["version"])["training"]["train_rows"] == 2
    nameless = b'<rss><channel><item><ref>1</ref><label>Chair</label></item></channel></rss>'
    r = c.post("/admin/train", files={"items": ("feed.xml", nameless)}, headers=AUTH)
    assert r.status_code == 422 and "missing required columns 'item_id', 'title'" in r.json()["message"], r.text


def test_a_job_that_lost_its_store_says_so_without_its_address():
    """A retrain reading events from a PostgreSQL that went away failed with the driver's own
    message, which names the database's host and port; it now says the store was unavailable."""
    import sqlalchemy.exc as sa_exc

    from api.jobs import failure_message

    driver = Exception('connection to server at "10.1.2.3", port 5433 failed: Connection refused')
    said = failure_message(sa_exc.OperationalError("SELECT 1", None, driver))
    assert "store was unavailable" in said and "10.1.2.3" not in said and "5433" not in said
    assert failure_message(ValueError("bad cell")) == "training failed: ValueError: bad cell"
