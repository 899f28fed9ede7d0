"""The facet list and the rule that maps a column (or attribute key) name to a facet.

Facets are data: the model builds one attention head per entry of `FACETS`, in this order, and
every output (explanations, schemas, metrics) iterates over this tuple rather than naming heads.
"""

from __future__ import annotations

from collections.abc import Mapping

FACETS: tuple[str, ...] = ("quality", "color", "style", "other")

# Columns that identify or describe an item rather than being one of its attributes.
RESERVED_COLUMNS = frozenset({"item_id", "title", "description", "attributes"})

_QUALITY_NAMES = ("quality", "grade", "rating")


def facet_for_column(name: str, overrides: Mapping[str, str] | None = None) -> str | None:
    """The facet a column or attribute key feeds, or None for reserved columns.

    `overrides` (from a schema file) maps lower-cased names to a facet or to "ignore".
    """
    key = name.strip().lower()
    if overrides and key in overrides:
        facet = overrides[key]
        return None if facet == "ignore" else facet
    if key in RESERVED_COLUMNS:
        return None
    if "color" in key or "colour" in key:
        return "color"
    if "style" in key:
        return "style"
    if any(q in key for q in _QUALITY_NAMES):
        return "quality"
    return "other"


def check_facet(facet: str, source: str) -> str:
    if facet not in FACETS and facet != "ignore":
        raise ValueError(f"{source}: unknown facet {facet!r}; use one of {', '.join(FACETS)} or 'ignore'")
    return facet
