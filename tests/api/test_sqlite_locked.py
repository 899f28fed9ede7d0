"""A SQLite store another process holds locked answers 503 within the request's budget, with
Retry-After, not after sqlite3's 30 s busy timeout (past most clients' own timeouts; the
reliability probe of session 44); the same write succeeds once the lock is let go."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from fastapi.testclient import TestClient
from test_events import PUSH, batch_for

from cli.app import create_app
from store.db import Database, StoreError

from api_support import ADMIN_TOKEN, EVENTS_APP_TOKEN, make_artifacts, make_settings

# another process: an exclusive transaction on the file, held until a line comes on stdin or
# HOLD_S pass (a write that waits for it out gets in: a 202 where the 503 was due)
HOLD_S = 10
HOLDER = textwrap.dedent(f"""
    import select, sqlite3, sys
    c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
    c.execute("BEGIN EXCLUSIVE")
    print("locked", flush=True)
    select.select([sys.stdin], [], [], {HOLD_S})
    c.execute("COMMIT")
""")


def test_a_store_locked_by_another_process_is_a_503_within_the_budget(tmp_path, v1, data_dir, rec):
    db_file = tmp_path / "store.db"
    settings = make_settings(make_artifacts(tmp_path / "artifacts", v1), data_dir, admin_token=ADMIN_TOKEN,
                             events_token=EVENTS_APP_TOKEN, database_url=f"sqlite:///{db_file}",
                             request_timeout_s=0.5)
    with TestClient(create_app(settings, recommender=rec)) as c:
        _, events = batch_for(c, rec)
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db_file)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
            r = c.post("/events", json={"events": events}, headers=PUSH)
            still_held = holder.poll() is None  # the answer came while the lock was held
        finally:
            holder.communicate("\n", timeout=60)
        assert still_held and r.status_code == 503, r.text
        assert r.headers["Retry-After"] and "nothing was" in r.json()["detail"]
        r = c.post("/events", json={"events": events}, headers=PUSH)
        assert r.status_code == 202 and r.json() == {"accepted": len(events), "duplicates": 0}


def test_a_busy_timeout_must_be_positive():
    with pytest.raises(StoreError, match="busy timeout must be above 0 s, got 0"):
        Database("sqlite:///:memory:", busy_timeout_s=0)
