"""Rules in the store, on SQLite and on a real PostgreSQL server: create, list, change, delete,
all or nothing, and the audit trail whose newest id is the rules' revision."""

from __future__ import annotations

from datetime import datetime

import pytest
from sqlalchemy import inspect

from recsys.rules import Rule
from store.rules import (
    RuleConflict,
    RuleLimit,
    create_rules,
    delete_rule,
    list_rules,
    rule_history,
    rules_revision,
    update_rule,
)

BOOST = Rule("acme", "boost", attribute="brand:acme", amount=2.0, match="contains", query="dress",
             start=datetime(2026, 12, 1), end=datetime(2026, 12, 31))
PIN = Rule("top", "pin", item_id="P001", position=1)


def test_the_migration_makes_the_tables(db):
    assert {"rules", "rule_changes"} <= set(inspect(db.engine).get_table_names())


def test_create_list_change_delete_with_the_trail(db):
    assert rules_revision(db) == 0 and list_rules(db) == (0, [])
    create_rules(db, [BOOST, PIN], "alice", max_rules=10)
    revision, stored = list_rules(db)
    assert revision == rules_revision(db) == 2
    assert {s.item for s in stored} == {BOOST, PIN}
    assert all(s.updated_by == "alice" for s in stored)
    changed = Rule("acme", "bury", attribute="brand:acme", amount=1.5)
    update_rule(db, changed, "bob")
    assert {s.item for s in list_rules(db)[1]} == {changed, PIN}
    assert delete_rule(db, "top", "carol") == PIN
    assert [s.item for s in list_rules(db)[1]] == [changed]
    trail = rule_history(db, None, 10)
    assert [(c.action, c.name, c.actor) for c in trail] == [
        ("delete", "top", "carol"), ("update", "acme", "bob"), ("create", "top", "alice"),
        ("create", "acme", "alice")]
    assert trail[1].before["kind"] == "boost" and trail[1].after["kind"] == "bury"
    assert trail[3].after["starts_at"] == "2026-12-01T00:00:00"
    assert trail[0].after is None and trail[0].before["position"] == 1
    assert [c.action for c in rule_history(db, "acme", 10)] == ["update", "create"]
    assert rules_revision(db) == 4


def test_all_or_nothing(db):
    create_rules(db, [PIN], "alice", max_rules=10)
    with pytest.raises(RuleConflict, match="'top' exists already"):
        create_rules(db, [BOOST, PIN], "alice", max_rules=10)
    with pytest.raises(RuleLimit, match="at most 1 rules"):
        create_rules(db, [BOOST], "alice", max_rules=1)
    assert [s.item for s in list_rules(db)[1]] == [PIN] and rules_revision(db) == 1
    with pytest.raises(RuleConflict, match="no rule named 'nope'") as err:
        update_rule(db, Rule("nope", "hide", item_id="P1"), "x")
    assert err.value.missing
    with pytest.raises(RuleConflict, match="no rule named 'nope'"):
        delete_rule(db, "nope", "x")
    assert rules_revision(db) == 1


def test_many_changes_at_once_in_one_process_all_commit(db):
    """Sixteen threads of one process change rules at once. Each waiter for PostgreSQL's lock held a
    pooled connection and the holder's work needed a second: with ten waiting (the pool's size)
    the holder got none until the pool's 30 s timeout, and 9 of 16 changes failed as 'store
    unavailable' with the database up. Now the process's threads wait their turn outside the pool."""
    from concurrent.futures import ThreadPoolExecutor

    rules = [Rule(f"pin{i}", "pin", item_id=f"P{i:03d}", position=1 + i % 5) for i in range(16)]
    with ThreadPoolExecutor(16) as pool:
        outcomes = list(pool.map(lambda r: create_rules(db, [r], "alice", max_rules=100), rules))
    assert outcomes == [None] * 16
    assert {s.item.name for s in list_rules(db)[1]} == {r.name for r in rules}
    assert rules_revision(db) == 16
