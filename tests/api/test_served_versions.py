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
