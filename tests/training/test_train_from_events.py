"""Events -> interactions (labels by type, position-bias weights, the recent held-out slice) and
`recsys train --events` end to end on the planted catalogue, through a real SQLite store."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cli.main import main
from recsys.artifact import ITEMS_FILE, current_version, read_manifest
from store.db import Database
from store.events import Event, add_events, read_events
from training.events import MAX_WEIGHT, events_to_interactions, recent_queries
from training.train import queries_fingerprint

from ..planted import planted_interactions, planted_items

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def frame(rows: list[tuple]) -> pd.DataFrame:
    """(type, request_id, query, item_id, position, minute) -> an events frame as the store reads it."""
    df = pd.DataFrame(rows, columns=["type", "request_id", "query", "item_id", "position", "minute"])
    df["timestamp"] = [T0 + timedelta(minutes=m) for m in df.pop("minute")]
    return df


def test_labels_by_type_and_inverse_propensity_weights():
    ev = frame([
        ("impression", "r1", "red dress", "A", 1, 0), ("impression", "r1", "red dress", "B", 2, 0),
        ("impression", "r1", "red dress", "C", 3, 0), ("click", "r1", "red dress", "C", 3, 1),
        ("purchase", "r1", "red dress", "C", 3, 2),
        ("impression", "r2", "red dress", "A", 1, 5), ("impression", "r2", "red dress", "B", 2, 5),
        ("click", "r2", "red dress", "A", 1, 6),
        ("impression", "r3", "red dress", "B", 1, 7), ("cart", "r3", "red dress", "B", 1, 8),
        ("impression", "r4", "shoes", "D", 40, 9), ("click", "r4", "shoes", "D", 40, 9),
        ("click", None, "shoes", "E", None, 9),  # no answer, no position
    ])
    got = events_to_interactions(ev).set_index(["query", "item_id"])
    # C: purchased at rank 3 (weight 3); A: clicked at rank 1 once, shown-not-chosen once;
    # B: shown twice, carted at rank 1 once; D: clicked at rank 40, clipped; E: weight 1
    assert got.loc[("red dress", "C")].tolist() == [3.0, 3.0]
    assert got.loc[("red dress", "A")].tolist() == [1.0, 1.0]
    assert got.loc[("red dress", "B")].tolist() == [2.0, 1.0]
    assert got.loc[("shoes", "D")].tolist() == [1.0, MAX_WEIGHT]
    assert got.loc[("shoes", "E")].tolist() == [1.0, 1.0]
    assert len(got) == 5
    shown_only = events_to_interactions(frame([("impression", "r9", "hat", "H", 4, 0)]))
    assert shown_only[["label", "weight"]].values.tolist() == [[0.0, 1.0]]  # shown-not-chosen


def test_the_held_out_slice_is_the_most_recent_queries():
    rows = [("click", f"r{n}", f"q{n}", "A", 1, n) for n in range(10)]
    rows.append(("click", "r10", "q2", "A", 1, 30))  # q2 came back last
    rows.append(("impression", "r11", "q99", "A", 1, 40))  # no choice: not a query to judge
    ev = frame(rows)
    assert recent_queries(ev, events_to_interactions(ev), 0.2) == {"q2", "q9"}
    one = frame([("click", "r1", "q1", "A", 1, 0)])
    assert recent_queries(one, events_to_interactions(one), 0.2) == set()  # never all


def planted_events(n_sessions: int, seed: int = 1) -> list[Event]:
    """Shoppers of the planted catalogue: each session sees 8 items in a random order and clicks
    the ones it wants (planted.planted_interactions writes 8 rows a session)."""
    items = planted_items()
    rows = planted_interactions(items, n_queries=n_sessions, seed=seed)
    rng = np.random.default_rng(seed)
    out = []
    for n in range(n_sessions):
        session = rows.iloc[8 * n: 8 * n + 8].drop_duplicates("item_id")
        at = T0 + timedelta(minutes=n)
        for pos, r in enumerate(session.sample(frac=1, random_state=int(rng.integers(1 << 30))).itertuples(),
                                start=1):
            common = {"query": r.query, "item_id": r.item_id, "request_id": f"s{n}", "position": pos,
                      "timestamp": at}
            out.append(Event(type="impression", **common))
            if r.label:
                out.append(Event(type="click", **common))
    return out


@pytest.fixture
def planted_store(tmp_path):
    url = f"sqlite:///{tmp_path / 'events.db'}"
    db = Database(url)
    db.upgrade()
    events = planted_events(400)
    add_events(db, events)
    stored = read_events(db)
    db.dispose()
    return url, stored


def test_recsys_train_from_events_on_the_served_catalogue(planted_artifacts, planted_paths,
                                                          planted_store, tmp_path, capsys):
    url, stored = planted_store
    artifacts = tmp_path / "artifacts"
    shutil.copytree(planted_artifacts[0], artifacts)
    served = current_version(artifacts)
    code = main(["train", "--events", url, "--out", str(artifacts), "--epochs", "3",
                 "--judgments", str(planted_paths["judgments"]), "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    result = json.loads(out.out)
    manifest = read_manifest(result["path"])
    source = manifest["data"]["source"]
    assert source["n_events"] == len(stored) and source["events"] == url
    assert source["by_type"] == stored["type"].value_counts().to_dict()
    # trained on the copy of the items file the served version keeps (its `file` is where that
    # copy is): the same bytes, so the same catalogue
    items, served_items = manifest["data"]["items"], read_manifest(artifacts / served)["data"]["items"]
    assert Path(items.pop("file")) == (artifacts / served / ITEMS_FILE).resolve()
    assert items == {k: v for k, v in served_items.items() if k != "file"}
    held = recent_queries(stored, events_to_interactions(stored), 0.1)
    assert manifest["training"]["held_out_queries"] == len(held) > 0
    assert manifest["training"]["held_out_fingerprint"] == queries_fingerprint(held)
    metrics = result["metrics"]
    assert metrics["replayed"]["version"] == served
    assert metrics["replayed"]["held_out_queries"] == len(held)
    # learned from clicks alone: every synonym pair ranks its right items first, BM25 cannot
    assert metrics["judgments"]["model"]["ndcg@10"] >= 0.95 > 0.5 > metrics["judgments"]["bm25"]["ndcg@10"]


def test_since_takes_the_later_events_only(planted_artifacts, planted_store, tmp_path, capsys):
    url, stored = planted_store
    artifacts = tmp_path / "artifacts"
    shutil.copytree(planted_artifacts[0], artifacts)
    since = T0 + timedelta(minutes=300)
    code = main(["train", "--events", url, "--since", "2026-11-01T05:00:00", "--out", str(artifacts),
                 "--epochs", "1", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    source = read_manifest(json.loads(out.out)["path"])["data"]["source"]
    assert source["n_events"] == int((stored["timestamp"] >= since).sum()) < len(stored)
    assert source["since"] == since.isoformat()


def test_bad_event_training_requests_say_what_to_do(planted_artifacts, tmp_path, capsys):
    empty = f"sqlite:///{tmp_path / 'empty.db'}"
    Database(empty).upgrade()
    artifacts = tmp_path / "artifacts"
    shutil.copytree(planted_artifacts[0], artifacts)
    before = sorted(p.name for p in artifacts.iterdir())
    cases = [
        (["--events", empty, "--out", str(artifacts)], "no events: nothing to train on"),
        (["--events", empty, "--out", str(tmp_path / "none")], "no served version to take the catalogue"),
        (["--interactions", "x.csv", "--since", "2026-01-01"], "--since goes with --events"),
    ]
    for args, message in cases:
        assert main(["train", *args]) == 2
        assert message in capsys.readouterr().err
    assert sorted(p.name for p in artifacts.iterdir()) == before
