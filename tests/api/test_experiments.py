"""Experiments over the HTTP API: starting one (and every way a start is refused), the split of
users between the arms' versions, the report on planted events, Prometheus counters, ending it
(the winner activated), and a second process following it from the store."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from api.abtest import assign_arm, compare_rates, wilson
from cli.app import create_app
from store.db import Database
from store.records import latest_activation

from api_support import ADMIN_TOKEN, make_artifacts, make_settings

EVENTS_TOKEN = "test-events-token"
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
PUSH = {"Authorization": f"Bearer {EVENTS_TOKEN}"}
QUERY = "red casual dress"


def settings_for(artifacts, data_dir, **kw):
    return make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN, events_token=EVENTS_TOKEN,
                         **kw)


@pytest.fixture
def shop(tmp_path, data_dir, v1, v2, rec):
    """An app serving v1 with v2 beside it; (client, artifacts, settings)."""
    artifacts = make_artifacts(tmp_path / "artifacts", v1, v2)
    settings = settings_for(artifacts, data_dir)
    with TestClient(create_app(settings, recommender=rec)) as c:
        yield c, artifacts, settings


def start(c: TestClient, v1, v2, name: str = "e1", traffic=None) -> dict:
    body = {"name": name, "arms": {"A": v1.name, "B": v2.name}}
    if traffic is not None:
        body["traffic"] = traffic
    r = c.post("/admin/experiments", json=body, headers=AUTH)
    assert r.status_code == 201, r.text
    return r.json()


def ask(c: TestClient, user: str | None) -> dict:
    body = {"query": QUERY, "k": 3, "explain": False, **({"user_id": user} if user else {})}
    r = c.post("/recommend", json=body)
    assert r.status_code == 200, r.text
    assert r.headers["x-model-version"] == r.json()["model_version"]
    return r.json()


# ---- starting -----------------------------------------------------------------------------------


def test_starting_needs_the_admin_token(shop, v1, v2):
    c, _, _ = shop
    r = c.post("/admin/experiments", json={"name": "e", "arms": {"A": v1.name, "B": v2.name}})
    assert r.status_code == 401


@pytest.mark.parametrize("body, field, words", [
    ({"arms": {"A": "V1"}}, "arms", "needs 2 to 8 arms, got 1"),
    ({"arms": {"A": "V1", "B": "v20990101-000000-000000"}}, "arms.B",
     "no model version 'v20990101-000000-000000'"),
    ({"arms": {"A": "V1", "B": "../etc"}}, "arms.B", "not a version name"),
    ({"traffic": {"A": 0.5, "B": 0.4}}, "traffic", "the shares sum to 0.9, not 1"),
    ({"traffic": {"A": 0.5}}, "traffic", "arm 'B' has no share"),
    ({"traffic": {"A": 0.5, "B": 0.5, "C": 0.0}}, "traffic.C", "no arm 'C' in arms"),
    ({"traffic": {"A": 1.5, "B": -0.5}}, "traffic.A", "above 0 and at most 1"),
    ({"name": "no spaces"}, "name", "not a usable name"),
])
def test_a_bad_start_is_a_422_naming_the_field_and_nothing_starts(shop, v1, v2, body, field, words):
    c, _, _ = shop
    full = {"name": "e1", "arms": {"A": v1.name, "B": v2.name}, **body}
    full["arms"] = {k: v1.name if v == "V1" else v for k, v in full["arms"].items()}
    r = c.post("/admin/experiments", json=full, headers=AUTH)
    assert r.status_code == 422, r.text
    assert f"{field}: " in r.json()["message"] and words in r.json()["message"], r.json()
    assert c.get("/admin/experiments", headers=AUTH).json() == {"running": None, "experiments": []}


def test_one_experiment_at_a_time_and_names_never_reused(shop, v1, v2):
    c, _, _ = shop
    start(c, v1, v2, "e1")
    r = c.post("/admin/experiments", json={"name": "e2", "arms": {"A": v1.name, "B": v2.name}},
               headers=AUTH)
    assert r.status_code == 409 and "'e1' is running" in r.json()["detail"]
    assert c.post("/admin/experiments/e1/end", json={"winner": "A"}, headers=AUTH).status_code == 200
    r = c.post("/admin/experiments", json={"name": "e1", "arms": {"A": v1.name, "B": v2.name}},
               headers=AUTH)
    assert r.status_code == 409 and "exists already" in r.json()["detail"]


# ---- the split ----------------------------------------------------------------------------------


def test_a_user_always_gets_the_same_arm_and_its_version(shop, v1, v2):
    c, _, _ = shop
    start(c, v1, v2)
    version = {"A": v1.name, "B": v2.name}
    seen: dict[str, set[str]] = {}
    for _ in range(3):
        for i in range(40):
            answer = ask(c, f"user-{i}")
            arm = answer["experiment"]["arm"]
            assert answer["experiment"]["name"] == "e1"
            assert answer["model_version"] == version[arm]
            assert arm == assign_arm("e1", f"user-{i}", [("A", 0.5), ("B", 0.5)])
            seen.setdefault(f"user-{i}", set()).add(arm)
    assert all(len(arms) == 1 for arms in seen.values())
    assert {next(iter(a)) for a in seen.values()} == {"A", "B"}
    # without a user_id: the active version, in no arm
    answer = ask(c, None)
    assert answer["experiment"] is None and answer["model_version"] == v1.name


def test_the_split_is_near_the_requested_share(shop, v1, v2):
    c, _, _ = shop
    start(c, v1, v2, traffic={"A": 0.8, "B": 0.2})
    n = 600
    arms = Counter(ask(c, f"shopper-{i}")["experiment"]["arm"] for i in range(n))
    # binomial sd at 600 users: 0.016; 0.07 is over four of them
    assert arms["B"] / n == pytest.approx(0.2, abs=0.07), arms
    metrics = c.get("/metrics").text
    for arm in ("A", "B"):
        assert f'recsys_experiment_answers_total{{arm="{arm}",experiment="e1"}} {arms[arm]}.0' in metrics


# ---- the report ---------------------------------------------------------------------------------


def users_in(arm: str, n: int, name: str = "e1") -> list[str]:
    """`n` user ids the split puts in `arm` of a 50/50 experiment `name`."""
    out, i = [], 0
    while len(out) < n:
        if assign_arm(name, f"p{i}", [("A", 0.5), ("B", 0.5)]) == arm:
            out.append(f"p{i}")
        i += 1
    return out


def planted_events(rec, users: list[str], impressions: int, clicks: int, carts: int = 0,
                   at: datetime | None = None) -> list[dict]:
    """`impressions` impressions over `users` (round robin, 10 per answer), the first `clicks`
    of them clicked, the first `carts` carted."""
    items = rec.catalog.item_ids
    out = []
    for j in range(impressions):
        user = users[(j // 10) % len(users)]
        base = {"request_id": f"{user}-r{j // 10}", "query": QUERY, "item_id": items[j % 10],
                "position": j % 10 + 1, "user_id": user,
                **({"timestamp": at.isoformat()} if at else {})}
        out.append({**base, "type": "impression"})
        if j < clicks:
            out.append({**base, "type": "click"})
        if j < carts:
            out.append({**base, "type": "cart"})
    return out


def post(c: TestClient, events: list[dict]) -> None:
    for i in range(0, len(events), 500):
        r = c.post("/events", json={"events": events[i:i + 500]}, headers=PUSH)
        assert r.status_code == 202, r.text


def test_the_report_on_planted_counts(shop, v1, v2, rec):
    c, _, _ = shop
    start(c, v1, v2)
    a_users, b_users = users_in("A", 5), users_in("B", 5)
    post(c, planted_events(rec, a_users, 400, 60, carts=8))  # CTR 0.15
    post(c, planted_events(rec, b_users, 400, 30, carts=6))  # CTR 0.075
    # before the experiment started: not counted
    post(c, planted_events(rec, b_users, 100, 100, at=datetime.now(UTC) - timedelta(hours=1)))
    post(c, [{**e, "user_id": None} for e in planted_events(rec, a_users, 50, 50)])  # no user
    r = c.get("/admin/experiments/e1", headers=AUTH)
    assert r.status_code == 200, r.text
    out = r.json()
    arms = {a["arm"]: a for a in out["arms"]}
    assert (arms["A"]["impressions"], arms["A"]["clicks"], arms["A"]["carts"]) == (400, 60, 8)
    assert (arms["B"]["impressions"], arms["B"]["clicks"], arms["B"]["carts"]) == (400, 30, 6)
    assert arms["A"]["users"] == 5 and arms["A"]["answers"] == 40
    expected = wilson(60, 400)
    assert arms["A"]["ctr"] == {"rate": 0.15, "ci95": [expected.low, expected.high]}
    assert arms["A"]["ctr"]["ci95"] == pytest.approx([0.11834, 0.18831], abs=1e-5)  # by hand
    assert arms["B"]["cart_rate"]["rate"] == 6 / 400 and arms["A"]["purchase_rate"]["rate"] == 0
    ctr = next(x for x in out["comparisons"] if x["metric"] == "ctr")
    d = compare_rates(wilson(60, 400), wilson(30, 400))
    assert ctr["arm"] == "B" and ctr["against"] == "A"
    assert ctr["difference"] == pytest.approx(-0.075)
    assert ctr["ci95"] == [d.low, d.high] and ctr["ci95"][1] < 0
    # pooled 90/800 = 0.1125, se = sqrt(0.1125 * 0.8875 * 2/400) = 0.022343, z = -3.3567
    assert ctr["z"] == pytest.approx(-3.3567, abs=1e-4)
    assert ctr["p_value"] == pytest.approx(0.000789, abs=1e-6) and ctr["significant"]
    assert "B's CTR is significantly lower than A's" in out["summary"]
    cart = next(x for x in out["comparisons"] if x["metric"] == "cart_rate")
    assert not cart["significant"] and "not significant" in cart["summary"]
    assert "Wilson" in out["method"] and "Newcombe" in out["method"]
    metrics = c.get("/metrics").text
    assert 'recsys_experiment_events_total{arm="B",experiment="e1",type="click"} 130.0' in metrics


def test_an_unknown_experiment_is_a_404(shop):
    c, _, _ = shop
    r = c.get("/admin/experiments/nope", headers=AUTH)
    assert r.status_code == 404 and "no experiment 'nope'" in r.json()["detail"]


# ---- ending -------------------------------------------------------------------------------------


def test_ending_activates_the_winner_and_sends_all_traffic_there(shop, v1, v2):
    c, artifacts, settings = shop
    start(c, v1, v2)
    r = c.post("/admin/experiments/e1/end", json={"winner": "C"}, headers=AUTH)
    assert r.status_code == 422 and "winner: " in r.json()["message"]
    assert "one of A, B" in r.json()["message"]
    r = c.post("/admin/experiments/e1/end", json={"winner": "B"}, headers=AUTH)
    assert r.status_code == 200, r.text
    out = r.json()
    assert (out["serving"], out["previous"]) == (v2.name, v1.name)
    assert out["experiment"]["status"] == "ended" and out["experiment"]["winner"] == "B"
    assert c.get("/model").json()["version"] == v2.name
    assert (artifacts / "current").read_text().strip() == v2.name
    db = Database(settings.store_url)
    assert latest_activation(db)[1] == v2.name
    db.dispose()
    for i in range(20):  # users of both arms: all on the winner now, in no arm
        answer = ask(c, f"user-{i}")
        assert answer["experiment"] is None and answer["model_version"] == v2.name
    r = c.post("/admin/experiments/e1/end", json={"winner": "A"}, headers=AUTH)
    assert r.status_code == 409 and "ended" in r.json()["detail"]
    listed = c.get("/admin/experiments", headers=AUTH).json()
    assert listed["running"] is None and listed["experiments"][0]["winner"] == "B"


def test_an_end_that_another_request_made_first_changes_nothing(shop, v1, v2):
    """Two ends at once: the one answered 409 ("ended by another request meanwhile") had
    activated its own winner before it found the experiment ended, so the service served the
    loser's pick. The end is decided on the store's state under the catalogue lock: the second
    (here: holding the experiment as it read it before the first ended it) does nothing."""
    c, artifacts, _ = shop
    start(c, v1, v2)
    experiments = c.app.state.experiments
    stale = experiments._serving.experiment  # what the second request read: still running
    r = c.post("/admin/experiments/e1/end", json={"winner": "B"}, headers=AUTH)
    assert r.status_code == 200 and r.json()["serving"] == v2.name
    assert experiments.end(stale, "A") == (None, None, None)
    assert c.get("/model").json()["version"] == v2.name
    assert (artifacts / "current").read_text().strip() == v2.name


def test_a_winner_whose_files_were_damaged_is_not_served_and_the_experiment_runs_on(shop, v1, v2):
    """The winner's model was in memory since its arm was loaded; its files damaged since were
    served all the same (and refused by every other process, and after a restart)."""
    c, artifacts, _ = shop
    start(c, v1, v2)
    weights = artifacts / v2.name / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[:64] = b"\0" * 64
    weights.write_bytes(bytes(data))
    r = c.post("/admin/experiments/e1/end", json={"winner": "B"}, headers=AUTH)
    assert r.status_code == 409 and "the experiment keeps running" in r.json()["detail"], r.text
    assert c.get("/model").json()["version"] == v1.name
    assert (artifacts / "current").read_text().strip() == v1.name
    assert c.get("/admin/experiments", headers=AUTH).json()["running"] == "e1"


def test_ending_never_undoes_the_catalogue_changes_made_while_it_ran(shop, v1, v2):
    """A catalogue change while the experiment runs serves a revision of v1. Ending with v1's arm
    keeps that revision (v1 with the changes); ending with v2's, on the catalogue before, is a
    409 that says so, and the change stays."""
    c, _, _ = shop
    start(c, v1, v2)
    new = {"item_id": "NEW-ZORB-1", "title": "Nordwell Zorbleflux Velvet Dress", "color": "red",
           "category": "dress"}
    r = c.put("/admin/items", json={"items": [new]}, headers=AUTH)
    assert r.status_code == 200, r.text
    revised = r.json()["serving"]
    r = c.post("/admin/experiments/e1/end", json={"winner": "B"}, headers=AUTH)
    assert r.status_code == 409 and "would undo those changes" in r.json()["detail"], r.text
    assert c.get("/model").json()["version"] == revised
    r = c.post("/admin/experiments/e1/end", json={"winner": "A"}, headers=AUTH)
    assert r.status_code == 200, r.text
    assert (r.json()["serving"], r.json()["previous"]) == (revised, revised)
    assert c.get("/model").json()["version"] == revised
    assert c.get("/items/NEW-ZORB-1").status_code == 200


def test_an_item_removed_while_it_runs_is_in_no_arms_answer(shop, v1, v2, rec):
    """A catalogue change serves a revision; the arms keep the catalogue they started with, and
    answered the removed item to every shopper in the experiment."""
    c, _, _ = shop
    start(c, v1, v2)
    gone = ask(c, None)["items"][0]["item_id"]  # the query's best item, in both arms' catalogues
    users = users_in("A", 5) + users_in("B", 5)
    assert all(gone in [it["item_id"] for it in ask(c, u)["items"]] for u in users)
    r = c.delete(f"/admin/items/{gone}", headers=AUTH)
    assert r.status_code == 200, r.text
    for u in users:
        answer = ask(c, u)
        assert answer["experiment"]["arm"] in ("A", "B") and answer["model_version"] in (v1.name, v2.name)
        assert gone not in [it["item_id"] for it in answer["items"]], (u, answer["items"])
        assert len(answer["items"]) == 3


def _revision_beside(c: TestClient, v1) -> str:
    """v1 with one item more (a catalogue revision), made and then set aside: v1 served again."""
    r = c.put("/admin/items", json={"items": [NEW_ITEM]}, headers=AUTH)
    assert r.status_code == 200, r.text
    r = c.post(f"/admin/versions/{v1.name}/activate?force=true", headers=AUTH)
    assert r.status_code == 200, r.text
    return r.json()["previous"]


NEW_ITEM = {"item_id": "NEW-ZORB-1", "title": "Nordwell Zorbleflux Velvet Dress", "color": "red",
            "category": "dress"}


def test_an_arm_on_a_catalogue_of_its_own_shows_its_items_and_can_win(shop, v1):
    """Arms on two catalogues from the start are what the experiment tests: the arm with an item
    the served catalogue lacks shows it (it was excluded as if removed), and it can win (a 409
    said the catalogue had changed while it ran)."""
    c, artifacts, _ = shop
    revised = _revision_beside(c, v1)
    r = c.post("/admin/experiments", json={"name": "cat", "arms": {"A": v1.name, "B": revised}}, headers=AUTH)
    assert r.status_code == 201, r.text
    for u in users_in("B", 5, "cat"):
        answer = c.post("/recommend", json={"query": "zorbleflux", "k": 3, "user_id": u}).json()
        assert answer["model_version"] == revised and answer["items"][0]["item_id"] == "NEW-ZORB-1"
    r = c.post("/admin/experiments/cat/end", json={"winner": "B"}, headers=AUTH)
    assert r.status_code == 200, r.text
    assert r.json()["serving"] == revised and (artifacts / "current").read_text().strip() == revised


def test_the_older_catalogue_can_win_too(shop, v1):
    """The served version a revision of the other arm's, made before it started: the other arm
    wins and is served (the served one was kept as if it held changes made while it ran)."""
    c, _, _ = shop
    revised = _revision_beside(c, v1)
    assert c.post(f"/admin/versions/{revised}/activate?force=true", headers=AUTH).status_code == 200
    r = c.post("/admin/experiments", json={"name": "old", "arms": {"A": revised, "B": v1.name}}, headers=AUTH)
    assert r.status_code == 201, r.text
    r = c.post("/admin/experiments/old/end", json={"winner": "B"}, headers=AUTH)
    assert r.status_code == 200 and r.json()["serving"] == v1.name, r.text
    assert c.get("/model").json()["version"] == v1.name


# ---- several processes --------------------------------------------------------------------------


def test_a_second_process_follows_the_experiment_from_the_store(tmp_path, data_dir, v1, v2, rec,
                                                                 store_url):
    """Two apps on one store and artifacts folder (as two server processes): the other one
    serves the arms after its next poll, and the winner after the end."""
    artifacts = make_artifacts(tmp_path / "artifacts", v1, v2)
    settings = settings_for(artifacts, data_dir, database_url=store_url)
    first, second = create_app(settings, recommender=rec), create_app(settings, recommender=rec)
    with TestClient(first) as one, TestClient(second) as two:
        start(one, v1, v2)
        assert ask(two, "user-1")["experiment"] is None  # before its poll
        two.app.state.experiments.follow()  # what its PointerWatcher does every interval
        for i in range(10):
            a, b = ask(one, f"user-{i}"), ask(two, f"user-{i}")
            assert b["experiment"] is not None
            assert a["experiment"] == b["experiment"] and a["model_version"] == b["model_version"]
        b_model = two.app.state.experiments.serving.models["B"]
        assert b_model.version == v2.name
        assert one.post("/admin/experiments/e1/end", json={"winner": "B"},
                        headers=AUTH).status_code == 200
        two.app.state.experiments.follow()
        answer = ask(two, "user-1")
        assert answer["experiment"] is None and answer["model_version"] == v2.name
        # the winner's model is the arm's, not loaded again
        assert two.app.state.versions.current is b_model



@pytest.mark.parametrize("where", ["arm", "traffic"])
def test_a_lone_surrogate_in_an_arm_s_name_is_a_422_that_shows_it_escaped(shop, v1, v2, where):
    """The 422 names the bad key in its `loc`: a lone surrogate there (JSON can escape one) could
    not be written as UTF-8, and the answer was a 500."""
    c, _, _ = shop
    body = {"name": "s1", "arms": {"A": v1.name, "B": v2.name}}
    if where == "arm":
        body["arms"] = {"A@": v1.name, "B": v2.name}
    else:
        body["traffic"] = {"A": 0.5, "@": 0.5}
    raw = json.dumps(body).replace("@", "\\udc00")  # the escape JSON allows, no str can encode
    r = c.post("/admin/experiments", content=raw.encode(), headers={**AUTH, "content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert "\\udc00" in r.json()["message"]
    assert c.get("/admin/experiments", headers=AUTH).json()["experiments"] == []
