"""Synonyms in the store, on SQLite and on a real PostgreSQL server: create, list, change,
delete, all or nothing, and the audit trail whose newest id is the synonyms' revision."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect

from recsys.synonyms import Synonym
from store.synonyms import SYNONYMS, SynonymConflict, SynonymLimit

NAVY = Synonym("navy", ("navy", "marine"), ("blue",))
SOFA = Synonym("sofa", ("sofa", "couch", "settee"))


def test_the_migration_makes_the_tables(db):
    assert {"synonyms", "synonym_changes"} <= set(inspect(db.engine).get_table_names())


def test_create_list_change_delete_with_the_trail(db):
    assert SYNONYMS.revision(db) == 0 and SYNONYMS.read(db) == (0, [])
    SYNONYMS.create(db, [NAVY, SOFA], "alice", most=10)
    revision, stored = SYNONYMS.read(db)
    assert revision == SYNONYMS.revision(db) == 2
    assert {s.item for s in stored} == {NAVY, SOFA}
    assert all(s.updated_by == "alice" for s in stored)
    changed = Synonym("navy", ("navy",), ("blue", "dark blue"))
    SYNONYMS.update(db, changed, "bob")
    assert {s.item for s in SYNONYMS.read(db)[1]} == {changed, SOFA}
    assert SYNONYMS.delete(db, "sofa", "carol") == SOFA
    assert [s.item for s in SYNONYMS.read(db)[1]] == [changed]
    trail = SYNONYMS.history(db, None, 10)
    assert [(c.action, c.name, c.actor) for c in trail] == [
        ("delete", "sofa", "carol"), ("update", "navy", "bob"), ("create", "sofa", "alice"),
        ("create", "navy", "alice")]
    assert trail[1].before["words"] == ["navy", "marine"] and trail[1].after["to"] == ["blue", "dark blue"]
    assert trail[0].after is None and trail[0].before["to"] == []
    assert [c.action for c in SYNONYMS.history(db, "navy", 10)] == ["update", "create"]


def test_all_or_nothing(db):
    SYNONYMS.create(db, [SOFA], "alice", most=10)
    with pytest.raises(SynonymConflict, match="'sofa' exists already"):
        SYNONYMS.create(db, [NAVY, SOFA], "alice", most=10)
    with pytest.raises(SynonymLimit, match="at most 1 synonyms"):
        SYNONYMS.create(db, [NAVY], "alice", most=1)
    assert [s.item for s in SYNONYMS.read(db)[1]] == [SOFA] and SYNONYMS.revision(db) == 1
    with pytest.raises(SynonymConflict, match="no synonym named 'nope'") as err:
        SYNONYMS.update(db, Synonym("nope", ("a", "b")), "x")
    assert err.value.missing
    with pytest.raises(SynonymConflict, match="no synonym named 'nope'"):
        SYNONYMS.delete(db, "nope", "x")
    assert SYNONYMS.revision(db) == 1
