"""A model's name glued to its number, or typed apart from it, over HTTP (docs/model.md, "Words
run together or split apart"): POST /recommend reads "iphone15 case" as "iphone 15 case", says
which words it read, reports no word unmatched and offers no "did you mean" for it."""

from __future__ import annotations

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from cli.app import create_app
from recsys.catalog import Catalog
from recsys.lexicon import LexiconConfig
from tests.recsys.test_compound_words import GLUED
from tests.recsys.test_lexical_start import NO_ROWS
from training.fit import TrainConfig
from training.start import untrained_recommender

from api_support import make_settings


@pytest.fixture(scope="module")
def shop(tmp_path_factory, data_dir):
    items = pd.DataFrame({"item_id": [f"E{i}" for i in range(len(GLUED))], "title": GLUED})
    rec = untrained_recommender(Catalog.build(items, lexicon=LexiconConfig(enabled=False)), NO_ROWS, TrainConfig())
    settings = make_settings(tmp_path_factory.mktemp("glued") / "artifacts", data_dir)
    with TestClient(create_app(settings, recommender=rec)) as client:
        yield client


def ask(client: TestClient, query: str) -> dict:
    answer = client.post("/recommend", json={"query": query, "k": 4})
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_glued_name_is_answered_as_its_pieces_typed_apart(shop):
    glued, apart = ask(shop, "iphone15 case"), ask(shop, "iphone 15 case")
    assert glued["tokens"] == apart["tokens"] == ["iphone", "15", "case"]
    assert glued["unmatched_tokens"] == [] and glued["did_you_mean"] == []
    assert [(i["item_id"], i["explanation"]["summary"]) for i in glued["items"]] == \
        [(i["item_id"], i["explanation"]["summary"]) for i in apart["items"]]
    assert glued["items"][0]["item_id"] == "E2"  # the iPhone 15 case


def test_a_name_and_number_typed_apart_find_the_model_written_as_one(shop):
    body = ask(shop, "rtx 4090")
    assert body["items"][0]["item_id"] == "E4" and body["items"][0]["explanation"]["matched"]
    assert body["unmatched_tokens"] == [] and body["did_you_mean"] == []
