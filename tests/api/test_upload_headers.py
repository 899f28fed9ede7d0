"""POST /admin/train checks the uploaded files' headers before it answers (issue 28 item 1): columns
that training cannot use are a 422 at once, naming the file, the columns found and the [rename]
lines to add, with the same mapping `recsys train` uses (a shop's export names are fine)."""

from __future__ import annotations

import json
import time

import pytest
from fastapi.testclient import TestClient

from cli.app import create_app
from tests.recsys.test_dataio import rename_hint

from api_support import ADMIN_TOKEN, make_artifacts, make_settings

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
PRODUCTS = b"product_id,product_title,Product Description\nA1,Red dress,Cotton\nA2,Blue shirt,Linen\n"
SEARCHES = b"search_term,product_id,clicks\nred dress,A1,2\nblue shirt,A2,1\nold,A9,1\n"


@pytest.fixture
def uploads(tmp_path, data_dir, v1, rec):
    artifacts = make_artifacts(tmp_path / "artifacts", v1)
    app = create_app(make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN, train_epochs=1),
                     recommender=rec)
    with TestClient(app) as c:
        yield c, artifacts


def _post(client, **files):
    return client.post("/admin/train", headers=AUTH, files={f: (f"{f}.upload", data) for f, data in files.items()})


def _finished(client, job_id: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while (job := client.get(f"/admin/jobs/{job_id}", headers=AUTH).json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, job
        time.sleep(0.2)
    return job


def test_wrong_columns_are_a_422_at_once_naming_what_is_found_and_missing(uploads):
    c, artifacts = uploads
    r = _post(c, items=b"pid,headline\nA1,Red dress\n", interactions=SEARCHES)
    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["loc"] == ["body", "items"]
    # the fix in a request's words: its `schema` field, not the command line's --schema
    assert r.json()["detail"][0]["msg"] == (
        "items.csv, row 1: missing required columns 'item_id', 'title'; found columns: 'pid', "
        "'headline'" + rename_hint('pid = "item_id"', 'headline = "title"').replace(
            "(--schema FILE.toml)", "(the request's `schema` field, a TOML file)"))
    r = _post(c, items=PRODUCTS, interactions=b"term,product,n\nred,A1,1\n")
    assert r.status_code == 422 and "interactions.csv, row 1: missing required columns" in r.text
    assert c.get("/admin/jobs", headers=AUTH).json() == []  # no job was started
    assert not [p for p in artifacts.iterdir() if p.name.startswith(".upload")]  # nothing left


def test_a_shop_export_is_accepted_and_a_schema_file_settles_the_rest(uploads):
    c, artifacts = uploads
    r = _post(c, items=PRODUCTS, interactions=SEARCHES)
    assert r.status_code == 202, r.text
    job = _finished(c, r.json()["id"])
    assert job["status"] == "succeeded", job  # the discontinued A9 skipped, as by recsys train
    data = json.loads((artifacts / job["version"] / "manifest.json").read_text())["data"]
    assert data["interactions"]["unknown_items"] == 1
    schema = b'[rename]\npid = "item_id"\nheadline = "title"\n'
    r = _post(c, items=b"pid,headline\nA1,Red dress\nA2,Blue shirt\n", interactions=SEARCHES,
              schema=schema)
    assert r.status_code == 202, r.text
    r = _post(c, items=PRODUCTS, interactions=SEARCHES, schema=b'[rename]\nid = "sku"\n')
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "schema"]
    assert "schema.toml: [rename] id: unknown target 'sku'" in r.json()["detail"][0]["msg"]


def test_files_named_in_the_data_folder_are_checked_the_same_way(uploads, data_dir):
    c, artifacts = uploads
    folder = data_dir / "export28"
    folder.mkdir(exist_ok=True)
    (folder / "products.csv").write_bytes(b"pid,headline\nA1,Red dress\n")
    (folder / "searches.csv").write_bytes(SEARCHES)
    r = c.post("/admin/train", headers=AUTH,
               json={"items": "export28/products.csv", "interactions": "export28/searches.csv"})
    assert r.status_code == 422, r.text
    detail = r.json()["detail"][0]
    assert detail["loc"] == ["body", "items"]
    # named as the request named it, never by the job's copy under the artifacts folder
    assert detail["msg"].startswith("export28/products.csv, row 1: missing required columns 'item_id', 'title'")
    assert str(artifacts) not in detail["msg"]
    assert c.get("/admin/jobs", headers=AUTH).json() == []
