"""No answer names a server path (issue 27, point 5): every route of the OpenAPI schema is asked,
with good requests and failing ones (a broken version, a bad CSV, a missing file, a retrain from
an empty store), and the job records of GET /admin/jobs (a succeeded and two failed jobs) too;
no body or header may contain the server's data folder, artifacts folder or database file.

The server's folders all live under one folder whose name is a marker no answer could contain
by chance (`MARKER`), so a path is found however it is cut (a parent folder, a resolved path)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cli.app import create_app

from api_support import ADMIN_TOKEN, make_artifacts, make_settings

MARKER = "srvpath7q"  # in the name of the folder that holds everything of the server
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
EVENTS_TOKEN = "no-paths-events-token"
PUSH = {"Authorization": f"Bearer {EVENTS_TOKEN}"}


class Scanner:
    """A client that records every answer, for `leaks()`."""

    def __init__(self, client: TestClient, secrets: list[str]):
        self.client, self.secrets = client, secrets
        self.asked: set[tuple[str, str]] = set()  # (method, route template)
        self.answers: list[tuple[str, int, str]] = []  # ("METHOD url", status, headers + body)

    def __call__(self, method: str, route: str, url: str | None = None, **kw):
        r = self.client.request(method, url or route, **kw)
        self.asked.add((method.lower(), route))
        headers = "\n".join(f"{k}: {v}" for k, v in r.headers.items())
        self.answers.append((f"{method} {url or route}", r.status_code, headers + "\n" + r.text))
        return r

    def leaks(self) -> list[str]:
        return [f"{what} -> {status}: ...{text[max(0, text.find(s) - 120):text.find(s) + 80]}..."
                for what, status, text in self.answers for s in self.secrets if s in text]


@pytest.fixture(params=["absolute", "relative"])
def server(request, tmp_path, data_dir, v1, v2, rec, monkeypatch):
    """An app whose folders and database are named by absolute paths, or relative to its working
    directory, as the defaults are (`data`, `artifacts`)."""
    root = tmp_path / f"{MARKER}-root"
    shutil.copytree(data_dir / "shop", root / f"{MARKER}-data" / "shop")
    (root / f"{MARKER}-data" / "shop" / "broken.csv").write_text(
        "query,item_id,label\nred dress,NO-SUCH-ITEM,oops\n")
    artifacts = make_artifacts(root / f"{MARKER}-artifacts", v1, v2)
    base = root
    if request.param == "relative":
        monkeypatch.chdir(root)
        base = Path()
    (root / f"{MARKER}-data" / "synonyms.txt").write_text("navy => blue\n")
    settings = make_settings(base / artifacts.name, base / f"{MARKER}-data", admin_token=ADMIN_TOKEN,
                             events_token=EVENTS_TOKEN, train_epochs=1,
                             synonyms_file=base / f"{MARKER}-data" / "synonyms.txt",
                             database_url=f"sqlite:///{base / f'{MARKER}-store.db'}")
    app = create_app(settings, recommender=rec)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield Scanner(client, [MARKER, str(root), str(root.resolve())]), app, artifacts


def _wait_job(ask: Scanner, job_id: str, timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = ask("GET", "/admin/jobs/{job_id}", f"/admin/jobs/{job_id}", headers=AUTH).json()
        if job["status"] in ("succeeded", "failed", "cancelled"):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} still {job['status']} after {timeout} s")


def _train(ask: Scanner, body: dict) -> dict:
    r = ask("POST", "/admin/train", json=body, headers=AUTH)
    assert r.status_code == 202, r.text
    return _wait_job(ask, r.json()["id"])


def _ask_public(ask: Scanner, rec) -> dict:
    """The public routes, good and bad requests; the answer of a /recommend."""
    item = rec.catalog.item_ids[0]
    ask("GET", "/health")
    ask("GET", "/ready")
    answer = ask("POST", "/recommend", json={"query": "red casual dress", "k": 3}).json()
    ask("POST", "/recommend", json={"query": "red", "filters": {"nope": ["x"]}})
    ask("POST", "/explain", json={"query": "red dress", "item_id": item})
    ask("POST", "/explain", json={"query": "red dress", "item_id": "NO-SUCH-ITEM"})
    ask("POST", "/compare", json={"query": "red dress", "item_a": item,
                                  "item_b": rec.catalog.item_ids[1]})
    ask("GET", "/items/{item_id}", f"/items/{item}")
    ask("GET", "/items/{item_id}", "/items/NO-SUCH-ITEM")
    ask("GET", "/items/{item_id}/similar", f"/items/{item}/similar?k=3&filter=nope:x")
    ask("GET", "/items/{item_id}/similar", f"/items/{item}/similar?k=3")
    ask("GET", "/items/{item_id}/similar", "/items/NO-SUCH-ITEM/similar")
    ask("GET", "/suggest", "/suggest?q=red%20dr")
    ask("GET", "/suggest", "/suggest?q=red&n=0")
    ask("GET", "/model")
    ask("GET", "/openapi.json")
    ask("GET", "/docs")
    ask("GET", "/")
    ask("GET", "/metrics")
    return answer


def test_no_answer_names_a_server_path(server, v1, v2, rec):
    ask, app, artifacts = server
    answer = _ask_public(ask, rec)
    events = [{"type": "click", "request_id": answer["request_id"], "query": "red casual dress",
               "item_id": answer["items"][0]["item_id"], "position": 1, "event_id": "e1"}]
    assert ask("POST", "/events", json={"events": events}, headers=PUSH).status_code == 202
    ask("POST", "/events", json={"events": [{**events[0], "item_id": "NO-SUCH-ITEM"}]}, headers=PUSH)
    ask("GET", "/admin/events/stats", headers=AUTH)

    # retrains: one that succeeds, one whose file is broken, one from a store without events of
    # its catalogue (the "sqlite:////.../recsys.db: no events"), a file outside the folder
    ok = _train(ask, {"items": "shop/items.csv", "interactions": "shop/interactions.csv"})
    bad = _train(ask, {"items": "shop/items.csv", "interactions": "shop/broken.csv"})
    app.state.db.engine.dispose()
    with app.state.db.engine.begin() as conn:  # the one event above is no training set either
        conn.exec_driver_sql("DELETE FROM events")
    empty = _train(ask, {"source": "events"})
    assert ok["status"] == "succeeded" and ok["activated"], ok
    assert bad["status"] == "failed" and empty["status"] == "failed", (bad, empty)
    _ask_public(ask, rec)  # now serving the version the job trained on the server's files
    ask("POST", "/admin/train", json={"items": "../../etc/passwd", "interactions": "shop/x.csv"},
        headers=AUTH)
    ask("POST", "/admin/train", json={"items": "shop/none.csv", "interactions": "shop/x.csv"},
        headers=AUTH)
    ask("GET", "/admin/jobs", headers=AUTH)
    ask("DELETE", "/admin/jobs/{job_id}", f"/admin/jobs/{ok['id']}", headers=AUTH)  # 409: done
    ask("GET", "/admin/jobs/{job_id}", "/admin/jobs/nosuchjob", headers=AUTH)

    # versions: a good activation, a broken version (a weights file cut short), a missing one
    ask("GET", "/admin/versions", headers=AUTH)
    route = "/admin/versions/{version}/activate"
    ask("POST", route, f"/admin/versions/{v2.name}/activate?force=true", headers=AUTH)
    broken = artifacts / "v99990101-000000-broken"
    shutil.copytree(v1, broken)
    weights = next(p for p in broken.iterdir() if p.suffix == ".safetensors")
    weights.write_bytes(weights.read_bytes()[:100])
    ask("POST", route, f"/admin/versions/{broken.name}/activate?force=true", headers=AUTH)
    ask("GET", "/admin/versions", headers=AUTH)
    ask("POST", route, "/admin/versions/v00000000-000000-none/activate", headers=AUTH)
    ask("POST", route, f"/admin/versions/{v1.name}/activate?force=true", headers=AUTH)

    # catalogue changes, good and bad
    new = {"item_id": "NOPATH-1", "title": "Plain Linen Dress", "color": "red", "category": "dress"}
    ask("PUT", "/admin/items", json={"items": [new]}, headers=AUTH)
    ask("PUT", "/admin/items", json={"items": [{"item_id": "NOPATH-2"}]}, headers=AUTH)
    ask("DELETE", "/admin/items/{item_id}", "/admin/items/NOPATH-1", headers=AUTH)
    ask("DELETE", "/admin/items/{item_id}", "/admin/items/NO-SUCH-ITEM", headers=AUTH)

    # merchandising rules, good and bad
    item = rec.catalog.item_ids[0]
    ask("POST", "/admin/rules", json={"rules": [{"name": "np-pin", "kind": "pin", "item_id": item,
                                                "position": 1}]}, headers=AUTH)
    ask("POST", "/admin/rules", json={"rules": [{"name": "np-bad", "kind": "boost", "amount": 1,
                                                "attribute": "nope:x"}]}, headers=AUTH)
    ask("GET", "/admin/rules", headers=AUTH)
    ask("PUT", "/admin/rules/{name}", "/admin/rules/np-pin",
        json={"kind": "hide", "item_id": item}, headers=AUTH)
    ask("PUT", "/admin/rules/{name}", "/admin/rules/np-none",
        json={"kind": "hide", "item_id": "NO-SUCH-ITEM"}, headers=AUTH)
    ask("POST", "/recommend", json={"query": "red dress", "k": 3})
    ask("GET", "/admin/rules/changes", "/admin/rules/changes?name=np-pin", headers=AUTH)
    ask("DELETE", "/admin/rules/{name}", "/admin/rules/np-pin", headers=AUTH)
    ask("DELETE", "/admin/rules/{name}", "/admin/rules/np-none", headers=AUTH)

    # synonyms, good and bad (the server has a synonyms file too)
    ask("POST", "/admin/synonyms", json={"synonyms": [{"line": "crimson => red"}, {"line": "divan, ottoman"}]},
        headers=AUTH)
    ask("POST", "/admin/synonyms", json={"synonyms": [{"words": ["red dress"], "to": ["x"]}]}, headers=AUTH)
    ask("GET", "/admin/synonyms", headers=AUTH)
    ask("PUT", "/admin/synonyms/{name}", "/admin/synonyms/crimson", json={"line": "crimson => dress"},
        headers=AUTH)
    ask("PUT", "/admin/synonyms/{name}", "/admin/synonyms/np-none", json={"line": "a1, b1"}, headers=AUTH)
    ask("POST", "/recommend", json={"query": "crimson", "k": 3})
    ask("GET", "/admin/synonyms/changes", "/admin/synonyms/changes?name=crimson", headers=AUTH)
    ask("DELETE", "/admin/synonyms/{name}", "/admin/synonyms/crimson", headers=AUTH)
    ask("DELETE", "/admin/synonyms/{name}", "/admin/synonyms/np-none", headers=AUTH)

    # a shopper's personalised answer, then the shopper forgotten
    ask("POST", "/recommend", json={"query": "", "user_id": "nopath-shopper"})
    ask("DELETE", "/admin/users/{user_id}", "/admin/users/nopath-shopper", headers=AUTH)

    # experiments
    ask("POST", "/admin/experiments", json={"name": "np", "arms": {"A": v1.name, "B": v2.name}},
        headers=AUTH)
    ask("POST", "/admin/experiments", json={"name": "np2", "arms": {"A": v1.name,
                                                                  "B": broken.name}}, headers=AUTH)
    ask("GET", "/admin/experiments", headers=AUTH)
    ask("GET", "/admin/experiments/{name}", "/admin/experiments/np", headers=AUTH)
    ask("POST", "/admin/experiments/{name}/end", "/admin/experiments/np/end",
        json={"winner": "A"}, headers=AUTH)
    ask("GET", "/admin/experiments/{name}", "/admin/experiments/np", headers=AUTH)
    ask("GET", "/admin/jobs", headers=AUTH)  # last: every job's final record

    schema = app.openapi()["paths"]
    unasked = [(m, p) for p, ops in schema.items() for m in ops if (m, p) not in ask.asked]
    assert not unasked, f"routes this test does not ask yet: {unasked}"
    assert not ask.leaks(), "\n".join(ask.leaks())
