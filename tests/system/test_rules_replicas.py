"""A rule or synonym change reaches every process (issue 31): two replicas (`recsys serve`, one process
each) and a server of two workers share a store, SQLite and PostgreSQL. A hide rule created
through one replica is applied by the other and by both workers at their next poll of the store
(RECSYS_WATCH_INTERVAL_S, 0.5 s), without a retrain or a reload; deleting it brings the items
back. The delay each process took is printed (the goal is within a second; the loop's bound
is FOLLOW_S so that a busy machine fails only a real miss)."""

from __future__ import annotations

import contextlib
import time

import httpx
import pytest

from recsys.artifact import save_version
from recsys.catalog import Catalog
from tests.live_server import answer_of, answers_by_worker
from tests.recsys.test_profile import clothing
from tests.recsys.test_similar import NO_EVENTS
from training.fit import TrainConfig
from training.start import untrained_recommender

from api_support import ADMIN_TOKEN
from test_server import running, wait_ready

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
FOLLOW_S = 5.0  # polls every 0.5 s; a busy process's turn at the GIL on top
RULE = {"name": "no-navy", "kind": "hide", "attribute": "color:navy"}
ASK = {"query": "", "k": 1, "explain": False, "filters": {"color": ["navy"]}}


def navy_shown(base: str, worker: str | None = None) -> bool:
    """Whether the answer of `base` (of the worker with pid `worker`) has a navy item."""
    r = answer_of(lambda: httpx.post(f"{base}/recommend", json=ASK, timeout=30), worker)
    assert r.status_code == 200, r.text
    return bool(r.json()["total"])


def seen_within(check, want: bool) -> float:
    """Seconds until `check()` is `want` (at most FOLLOW_S, then an AssertionError)."""
    start = time.monotonic()
    while check() != want:
        if time.monotonic() - start > FOLLOW_S:
            raise AssertionError(f"not followed within {FOLLOW_S} s")
        time.sleep(0.02)
    return time.monotonic() - start


@pytest.fixture
def servers(tmp_path, store_url):
    """(replica A, replica B, a server of 2 workers), all on `store_url` and one artifacts folder."""
    rec = untrained_recommender(Catalog.build(clothing()), NO_EVENTS, TrainConfig(seed=0))
    save_version(rec, tmp_path / "artifacts", {})
    env = {"RECSYS_ADMIN_TOKEN": ADMIN_TOKEN, "RECSYS_DATABASE_URL": store_url,
           "RECSYS_SPARE_WORKERS": "0"}
    model = ["--model", str(tmp_path / "artifacts")]
    with contextlib.ExitStack() as stack:
        bases = []
        one = [*model, "--workers", "1"]
        for n, args in enumerate((one, one, [*model, "--workers", "2"])):
            log = tmp_path / f"server{n}.log"
            base, proc = stack.enter_context(running(args, env, log))
            bases.append((base, proc, log))
        for base, proc, log in bases:
            wait_ready(base, proc, log, timeout=180)
        yield [b for b, _, _ in bases]


def both_worker_pids(workers: str) -> set[str]:
    """The pids of the two processes behind one port."""
    return set(answers_by_worker(lambda: httpx.post(f"{workers}/recommend", json=ASK, timeout=30), 2))


def test_a_rule_change_reaches_every_replica_and_worker(servers):
    a, b, workers = servers
    pids = both_worker_pids(workers)
    assert navy_shown(a) and navy_shown(b) and all(navy_shown(workers, p) for p in pids)
    r = httpx.post(f"{a}/admin/rules", json={"rules": [RULE]}, headers=AUTH, timeout=30)
    assert r.status_code == 201, r.text
    assert not navy_shown(a)  # the process that made the change: at once
    delays = {"replica B": seen_within(lambda: navy_shown(b), False)}
    for p in sorted(pids):
        delays[f"worker {p}"] = seen_within(lambda p=p: navy_shown(workers, p), False)
    print("rule created, followed after (s):", {k: round(v, 3) for k, v in delays.items()})
    r = httpx.delete(f"{b}/admin/rules/no-navy", headers=AUTH, timeout=30)
    assert r.status_code == 200, r.text
    assert navy_shown(b)
    delays = {"replica A": seen_within(lambda: navy_shown(a), True)}
    for p in sorted(pids):
        delays[f"worker {p}"] = seen_within(lambda p=p: navy_shown(workers, p), True)
    print("rule deleted, followed after (s):", {k: round(v, 3) for k, v in delays.items()})


SYNONYM = {"line": "indigo => navy"}  # no item says "indigo"


def indigo_matched(base: str, worker: str | None = None) -> bool:
    """Whether "indigo" matches an item in the answer of `base` (of the worker with pid
    `worker`): only through the synonym, whose rule the explanation then names."""
    r = answer_of(lambda: httpx.post(f"{base}/recommend", json={"query": "indigo", "k": 1}, timeout=30), worker)
    assert r.status_code == 200, r.text
    answer = r.json()
    matched = answer["unmatched_tokens"] == []
    effects = answer["items"][0]["explanation"]["synonyms"]
    assert matched == bool(effects) and (not effects or effects[0]["name"] == "indigo")
    return matched


def top_ids(base: str, worker: str | None = None) -> list[str]:
    """The 6 best items for "indigo" from `base` (the worker with pid `worker`), each navy."""
    r = answer_of(lambda: httpx.post(f"{base}/recommend", json={"query": "indigo", "k": 6}, timeout=30), worker)
    assert r.status_code == 200, r.text
    items = r.json()["items"]
    assert all(it["attributes"]["color"] == ["navy"] for it in items), items
    return [it["item_id"] for it in items]


def test_a_synonym_change_reaches_every_replica_and_worker(servers):
    a, b, workers = servers
    pids = both_worker_pids(workers)
    assert not indigo_matched(a) and not indigo_matched(b)
    assert not any(indigo_matched(workers, p) for p in pids)
    r = httpx.post(f"{a}/admin/synonyms", json={"synonyms": [SYNONYM]}, headers=AUTH, timeout=30)
    assert r.status_code == 201, r.text
    assert indigo_matched(a)  # the process that made the change: at once
    delays = {"replica B": seen_within(lambda: indigo_matched(b), True)}
    for p in sorted(pids):
        delays[f"worker {p}"] = seen_within(lambda p=p: indigo_matched(workers, p), True)
    print("synonym created, followed after (s):", {k: round(v, 3) for k, v in delays.items()})
    # the same results everywhere: the navy items, each explained by the rule
    answers = [top_ids(a), top_ids(b), *(top_ids(workers, p) for p in sorted(pids))]
    assert all(ids == answers[0] for ids in answers) and len(answers[0]) == 6
    r = httpx.delete(f"{b}/admin/synonyms/indigo", headers=AUTH, timeout=30)
    assert r.status_code == 200, r.text
    assert not indigo_matched(b)
    delays = {"replica A": seen_within(lambda: indigo_matched(a), False)}
    for p in sorted(pids):
        delays[f"worker {p}"] = seen_within(lambda p=p: indigo_matched(workers, p), False)
    print("synonym deleted, followed after (s):", {k: round(v, 3) for k, v in delays.items()})
