"""The store's failures are a client's answer, not a 500 (issue 27), on SQLite and on a real
PostgreSQL server: concurrent batches sharing event_ids, the database stopped mid-run, and no
server path or database URL in a job record or an error answer."""

from __future__ import annotations

import json
import random
import subprocess
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cli.app import create_app
from store.db import Database
from store.records import load_jobs

from api_support import ADMIN_TOKEN, make_artifacts, make_settings

EVENTS_TOKEN = "test-events-token"
PUSH = {"Authorization": f"Bearer {EVENTS_TOKEN}"}
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
POSTGRES_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "postgres.sh"


def app_on(store_url: str, tmp_path: Path, v1: Path, data_dir: Path, rec) -> TestClient:
    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN, events_token=EVENTS_TOKEN,
                             database_url=store_url, train_epochs=1)
    # a 500 comes back as an answer, as a client sees it, not as the test's exception
    return TestClient(create_app(settings, recommender=rec), raise_server_exceptions=False)


def event(rec, event_id: str) -> dict:
    item = rec.catalog.item_ids[zlib.crc32(event_id.encode()) % len(rec.catalog.item_ids)]
    return {"type": "click", "query": "red dress", "item_id": item, "event_id": event_id,
            "user_id": "u1"}


# ---- concurrent batches sharing event_ids -------------------------------------------------------

N_IDS, N_BATCHES, BATCH, THREADS = 300, 60, 25, 6


def test_concurrent_overlapping_batches_store_each_id_once_and_count_exactly(
        store_url, tmp_path, v1, data_dir, rec):
    """60 batches of 25 from 300 ids, 6 at a time, in shuffled orders (what made PostgreSQL
    deadlock): every batch a 202, and the duplicates reported are what was not inserted."""
    rng = random.Random(27)
    batches = [[event(rec, f"e{rng.randrange(N_IDS)}") for _ in range(BATCH)]
               for _ in range(N_BATCHES)]
    with app_on(store_url, tmp_path, v1, data_dir, rec) as c:
        def post(batch: list[dict]):
            return c.post("/events", json={"events": batch}, headers=PUSH)

        with ThreadPoolExecutor(THREADS) as pool:
            answers = list(pool.map(post, batches))
        statuses = [a.status_code for a in answers]
        assert statuses == [202] * N_BATCHES, [a.text for a in answers if a.status_code != 202][:3]
        stats = c.get("/admin/events/stats", headers=ADMIN).json()
    distinct = len({e["event_id"] for b in batches for e in b})
    inserted = sum(a.json()["accepted"] - a.json()["duplicates"] for a in answers)
    assert sum(a.json()["accepted"] for a in answers) == N_BATCHES * BATCH
    assert inserted == distinct == stats["total"]


# ---- PostgreSQL stopped mid-run -----------------------------------------------------------------


def _pg_ctl(folder: str, *args: str) -> None:
    """pg_ctl on `folder`'s cluster as its owner (the `postgres` user when root, as
    scripts/postgres.sh runs it)."""
    bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
                  key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)
    command = [str(bins[-1]), "-D", f"{folder}/data", *args]
    if subprocess.run(["id", "-u"], capture_output=True, text=True).stdout.strip() == "0":
        command = ["runuser", "-u", "postgres", "--", *command]
    subprocess.run(command, check=True, capture_output=True, timeout=60)


@pytest.fixture
def own_postgres():
    """(URL, folder, port) of a PostgreSQL server of this test alone, which it may stop."""
    started = subprocess.run(["bash", str(POSTGRES_SCRIPT), "start"], capture_output=True,
                             text=True, timeout=120)
    assert started.returncode == 0, started.stderr[-2000:]
    url, folder = started.stdout.split()[:2]
    try:
        yield url, folder, url.rsplit(":", 1)[1].split("/")[0]
    finally:
        subprocess.run(["bash", str(POSTGRES_SCRIPT), "stop", folder], timeout=60, check=False)


def assert_unavailable(answer, *never: str) -> None:
    assert answer.status_code == 503, answer.text
    assert int(answer.headers["retry-after"]) > 0
    assert "store is unavailable" in answer.json()["detail"], answer.json()
    for text in never:
        assert text not in answer.text, answer.text


