"""Reading and validating the three CSV contracts (items, interactions, judgments) and the schema.

Every problem raises `DataError` naming the file (the path as given), the row, the column, what was
expected and what was found. Row numbers are physical line numbers in the file, header = line 1:
a record whose quoted value spans several lines is numbered by the line where it starts, so the
numbers match what a text editor shows even after such a record.

Reading happens in two passes. The structural pass (bytes -> text -> records) checks encoding,
delimiter, header and field counts; the contract pass checks required columns and cell values.
So a file with both a bad line and a missing column reports the bad line first.

`InteractionStream` reads interactions.csv a chunk of rows at a time with the same checks and
messages (training on logs larger than memory); see its docstring for what differs when a file is
longer than one chunk.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import itertools
import tomllib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, BinaryIO

import numpy as np
import pandas as pd
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from recsys.errors import DataError, InputError
from recsys.facets import FACETS, facet_name_problem, with_added
from recsys.gc_pause import paused_gc
from recsys.headers import (
    INTERACTIONS,
    ITEMS,
    JUDGMENTS,
    HeaderMap,
    check_rename,
    map_header,
    rename_problems,
)
from recsys.ids import item_id_problem
from recsys.lexicon import LexiconConfig

MAX_CELL_CHARS = 100_000
EVENT_LABELS: dict[str, float] = {"impression": 0.0, "click": 1.0, "cart": 2.0, "purchase": 3.0}
ON_BAD_LINES = ("error", "skip")
# interactions naming an item the items file does not have: skipped (counted, the first rows
# shown) by default, as real search logs name discontinued items; "error" stops at the first
UNKNOWN_ITEMS = ("skip", "error")
# rows `InteractionStream` validates at a time: their cells as Python strings take about 100 MB
STREAM_CHUNK_ROWS = 200_000
_BLOCK_BYTES = 1 << 22  # bytes read at a time when streaming (and hashing) a file

_SHOW_CHARS = 40
_EXAMPLES = 3  # rows shown of those skipped for an unknown item
_ERROR_INSTEAD = "; --unknown-items error stops at them instead"
_SHARE_SAMPLE = 4096  # rows after which only the columns whose cells repeat keep sharing them
_EMPTY_FILE = "the file is empty (0 bytes); expected a header row and data rows"
_SEPARATORS = {";": "';'-separated", "\t": "tab-separated"}
_SIGNATURES = (
    (
        b"PK\x03\x04",
        "looks like a zip archive, not CSV text (an .xlsx workbook is one); export it as CSV",
    ),
    (b"\x1f\x8b", "looks like a gzip-compressed file, not CSV text; decompress it first"),
)
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


@dataclass(frozen=True)
class Schema:
    """An optional TOML file that adapts a catalogue to the items contract.

    - `[columns]`: column (or attribute-key) name -> facet or "ignore", e.g. `baseColour = "color"`,
      `year = "ignore"` (names are matched case-insensitively).
    - `[rename]`: a column of a file -> a contract column of that file (item_id, title,
      description, attributes; query, label, event, weight, user_id, timestamp; grade; word,
      facet, value), e.g. `id = "item_id"`, `search_term = "query"`; applied to every file that
      has the column, before the automatic mapping of common export names (`recsys.headers`).
    - `[missing]`: `values = ["NA"]`: cells (other than item_id and title) holding exactly one of
      these are empty, so they feed no facet; applied by `read_items`.
    - `[lexicon]`: `enabled = false` turns reading facet values out of titles off, `builtin = false`
      keeps only the schema's own entries; subtables add words, `[lexicon.color] teal = ["peacock",
      "petrol"]` (kind -> canonical value -> synonyms; kinds color, style, quality feed their facet,
      any other kind, like `material`, feeds `other` as `material:<value>`, or its own facet when
      `[facets] add` names it).
    - `[facets]`: `add = ["material"]`: facets (heads) beyond the default four, after them in
      order; `[columns]` then maps columns to them (`material = "material"`).

    `load` checks the file against the pydantic models of the file (`SchemaFile`, below).
    """

    columns: dict[str, str] = field(default_factory=dict)
    rename: dict[str, str] = field(default_factory=dict)
    lexicon: LexiconConfig = field(default_factory=LexiconConfig)
    missing: tuple[str, ...] = ()
    added_facets: tuple[str, ...] = ()

    @property
    def facets(self) -> tuple[str, ...]:
        """The facets a catalogue read with this schema has: the default ones, then the added."""
        return with_added(self.added_facets)

    @classmethod
    def load(cls, path: str | Path) -> Schema:
        name = str(path)
        return _read_schema(name, _read_bytes(name))

    def to_json(self) -> dict[str, Any]:
        """Everything the file said, for a model's manifest."""
        return {"columns": dict(self.columns), "rename": dict(self.rename),
                "missing": list(self.missing), "lexicon": self.lexicon.to_json(),
                "facets": {"add": list(self.added_facets)}}

    @classmethod
    def from_json(cls, obj: dict[str, Any] | None) -> Schema:
        """What `to_json` wrote (a model version keeps it in its manifest)."""
        obj = obj or {}
        return cls(dict(obj.get("columns", {})), dict(obj.get("rename", {})),
                   LexiconConfig.from_json(obj.get("lexicon")), tuple(obj.get("missing", ())),
                   tuple(obj.get("facets", {}).get("add", ())))


@dataclass
class ReadReport:
    """What a reader did besides returning rows: nothing is dropped without being counted here."""

    rows: int
    skipped_lines: list[int] = field(default_factory=list)
    encoding: str = "utf-8"
    dropped_duplicates: int = 0
    warnings: list[str] = field(default_factory=list)
    # the file's columns read under a contract name ("product_id" -> "item_id"), header order
    renamed: dict[str, str] = field(default_factory=dict)
    unknown_items: int = 0  # interaction rows skipped because their item is not in the items file
    # the warnings to tell at once (the command line prints them): skipped unknown items, a label
    # scale that never says "not chosen"
    notices: list[str] = field(default_factory=list)


@dataclass
class _Table:
    name: str
    frame: pd.DataFrame  # all cells str, stripped
    lines: list[int]  # physical line where each row's record starts
    report: ReadReport
    header_line: int = 1  # later than 1 only after leading blank lines


def read_table(
    path: str | Path, *, encoding: str | None = None, on_bad_lines: str = "error"
) -> tuple[pd.DataFrame, ReadReport]:
    """Any comma-separated file with a header, structurally checked; all cells as stripped str."""
    table = _read(path, encoding, on_bad_lines)
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

    The header is mapped to the contract (`recsys.headers.map_header`): `rename` (a schema's
    `[rename]` table, e.g. `{"id": "item_id", "productDisplayName": "title"}`) first, then common
    export names (`product_id`, `Product Title`). `schema` supplies its `rename` (unless `rename`
    is given) and its `missing` markers.
    """
    table = _read(path, encoding, on_bad_lines)
    if rename is None and schema is not None:
        rename = schema.rename
    _map_columns(table, ITEMS, rename)
    _check_items(table, schema)
    return table.frame, table.report


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
    columns = list(dict.fromkeys(c for r in records for c in r))
    rows = [[_cell(source, i, c, r.get(c)) for c in columns] for i, r in enumerate(records)]
    frame = pd.DataFrame(rows, columns=columns, dtype=str)
    table = _Table(source, frame, list(range(len(records))), ReadReport(rows=len(records)))
    _check_cell_sizes(table)
    table.frame = _drop_unnamed(table)
    _check_items(table, schema, missing_as_empty=True)
    return table.frame


def _cell(source: str, row: int, column: str, value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int | float) and not isinstance(value, bool) and np.isfinite(value):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "|".join(v.strip() for v in value)
    raise DataError(source, f"expected a string, a number or a list of strings, found "
                            f"{_show(repr(value))}", row, column)


def _check_items(table: _Table, schema: Schema | None, missing_as_empty: bool = False) -> None:
    """The items contract on a table read from a file (its header mapped) or made from records.
    `missing_as_empty`: an absent item_id or title column is empty cells (named by row)."""
    if schema is not None and schema.missing:
        _blank_missing(table, schema.missing)
    if missing_as_empty:
        for column in ("item_id", "title"):
            if column not in table.frame.columns:
                table.frame[column] = ""
    _check_nonempty(table, "item_id")
    _check_item_ids(table)
    _check_unique(table, "item_id")
    _check_nonempty(table, "title")


def read_interactions(
    path: str | Path,
    item_ids: set[str],
    *,
    encoding: str | None = None,
    on_bad_lines: str = "error",
    rename: Mapping[str, str] | None = None,
    unknown_items: str = UNKNOWN_ITEMS[0],
) -> tuple[pd.DataFrame, ReadReport]:
    """interactions.csv -> columns query, item_id, label, weight (+ user_id, timestamp if present).

    The header is mapped as `read_items` maps it (`rename`, then common export names:
    `search_term` -> query, `clicks` -> label, ...). `label` (float >= 0) comes from the `label`
    column, or from `event` when `label` is absent (impression 0, click 1, cart 2, purchase 3).
    `weight` (float > 0) defaults to 1.0, also for empty cells (counted in the warnings). Rows
    whose item_id is not in `item_ids` are skipped and counted (`unknown_items="skip"`) or an
    error ("error"). Exact duplicate rows are dropped and counted.
    """
    _check_unknown_items(unknown_items)
    table = _read(path, encoding, on_bad_lines)
    header = _map_columns(table, INTERACTIONS, rename)
    examples: list[tuple[int, str, str]] = []
    out = _interaction_rows(table, item_ids, unknown_items, examples)
    if not len(out):
        raise DataError(table.name, _no_rows_message([], table.report.unknown_items, examples))
    scale = _label_scale_note(header, float(out["label"].min()))
    table.report.warnings += scale
    table.report.notices += scale
    _note_ignored(table, _interaction_columns(table, out))
    return _drop_duplicates(table, out), table.report


def _check_unknown_items(unknown_items: str) -> None:
    if unknown_items not in UNKNOWN_ITEMS:
        raise InputError(f"unknown_items must be 'skip' or 'error', got {unknown_items!r}")


def _interaction_rows(table: _Table, item_ids: set[str], unknown_items: str,
                      examples: list[tuple[int, str, str]]) -> pd.DataFrame:
    """The interactions contract on a table (a whole file, or a chunk of one) whose header is
    mapped. Skipped unknown items are counted in the report, the first few kept in `examples`
    as (line, query, item_id)."""
    _check_nonempty(table, "query")
    if unknown_items == "skip":
        _skip_unknown(table, item_ids, examples)
    _check_known(table, item_ids)
    out = table.frame[["query", "item_id"]].copy()
    out["label"] = _labels(table)
    out["weight"] = _weights(table)
    for column in ("user_id", "timestamp"):
        if column in table.frame.columns:
            out[column] = table.frame[column]
    return out


def _interaction_columns(table: _Table, out: pd.DataFrame) -> set[str]:
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
                 block_bytes: int = _BLOCK_BYTES, rename: Mapping[str, str] | None = None,
                 unknown_items: str = UNKNOWN_ITEMS[0]):
        _check_unknown_items(unknown_items)
        self.rename, self.unknown_items = rename, unknown_items
        if on_bad_lines not in ON_BAD_LINES:
            raise InputError(f"on_bad_lines must be 'error' or 'skip', got {on_bad_lines!r}")
        if chunk_rows < 1:
            raise InputError(f"chunk_rows must be at least 1, got {chunk_rows}")
        self.path, self.item_ids, self.encoding = path, item_ids, encoding
        self.on_bad_lines, self.chunk_rows, self.block_bytes = on_bad_lines, chunk_rows, max(1, block_bytes)
        self.report = ReadReport(rows=0, encoding=encoding or "utf-8")

    def __iter__(self) -> Iterator[pd.DataFrame]:
        name = str(self.path)
        records = _records(name, _stream_lines(name, self.encoding, self.block_bytes))
        header_line, header = _header(name, records)
        bad_lines: list[tuple[int, int]] = []
        unknown: list[int] = []
        examples: list[tuple[int, str, str]] = []
        mapped: HeaderMap | None = None
        lowest = np.inf
        header_notes: list[str] = []
        empty_weights = duplicates = 0
        first_duplicate: int | None = None
        seen = np.zeros(0, dtype=np.uint64)  # sorted hashes of the rows kept so far
        kept = 0
        while True:
            with paused_gc():
                rows, lines, bad = _collect(name, itertools.islice(records, self.chunk_rows), header)
            if not rows and not bad:
                break
            if bad and self.on_bad_lines == "error":
                bad += [(line, len(cells)) for line, cells in records if len(cells) != len(header)]
                _handle_bad_lines(name, bad, len(header), "error", self.report)
            bad_lines += bad
            if not rows:
                continue
            table = _Table(name, pd.DataFrame(rows, columns=header, dtype=str), lines,
                           ReadReport(rows=len(rows)), header_line)
            del rows
            _check_cell_sizes(table)
            table.frame = _drop_unnamed(table)
            if mapped is None:  # the header's mapping: checked on the first chunk, as for a file
                mapped = _map_columns(table, INTERACTIONS, self.rename)
                self.report.renamed = dict(table.report.renamed)
            else:
                table.frame = table.frame.rename(columns=mapped.renamed)
            if "weight" in table.frame.columns:
                empty_weights += int((table.frame["weight"] == "").sum())
            out = _interaction_rows(table, self.item_ids, self.unknown_items, examples)
            unknown += table.report.skipped_lines
            if len(out):
                lowest = min(lowest, float(out["label"].min()))
            if not header_notes:  # the same for every chunk: said once
                _note_ignored(table, _interaction_columns(table, out))
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
            raise DataError(name, _no_rows_message(bad_lines, len(unknown), examples))
        self.report.rows, self.report.dropped_duplicates = kept, duplicates
        self.report.skipped_lines = sorted([line for line, _ in bad_lines] + unknown)
        self.report.unknown_items = len(unknown)
        # in read_interactions' order: bad lines, unnamed columns, renamed columns, unknown
        # items, weights, the label's scale, ignored columns, duplicates
        warnings = [_bad_lines_warning(bad_lines, len(header))] if bad_lines else []
        warnings += [w for w in header_notes if w.startswith(("dropped", "renamed"))]
        notices = [_unknown_items_warning(unknown, examples)] if unknown else []
        scale = _label_scale_note(mapped, lowest) if mapped is not None else []
        warnings += notices[:1]
        warnings += [_empty_weights_warning(empty_weights)] if empty_weights else []
        warnings += scale
        warnings += [w for w in header_notes if w.startswith("ignored columns")]
        warnings += [_duplicates_warning(duplicates, first_duplicate)] if first_duplicate else []
        self.report.warnings, self.report.notices = warnings, notices + scale


def _repeated_rows(frame: pd.DataFrame, hashes: np.ndarray) -> np.ndarray:
    """`frame.duplicated()`, compared in full only among the rows whose hashes repeat."""
    repeated = np.zeros(len(frame), dtype=bool)
    candidates = np.flatnonzero(pd.Series(hashes).duplicated(keep=False).to_numpy())
    if len(candidates):
        repeated[candidates] = frame.iloc[candidates].duplicated().to_numpy()
    return repeated


def _stream_lines(name: str, encoding: str | None, block_bytes: int) -> Iterator[str]:
    """The file's lines as `io.StringIO(text, newline="")` yields them (\\n, \\r\\n or \\r
    ends one), decoded a block at a time (`_decoded_blocks`)."""
    pending = ""
    for text, last in _decoded_blocks(name, encoding, block_bytes):
        lines = list(io.StringIO(pending + text, newline=""))
        # the last line may go on in the next block (a "\r" may be the start of "\r\n")
        pending = lines.pop() if not last and lines and not lines[-1].endswith("\n") else ""
        yield from lines


def _decoded_blocks(name: str, encoding: str | None, block_bytes: int) -> Iterator[tuple[str, bool]]:
    """(text, whether it is the file's end) a block at a time; a file that is empty, binary or
    not in `encoding` is a `DataError` naming the byte and its line."""
    decoder = _decoder(name, encoding)
    with _open(name) as file:
        for block, offset, newlines in _blocks(file, block_bytes):
            if not block and offset == 0:
                raise DataError(name, _EMPTY_FILE)
            _check_binary(name, block, encoding, offset, newlines)
            yield _decode(name, decoder, block, encoding, offset, newlines), not block


def _check_text(name: str, encoding: str | None, block_bytes: int = _BLOCK_BYTES) -> None:
    """The structural pass's first checks over the whole file before any record is parsed (a
    binary file anywhere, then a byte that does not decode anywhere), in one pass a block at a
    time: held whole, a file's bytes, its text and an `io.StringIO` of it (4 bytes a character)
    took about 6 bytes a character of it, more than its cells."""
    decoder: codecs.IncrementalDecoder | None = None
    problem: DataError | None = None
    try:
        decoder = _decoder(name, encoding)
    except DataError as error:  # held: a zip, gzip or empty file is told so, whatever encoding is named
        problem = error
    with _open(name) as file:
        for block, offset, newlines in _blocks(file, block_bytes):
            _check_binary(name, block, encoding, offset, newlines)
            if decoder is not None:
                try:
                    _decode(name, decoder, block, encoding, offset, newlines)
                except DataError as error:
                    # held: binary content anywhere, even past it, is what the file is told by;
                    # after a bad byte the decoder's state means nothing, so the first is named
                    decoder, problem = None, error
    if offset == 0:
        raise DataError(name, _EMPTY_FILE)
    if problem is not None:
        raise problem


def _decoder(name: str, encoding: str | None) -> codecs.IncrementalDecoder:
    try:
        return codecs.getincrementaldecoder(encoding or "utf-8-sig")(errors="strict")
    except LookupError:
        raise DataError(name, f"unknown encoding {encoding!r}; try utf-8 or latin-1") from None


def _blocks(file: BinaryIO, block_bytes: int) -> Iterator[tuple[bytes, int, int]]:
    """(block, bytes before it, line breaks before it) to the file's end, which is one last
    empty block (the decoder's final call: a character cut off by the end is an error)."""
    offset = newlines = 0
    while True:
        block = file.read(block_bytes)
        yield block, offset, newlines
        if not block:
            return
        offset, newlines = offset + len(block), newlines + block.count(b"\n")


def _decode(name: str, decoder: codecs.IncrementalDecoder, block: bytes, encoding: str | None,
            offset: int, newlines: int) -> str:
    """`block`, at byte `offset` of the file after `newlines` line breaks, decoded; a byte that
    does not decode is a `DataError` naming it and its line."""
    held = len(decoder.getstate()[0])  # bytes of a character split by the last block
    try:
        return decoder.decode(block, final=not block)
    except UnicodeDecodeError as error:  # error.object: the held bytes, then the block
        raise _decode_error(name, error.object, encoding, error.start, offset - held,
                            newlines) from None


def read_judgments(
    path: str | Path,
    item_ids: set[str],
    *,
    encoding: str | None = None,
    on_bad_lines: str = "error",
    rename: Mapping[str, str] | None = None,
) -> tuple[pd.DataFrame, ReadReport]:
    """judgments.csv -> columns query, item_id, grade (float >= 0), the header mapped as
    `read_items` maps it (`rename`, then common names: `relevance` -> grade). Exact duplicates
    are dropped."""
    table = _read(path, encoding, on_bad_lines)
    _map_columns(table, JUDGMENTS, rename)
    _check_nonempty(table, "query")
    if on_bad_lines == "skip":
        _skip_unknown(table, item_ids, [], instead="")
    _check_known(table, item_ids)
    out = table.frame[["query", "item_id"]].copy()
    out["grade"] = _numbers(table, "grade", positive=False)
    _note_ignored(table, set(out.columns))
    out = _drop_duplicates(table, out)
    conflicts = int(out.duplicated(["query", "item_id"]).sum())
    if conflicts:
        table.report.warnings.append(
            f"{_count(conflicts, 'query-item pair')} {'is' if conflicts == 1 else 'are'} "
            "graded more than once, with different grades"
        )
    return out, table.report


def check_header(path: str | Path, contract: str, rename: Mapping[str, str] | None = None, *,
                 encoding: str | None = None) -> HeaderMap:
    """The header of a file of `contract` ("items", "interactions", "judgments", "probes"),
    mapped as its reader maps it, without reading the rows: a file with columns that cannot be
    used is told so at once (the service's upload, before it starts a training job)."""
    name = str(path)
    line, header = _header(name, _records(name, _stream_lines(name, encoding, _BLOCK_BYTES)))
    return map_header(name, line, [c for c in header if c], contract,
                      check_rename(dict(rename), "rename") if rename else None)


def fingerprint(path: str | Path) -> str:
    """"sha256:<hex>" of the file's bytes (read a block at a time: a log may not fit in memory)."""
    digest = hashlib.sha256()
    with _open(str(path)) as file:
        while block := file.read(_BLOCK_BYTES):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


# --- structural pass: bytes -> text -> header and records ---------------------------------------


def _read(path: str | Path, encoding: str | None, on_bad_lines: str) -> _Table:
    if on_bad_lines not in ON_BAD_LINES:
        raise InputError(f"on_bad_lines must be 'error' or 'skip', got {on_bad_lines!r}")
    name = str(path)
    _check_text(name, encoding)
    records = _records(name, _stream_lines(name, encoding, _BLOCK_BYTES))
    header_line, header = _header(name, records)
    with paused_gc():
        rows, lines, bad = _collect(name, records, header)
    report = ReadReport(rows=len(rows), encoding=encoding or "utf-8")
    _handle_bad_lines(name, bad, len(header), on_bad_lines, report)
    if not rows:
        raise DataError(name, _no_rows_message(bad))
    frame = pd.DataFrame(rows, columns=header, dtype=str)
    table = _Table(name, frame, lines, report, header_line)
    _check_cell_sizes(table)
    table.frame = _drop_unnamed(table)
    return table


def _read_bytes(name: str) -> bytes:
    with _open(name) as file:
        return file.read()


def _open(name: str) -> BinaryIO:
    try:
        return open(name, "rb")  # the callers close it (with)
    except FileNotFoundError:
        raise DataError(name, "file not found") from None
    except IsADirectoryError:
        raise DataError(name, "is a directory; expected a file") from None
    except OSError as error:
        raise DataError(name, f"cannot read the file: {error.strerror}") from None


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """`frame` as UTF-8 CSV that the readers here read back as it was written. A carriage
    return inside a cell is written as a line break: the csv writer quotes a cell for the line
    ending it uses ("\n") but not for a lone "\r", which then ended the record on reading (a
    title with one, accepted by PUT /admin/items, made the catalogue unreadable and refused every
    later change)."""
    text = [c for c in frame.columns if frame[c].dtype == object or pd.api.types.is_string_dtype(frame[c])]
    if text:
        frame = frame.copy()
        for c in text:
            frame[c] = frame[c].map(lambda v: v.replace("\r\n", "\n").replace("\r", "\n") if isinstance(v, str) else v)
    return frame.to_csv(index=False, lineterminator="\n").encode("utf-8")


def _check_binary(name: str, data: bytes, encoding: str | None, offset: int = 0,
                  newlines: int = 0) -> None:
    """`data` starts at byte `offset` of the file, after `newlines` line breaks."""
    for signature, message in _SIGNATURES:
        if offset == 0 and data.startswith(signature):
            raise DataError(name, message)
    if encoding is not None:
        return
    if offset == 0 and data.startswith(_UTF16_BOMS):
        raise DataError(name, "looks like UTF-16 text; save it as UTF-8 or pass --encoding utf-16")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise DataError(
            name,
            f"contains a NUL byte at byte offset {offset + nul}; "
            "this looks like a binary file, not CSV text",
            row=newlines + data.count(b"\n", 0, nul) + 1,
        )


def _decode_error(name: str, data: bytes, encoding: str | None, offset: int, base: int = 0,
                  newlines: int = 0) -> DataError:
    """`data[offset]` is not valid; `data` starts at byte `base` of the file, after `newlines`
    line breaks."""
    codec = "UTF-8" if encoding is None else encoding
    hint = "e.g. --encoding latin-1" if encoding is None else "with --encoding"
    return DataError(
        name,
        f"byte 0x{data[offset]:02x} at byte offset {base + offset} is not valid {codec}; "
        f"if the file uses another encoding, name it, {hint}",
        row=newlines + data.count(b"\n", 0, offset) + 1,
    )


def _records(name: str, lines: Iterable[str]) -> Iterator[tuple[int, list[str]]]:
    """(line where the record starts, stripped fields) for each record that is not blank."""
    reader = csv.reader(lines, strict=True)
    start = 1
    try:
        for fields in reader:
            cells = list(map(str.strip, fields))
            if any(cells):
                yield start, cells
            start = reader.line_num + 1
    except csv.Error as error:
        raise DataError(name, _csv_error_message(str(error)), row=start) from None


def _csv_error_message(text: str) -> str:
    if "field limit" in text:
        return f"a cell is longer than the limit of {MAX_CELL_CHARS:,} characters"
    if "end of data" in text:
        return "a quoted value that starts in this record is never closed (missing '\"')"
    if "expected after" in text:
        return (
            "a closing quote must be followed by a comma or the end of the line; "
            'to put a quote inside a quoted value, double it ("")'
        )
    return f"cannot parse this record as CSV: {text}"


def _header(name: str, records: Iterator[tuple[int, list[str]]]) -> tuple[int, list[str]]:
    first = next(records, None)
    if first is None:
        raise DataError(name, "the file holds only blank lines; expected a header row")
    line, cells = first
    columns = [cell.lstrip("\ufeff").strip() for cell in cells]
    _check_separator(name, line, columns)
    _check_duplicate_columns(name, line, columns)
    return line, columns


def _check_separator(name: str, line: int, columns: list[str]) -> None:
    if len(columns) != 1:
        return
    for separator, what in _SEPARATORS.items():
        if separator in columns[0]:
            raise DataError(
                name, f"looks like {what}; the files must be comma-separated", row=line
            )


def _check_duplicate_columns(name: str, line: int, columns: list[str]) -> None:
    seen: dict[str, int] = {}
    for position, column in enumerate(columns, start=1):
        if column and column in seen:
            raise DataError(
                name,
                f"the header names this column twice (fields {seen[column]} and {position}); "
                "column names must be unique",
                row=line,
                column=column,
            )
        seen[column] = position


def _collect(
    name: str, records: Iterator[tuple[int, list[str]]], header: list[str]
) -> tuple[list[list[str]], list[int], list[tuple[int, int]]]:
    """Data rows with their lines, and (line, field count) of records of the wrong width.

    In a column whose cells repeat (colours, brands, prices, queries) equal cells are one string:
    a string per cell (about 60 bytes) was most of what a catalogue's table took."""
    rows, lines, bad = [], [], []
    first: list[dict[str, str]] = [{} for _ in header]  # per column: cell -> its first string
    shared = list(enumerate(first))
    for line, cells in records:
        if len(cells) != len(header):
            bad.append((line, len(cells)))
            continue
        for j, seen in shared:
            cell = cells[j]
            cells[j] = seen.setdefault(cell, cell)
        rows.append(cells)
        lines.append(line)
        if len(rows) == _SHARE_SAMPLE:  # ids, titles: a dict as large as the column, for nothing
            shared = [(j, seen) for j, seen in shared if len(seen) <= _SHARE_SAMPLE // 2]
    return rows, lines, bad


def _check_cell_sizes(table: _Table) -> None:
    for position, column in enumerate(table.frame.columns):
        lengths = table.frame.iloc[:, position].str.len().to_numpy()
        if lengths.max() > MAX_CELL_CHARS:
            row = int(lengths.argmax())
            raise DataError(
                table.name,
                f"the cell holds {lengths[row]:,} characters; the limit is {MAX_CELL_CHARS:,}",
                row=table.lines[row],
                column=column,
            )


def _handle_bad_lines(
    name: str, bad: list[tuple[int, int]], width: int, on_bad_lines: str, report: ReadReport
) -> None:
    if not bad:
        return
    if on_bad_lines == "error":
        line, found = bad[0]
        more = _more(len(bad) - 1, "line", "the wrong number of fields")
        raise DataError(
            name,
            f"expected {width} fields, found {found}{more}. Quote values that contain commas "
            '("a, b"), or pass --on-bad-lines skip to skip such lines '
            "(they are listed in the report)",
            row=line,
        )
    report.skipped_lines = [line for line, _ in bad]
    report.warnings.append(_bad_lines_warning(bad, width))


def _bad_lines_warning(bad: list[tuple[int, int]], width: int) -> str:
    shown = ", ".join(str(line) for line, _ in bad[:10])
    etc = ", ..." if len(bad) > 10 else ""
    return (f"skipped {_count(len(bad), 'line')} with the wrong number of fields "
            f"(expected {width}): lines {shown}{etc}")


def _no_rows_message(bad: list[tuple[int, int]], unknown: int = 0,
                     examples: Sequence[tuple[int, str, str]] = ()) -> str:
    if unknown:
        first = "; ".join(f"line {line}: {_show(item)}" for line, _, item in examples)
        return (f"none of the rows names an item_id of the items file ({_count(unknown, 'row')} "
                f"with unknown items, first: {first}); check that the column read as item_id "
                "holds the items file's ids")
    if bad:
        return f"no data rows left after skipping {_count(len(bad), 'bad line')}"
    return "the file has a header but no data rows"


def _drop_unnamed(table: _Table) -> pd.DataFrame:
    """Columns with an empty header name: dropped (with a warning) if empty, else an error."""
    frame = table.frame
    positions = [i for i, column in enumerate(frame.columns) if column == ""]
    for position in positions:
        filled = (frame.iloc[:, position] != "").to_numpy()
        if filled.any():
            raise DataError(
                table.name,
                f"field {position + 1} has no name in the header but holds values "
                f"(first on row {table.lines[int(filled.argmax())]}); name the column or remove it",
                row=table.header_line,
            )
    if positions:
        dropped = _count(len(positions), "empty column")
        table.report.warnings.append(f"dropped {dropped} with no name")
        frame = frame.iloc[:, [i for i in range(frame.shape[1]) if i not in positions]]
    return frame


# --- contract pass: columns and values ----------------------------------------------------------


def _map_columns(table: _Table, contract: str, rename: Mapping[str, str] | None) -> HeaderMap:
    """Rename the table's columns to `contract`'s names (`recsys.headers.map_header`), said in
    the report."""
    header = map_header(table.name, table.header_line, list(table.frame.columns), contract,
                        check_rename(dict(rename), "rename") if rename else None)
    if header.renamed:
        table.frame = table.frame.rename(columns=header.renamed)
        table.report.renamed = dict(header.renamed)
        table.report.warnings.append(f"renamed columns: {header.describe()}")
    return header


def _fail(
    table: _Table, mask: pd.Series | np.ndarray, column: str, expected: str, more: str = ""
) -> None:
    """Raise for the first row where `mask` is true, counting the others."""
    mask = np.asarray(mask, dtype=bool)
    if not mask.any():
        return
    first = int(mask.argmax())
    others = int(mask.sum()) - 1
    more = more or _more(others, "row", "the same problem")
    found = _show(table.frame[column].iloc[first])
    message = f"expected {expected}, found {found}{more}"
    raise DataError(table.name, message, table.lines[first], column)


def _show(value: str) -> str:
    if value == "":
        return "an empty cell"
    if len(value) <= _SHOW_CHARS:
        return repr(value)
    return f"{value[:_SHOW_CHARS]!r}... ({len(value):,} characters)"


def _check_nonempty(table: _Table, column: str) -> None:
    _fail(table, table.frame[column] == "", column, f"a non-empty {column}")


def _check_item_ids(table: _Table) -> None:
    """Every item_id valid as `recsys.ids` defines it (the first bad one named, the others
    counted)."""
    problems = [item_id_problem(v) for v in table.frame["item_id"]]
    bad = [i for i, p in enumerate(problems) if p is not None]
    if not bad:
        return
    first = bad[0]
    found = _show(table.frame["item_id"].iloc[first])
    more = _more(len(bad) - 1, "row", "a bad item_id")
    raise DataError(table.name, f"{problems[first]} (found {found}){more}", table.lines[first],
                    "item_id")


def _check_unique(table: _Table, column: str) -> None:
    values = table.frame[column]
    repeated = values.duplicated().to_numpy()
    if not repeated.any():
        return
    later = int(repeated.argmax())
    earlier = int((values == values.iloc[later]).to_numpy().argmax())
    others = int(repeated.sum()) - 1
    more = _more(others, "row", f"a repeated {column}")
    raise DataError(
        table.name,
        f"{column} {_show(values.iloc[later])} already appears on row {table.lines[earlier]}; "
        f"{column}s must be unique{more}",
        table.lines[later],
        column,
    )


def _skip_unknown(table: _Table, item_ids: set[str], examples: list[tuple[int, str, str]],
                  instead: str = _ERROR_INSTEAD) -> None:
    """Rows whose item is not in the catalogue (discontinued items, in a search log) are skipped:
    counted, listed in the report's skipped lines, the first few kept in `examples` and shown in
    a warning."""
    known = table.frame["item_id"].isin(item_ids).to_numpy()
    if known.all():
        return
    unknown = np.flatnonzero(~known)
    for i in unknown[:max(0, _EXAMPLES - len(examples))]:
        examples.append((table.lines[i], table.frame["query"].iloc[i], table.frame["item_id"].iloc[i]))
    skipped = [table.lines[i] for i in unknown]
    table.frame = table.frame[known].reset_index(drop=True)
    table.lines = [line for line, ok in zip(table.lines, known) if ok]
    table.report.skipped_lines = sorted(table.report.skipped_lines + skipped)
    table.report.unknown_items += len(skipped)
    table.report.warnings.append(_unknown_items_warning(skipped, examples, instead))
    table.report.notices.append(table.report.warnings[-1])


def _unknown_items_warning(skipped: list[int], examples: list[tuple[int, str, str]],
                           instead: str = _ERROR_INSTEAD) -> str:
    shown = ", ".join(str(line) for line in skipped[:10]) + (", ..." if len(skipped) > 10 else "")
    rows = "; ".join(f"line {line}: {query!r}, {_show(item)}" for line, query, item in examples)
    return (f"skipped {_count(len(skipped), 'row')} whose item_id is not in the items file: lines "
            f"{shown} (first: {rows}){instead}")


def _label_scale_note(header: HeaderMap, lowest: float) -> list[str]:
    """A note when a graded relevance read as the label never says "not relevant" (0)."""
    source = header.graded_label()
    if source is None or lowest < 1:
        return []
    return [f"every label (from {source!r}) is {lowest:g} or more, so every row counts as "
            f"chosen; if {lowest:g} means not relevant, subtract it in the file so that not "
            "relevant is 0"]


def _check_known(table: _Table, item_ids: set[str]) -> None:
    values = table.frame["item_id"]
    unknown = ~values.isin(item_ids).to_numpy()
    if not unknown.any():
        return
    others = int(unknown.sum()) - 1
    distinct = values[unknown].nunique()
    more = _more(others, "row", f"unknown item_ids ({distinct:,} distinct)")
    _fail(table, unknown, "item_id", "an item_id from the items file", more)


def _numbers(
    table: _Table, column: str, *, positive: bool, default: float | None = None
) -> pd.Series:
    text = table.frame[column]
    if default is not None:
        text = text.mask(text == "", str(default))
    values = pd.to_numeric(text, errors="coerce").astype(float)
    bad = ~np.isfinite(values) | ((values <= 0) if positive else (values < 0))
    _fail(table, bad, column, f"a finite number {'> 0' if positive else '>= 0'}")
    return values


def _labels(table: _Table) -> pd.Series:
    if "label" in table.frame.columns:  # else `event` (map_header requires one of them)
        return _numbers(table, "label", positive=False)
    events = table.frame["event"].str.lower()
    _fail(table, ~events.isin(EVENT_LABELS), "event", f"one of {', '.join(EVENT_LABELS)}")
    return events.map(EVENT_LABELS).astype(float)


def _weights(table: _Table) -> pd.Series:
    if "weight" not in table.frame.columns:
        return pd.Series(1.0, index=table.frame.index)
    empty = int((table.frame["weight"] == "").sum())
    if empty:
        table.report.warnings.append(_empty_weights_warning(empty))
    return _numbers(table, "weight", positive=True, default=1.0)


def _empty_weights_warning(empty: int) -> str:
    return f"{_count(empty, 'empty weight cell')} taken as 1.0"


def _note_ignored(table: _Table, used: set[str]) -> None:
    ignored = [column for column in table.frame.columns if column not in used]
    if ignored:
        table.report.warnings.append(f"ignored columns: {', '.join(ignored)}")


def _drop_duplicates(table: _Table, frame: pd.DataFrame) -> pd.DataFrame:
    repeated = frame.duplicated().to_numpy()
    count = int(repeated.sum())
    if count:
        table.report.warnings.append(_duplicates_warning(count, table.lines[int(repeated.argmax())]))
        frame = frame[~repeated].reset_index(drop=True)
    table.report.dropped_duplicates = count
    table.report.rows = len(frame)
    return frame


def _duplicates_warning(count: int, first: int) -> str:
    return f"dropped {_count(count, 'duplicate row')} identical to an earlier row (first on row {first})"


def _count(n: int, noun: str) -> str:
    """'1 line' / '3 lines'."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def _more(n: int, noun: str, problem: str) -> str:
    """'; 1 more row has X' / '; 3 more rows have X' / '' for none."""
    if n == 0:
        return ""
    return f"; {_count(n, 'more ' + noun)} {'has' if n == 1 else 'have'} {problem}"


# --- empty-cell markers --------------------------------------------------------------------------


def _blank_missing(table: _Table, markers: tuple[str, ...]) -> None:
    counts: dict[str, int] = {}
    frame = table.frame.copy()
    for column in frame.columns:
        if column in ("item_id", "title"):
            continue
        hit = frame[column].isin(markers)
        if hit.any():
            counts[column] = int(hit.sum())
            frame[column] = frame[column].mask(hit, "")
    table.frame = frame
    if counts:
        shown = ", ".join(f"{c} {n:,}" for c, n in counts.items())
        table.report.warnings.append(
            f"{_count(sum(counts.values()), 'cell')} holding {' or '.join(map(repr, markers))} "
            f"taken as empty ({shown})"
        )


# --- schema file --------------------------------------------------------------------------------
#
# The file's shape is declared by the pydantic models below, one per table; each check raises a
# `_problem`, whose message is what the user reads after "[table] entry: ". A later table (e.g.
# `[facets] add = ["material"]`) is one more field of `SchemaFile`, and `SchemaFile.facet_names()`
# is the one place that says which facet names `[columns]` may use.


def _problem(message: str, *at: str) -> PydanticCustomError:
    """A schema problem. `at`: the entry it is about, below the location pydantic reports (for a
    check of a whole table, which pydantic locates at the table)."""
    return PydanticCustomError("schema", "{message}", {"message": message, "at": at})


def _schema_message(error: Any) -> str:
    """'[table] entry: problem' (tables nested as in TOML, '[lexicon.color] teal: ...'); a problem
    with the file's top level or a whole table stands alone: its message names the table."""
    parts = [str(p) for p in error["loc"]] + list((error.get("ctx") or {}).get("at", ()))
    message = str(error["msg"])
    if len(parts) < 2:
        return message
    entry = f" {parts[-1]}" if parts[-1] else ""
    return f"[{'.'.join(parts[:-1])}]{entry}: {message}"


class _SchemaTable(BaseModel):
    """A TOML table of the schema file: only its own keys, each checked."""

    model_config = ConfigDict(frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, value: Any) -> Any:
        if cls.model_config.get("extra") == "allow":  # other keys are checked by the extras' type
            return value
        for key in value if isinstance(value, dict) else ():
            if key not in cls.model_fields:
                raise _problem(cls._unknown(key), key)
        return value

    @classmethod
    def _unknown(cls, key: str) -> str:
        """The problem with a key that is none of the table's own."""
        return "unknown setting"


def _table(example: str) -> BeforeValidator:
    """A top-level entry must be a table: else a problem saying what the table holds."""

    def check(value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, dict):
            raise _problem(f"expected a [{info.field_name}] table of {example}, found {value!r}")
        return value

    return BeforeValidator(check)


def _facet_name(value: Any) -> str:
    if not isinstance(value, str):
        raise _problem(f"expected a facet name in quotes, found {value!r}")
    return value.strip().lower()


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):  # pydantic's own bool would take "no" as false
        raise _problem(f"expected true or false, found {value!r}")
    return value


def _word_table(table: Any) -> dict[str, list[str]]:
    """`[lexicon.<kind>]`: canonical value -> synonyms (one word in quotes is a list of one)."""
    if not isinstance(table, dict):
        raise _problem("unknown setting; expected enabled = true/false, builtin = true/false or a "
                       'word table such as [lexicon.color] with teal = ["peacock", "petrol"]')
    out: dict[str, list[str]] = {}
    for canonical, synonyms in table.items():
        if isinstance(synonyms, str):
            synonyms = [synonyms]
        if not isinstance(synonyms, list) or not all(isinstance(s, str) for s in synonyms):
            raise _problem(f'expected a list of words in quotes, e.g. {canonical} = ["word", "two '
                           f'words"], found {synonyms!r}', canonical)
        if not canonical.strip():
            raise _problem("a canonical value must not be empty", "")
        out[canonical.strip().lower()] = [s.strip() for s in synonyms if s.strip()]
    return out


FacetName = Annotated[str, BeforeValidator(_facet_name)]
Flag = Annotated[bool, BeforeValidator(_flag)]
WordTable = Annotated[dict[str, list[str]], BeforeValidator(_word_table)]


class MissingTable(_SchemaTable):
    """`[missing]`: `values = ["NA"]`: cells holding exactly one of these are empty."""

    values: tuple[str, ...] = ()

    @classmethod
    def _unknown(cls, key: str) -> str:
        return 'unknown setting; expected values = ["NA", ...]'

    @field_validator("values", mode="before")
    @classmethod
    def _non_empty_strings(cls, values: Any) -> tuple[str, ...]:
        if not isinstance(values, list) or not all(isinstance(v, str) and v.strip() for v in values):
            raise _problem(f'expected a list of non-empty strings, e.g. ["NA"], found {values!r}')
        return tuple(v.strip() for v in values)


class LexiconTable(_SchemaTable):
    """`[lexicon]`: `enabled`, `builtin`, and a word table per kind (`[lexicon.color]`, ...)."""

    model_config = ConfigDict(frozen=True, extra="allow")
    __pydantic_extra__: dict[str, WordTable] = Field(init=False)  # kind -> its word table
    enabled: Flag = True
    builtin: Flag = True

    @model_validator(mode="after")
    def _usable_kinds(self) -> LexiconTable:
        for key in self.model_extra or {}:
            if key.strip().lower() in ("", "ignore"):
                raise _problem("not a usable kind name", key)
        return self

    def config(self) -> LexiconConfig:
        entries: dict[str, dict[str, list[str]]] = {}
        for key, words in (self.model_extra or {}).items():
            entries.setdefault(key.strip().lower(), {}).update(words)
        return LexiconConfig(self.enabled, self.builtin, entries)


class FacetsTable(_SchemaTable):
    """`[facets]`: `add = ["material"]`: heads beyond the default ones."""

    add: tuple[str, ...] = ()

    @classmethod
    def _unknown(cls, key: str) -> str:
        return 'unknown setting; expected add = ["material", ...]'

    @field_validator("add", mode="before")
    @classmethod
    def _new_names(cls, names: Any) -> tuple[str, ...]:
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise _problem(f'expected a list of facet names in quotes, e.g. ["material"], found {names!r}')
        out: list[str] = []
        for raw in names:
            name = raw.strip().lower()
            problem = facet_name_problem(name, [*FACETS, *out])
            if problem:
                raise _problem(problem)
            out.append(name)
        return tuple(out)


class SchemaFile(_SchemaTable):
    """The whole file; its tables in the order their problems are reported."""

    columns: Annotated[dict[str, FacetName],
                       _table('column name = facet, e.g. baseColour = "color"')] = {}
    rename: Annotated[dict[str, Any], _table('column = contract column, e.g. id = "item_id"')] = {}
    missing: Annotated[MissingTable,
                       _table('values = [markers of an empty cell], e.g. values = ["NA"]')
                       ] = MissingTable()
    lexicon: Annotated[LexiconTable,
                       _table("settings and word lists, e.g. enabled = false or [lexicon.color]")
                       ] = LexiconTable()
    facets: Annotated[FacetsTable, _table('facets to add, e.g. add = ["material"]')] = FacetsTable()

    @classmethod
    def _unknown(cls, key: str) -> str:
        tables = [f"[{name}]" for name in cls.model_fields]
        return (f"expected only {', '.join(tables[:-1])} and {tables[-1]} tables, found {key!r} "
                "outside them")

    def facet_names(self) -> tuple[str, ...]:
        """The facet names `[columns]` may use (besides "ignore"): the default ones and the added."""
        return (*FACETS, *self.facets.add)

    @field_validator("columns", mode="after")
    @classmethod
    def _one_facet_per_column(cls, columns: dict[str, str]) -> dict[str, str]:
        seen: dict[str, str] = {}
        for key, facet in columns.items():
            if seen.setdefault(key.strip().lower(), facet) != facet:
                raise _problem("names the same column as another entry, with another facet", key)
        return columns

    @field_validator("rename", mode="after")
    @classmethod
    def _usable_renames(cls, rename: dict[str, Any]) -> dict[str, Any]:
        for column, problem in rename_problems(rename):
            raise _problem(problem, column)
        return rename

    @model_validator(mode="after")
    def _known_facets(self) -> SchemaFile:
        facets = self.facet_names()
        for key, facet in self.columns.items():
            if facet not in facets and facet != "ignore":
                raise _problem(f"unknown facet {facet!r}; use one of {', '.join(facets)} or "
                               f"'ignore', or add it: [facets] add = [\"{facet}\"]", "columns", key)
        return self

    def to_schema(self) -> Schema:
        return Schema({key.strip().lower(): facet for key, facet in self.columns.items()},
                      check_rename(self.rename, "[rename]"), self.lexicon.config(),
                      self.missing.values, self.facets.add)


def _read_schema(name: str, data: bytes) -> Schema:
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise _decode_error(name, data, None, error.start) from None
    except tomllib.TOMLDecodeError as error:
        raise DataError(name, f"not valid TOML: {error}") from None
    try:
        return SchemaFile.model_validate(document).to_schema()
    except ValidationError as error:
        raise DataError(name, _schema_message(error.errors()[0])) from None
