"""A product exported as several rows, and its options named in columns of their own.

Shopify's product export (and a few others') writes a product as its first row (handle, title,
description, vendor, type, tags) followed by a row for each further variant and image, with the
same handle and an empty title. Its options are columns in pairs, a name and a value:
`Option1 Name` "Color", `Option1 Value` "Navy" (the name only on the first row; WooCommerce's
`Attribute 1 name` / `Attribute 1 value(s)` the same, the values comma-separated). Read row by
row, every variant row was an item with no title (the whole file refused), and the option values
were words with no kind ("navy" under `option1 value`, never a colour).

So, on the items table with its header mapped: each numbered name/value pair of columns becomes
a column named by the name's cell ("Color": navy|white), fed to the facets by the usual rule;
then each row with the item_id of the row above it and no title is read into the item it
continues: each column's distinct values joined with `|`, a column of numbers (a variant's
price, weight) its least (the "from" price a shop shows). Both are said in the report.
"""

from __future__ import annotations

import re

import numpy as np

from .headers import normalized
from .text import Table, counted

# a numbered pair of columns: `Option1 Name` / `Option1 Value`, `Attribute 1 name` / `Attribute 1 value(s)`
_PAIR_STEM = re.compile(r"[a-z]+\d+")
# option names that are not read: the contract's columns (Shopify names the one option of a
# product without variants "Title", valued "Default Title")
_CONTRACT = ("itemid", "title", "description", "attributes")


def fold_variants(table: Table) -> None:
    """Reads option column pairs as columns and continuation rows into their item (the module's
    docstring), in place, each said in `table.report`."""
    frame = table.frame
    if "item_id" not in frame.columns or "title" not in frame.columns:
        return
    ids = frame["item_id"]
    continues = ((ids == ids.shift()) & (ids != "") & (frame["title"] == "")).to_numpy()
    group = np.cumsum(~continues) - 1  # (R,) the item each row is read into
    _read_options(table, group)
    if continues.any():
        _fold(table, continues)


def option_pairs(columns: list[str]) -> list[tuple[str, str]]:
    """(name column, value column) of each numbered option pair, in header order."""
    by_name = {normalized(c): c for c in columns}
    pairs = []
    for norm, column in by_name.items():
        stem = norm[:-4] if norm.endswith("name") else ""
        if not _PAIR_STEM.fullmatch(stem):
            continue
        for suffix in ("value", "values"):
            if stem + suffix in by_name:
                pairs.append((column, by_name[stem + suffix]))
                break
    return pairs


def _read_options(table: Table, group: np.ndarray) -> None:
    frame = table.frame
    pairs = option_pairs(list(frame.columns))
    if not pairs:
        return
    existing = {normalized(c): c for c in frame.columns}
    added: dict[str, list[list[str]]] = {}  # column -> each row's values
    columns: dict[str, str | None] = {}  # an option's name -> the column it fills (None: none)
    for name_column, value_column in pairs:
        names = frame[name_column].where(frame[name_column] != "")
        # a variant row leaves the name to the item's first row
        names = names.fillna(names.groupby(group).transform("first")).fillna("")
        split = re.compile(r"[|,]" if normalized(value_column).endswith("values") else r"\|")
        for row, (name, cell) in enumerate(zip(names.tolist(), frame[value_column].tolist(), strict=True)):
            if not name or not cell:
                continue
            if name not in columns:
                columns[name] = None if normalized(name) in _CONTRACT else existing.setdefault(normalized(name), name)
            column = columns[name]
            if column is None:
                continue
            if column not in added:
                added[column] = [[] for _ in range(len(frame))]
            added[column][row].extend(v.strip() for v in split.split(cell) if v.strip())
    frame = frame.drop(columns=[c for pair in pairs for c in pair])
    for column, rows in added.items():
        old = frame[column].tolist() if column in frame.columns else [""] * len(frame)
        frame[column] = ["|".join(dict.fromkeys([*filter(None, o.split("|")), *new])) if new else o
                         for o, new in zip(old, rows, strict=True)]
    table.frame = frame
    if added:
        said = ", ".join(f"{c} ({counted(len(np.unique(group[(frame[c] != '').to_numpy()])), 'item')})"
                         for c in added)
        table.report.notices.append(f"options read as columns of their own: {said}")
        table.report.warnings.append(table.report.notices[-1])


def _fold(table: Table, continues: np.ndarray) -> None:
    frame = table.frame
    first = np.flatnonzero(~continues)  # (G,) each item's first row
    bounds = list(zip(first.tolist(), [*first[1:].tolist(), len(frame)], strict=True))
    merged = frame.iloc[first].reset_index(drop=True)  # row g: item g
    for column in frame.columns:
        if column == "item_id" or not (frame[column].to_numpy()[continues] != "").any():
            continue  # the first rows say it all (a title, a description, a vendor)
        cells = frame[column].tolist()
        merged[column] = [_merged_cell(cells[a:b]) if b - a > 1 else cells[a] for a, b in bounds]
    table.frame = merged
    table.lines = [table.lines[i] for i in first.tolist()]
    table.report.notices.append(
        f"{counted(int(continues.sum()), 'row')} with the item_id of the row above and no title read into "
        f"that item (a product's variants and images): {len(first):,} items")
    table.report.warnings.append(table.report.notices[-1])


def _merged_cell(cells: list[str]) -> str:
    """One item's cell from its rows': each distinct value once (`|` separates several); of
    numbers, the least."""
    values = list(dict.fromkeys(v.strip() for c in cells for v in c.split("|") if v.strip()))
    if len(values) <= 1:
        return values[0] if values else ""
    try:
        numbers = [float(v) for v in values]
    except ValueError:
        return "|".join(values)
    return values[int(np.argmin(numbers))]
