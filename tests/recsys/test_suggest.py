"""Completions as the shopper types (issue 31, suggestions), on planted terms and searches whose
right answers are known: popularity orders them, a search one shopper made is never suggested,
a value of several words completes the whole text, and a typo of one edit is forgiven."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pandas as pd
from fastapi.testclient import TestClient

from recsys.catalog import Catalog
from recsys.suggest import MIN_SHOPPERS, Suggester, normalise
from store.events import Event, add_events, search_counts

TERMS = {"dress": 40, "dresses": 12, "drill": 5, "denim": 30, "navy blue": 9, "navy": 3, "blue": 50,
         "linen": 7, "lamp": 20}


def texts(found) -> list[str]:
    return [s.text for s in found]


def test_completions_by_popularity_searches_first():
    s = Suggester(TERMS, {"denim jacket": 4, "dress for a wedding": 2})
    assert texts(s.suggest("d", 5)) == ["denim jacket", "dress for a wedding", "dress", "denim", "dresses"]
    assert [x.source for x in s.suggest("d", 3)] == ["search", "search", "catalogue"]
    assert texts(s.suggest("DRE", 2)) == ["dress for a wedding", "dress"]  # any case


def test_one_shoppers_search_is_never_suggested():
    s = Suggester(TERMS, {"dress size 14 for jane doe": MIN_SHOPPERS - 1, "dress shirt": MIN_SHOPPERS})
    assert "dress size 14 for jane doe" not in texts(s.suggest("dress s", 10))
    assert texts(s.suggest("dress s", 1)) == ["dress shirt"]


def test_the_last_word_completes_after_the_words_before_it_and_values_complete_whole():
    s = Suggester(TERMS)
    assert texts(s.suggest("linen dr", 2)) == ["linen dress", "linen dresses"]
    first = s.suggest("navy bl", 1)[0]
    assert (first.text, first.count) == ("navy blue", 9)  # the value, not "navy" + "blue" (50 items)
    assert s.suggest("linen ", 3) == []  # a finished word: only searches complete it


def test_a_later_word_of_a_search_or_value_completes_it_whole_after_the_words_it_begins():
    terms = {"cama": 20, "camas": 4, "ropa de cama": 9, "sofa cama": 6, "ropa": 30, "de luxe edition": 2}
    s = Suggester(terms, {"funda de cama": 3, "cama de matrimonio": 5, "colchon para cama": MIN_SHOPPERS - 1})
    # searches and terms the text begins first, then those with a later word it begins
    assert texts(s.suggest("cam", 6)) == ["cama de matrimonio", "cama", "camas", "funda de cama",
                                          "ropa de cama", "sofa cama"]
    assert [x.source for x in s.suggest("cam", 6)][3:] == ["search", "catalogue", "catalogue"]
    # the last word completed after the words before it, then the texts that go on so inside
    assert texts(s.suggest("de cam", 4)) == ["de cama", "de camas", "funda de cama", "ropa de cama"]
    assert "colchon para cama" not in texts(s.suggest("cama", 10))  # one shopper's: never shown
    assert texts(s.with_searches({}).suggest("cama", 3)) == ["camas", "ropa de cama", "sofa cama"]
    wedding = Suggester({"dress for a wedding": 3})
    assert wedding.suggest("fo", 3) == [] and texts(wedding.suggest("wed", 3)) == ["dress for a wedding"]


def test_a_typo_of_one_edit_is_forgiven_below_exact_completions():
    s = Suggester(TERMS)
    for typed in ("drss", "derss", "dresz", "dxess"):  # dropped, swapped, changed, changed
        found = s.suggest(typed, 3)
        assert "dress" in texts(found) and all(x.corrected for x in found), (typed, found)
    assert s.suggest("lmp", 1)[0].text == "lamp"
    assert s.suggest("dr", 3)[0].corrected is False
    assert s.suggest("xq", 3) == []  # too short to be read as a typo
    # the first letter is taken as typed: "cama" (bed) is not "ama", the start of "amarillo"
    assert Suggester({"amarillo": 30}).suggest("cama", 3) == []
    assert texts(Suggester({"dress": 3}).suggest("rdess", 3)) == ["dress"]  # its swap with the second


def test_a_typos_prefixes_are_kept_per_word_the_same_and_bounded(monkeypatch):
    import recsys.suggest as suggest

    monkeypatch.setattr(suggest, "TYPO_MEMO", 3)
    s = Suggester(TERMS)
    typos = ("drss", "derss", "dresz", "dxess", "lmp", "lnen")
    fresh = {t: s._typo_prefixes_of(t) for t in typos}
    assert "dres" in fresh["drss"] and "lamp" in fresh["lmp"]  # the edits that lead to terms
    for typed in typos:
        assert s._typo_prefixes(typed) == fresh[typed]
        assert s.terms.typo_memo.get(typed) is s._typo_prefixes(typed)  # the second time, the kept one
        assert len(s.terms.typo_memo) <= 3
    kept = [t for t in typos if t in s.terms.typo_memo]
    assert kept == ["dxess", "lmp", "lnen"] and len(s.terms.typo_memo) == 3  # the oldest dropped first
    assert texts(s.suggest("lnen", 1)) == ["linen"]  # and completions read them as before


def _of_items(*rows: dict[str, str]) -> Suggester:
    return Suggester.from_catalog(Catalog.build(pd.DataFrame(list(rows))))


def test_from_a_catalogue_counts_items_once_each():
    s = _of_items({"item_id": "A", "title": "Navy blue linen dress", "color": "navy blue"},
                  {"item_id": "B", "title": "Linen linen shirt", "color": "white"},
                  {"item_id": "C", "title": "Blue dress", "color": "blue"})
    counts = {x.text: x.count for x in s.suggest("l", 5)}
    assert counts["linen"] == 2  # B says it twice: still one item
    assert s.suggest("navy b", 1)[0].count == 1


def test_words_said_only_inside_codes_are_not_suggested():
    """A SKU's parts ("wc", "pdo") are no words a shopper means; a word a title says too is."""
    s = _of_items({"item_id": "WC-PDO-000", "title": "Pebble dutch oven", "SKU": "WC-PDO-000"},
                  {"item_id": "WC-NSP-001", "title": "Navy oven mitt", "SKU": "WC-NAVY-001"},
                  {"item_id": "WC-SKL-002", "title": "Walnut spoon", "SKU": "WC-SKL-002"})
    assert [x.text for x in s.suggest("w", 5)] == ["walnut"]
    assert s.suggest("pd", 5) == [] and not any("pdo" in x.text for x in s.suggest("wc p", 5))
    assert {x.text: x.count for x in s.suggest("nav", 5)} == {"navy": 1}


