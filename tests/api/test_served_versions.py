"""What `ServedVersions` does to the process when it serves a model."""

from __future__ import annotations

import gc
import weakref

from api.served_versions import ServedVersions
from recsys.artifact import load_version


def _tracked(obj) -> bool:
    return any(o is obj for o in gc.get_objects())


def test_a_served_model_is_out_of_the_collectors_reach(tmp_path, v1, v2):
    """Full collections must not walk the catalogue (they stalled every request for ~140 ms at
    100k items); a replaced model is still freed."""
    versions = ServedVersions(tmp_path)
    try:
        first = load_version(v1)
        assert _tracked(first.catalog.item_ids)
        versions.install(first)
        assert not _tracked(first.catalog.item_ids) and gc.get_freeze_count() > 0
        gone = weakref.ref(first.catalog)
        del first
        second = load_version(v2)
        versions.install(second)
        assert gone() is None
        assert not _tracked(second.catalog.item_ids)
    finally:
        gc.unfreeze()


def test_a_recorded_activation_is_not_undone_before_current_moves(tmp_path, v1, v2):
    """An activation is recorded in the store before `current` moves. A process that follows the
    record in that moment serves the new version; its watcher must not then follow the pointer's
    old name back (an answer of the old version after one of the new, through the load
    balancer), and it follows `current` once it moves. Under the catalogue lock, `current` is
    followed whatever it names."""
    from recsys.artifact import set_current
    from store.db import Database
    from store.records import record_activation
    from tests.api.api_support import make_artifacts

    artifacts = make_artifacts(tmp_path / "artifacts", v1, v2)
    db = Database(f"sqlite:///{tmp_path / 'store.db'}")
    db.upgrade()
    versions = ServedVersions(artifacts, db=db)
    try:
        versions.load_initial()
        assert versions.current.version == v1.name
        record_activation(db, v2.name, "another process")  # its pointer has not moved yet
        versions.follow_activations()
        assert versions.current.version == v2.name
        versions.follow_pointer()  # the watcher's next step: `current` still names v1
        assert versions.current.version == v2.name
        set_current(artifacts, v2.name)  # the other process moves it
        versions.follow_pointer()
        assert versions.current.version == v2.name
        set_current(artifacts, v1.name)  # a move back (`recsys train --activate`, no record)
        versions.follow_pointer()
        assert versions.current.version == v1.name
        record_activation(db, v2.name, "again")
        versions.follow_activations()
        with versions.changing():  # no change is half made under the lock: `current` rules
            versions.follow_pointer()
        assert versions.current.version == v1.name
    finally:
        gc.unfreeze()
