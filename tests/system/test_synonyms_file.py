"""The synonyms file (RECSYS_SYNONYMS_FILE, `recsys serve --synonyms F`) is followed like the
store (issue 31): a server of two workers reads it again at the poll after it changes, on each
worker, without a restart; a file that no longer reads keeps the last good synonyms in force on
every worker, and the log says why; mending it is followed again."""

from __future__ import annotations

import contextlib
import json
import time

import pytest
from test_rules_replicas import FOLLOW_S, both_worker_pids, indigo_matched, seen_within

from recsys.artifact import save_version
from recsys.catalog import Catalog
from tests.recsys.test_profile import clothing
from tests.recsys.test_similar import NO_EVENTS
from training.fit import TrainConfig
from training.start import untrained_recommender

from api_support import ADMIN_TOKEN
from test_server import running, wait_ready

BROKEN = "=> navy"  # no query word: the line the warning names


@pytest.fixture
def server(tmp_path):
    """(base URL of a server of 2 workers reading `synonyms.txt`, the file, the server's log)."""
    rec = untrained_recommender(Catalog.build(clothing()), NO_EVENTS, TrainConfig(seed=0))
    save_version(rec, tmp_path / "artifacts", {})
    synonyms = tmp_path / "synonyms.txt"
    synonyms.write_text("# the shop's synonyms\nsofa, couch\n", encoding="utf-8")
    env = {"RECSYS_ADMIN_TOKEN": ADMIN_TOKEN, "RECSYS_DATABASE_URL": f"sqlite:///{tmp_path / 'store.db'}",
           "RECSYS_SPARE_WORKERS": "0", "RECSYS_SYNONYMS_FILE": str(synonyms)}
    log = tmp_path / "server.log"
    with contextlib.ExitStack() as stack:
        base, proc = stack.enter_context(running(["--model", str(tmp_path / "artifacts"), "--workers", "2"],
                                                 env, log))
        wait_ready(base, proc, log, timeout=180)
        yield base, synonyms, log


def warnings_of(log) -> list[dict]:
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.startswith("{")]
    return [x for x in lines if x.get("logger") == "recsys.api.synonyms" and x["level"] == "warning"]


def test_a_synonyms_file_edit_is_followed_by_every_worker(server):
    base, synonyms, log = server
    pids = sorted(both_worker_pids(base))
    assert not any(indigo_matched(base, p) for p in pids)
    synonyms.write_text("# the shop's synonyms\nsofa, couch\nindigo => navy\n", encoding="utf-8")
    delays = {f"worker {p}": seen_within(lambda p=p: indigo_matched(base, p), True) for p in pids}
    print("file edited, followed after (s):", {k: round(v, 3) for k, v in delays.items()})

    # a broken file: each worker says why once, and keeps serving the last good synonyms
    synonyms.write_text(f"# the shop's synonyms\n{BROKEN}\nindigo => navy\nsofa, couch\n", encoding="utf-8")
    start = time.monotonic()
    while len(warnings_of(log)) < 2:
        assert time.monotonic() - start < FOLLOW_S, "the broken file was not reported by both workers"
        time.sleep(0.05)
    said = warnings_of(log)
    assert all("line 2" in x["error"] and BROKEN in x["error"] and x["synonyms"] == 2 for x in said), said
    assert all(indigo_matched(base, p) for p in pids)  # the last good file's synonym, on both

    # mended without the rule: followed again, on both
    synonyms.write_text("# the shop's synonyms\nsofa, couch\n", encoding="utf-8")
    for p in pids:
        seen_within(lambda p=p: indigo_matched(base, p), False)
    assert len(warnings_of(log)) == 2  # said once per change, not at every poll