def test_a_prefix_typed_with_or_without_accents_completes_words_as_the_catalogue_writes_them():
    """"kü" found nothing while "ku" found "kuchenwaage" (folded: "Kuchen" is cake): prefixes are
    looked up accents aside, and a word is shown as the items write it."""
    s = _of_items({"item_id": "A", "title": "Küchenwaage digital", "Kategorie": "Küche & Haushalt"},
                  {"item_id": "B", "title": "Bügeleisen mit Dampf", "Kategorie": "Küche & Haushalt"},
                  {"item_id": "C", "title": "Übergangsjacke Herren", "Kategorie": "Mode"},
                  {"item_id": "D", "title": "Kurbel aus Stahl", "Kategorie": "Werkzeug"})
    for typed in ("kü", "ku"):  # one word to the index, as to a search: the same completions
        assert [x.text for x in s.suggest(typed, 5)] == ["küche", "küche haushalt", "küchenwaage", "kurbel"]
    assert [(x.text, x.corrected) for x in s.suggest("bügel", 3)] == [("bügeleisen", False)]
    assert [x.text for x in s.suggest("über", 3)] == ["übergangsjacke"]
    assert [x.text for x in s.suggest("dampf bü", 3)] == ["dampf bügeleisen"]
    # searches shoppers made: found accents aside, shown as they typed them
    searched = Suggester.from_catalog(Catalog.build(pd.DataFrame([{"item_id": "A", "title": "Tee"}])),
                                      {"grüner tee": 3, "gruner tee": 2})
    assert [x.text for x in searched.suggest("gru", 3)] == ["grüner tee"]


def test_the_bounds_of_number_ranges_are_not_offered():
    """A price or year column's ranges ("<2000", "14-22") are in each item's text, and their
    bounds were offered: "harry potter 2" -> "harry potter 2000" (every book), "king 14 22"."""
    s = _of_items(*({"item_id": f"B{i}", "title": f"Harry Potter volume {i}", "year": str(1990 + i % 30),
                     "price": f"{5 + i % 40}.99"} for i in range(200)))
    got = [(x.text, x.count) for x in s.suggest("harry potter 2", 5)]
    assert got[:2] == [("harry potter 20", 1), ("harry potter 21", 1)]  # the titles' own numbers
    assert {c for _, c in got} == {1}
    assert all(" " not in x.text for x in s.suggest("1", 5))