def test_postgres_stopped_is_503_with_retry_after_and_recommend_still_answers(
        own_postgres, tmp_path, v1, data_dir, rec):
    url, folder, port = own_postgres
    with app_on(url, tmp_path, v1, data_dir, rec) as c:
        assert c.post("/events", json={"events": [event(rec, "before")]}, headers=PUSH).status_code == 202
        _pg_ctl(folder, "-m", "fast", "-w", "stop")
        store_routes = [("post", "/events", {"json": {"events": [event(rec, "during")]}, "headers": PUSH}),
                        ("get", "/admin/events/stats", {"headers": ADMIN}),
                        ("get", "/admin/experiments", {"headers": ADMIN}),
                        ("get", "/admin/jobs", {"headers": ADMIN})]
        for method, path, kw in store_routes:
            assert_unavailable(getattr(c, method)(path, **kw), folder, port, "127.0.0.1")
        r = c.post("/recommend", json={"query": "red dress", "k": 3})
        assert r.status_code == 200 and len(r.json()["items"]) == 3
        _pg_ctl(folder, "-l", f"{folder}/server.log", "-w", "-t", "60", "-o",
                f"-c listen_addresses=127.0.0.1 -p {port} -k {folder}", "start")
        deadline = time.monotonic() + 20
        while (r := c.post("/events", json={"events": [event(rec, "after")]},
                           headers=PUSH)).status_code == 503 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert r.status_code == 202, r.text
        assert c.get("/admin/events/stats", headers=ADMIN).json()["total"] == 2  # not "during"


# ---- no server path in a job record or an error answer ------------------------------------------


def test_a_job_error_names_no_server_path_or_database_url(store_url, tmp_path, v1, data_dir, rec):
    """A retrain from an empty store fails with "no events: nothing to train on", without the
    store's URL or file (it named `sqlite:////.../recsys.db`), in the answer and in its row."""
    from test_admin import wait_job

    with app_on(store_url, tmp_path, v1, data_dir, rec) as c:
        r = c.post("/admin/train", json={"source": "events"}, headers=ADMIN)
        assert r.status_code == 202, r.text
        job = wait_job(c, r.json()["id"])  # a hang guard: the job is a process of its own
        listed = c.get("/admin/jobs", headers=ADMIN).text
        db = Database(store_url)
        try:
            # the process answers with its job as it is now; the job's thread stores the row
            # after cleaning up (a moment later: under load the row was read still `running`)
            deadline = time.monotonic() + 30
            while (load_jobs(db, job["id"])[0]["status"] in ("queued", "running")
                   and time.monotonic() < deadline):
                time.sleep(0.1)
            rows = json.dumps(load_jobs(db), default=str)
        finally:
            db.dispose()
    assert job["status"] == "failed" and "no events: nothing to train on" in job["error"], job
    server = [str(tmp_path), str(data_dir), store_url.split("@")[-1], "sqlite:", "postgresql"]
    for text in (json.dumps(job), listed, rows):
        assert "nothing to train on" in text
        for name in server:
            assert name not in text, (name, text)


# ---- an activation the store cannot record ------------------------------------------------------


def test_an_activation_the_store_cannot_record_is_a_503_and_changes_nothing(
        request, tmp_path, v1, v2, data_dir):
    """The store fails while an activation is recorded (a PostgreSQL trigger raises
    admin_shutdown, SQLSTATE 57P01, on the insert: what a server going away mid-request looks
    like to the client): 503 with Retry-After, and neither `current` nor the served version moved.
    Before, `current` was moved first, so every process following the pointer served the version
    whose activation had been answered 503; once the store records again, the same call works."""
    import psycopg

    from recsys.artifact import current_version

    server = request.getfixturevalue("postgres_server")
    name = f"activation_{time.monotonic_ns()}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = server.rsplit("/", 1)[0] + "/" + name
    artifacts = make_artifacts(tmp_path / "artifacts", v1, v2)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN, database_url=url)
    with TestClient(create_app(settings), raise_server_exceptions=False) as c:
        deadline = time.monotonic() + 60  # the first version loads in the background
        while c.get("/ready").status_code == 503 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert c.get("/ready").json()["model_version"] == v1.name
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION "
                         "'the server is going away' USING ERRCODE = '57P01'; END $$ LANGUAGE plpgsql")
            conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON activations FOR EACH ROW "
                         "EXECUTE FUNCTION refuse()")
            r = c.post(f"/admin/versions/{v2.name}/activate?force=true", headers=ADMIN)
            assert_unavailable(r)
            assert current_version(artifacts) == v1.name
            assert c.get("/ready").json()["model_version"] == v1.name
            conn.execute("DROP TRIGGER refuse ON activations")
        r = c.post(f"/admin/versions/{v2.name}/activate?force=true", headers=ADMIN)
        assert r.status_code == 200, r.text
        assert current_version(artifacts) == v2.name
        assert c.get("/ready").json()["model_version"] == v2.name
