"""Products as JSON records read as the items table a CSV file gives: the records a search
engine's index exports (Algolia's `objectID`s, a Meilisearch, Typesense or Elasticsearch dump),
a JSON array of objects or JSON Lines (one object a line), told from a CSV file by its content.

Each record is a row and each field a column: a string or number as it is, a list of them joined
with `|` (Algolia's `categories`), an object's fields as columns of their own named
`field.key` (`hierarchicalCategories.lvl1`: "Women > Dresses", a category path), and true or
false as `yes` / `no`. Fields an engine keeps for itself (`_highlightResult`, `_rankingInfo`,
`_geoloc`: a leading `_`) are left out; of an Elasticsearch hit (`_source`), its document with
its `_id`. A DataError's row is the record's place (the 3rd
object is row 3; in JSON Lines, its line).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import pandas as pd

from recsys.errors import DataError

from .text import ReadReport, Table, check_cell_sizes, check_text, read_bytes


def read_records(path: str | Path) -> Table:
    name = str(path)
    rows, lines = [], []
    for line, record in _records(name):
        if not isinstance(record, Mapping):
            raise DataError(name, f"expected an object (a product's fields), found {type(record).__name__}", line)
        row: dict[str, str] = {}
        _flatten(_document(record), "", row)
        rows.append(row)
        lines.append(line)
    if not rows:
        raise DataError(name, "no records: a JSON array of objects, or an object a line, one a product")
    columns = list(dict.fromkeys(column for row in rows for column in row))
    frame = pd.DataFrame([[row.get(c, "") for c in columns] for row in rows], columns=columns, dtype=str)
    table = Table(name, frame, lines, ReadReport(rows=len(rows)))
    check_cell_sizes(table)
    return table


def record_columns(path: str | Path) -> list[str]:
    """The columns of the first record (a header check needs no more)."""
    for _, record in _records(str(path)):
        row: dict[str, str] = {}
        if isinstance(record, Mapping):
            _flatten(_document(record), "", row)
        return list(row)
    return []


def _records(name: str) -> Iterator[tuple[int, object]]:
    """(row, record): an array's elements numbered from 1, or JSON Lines' objects by line."""
    check_text(name, None)  # a file in another encoding is refused with the fix (UTF-16 is told)
    text = read_bytes(name).decode("utf-8-sig")
    if text.lstrip().startswith("["):
        try:
            records = json.loads(text)
        except json.JSONDecodeError as e:
            raise DataError(name, f"not valid JSON: {e.msg}", e.lineno) from None
        yield from enumerate(records, start=1)
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(name, f"not a JSON object a line (JSON Lines): {e.msg}", number) from None


def _document(record: Mapping[str, object]) -> Mapping[str, object]:
    """An Elasticsearch hit's or dump line's `_source`, its `_id` as `id`; any other record as it is."""
    source = record.get("_source")
    if isinstance(source, Mapping):
        return {"id": record["_id"], **source} if "_id" in record and "id" not in source else source
    return record


def _flatten(record: Mapping[str, object], prefix: str, row: dict[str, str]) -> None:
    for key, value in record.items():
        if str(key).startswith("_"):
            continue
        column = f"{prefix}{key}"
        if isinstance(value, Mapping):
            _flatten(value, column + ".", row)
            continue
        values = value if isinstance(value, list) else [value]
        cells = [json_scalar(v) for v in values if not isinstance(v, Mapping | list)]
        cell = "|".join(dict.fromkeys(c for c in cells if c))
        if cell:
            row[column] = cell


def json_scalar(value: object) -> str:
    """A JSON scalar as a cell's text: a boolean as yes or no, null as empty."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value).strip()