def test_normalise_keeps_a_finished_word():
    assert normalise("  Red   Dress ") == "red dress " and normalise("red") == "red" and normalise(" ") == ""


def test_logged_searches_count_distinct_shoppers(db):
    now = datetime.now(UTC)
    add_events(db, [Event("click", "Red Dress", f"I{i}", now, event_id=f"e{i}", user_id=u)
                    for i, u in enumerate(["a", "a", "b", "c"])]
               + [Event("click", "secret words", "I9", now, event_id="s1", user_id="a"),
                  Event("click", "secret words", "I8", now, event_id="s2", user_id="a"),
                  Event("click", "blue lamp", "I7", now, event_id="r1", request_id="q1"),
                  Event("click", "blue lamp", "I6", now, event_id="r2", request_id="q2")])
    assert search_counts(db, MIN_SHOPPERS) == {"red dress": 3, "blue lamp": 2}


def test_over_http_searches_join_once_two_shoppers_made_them(tmp_path, monkeypatch):
    import api.suggestions
    from api.config import Settings
    from cli.app import create_app
    from tests.recsys.test_similar import NO_EVENTS, furniture
    from training.fit import TrainConfig
    from training.start import untrained_recommender

    rec = untrained_recommender(Catalog.build(furniture()), NO_EVENTS, TrainConfig(seed=0))
    settings = Settings(artifacts_dir=tmp_path / "artifacts", data_dir=tmp_path / "data",
                        default_data_dir=tmp_path / "data" / "default", watch_interval_s=0,
                        database_url=f"sqlite:///{tmp_path / 'store.db'}", events_token="t")
    push = {"Authorization": "Bearer t"}

    def event(query: str, user: str) -> dict:
        return {"type": "click", "query": query, "item_id": "F000", "user_id": user}

    with TestClient(create_app(settings, recommender=rec)) as c:
        assert c.post("/events", json={"events": [event("walnut chair", "a"), event("walnut chair", "b"),
                                                  event("walnut wish list of ann", "a")]},
                      headers=push).status_code == 202
        body = c.get("/suggest", params={"q": "walnut", "n": 5}).json()
        assert body["suggestions"][0] == {"text": "walnut chair", "source": "search", "count": 2,
                                          "corrected": False}
        assert not any("ann" in x["text"] for x in body["suggestions"])
        assert [x["text"] for x in c.get("/suggest", params={"q": "scnadi"}).json()["suggestions"]] == ["scandi"]
        r = c.get("/suggest", params={"q": "x" * 600})
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "q"]  # a URL's parameter
        assert c.get("/suggest", params={"q": "w", "n": 0}).status_code == 422

        # a search made later joins once the searches are read again (every REFRESH_S)
        monkeypatch.setattr(api.suggestions, "REFRESH_S", 0.0)
        assert c.post("/events", json={"events": [event("oak table", "a"), event("oak table", "c")]},
                      headers=push).status_code == 202
        for _ in range(100):
            found = [x["text"] for x in c.get("/suggest", params={"q": "oak"}).json()["suggestions"]]
            if "oak table" in found:
                break
            time.sleep(0.05)
        assert found[0] == "oak table", found


def test_a_served_versions_catalogue_terms_are_read_before_any_request(tmp_path):
    """Installing a version reads its catalogue's terms in the background (`Suggestions.prepare`):
    the first request with a word no item matches finds them, and the store's searches are read
    then, as before."""
    from api.config import Settings
    from cli.app import create_app
    from tests.recsys.test_similar import NO_EVENTS, furniture
    from training.fit import TrainConfig
    from training.start import untrained_recommender

    rec = untrained_recommender(Catalog.build(furniture()), NO_EVENTS, TrainConfig(seed=0))
    settings = Settings(artifacts_dir=tmp_path / "artifacts", data_dir=tmp_path / "data",
                        default_data_dir=tmp_path / "data" / "default", watch_interval_s=0,
                        database_url=f"sqlite:///{tmp_path / 'store.db'}", events_token="t")
    app = create_app(settings, recommender=rec)
    with TestClient(app) as c:
        suggestions = app.state.suggestions
        for _ in range(200):
            if suggestions._terms is not None:
                break
            time.sleep(0.05)
        assert suggestions._terms is not None and suggestions._terms[0] == rec.version
        assert suggestions.ready_for(rec) is None  # no searches read yet: no request asked
        terms = suggestions._terms[1].terms
        body = c.post("/recommend", json={"query": "oak tbale", "k": 3}).json()
        assert body["did_you_mean"] == ["oak table"], body.get("did_you_mean")
        assert suggestions.ready_for(rec).terms is terms  # the terms read at install, not again
