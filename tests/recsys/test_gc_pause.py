"""Bulk loading pauses the cyclic collector and gives it back as it found it."""

from __future__ import annotations

import gc

import pytest

from recsys.gc_pause import paused_gc


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_restored_as_it_was(enabled):
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        with paused_gc():
            assert not gc.isenabled()
        assert gc.isenabled() == enabled
        with pytest.raises(ValueError), paused_gc():
            raise ValueError("a failed load")
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()
