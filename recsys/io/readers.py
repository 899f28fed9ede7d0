"""Reading and validating the three CSV contracts (items, interactions, judgments).

Every problem raises `DataError` naming the file (the path as given), the row, the column, what was
expected and what was found. Row numbers are physical line numbers in the file, header = line 1:
a record whose quoted value spans several lines is numbered by the line where it starts, so the
numbers match what a text editor shows even after such a record.

Reading happens in two passes. The structural pass (`recsys.io.text`: bytes -> text -> records)
checks encoding, delimiter, header and field counts; the contract pass (`recsys.io.contract`)
checks required columns and cell values. So a file with both a bad line and a missing column
reports the bad line first. The schema file is `recsys.io.schema`.

`InteractionStream` reads interactions.csv a chunk of rows at a time with the same checks and
messages (training on logs larger than memory); see its docstring for what differs when a file is
longer than one chunk.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from recsys.errors import DataError, InputError
from recsys.gc_pause import paused_gc

from .contract import (
    aliases_note,
    blank_missing,
    check_item_ids,
    check_known,
    check_nonempty,
    check_unique,
    drop_duplicates,
    drop_repeated_items,
    drop_rows,
    empty_weights_warning,
    label_scale_note,
    labels,
    map_columns,
    note_ignored,
    note_mixed_currencies,
    numbers,
    plain_text,
    repeated_events_notice,
    resolve_aliases,
    skip_bad_items,
    skip_unknown,
    skipped_rows_notice,
    unknown_items_warning,
    weights,
)
from .feed import feed_columns, read_feed
from .headers import (
    INTERACTIONS,
    ITEMS,
    JUDGMENTS,
    HeaderMap,
    check_rename,
    is_typed_code,
    map_header,
)
from .ids import column_name_problem, storable_problem
from .listing import drop_unlisted
from .records import read_records, record_columns
from .schema import Schema
from .text import (
    BLOCK_BYTES,
    ON_BAD_LINES,
    SKIP_BAD_LINES,
    ReadReport,
    Table,
    bad_lines_warning,
    check_cell_sizes,
    collect,
    counted,
    csv_records,
    drop_unnamed,
    first_character,
    handle_bad_lines,
    header_notice,
    no_rows_message,
    read_csv,
    read_header,
    show_value,
    stream_lines,
)
from .variants import fold_variants
from .workbook import is_workbook, read_workbook, sheet_records, workbook_header

# interactions naming an item the items file does not have: skipped (counted, the first rows
# shown) by default, as real search logs name discontinued items; "error" stops at the first
UNKNOWN_ITEMS = ("skip", "error")
# rows `InteractionStream` validates at a time: their cells as Python strings take about 100 MB
STREAM_CHUNK_ROWS = 200_000


def read_table(
    path: str | Path, *, encoding: str | None = None, on_bad_lines: str = "error"
) -> tuple[pd.DataFrame, ReadReport]:
    """Any comma-separated file with a header (or a workbook's first sheet, `read_table_file`),
    structurally checked; all cells as stripped str."""
    table = read_table_file(path, encoding, on_bad_lines)
    return table.frame, table.report


def read_items(
    path: str | Path,
    *,
    encoding: str | None = None,
    on_bad_lines: str = "error",
    rename: dict[str, str] | None = None,
    schema: Schema | None = None,
) -> tuple[pd.DataFrame, ReadReport]:
    """items.csv: `item_id` (unique, non-empty), `title` (non-empty); other columns kept as str.
    An XML product feed (Google Merchant's RSS or Atom: `recsys.io.feed`) and JSON records (a
    search engine's index export: `recsys.io.records`) are read as such a file.

    The header is mapped to the contract (`recsys.io.headers.map_header`): `rename` (a schema's
    `[rename]` table, e.g. `{"id": "item_id", "productDisplayName": "title"}`) first, then common
    export names (`product_id`, `Product Title`). `schema` supplies its `rename` (unless `rename`
    is given) and its `missing` markers.
    """
    kind = _items_kind(path)
    table = (read_feed(path) if kind == "feed" else read_records(path) if kind == "records"
             else read_workbook(path, on_bad_lines) if kind == "workbook" else read_csv(path, encoding, on_bad_lines))
    if rename is None and schema is not None:
        rename = schema.rename
    header = map_columns(table, ITEMS, rename)
    keep_typed_id(table, header)
    note_mixed_currencies(table)  # before variants are folded to their least price
    fold_variants(table)
    drop_unlisted(table, schema.columns if schema is not None else None)
    _check_items(table, schema, skip=on_bad_lines == "skip")
    return table.frame, table.report


def keep_typed_id(table: Table, header: HeaderMap) -> None:
    """An item_id read from a column of codes a shopper may type (`headers.is_typed_code`:
    WooCommerce's `SKU`, an `ASIN`) stays an attribute under that column's name too: a shopper
    who typed "WC-PDO-000" found nothing (67 of 70 SKU searches on a WooCommerce export missed),
    since an id is no attribute."""
    source = header.source_of("item_id")
    if source is not None and is_typed_code(source) and source not in table.frame.columns:
        table.frame[source] = table.frame["item_id"]


def read_table_file(path: str | Path, encoding: str | None, on_bad_lines: str) -> Table:
    """A CSV file, or an Excel workbook's first worksheet that holds anything (told by content:
    `is_workbook`): a search log or a judgment list exported from a spreadsheet or an
    analytics tool reads as its CSV would."""
    if is_workbook(path):
        return read_workbook(path, on_bad_lines)
    return read_csv(path, encoding, on_bad_lines)


def _items_kind(path: str | Path) -> str:
    """How an items file is written, told by its first character (no CSV file starts with `<`,
    `[` or `{`, whatever its name): "feed" (XML, `recsys.io.feed`), "records" (JSON,
    `recsys.io.records`), "workbook" (an Excel .xlsx file, `recsys.io.workbook`) or "csv"."""
    first = first_character(path)
    if first == b"P" and is_workbook(path):
        return "workbook"
    return "feed" if first == b"<" else "records" if first in (b"[", b"{") else "csv"


def items_from_records(records: Sequence[Mapping[str, object]], *, source: str = "items",
                       schema: Schema | None = None) -> pd.DataFrame:
    """Items given as records (column -> cell), checked as `read_items` checks a file: a
    DataError's `row` is then the record's index in `records` (from 0). The columns are the
    catalogue's after the schema's `[rename]` (item_id, title, ...: no renaming here); its
    `[missing]` markers apply. A cell may be a string,
    a number, a list of strings (joined with '|', the file's separator of several values) or
    None (an empty cell); a record without a column has an empty cell there."""
    if not records:
        raise DataError(source, "no items: give at least one")
    # a column's name is read without the spaces around it, as a file's header cells are: " size "
    # is the catalogue's `size`, not a second column of that name that no file could hold
    named = [_stripped_names(source, i, r) for i, r in enumerate(records)]
    columns = list(dict.fromkeys(c for r in named for c in r))
    rows = [[_cell(source, i, c, r.get(c)) for c in columns] for i, r in enumerate(named)]
    frame = pd.DataFrame(rows, columns=columns, dtype=str)
    table = Table(source, frame, list(range(len(records))), ReadReport(rows=len(records)))
    check_cell_sizes(table)
    table.frame = drop_unnamed(table)
    _check_items(table, schema, missing_as_empty=True)
    _check_storable(table)  # after the ids' own checks, which say what an id may hold
    return table.frame


def _stripped_names(source: str, row: int, record: Mapping[str, object]) -> dict[str, object]:
    out: dict[str, object] = {}
    given: dict[str, str] = {}
    for column, value in record.items():
        name = str(column).strip()
        problem = column_name_problem(name)
        if problem:  # the revision's CSV could not be read back: every later change would fail
            raise DataError(source, problem, row, str(column))
        if name in given:
            raise DataError(source, f"the columns {given[name]!r} and {column!r} are one column (a name is "
                                    "read without the spaces around it): give it once", row, name)
        given[name], out[name] = column, value
    return out


def _cell(source: str, row: int, column: str, value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool):  # any size: JSON's are
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "|".join(v.strip() for v in value)
    raise DataError(source, f"expected a string, a number or a list of strings, found "
                            f"{show_value(repr(value))}", row, column)


def _check_storable(table: Table) -> None:
    """A DataError naming the first cell no file can keep (`storable_problem`: a NUL, a lone
    surrogate, which JSON can escape and the revision's CSV cannot write)."""
    for column in table.frame.columns:
        for row, cell in enumerate(table.frame[column].tolist()):
            problem = storable_problem(cell)
            if problem:
                raise DataError(table.name, problem, table.lines[row], column)


def _check_items(table: Table, schema: Schema | None, missing_as_empty: bool = False,
                 skip: bool = False) -> None:
    """The items contract on a table read from a file (its header mapped) or made from records.
    `missing_as_empty`: an absent item_id or title column is empty cells (named by row). `skip`:
    rows that break it are left out and said (`skip_bad_items`) rather than refused."""
    if schema is not None and schema.missing:
        blank_missing(table, schema.missing)
    plain_text(table)
    if missing_as_empty:
        for column in ("item_id", "title"):
            if column not in table.frame.columns:
                table.frame[column] = ""
    if "item_id" in table.frame.columns:
        drop_repeated_items(table)
    if skip:
        skip_bad_items(table)
        if table.frame.empty:
            raise DataError(table.name, "no row is left: every row has no item_id, a bad one or no title")
    check_nonempty(table, "item_id", "" if missing_as_empty else _missing_id_fix(table))  # records: no file
    check_item_ids(table)
    check_unique(table, "item_id")
    check_nonempty(table, "title")


def _missing_id_fix(table: Table) -> str:
    """What to do about items without an id ("; ..."): an export whose id column is optional
    (an Etsy listings download's `SKU`, empty where the seller set none) stopped with no way on."""
    source = HeaderMap(table.report.renamed, frozenset()).source_of("item_id") or "item_id"
    return (f"; every item needs an id of its own: fill the {source!r} column in, leave such rows out "
            f"with {SKIP_BAD_LINES}, or name another column of unique ids in a schema's [rename] "
            f"(rename = {{\"Listing ID\" = \"item_id\"}})")


def read_interactions(
    path: str | Path,
    item_ids: set[str],
    *,
    encoding: str | None = None,
    on_bad_lines: str = "error",
    rename: Mapping[str, str] | None = None,
    unknown_items: str = UNKNOWN_ITEMS[0],
    aliases: Mapping[str, str] | None = None,
) -> tuple[pd.DataFrame, ReadReport]:
    """interactions.csv -> columns query, item_id, label, weight (+ user_id, timestamp if present).

    The header is mapped as `read_items` maps it (`rename`, then common export names:
    `search_term` -> query, `clicks` -> label, ...). `label` (float >= 0) comes from the `label`
    column, or from `event` when `label` is absent (impression 0, click 1, cart 2, purchase 3).
    `weight` (float > 0) defaults to 1.0, also for empty cells (counted in the warnings). Rows
    whose item_id is not in `item_ids` are skipped and counted (`unknown_items="skip"`) or an
    error ("error"); an item_id among `aliases` (the items file's `ReadReport.aliases`) names
    its item. Exact duplicate rows are dropped and counted.
    """
    _check_unknown_items(unknown_items)
    table = read_table_file(path, encoding, on_bad_lines)
    header = map_columns(table, INTERACTIONS, rename)
    examples: list[tuple[int, str, str]] = []
    out, aliased, _ = _interaction_rows(table, item_ids, unknown_items, examples, aliases or {},
                                        on_bad_lines == "skip")
    if aliased:
        table.report.notices.append(aliases_note(aliased))
        table.report.warnings.append(table.report.notices[-1])
    if not len(out):
        raise DataError(table.name, no_rows_message([], table.report.unknown_items, examples))
    scale = label_scale_note(header, float(out["label"].min()))
    table.report.warnings += scale
    table.report.notices += scale
    note_ignored(table, _interaction_columns(table, out))
    return drop_duplicates(table, out, events=True), table.report


def _check_unknown_items(unknown_items: str) -> None:
    if unknown_items not in UNKNOWN_ITEMS:
        raise InputError(f"unknown_items must be 'skip' or 'error', got {unknown_items!r}")


def _interaction_rows(table: Table, item_ids: set[str], unknown_items: str,
                      examples: list[tuple[int, str, str]], aliases: Mapping[str, str],
                      skip_empty: bool = False) -> tuple[pd.DataFrame, int, list[int]]:
    """The interactions contract on a table (a whole file, or a chunk of one) whose header is
    mapped, how many rows named an item by an alias, and the lines of the rows left out for an
    empty query (`skip_empty`: `--on-bad-lines skip`; a log's clicks from browsing, with no
    search term, say nothing of one; else such a row is refused). Skipped unknown items are
    counted in the report, the first few kept in `examples` as (line, query, item_id)."""
    empty = drop_rows(table, (table.frame["query"] == "").to_numpy()) if skip_empty else []
    if empty:
        table.report.empty_queries += len(empty)
        table.report.notices.append(empty_queries_notice(empty))
        table.report.warnings.append(table.report.notices[-1])
    check_nonempty(table, "query", f"; {SKIP_BAD_LINES} leaves such rows out")
    aliased = resolve_aliases(table, aliases)
    if unknown_items == "skip":
        skip_unknown(table, item_ids, examples)
    check_known(table, item_ids)
    out = table.frame[["query", "item_id"]].copy()
    out["label"] = labels(table)
    out["weight"] = weights(table)
    for column in ("user_id", "timestamp"):
        if column in table.frame.columns:
            out[column] = table.frame[column]
    return out, aliased, empty


def empty_queries_notice(lines: list[int]) -> str:
    return skipped_rows_notice(sorted(lines), "with an empty query")


def _interaction_columns(table: Table, out: pd.DataFrame) -> set[str]:
    """The file's columns the rows were made of (`event` when it gave the labels)."""
    return {*out.columns, "event"} if "label" not in table.frame.columns else set(out.columns)


class InteractionStream:
    """interactions.csv, `chunk_rows` rows at a time: iterating yields each chunk's rows as
    `read_interactions` returns a whole file's (query, item_id, label, weight, user_id and
    timestamp when present), checked the same way; `report` is complete once iterated.

    Memory holds one chunk, plus a 64-bit hash of every distinct row (8 bytes a row): exact
    duplicates are dropped across the whole file, found within a chunk by comparing the rows
    and across chunks by their hashes (two different rows share a hash with a probability of
    about rows^2 / 2^65, 3e-6 at 10M rows). A file of one chunk gets exactly `read_interactions`'
    answers and messages. In a longer one the first problem is still the one named, with its
    row, but "N more rows have ..." counts the rows of its chunk only (bad lines excepted: those
    are counted to the end of the file), and a problem in the cells of an early chunk is found
    before a bad line further on.
    """

    def __init__(self, path: str | Path, item_ids: set[str], *, encoding: str | None = None,
                 on_bad_lines: str = "error", chunk_rows: int = STREAM_CHUNK_ROWS,
                 block_bytes: int = BLOCK_BYTES, rename: Mapping[str, str] | None = None,
                 unknown_items: str = UNKNOWN_ITEMS[0], aliases: Mapping[str, str] | None = None):
        _check_unknown_items(unknown_items)
        self.rename, self.unknown_items, self.aliases = rename, unknown_items, aliases or {}
        if on_bad_lines not in ON_BAD_LINES:
            raise InputError(f"on_bad_lines must be 'error' or 'skip', got {on_bad_lines!r}")
        if chunk_rows < 1:
            raise InputError(f"chunk_rows must be at least 1, got {chunk_rows}")
        self.path, self.item_ids, self.encoding = path, item_ids, encoding
        self.on_bad_lines, self.chunk_rows, self.block_bytes = on_bad_lines, chunk_rows, max(1, block_bytes)
        self.report = ReadReport(rows=0, encoding=encoding or "utf-8")

    def __iter__(self) -> Iterator[pd.DataFrame]:
        name = str(self.path)
        records = (sheet_records(name) if is_workbook(name)
                   else csv_records(name, stream_lines(name, self.encoding, self.block_bytes)))
        header_line, header = read_header(name, records)
        bad_lines: list[tuple[int, int]] = []
        unknown: list[int] = []
        examples: list[tuple[int, str, str]] = []
        mapped: HeaderMap | None = None
        lowest = np.inf
        header_notes: list[str] = []
        empty_weights = duplicates = aliased = 0
        empty_queries: list[int] = []
        first_duplicate: int | None = None
        seen = np.zeros(0, dtype=np.uint64)  # sorted hashes of the rows kept so far
        kept = 0
        while True:
            with paused_gc():
                rows, lines, bad = collect(name, itertools.islice(records, self.chunk_rows), header)
            if not rows and not bad:
                break
            if bad and self.on_bad_lines == "error":
                bad += [(line, len(cells)) for line, cells in records if len(cells) != len(header)]
                handle_bad_lines(name, bad, len(header), "error", self.report)
            bad_lines += bad
            if not rows:
                continue
            table = Table(name, pd.DataFrame(rows, columns=header, dtype=str), lines,
                           ReadReport(rows=len(rows)), header_line)
            del rows
            check_cell_sizes(table)
            table.frame = drop_unnamed(table)
            if mapped is None:  # the header's mapping: checked on the first chunk, as for a file
                mapped = map_columns(table, INTERACTIONS, self.rename)
                self.report.renamed = dict(table.report.renamed)
            else:
                table.frame = table.frame.rename(columns=mapped.renamed)
            if "weight" in table.frame.columns:
                empty_weights += int((table.frame["weight"] == "").sum())
            out, named, empty = _interaction_rows(table, self.item_ids, self.unknown_items, examples,
                                                  self.aliases, self.on_bad_lines == "skip")
            aliased += named
            empty_queries += empty
            unknown += sorted(set(table.report.skipped_lines) - set(empty))
            if len(out):
                lowest = min(lowest, float(out["label"].min()))
            if not header_notes:  # the same for every chunk: said once
                note_ignored(table, _interaction_columns(table, out))
                header_notes = [w for w in table.report.warnings
                                if w.startswith(("dropped", "renamed", "ignored columns"))]
            hashes = pd.util.hash_pandas_object(out, index=False).to_numpy()
            repeated = _repeated_rows(out, hashes)
            at = np.minimum(np.searchsorted(seen, hashes), max(len(seen) - 1, 0))
            if len(seen):
                repeated |= seen[at] == hashes
            if repeated.any():
                if first_duplicate is None:
                    first_duplicate = table.lines[int(repeated.argmax())]
                duplicates += int(repeated.sum())
                out, hashes = out[~repeated].reset_index(drop=True), hashes[~repeated]
            # two sorted runs: the stable sort (timsort) merges them in one pass, in place
            seen = np.concatenate([seen, hashes])
            seen.sort(kind="stable")
            kept += len(out)
            if len(out):
                yield out
        if not kept:
            raise DataError(name, no_rows_message(bad_lines, len(unknown), examples))
        self.report.rows, self.report.dropped_duplicates = kept, duplicates
        self.report.skipped_lines = sorted([line for line, _ in bad_lines] + unknown + empty_queries)
        self.report.unknown_items, self.report.empty_queries = len(unknown), len(empty_queries)
        # in read_interactions' order: lines above the header, bad lines, unnamed columns, renamed
        # columns, unknown items, weights, the label's scale, ignored columns, duplicates
        above = [notice] if (notice := header_notice(header_line)) else []
        warnings = above + ([bad_lines_warning(bad_lines, len(header))] if bad_lines else [])
        warnings += [w for w in header_notes if w.startswith(("dropped", "renamed"))]
        notices = above + ([empty_queries_notice(empty_queries)] if empty_queries else [])
        notices += [aliases_note(aliased)] if aliased else []
        notices += [unknown_items_warning(unknown, examples)] if unknown else []
        notices += [empty_weights_warning(empty_weights)] if empty_weights else []
        notices += label_scale_note(mapped, lowest) if mapped is not None else []
        notices += [w for w in header_notes if w.startswith("ignored columns")]
        notices += [repeated_events_notice(duplicates, first_duplicate)] if first_duplicate else []
        warnings += notices[len(above):]
        self.report.warnings, self.report.notices = warnings, notices


def _repeated_rows(frame: pd.DataFrame, hashes: np.ndarray) -> np.ndarray:
    """`frame.duplicated()`, compared in full only among the rows whose hashes repeat."""
    repeated = np.zeros(len(frame), dtype=bool)
    candidates = np.flatnonzero(pd.Series(hashes).duplicated(keep=False).to_numpy())
    if len(candidates):
        repeated[candidates] = frame.iloc[candidates].duplicated().to_numpy()
    return repeated


def read_judgments(
    path: str | Path,
    item_ids: set[str],
    *,
    encoding: str | None = None,
    on_bad_lines: str = "error",
    rename: Mapping[str, str] | None = None,
    aliases: Mapping[str, str] | None = None,
) -> tuple[pd.DataFrame, ReadReport]:
    """judgments.csv -> columns query, item_id, grade (float >= 0), the header mapped as
    `read_items` maps it (`rename`, then common names: `relevance` -> grade). Exact duplicates
    are dropped. An item_id among `aliases` names its item, as in `read_interactions`."""
    table = read_table_file(path, encoding, on_bad_lines)
    map_columns(table, JUDGMENTS, rename)
    check_nonempty(table, "query")
    aliased = resolve_aliases(table, aliases or {})
    if aliased:
        table.report.notices.append(aliases_note(aliased))
    if on_bad_lines == "skip":
        skip_unknown(table, item_ids, [], instead="")
    check_known(table, item_ids)
    out = table.frame[["query", "item_id"]].copy()
    out["grade"] = numbers(table, "grade", positive=False)
    note_ignored(table, set(out.columns))
    out = drop_duplicates(table, out)
    conflicts = int(out.duplicated(["query", "item_id"]).sum())
    if conflicts:
        table.report.warnings.append(
            f"{counted(conflicts, 'query-item pair')} {'is' if conflicts == 1 else 'are'} "
            "graded more than once, with different grades"
        )
    return out, table.report


def check_header(path: str | Path, contract: str, rename: Mapping[str, str] | None = None, *,
                 encoding: str | None = None) -> HeaderMap:
    """The header of a file of `contract` ("items", "interactions", "judgments", "probes"),
    mapped as its reader maps it, without reading the rows: a file with columns that cannot be
    used is told so at once (the service's upload, before it starts a training job)."""
    name = str(path)
    kind = _items_kind(path) if contract == ITEMS else "workbook" if is_workbook(path) else "csv"
    if kind == "feed":
        line, header = 1, feed_columns(path)
    elif kind == "records":
        line, header = 1, record_columns(path)
    elif kind == "workbook":
        line, header = workbook_header(path)
    else:
        line, header = read_header(name, csv_records(name, stream_lines(name, encoding, BLOCK_BYTES)))
    return map_header(name, line, [c for c in header if c], contract,
                      check_rename(dict(rename), "rename") if rename else None)
