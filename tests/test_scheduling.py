"""The units tests/conftest.py names for `make test`'s processes (SPREAD, LONGEST) exist: a file
renamed or a test removed would otherwise silently fall back to xdist's order."""

from __future__ import annotations

from pathlib import Path

from .conftest import LONGEST, SPREAD

ROOT = Path(__file__).resolve().parents[1]


def test_every_unit_named_for_the_scheduler_exists():
    for unit in [*SPREAD, *LONGEST]:
        path, _, test = unit.partition("::")
        assert (ROOT / path).is_file(), unit
        if test:
            assert path in SPREAD, f"{unit}: only a file of SPREAD is split into its tests"
            assert f"def {test.split('[', 1)[0]}(" in (ROOT / path).read_text(), unit
