"""A shop's site names what a shopper saw by the variant (a Shopify `Variant SKU`), and the
catalogue trained on its export holds the products: the served version keeps each variant's id
as its product's other id (`Catalog.aliases`), so events, product pages and explanations that
name a variant reach the product, on both stores and after a catalogue change."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from cli.app import create_app
from recsys.artifact import load_version
from store.events import read_events
from tests.planted import SHOPIFY
from training.fit import TrainConfig
from training.train import TrainInputs, train

from api_support import ADMIN_TOKEN, make_artifacts, make_settings

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
EVENTS_TOKEN = "variant-events-token"
PUSH = {"Authorization": f"Bearer {EVENTS_TOKEN}"}


@pytest.fixture(scope="module")
def shopify_version(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shopify")
    export = folder / "products_export.csv"
    export.write_text(SHOPIFY)
    return train(TrainInputs(items=export, interactions=None), folder / "out", TrainConfig(seed=0)).version_dir


@pytest.fixture
def shop(tmp_path, data_dir, shopify_version, store_url):
    artifacts = make_artifacts(tmp_path / "artifacts", shopify_version)
    settings = make_settings(artifacts, data_dir, admin_token=ADMIN_TOKEN, events_token=EVENTS_TOKEN,
                             database_url=store_url)
    with TestClient(create_app(settings, recommender=load_version(shopify_version))) as client:
        yield client


def test_an_event_naming_a_variant_is_stored_as_its_product(shop):
    events = [{"type": "cart", "query": "white shirt", "item_id": "LS-WHITE-S", "event_id": "e1"},
              {"type": "click", "query": "boots", "item_id": "chelsea-boots", "event_id": "e2"}]
    r = shop.post("/events", json={"events": events}, headers=PUSH)
    assert r.status_code == 202, r.text
    stored = read_events(shop.app.state.db).set_index("event_id")["item_id"]
    assert stored.to_dict() == {"e1": "linen-shirt", "e2": "chelsea-boots"}
    # an id that is neither an item nor a variant of one is still refused, naming it
    r = shop.post("/events", json={"events": [{**events[0], "item_id": "LS-PINK-S"}]}, headers=PUSH)
    assert r.status_code == 422 and "unknown item 'LS-PINK-S'" in r.text


def test_a_variant_s_page_explanation_and_exclusion_reach_its_product(shop):
    r = shop.get("/items/WD-M")
    assert r.status_code == 200 and r.json()["item_id"] == "wrap-dress", r.text
    r = shop.get("/items/LS-NAVY-M/similar", params={"k": 5})
    assert r.status_code == 200, r.text
    assert r.json()["item_id"] == "linen-shirt"
    assert "linen-shirt" not in [i["item_id"] for i in r.json()["items"]]
    r = shop.post("/explain", json={"query": "white linen shirt", "item_id": "LS-WHITE-S"})
    assert r.status_code == 200 and r.json()["item_id"] == "linen-shirt", r.text
    assert r.json()["title"] == "Linen Shirt"
    r = shop.post("/compare", json={"query": "shirt", "item_a": "LS-NAVY-S", "item_b": "WD-S"})
    assert r.status_code == 200, r.text
    assert (r.json()["item_a"], r.json()["item_b"]) == ("linen-shirt", "wrap-dress")
    r = shop.post("/recommend", json={"query": "linen shirt", "exclude": ["LS-NAVY-S"]})
    assert "linen-shirt" not in [i["item_id"] for i in r.json()["items"]]


def test_a_catalogue_change_keeps_the_variants_of_the_items_it_keeps(shop):
    new = {"item_id": "silk-scarf", "title": "Silk Scarf", "color": "red"}
    assert shop.put("/admin/items", json={"items": [new]}, headers=ADMIN).status_code == 200
    assert shop.get("/items/silk-scarf").status_code == 200  # the change is served
    assert shop.get("/items/CB-42").json()["item_id"] == "chelsea-boots"
    assert shop.delete("/admin/items/chelsea-boots", headers=ADMIN).status_code == 200
    assert shop.get("/items/CB-42").status_code == 404  # its variant went with it
    assert shop.get("/items/LS-WHITE-S").json()["item_id"] == "linen-shirt"
    # an item added under a variant's id is that item from then on
    new = {"item_id": "LS-NAVY-S", "title": "Navy Linen Shirt, small", "color": "navy"}
    assert shop.put("/admin/items", json={"items": [new]}, headers=ADMIN).status_code == 200
    assert shop.get("/items/LS-NAVY-S").json()["title"] == "Navy Linen Shirt, small"
    assert shop.get("/items/LS-NAVY-M").json()["item_id"] == "linen-shirt"


def test_items_added_over_the_api_bring_their_variants(shop):
    """PUT /admin/items `variants` gives an item the ids its variants go by, as a trained
    export's do: events, pages and explanations that name one reach the item, and a change
    that leaves it out keeps them; ids that would make one id name two things are refused."""
    scarf = {"item_id": "silk-scarf", "title": "Silk Scarf", "color": "red"}
    r = shop.put("/admin/items", json={"items": [scarf], "variants": {"silk-scarf": ["SS-RED", "SS-BLUE"],
                                                                       "linen-shirt": ["LS-OLIVE-S"]}},
                 headers=ADMIN)
    assert r.status_code == 200, r.text
    assert shop.get("/items/SS-BLUE").json()["item_id"] == "silk-scarf"
    assert shop.get("/items/LS-OLIVE-S").json()["item_id"] == "linen-shirt"  # an item already there
    assert shop.get("/items/LS-WHITE-S").json()["item_id"] == "linen-shirt"  # its export's still hold
    r = shop.post("/events", json={"events": [{"type": "click", "query": "scarf", "item_id": "SS-RED",
                                               "event_id": "s1"}]}, headers=PUSH)
    assert r.status_code == 202, r.text
    assert read_events(shop.app.state.db).set_index("event_id")["item_id"].to_dict()["s1"] == "silk-scarf"
    r = shop.post("/explain", json={"query": "red scarf", "item_id": "SS-RED"})
    assert r.status_code == 200 and r.json()["item_id"] == "silk-scarf", r.text
    # a later change that does not name them keeps them
    assert shop.put("/admin/items", json={"items": [{"item_id": "wool-hat", "title": "Wool Hat"}]},
                    headers=ADMIN).status_code == 200
    assert shop.get("/items/SS-BLUE").json()["item_id"] == "silk-scarf"

    serving = shop.get("/ready").json()["model_version"]
    for variants, says in (({"no-such-item": ["X1"]}, "no item 'no-such-item'"),
                           ({"silk-scarf": ["wrap-dress"]}, "'wrap-dress' is an item's own item_id"),
                           ({"silk-scarf": ["V1"], "wool-hat": ["V1"]}, "'V1' is given to 'silk-scarf' too")):
        r = shop.put("/admin/items", json={"items": [scarf], "variants": variants}, headers=ADMIN)
        assert r.status_code == 422 and says in r.text, r.text
        assert r.json()["detail"][0]["loc"][:2] == ["body", "variants"], r.text
    assert shop.get("/ready").json()["model_version"] == serving  # nothing changed
    assert shop.get("/items/X1").status_code == 404 and shop.get("/items/V1").status_code == 404


def test_a_variant_moved_to_another_item_names_that_item(shop):
    """A shop that moves a variant between products says so with `variants`: its id names the
    item it was given to last."""
    assert shop.get("/items/LS-NAVY-M").json()["item_id"] == "linen-shirt"
    r = shop.put("/admin/items", json={"items": [{"item_id": "wrap-dress", "title": "Crimson Wrap Dress"}],
                                       "variants": {"wrap-dress": ["LS-NAVY-M"]}}, headers=ADMIN)
    assert r.status_code == 200, r.text
    assert shop.get("/items/LS-NAVY-M").json()["item_id"] == "wrap-dress"
    assert shop.get("/items/LS-NAVY-S").json()["item_id"] == "linen-shirt"  # its other variants stay
