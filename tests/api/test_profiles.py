"""For this shopper over HTTP (issue 32), on SQLite and PostgreSQL: a shopper's events in the
store personalise POST /recommend with a user_id, explained as their history; no history, or
personalize false, is the unpersonalised answer with a note; a profile is read once per TTL, and
one shopper's is never another's; DELETE /admin/users/{user_id} forgets them, in this process at
once and in another process sharing the store at its next poll."""

from __future__ import annotations

import asyncio

import pytest
from fastapi.testclient import TestClient

from api.profiles import Profiles
from cli.app import create_app
from recsys.catalog import Catalog
from recsys.profile import NO_HISTORY, NOT_SURE
from store.db import Database
from tests.recsys.test_profile import BOUGHT, SURE_EXTRA, clothing, navy_linen
from tests.recsys.test_similar import NO_EVENTS
from training.fit import TrainConfig
from training.start import untrained_recommender

from api_support import ADMIN_TOKEN, EVENTS_APP_TOKEN, make_settings

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
EVENTS = {"Authorization": f"Bearer {EVENTS_APP_TOKEN}"}
ROWS = clothing().set_index("item_id")


@pytest.fixture(scope="module")
def clothes():
    return untrained_recommender(Catalog.build(clothing()), NO_EVENTS, TrainConfig(seed=0))


@pytest.fixture
def shop(tmp_path, data_dir, clothes, store_url):
    """A client of an app serving the planted clothes on `store_url`, profiles kept an hour (so
    that only forgetting drops one)."""
    settings = make_settings(tmp_path / "artifacts", data_dir, admin_token=ADMIN_TOKEN,
                             events_token=EVENTS_APP_TOKEN, database_url=store_url, profile_ttl_s=3600)
    with TestClient(create_app(settings, recommender=clothes)) as c:
        yield c


def buy(client: TestClient, user_id: str, items=BOUGHT) -> None:
    events = [{"type": "purchase", "query": "summer", "item_id": i, "user_id": user_id} for i in items]
    assert client.post("/events", json={"events": events}, headers=EVENTS).status_code == 202


def ask(client: TestClient, **body) -> dict:
    answer = client.post("/recommend", json={"query": "", "k": 6, **body})
    assert answer.status_code == 200, answer.text
    return answer.json()


def ranked(answer: dict) -> list[tuple[str, float]]:
    return [(i["item_id"], i["score"]) for i in answer["items"]]


@pytest.mark.parametrize("query", ["", "shirt"])
def test_a_shopper_who_bought_navy_linen_gets_it_first(shop, query):
    buy(shop, "ann")
    got = ask(shop, query=query, user_id="ann", personalize=True)
    first = 6 if query == "" else 2
    assert all(navy_linen(ROWS.loc[i["item_id"]]) for i in got["items"][:first]), got["items"]
    assert got["history"] == {"personalized": True, "words": ["navy", "linen"],
                              "weights": got["history"]["weights"],
                              "drawn_by": {"navy": ["color:navy"], "linen": ["material:linen"]},
                              "events": 2, "note": ""}
    top = got["items"][0]
    assert top["explanation"]["history"] == ["navy", "linen"]
    assert top["explanation"]["summary"].endswith("your history: navy, linen")
    assert got["tokens"] == query.split()
    for item in got["items"]:
        e = item["explanation"]
        assert item["score"] == pytest.approx(e["prior"] + sum(h["contribution"] for h in e["heads"]), abs=1e-4)


def test_by_default_a_typed_query_is_personalised_only_by_a_sure_history(shop):
    """Two purchases personalise a home page; a typed query waits for six (`Profile.sure`)."""
    buy(shop, "ann")
    home = ask(shop, user_id="ann")
    assert home["history"]["personalized"] and ranked(home) == ranked(ask(shop, user_id="ann", personalize=True))
    typed = ask(shop, query="shirt", user_id="ann")
    assert ranked(typed) == ranked(ask(shop, query="shirt"))
    assert typed["history"]["personalized"] is False and typed["history"]["note"] == NOT_SURE
    # stop words alone are no query: a home page
    assert ask(shop, query="the", user_id="ann")["history"]["personalized"]
    buy(shop, "bea", (*BOUGHT, *SURE_EXTRA))
    sure = ask(shop, query="shirt", user_id="bea")
    assert sure["history"]["personalized"] and sure["history"]["words"] == ["navy", "linen"]
    assert all(navy_linen(ROWS.loc[i["item_id"]]) for i in sure["items"][:2]), sure["items"]


def test_no_history_or_personalize_false_is_the_unpersonalised_answer_with_a_note(shop):
    buy(shop, "ann")
    plain = ask(shop, query="shirt")
    assert plain["history"] is None
    nobody = ask(shop, query="shirt", user_id="bob", personalize=True)  # never bought: not ann's history
    assert ranked(nobody) == ranked(plain) and nobody["history"]["note"] == NO_HISTORY
    assert nobody["history"]["personalized"] is False and nobody["history"]["words"] == []
    off = ask(shop, query="shirt", user_id="ann", personalize=False)
    assert ranked(off) == ranked(plain) and "personalize is false" in off["history"]["note"]
    assert all(i["explanation"]["history"] == [] for i in off["items"])


def test_a_profile_is_read_once_per_ttl_and_forgetting_drops_it(shop):
    buy(shop, "ann", BOUGHT[:1])
    before = ask(shop, user_id="ann")
    buy(shop, "ann", ["C000"])  # within the hour: the cached profile answers
    assert ask(shop, user_id="ann")["history"] == before["history"]
    assert shop.delete("/admin/users/ann").status_code == 401
    forgot = shop.delete("/admin/users/ann", headers=ADMIN)
    assert forgot.status_code == 200 and forgot.json() == {"user_id": "ann", "deleted_events": 2}
    after = ask(shop, user_id="ann")
    assert after["history"]["note"] == NO_HISTORY and ranked(after) == ranked(ask(shop))
    assert shop.delete("/admin/users/ann", headers=ADMIN).json()["deleted_events"] == 0


def test_a_profile_is_built_once_per_ttl_not_per_request(shop, clothes, store_url):
    """Within its TTL every request gets the profile built first (the same object: the store is
    not read again, even after new events); once it has expired, the next request reads the store
    and sees the newest events (issue 32, point 5)."""
    buy(shop, "bea", BOUGHT[:1])  # one purchase: no lasting taste yet
    kept = Profiles(Database(store_url), ttl_s=3600, capacity=10, max_events=50)
    brief = Profiles(Database(store_url), ttl_s=1e-6, capacity=10, max_events=50)  # gone at once
    first, once = (asyncio.run(p.profile("bea", clothes)) for p in (kept, brief))
    assert not first and not once
    buy(shop, "bea", BOUGHT[1:])
    assert asyncio.run(kept.profile("bea", clothes)) is first  # from memory: not rebuilt
    assert asyncio.run(brief.profile("bea", clothes)).words == ["navy", "linen"]  # rebuilt: both
    kept.db.dispose()
    brief.db.dispose()


def test_another_process_drops_its_profiles_at_its_next_poll(shop, clothes, store_url):
    buy(shop, "ann")
    other = Profiles(Database(store_url), ttl_s=3600, capacity=10, max_events=50)  # another worker
    other.follow()  # its first poll
    assert other.build("ann", clothes).words == ["navy", "linen"]
    assert other.cached("ann", clothes) is not None
    assert shop.delete("/admin/users/ann", headers=ADMIN).status_code == 200
    other.follow()
    assert other.cached("ann", clothes) is None and not other.build("ann", clothes)
    other.db.dispose()
