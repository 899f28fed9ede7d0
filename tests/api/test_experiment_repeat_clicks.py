"""An experiment's report when shoppers click more often than they were shown an answer (one
impression, three clicks on it: a shopper going back and forth), on SQLite and PostgreSQL.

Before: the rate per impression went above 1, the Wilson interval took the square root of a
negative number, and GET /admin/experiments/{name} answered 500; so did POST .../end, after
it had ended the experiment and activated the winner (a change made, and a 500 said). Now a
user's clicks count up to that user's impressions for the rates (the raw counts are kept):
200, every rate and bound in [0, 1], no NaN or infinity in the JSON."""

from __future__ import annotations

import json
import math

from fastapi.testclient import TestClient

from api.abtest import assign_arm
from cli.app import create_app

from api_support import ADMIN_TOKEN, make_artifacts, make_settings

EVENTS_TOKEN = "test-events-token"
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
PUSH = {"Authorization": f"Bearer {EVENTS_TOKEN}"}


def _finite(text: str) -> dict:
    """The JSON, refusing NaN and infinities (which Python's parser accepts)."""
    def refuse(word: str):
        raise AssertionError(f"{word} in the answer")

    out = json.loads(text, parse_constant=refuse)
    return out


def _numbers(value) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _numbers(v)]
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    return []


def test_more_clicks_than_impressions_is_a_report_not_a_500(tmp_path, v1, v2, data_dir, rec,
                                                            store_url):
    artifacts = make_artifacts(tmp_path / "artifacts", v1, v2)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN,
                             events_token=EVENTS_TOKEN, database_url=store_url)
    with TestClient(create_app(settings, recommender=rec), raise_server_exceptions=False) as c:
        r = c.post("/admin/experiments", json={"name": "repeat", "arms": {"A": v1.name, "B": v2.name}},
                   headers=AUTH)
        assert r.status_code == 201, r.text
        item = rec.catalog.item_ids[0]
        users = [f"u{n}" for n in range(8)]
        arms = {assign_arm("repeat", u, [("A", 0.5), ("B", 0.5)]) for u in users}
        assert arms == {"A", "B"}  # both arms have such a shopper
        batch = []
        for u in users:
            batch.append({"type": "impression", "query": "red dress", "item_id": item,
                          "user_id": u, "event_id": f"{u}-i"})
            batch += [{"type": "click", "query": "red dress", "item_id": item, "user_id": u,
                       "event_id": f"{u}-c{k}"} for k in range(3)]
        batch.append({"type": "purchase", "query": "red dress", "item_id": item, "user_id": "u0",
                      "event_id": "u0-p"})  # and a purchase with no impression at all
        r = c.post("/events", json={"events": batch}, headers=PUSH)
        assert r.status_code == 202, r.text

        r = c.get("/admin/experiments/repeat", headers=AUTH)
        assert r.status_code == 200, r.text
        report = _finite(r.text)
        assert sum(a["clicks"] for a in report["arms"]) == 3 * len(users)  # the raw counts
        for a in report["arms"]:
            for metric in ("ctr", "cart_rate", "purchase_rate"):
                low, high = a[metric]["ci95"]
                # (api.abtest.wilson's bound at 0 successes is 5.6e-17, a rounding: tolerated)
                assert 0.0 <= low <= a[metric]["rate"] + 1e-12 and a[metric]["rate"] <= high <= 1.0, \
                    (a["arm"], metric, a[metric])
        assert all(math.isfinite(x) for x in _numbers(report))

        r = c.post("/admin/experiments/repeat/end", json={"winner": "B"}, headers=AUTH)
        assert r.status_code == 200, r.text
        ended = _finite(r.text)
        assert ended["serving"] == v2.name and ended["experiment"]["status"] == "ended"
