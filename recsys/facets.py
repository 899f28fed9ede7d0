"""The default facet list and the rule that maps a column (or attribute key) name to a facet.

Facets are data: a model has one attention head per entry of its `ModelConfig.facets`, in that
order, and every output (explanations, schemas, metrics) iterates over the model's (or the
catalogue's) facets rather than naming heads. `FACETS` is only what a new model gets when its
schema adds none (`[facets] add = ["material"]`, see `recsys.io.schema.Schema`); a loaded model's
facets come from its artifact.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from .errors import InputError

FACETS: tuple[str, ...] = ("quality", "color", "style", "other")
# the facet the text's own words feed (keys "title" and "description"), and every column no other
# facet's name claims: every catalogue has it
WORDS_FACET = "other"

# The items contract's text columns. Their names are also the keys of the attributes read out of
# them (`title:acme` in `other`; a colour the lexicon finds in a description has key "description"):
# recsys.catalog writes those keys and recsys.encoding tells a description's words by theirs.
TITLE = "title"
DESCRIPTION = "description"

# Columns that identify or describe an item rather than being one of its attributes.
RESERVED_COLUMNS = frozenset({"item_id", TITLE, DESCRIPTION, "attributes"})

_QUALITY_NAMES = ("quality", "grade", "rating")
# a colour column in the languages of shop exports ("Farbe", "couleur", "Grundfarbe", "kleur");
# not the Portuguese "cor", which "decor" and "score" hold
_COLOR_NAMES = ("color", "colour", "farbe", "couleur", "kleur", "farve", "farge", "kolor", "barva")
# a facet name is a key of the weights' file (`heads.<facet>.`) and of the arrays' (`items.<facet>`):
# no dots, no spaces
FACET_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


def facet_for_column(name: str, overrides: Mapping[str, str] | None = None) -> str | None:
    """The facet a column or attribute key feeds, or None for reserved columns.

    `overrides` (from a schema file) maps lower-cased names to a facet or to "ignore"; only they
    can name a facet beyond the default four.
    """
    key = name.strip().lower()
    if overrides and key in overrides:
        facet = overrides[key]
        return None if facet == "ignore" else facet
    if key in RESERVED_COLUMNS:
        return None
    if any(c in key for c in _COLOR_NAMES):
        return "color"
    if "style" in key:
        return "style"
    if any(q in key for q in _QUALITY_NAMES):
        return "quality"
    return WORDS_FACET


def facet_name_problem(name: str, taken: Sequence[str]) -> str | None:
    """What is wrong with `name` as a new facet next to the facets `taken`, or None."""
    if not FACET_NAME.match(name) or name == "ignore":
        return (f"{name!r} is not a usable facet name: use lower-case letters, digits and '_', "
                "starting with a letter (at most 32), e.g. 'material'")
    if name in taken:
        return f"facet {name!r} is there already; the facets are {', '.join(taken)}"
    return None


def with_added(added: Sequence[str]) -> tuple[str, ...]:
    """The default facets, then `added` (a schema's `[facets] add`), each checked to be new."""
    out = list(FACETS)
    for name in added:
        problem = facet_name_problem(name, out)
        if problem:
            raise InputError(problem)
        out.append(name)
    return tuple(out)
