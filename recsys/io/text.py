"""The structural pass of reading a CSV file: bytes -> text -> header and records.

Checks encoding (and binary files: a zip, a gzip, UTF-16), delimiter, header and field counts,
cell sizes; what it returns is a `Table` of stripped str cells with each row's physical line,
which the contract pass (`recsys.io.contract`) checks column by column.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import pandas as pd

from recsys.errors import DataError, InputError
from recsys.gc_pause import paused_gc

MAX_CELL_CHARS = 100_000


ON_BAD_LINES = ("error", "skip")
# how a message names the option, on the command line and in POST /admin/train
SKIP_BAD_LINES = '--on-bad-lines skip (`"on_bad_lines": "skip"` in POST /admin/train)'


BLOCK_BYTES = 1 << 22  # bytes read at a time when streaming (and hashing) a file


_SHOW_CHARS = 40


_SHARE_SAMPLE = 4096  # rows after which only the columns whose cells repeat keep sharing them
_EMPTY_FILE = "the file is empty (0 bytes); expected a header row and data rows"
# read as the separator when a header has no comma but has one of them, the first found
OTHER_SEPARATORS = ("\t", ";")
_SIGNATURES = (
    (
        b"PK\x03\x04",
        "looks like a zip archive, not CSV text (an .xlsx workbook is one); export it as CSV",
    ),
    (b"\x1f\x8b", "looks like a gzip-compressed file, not CSV text; decompress it first"),
)
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


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
    empty_queries: int = 0  # interaction rows skipped for an empty query (`--on-bad-lines skip`)
    # the warnings to tell at once (the command line prints them): skipped unknown items, a label
    # scale that never says "not chosen"
    notices: list[str] = field(default_factory=list)
    # items files: another id of an item -> its item_id (a variant's SKU, its row read into its
    # product: recsys.io.variants), for the logs that name the variant
    aliases: dict[str, str] = field(default_factory=dict)


@dataclass
class Table:
    name: str
    frame: pd.DataFrame  # all cells str, stripped
    lines: list[int]  # physical line where each row's record starts
    report: ReadReport
    header_line: int = 1  # later than 1 only after leading blank lines


def stream_lines(name: str, encoding: str | None, block_bytes: int) -> Iterator[str]:
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


def check_text(name: str, encoding: str | None, block_bytes: int = BLOCK_BYTES) -> None:
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
        raise DataError(name, f"unknown encoding {encoding!r}; try utf-8 or cp1252") from None


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
        raise decode_error(name, error.object, encoding, error.start, offset - held,
                            newlines) from None


def fingerprint(path: str | Path) -> str:
    """"sha256:<hex>" of the file's bytes (read a block at a time: a log may not fit in memory)."""
    digest = hashlib.sha256()
    with _open(str(path)) as file:
        while block := file.read(BLOCK_BYTES):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


# --- structural pass: bytes -> text -> header and records ---------------------------------------


def read_csv(path: str | Path, encoding: str | None, on_bad_lines: str) -> Table:
    if on_bad_lines not in ON_BAD_LINES:
        raise InputError(f"on_bad_lines must be 'error' or 'skip', got {on_bad_lines!r}")
    name = str(path)
    check_text(name, encoding)
    return table_of_records(name, csv_records(name, stream_lines(name, encoding, BLOCK_BYTES)), on_bad_lines,
                            encoding)


def table_of_records(name: str, records: Iterator[tuple[int, list[str]]], on_bad_lines: str,
                     encoding: str | None = None) -> Table:
    """The table of a file's records, (row, stripped cells) with the header first, checked as a
    CSV file's are: the header's names, each row's width, every cell's size, unnamed columns."""
    header_line, header = read_header(name, records)
    with paused_gc():
        rows, lines, bad = collect(name, records, header)
    report = ReadReport(rows=len(rows), encoding=encoding or "utf-8")
    notice = header_notice(header_line)
    if notice:
        report.notices.append(notice)
        report.warnings.append(notice)
    handle_bad_lines(name, bad, len(header), on_bad_lines, report)
    if not rows:
        raise DataError(name, no_rows_message(bad))
    frame = pd.DataFrame(rows, columns=header, dtype=str)
    table = Table(name, frame, lines, report, header_line)
    check_cell_sizes(table)
    table.frame = drop_unnamed(table)
    return table


def first_character(path: str | Path) -> bytes:
    """The file's first byte after a byte-order mark and white space (b"" for none, or for a file
    that cannot be opened: its reader says why): how an XML feed or JSON records are told from
    CSV, which never starts with `<`, `[` or `{`."""
    try:
        with open(path, "rb") as file:
            head = file.read(512)
    except OSError:
        return b""
    return head.removeprefix(b"\xef\xbb\xbf").lstrip()[:1]


def read_bytes(name: str) -> bytes:
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


def decode_error(name: str, data: bytes, encoding: str | None, offset: int, base: int = 0,
                  newlines: int = 0) -> DataError:
    """`data[offset]` is not valid; `data` starts at byte `base` of the file, after `newlines`
    line breaks."""
    codec = "UTF-8" if encoding is None else encoding
    # Windows-1252, not latin-1: Excel's usual export in Western Europe and the Americas, which
    # latin-1 would read without an error, its euro signs and dashes turned into control characters
    hint = "e.g. --encoding cp1252" if encoding is None else "with --encoding"
    return DataError(
        name,
        f"byte 0x{data[offset]:02x} at byte offset {base + offset} is not valid {codec}; "
        f"if the file uses another encoding, name it, {hint}",
        row=newlines + data.count(b"\n", 0, offset) + 1,
    )


def csv_records(name: str, lines: Iterable[str]) -> Iterator[tuple[int, list[str]]]:
    """(line where the record starts, stripped fields) for each record that is not blank,
    separated as the header is (`separator`). A report's lines above its header are read past
    (`_is_preamble`: GA4's `# ...` comments, a Google Ads report's title and date range)."""
    lines = iter(lines)
    leading: list[str] = []  # blank and preamble lines up to the header, and the header
    for line in lines:
        leading.append(line)
        if (line.strip() and not _is_preamble(line)) or len(leading) > PREAMBLE_LINES:
            break
    if not leading[-1:] or _is_preamble(leading[-1]):  # no header near the top (a file of one
        # column): the first line that is not blank is it, as for any file
        at = next((i for i, line in enumerate(leading) if line.strip()), len(leading))
        leading, lines = leading[: at + 1], itertools.chain(leading[at + 1 :], lines)
    above = max(len(leading) - 1, 0)  # lines above the header, read past
    header = leading[-1] if leading else ""
    reader = csv.reader(itertools.chain(leading[-1:], lines), delimiter=separator(header), strict=True)
    start = above + 1
    try:
        for fields in reader:
            cells = list(map(str.strip, fields))
            if any(cells):
                yield start, cells
            start = reader.line_num + above + 1
    except csv.Error as error:
        raise DataError(name, _csv_error_message(str(error)), row=start) from None


PREAMBLE_LINES = 20  # a report's lines above its header read past, at most


def _is_preamble(line: str) -> bool:
    """Whether a line above the header is a report's own, not the header: a comment (`# `, as
    GA4 writes `# Start date: 20240301`; a header's first column may be `#id`), or one field
    alone (a title, a quoted date range). A header has two columns at least (`item_id` and
    `title`, `query` and `item_id`)."""
    text = line.strip()
    if not text or text == "#" or text.startswith(("# ", "#-", "#=")):
        return bool(text)
    if not any(s in text for s in (",", *OTHER_SEPARATORS)):
        return True
    fields = next(csv.reader([text], delimiter=separator(text)), [])
    return sum(bool(f.strip()) for f in fields) <= 1


def header_notice(header_line: int) -> str | None:
    """What a reader says when its file's header is not the first line."""
    if header_line <= 1:
        return None
    return (f"the header is line {header_line}: the {counted(header_line - 1, 'line')} above it (blank, "
            f"a report's title or # comments) are not read")


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


def read_header(name: str, records: Iterator[tuple[int, list[str]]]) -> tuple[int, list[str]]:
    first = next(records, None)
    if first is None:
        raise DataError(name, "the file holds only blank lines; expected a header row")
    line, cells = first
    columns = [cell.lstrip("\ufeff").strip() for cell in cells]
    _check_duplicate_columns(name, line, columns)
    return line, columns


def separator(header: str) -> str:
    """The separator of a file with this header line: a comma, unless the header has none and
    has tabs or semicolons (the CSV that spreadsheets write in many locales, and TSV exports),
    which then separate every record."""
    if "," in header:
        return ","
    return next((s for s in OTHER_SEPARATORS if s in header), ",")


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


def collect(
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


def check_cell_sizes(table: Table) -> None:
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


def handle_bad_lines(
    name: str, bad: list[tuple[int, int]], width: int, on_bad_lines: str, report: ReadReport
) -> None:
    if not bad:
        return
    if on_bad_lines == "error":
        line, found = bad[0]
        more = and_more(len(bad) - 1, "line", "the wrong number of fields")
        raise DataError(
            name,
            f"expected {width} fields, found {found}{more}. Quote values that contain commas "
            f'("a, b"), or pass {SKIP_BAD_LINES} to skip such lines '
            "(they are listed in the report)",
            row=line,
        )
    report.skipped_lines = [line for line, _ in bad]
    report.warnings.append(bad_lines_warning(bad, width))


def bad_lines_warning(bad: list[tuple[int, int]], width: int) -> str:
    shown = ", ".join(str(line) for line, _ in bad[:10])
    etc = ", ..." if len(bad) > 10 else ""
    return (f"skipped {counted(len(bad), 'line')} with the wrong number of fields "
            f"(expected {width}): lines {shown}{etc}")


def no_rows_message(bad: list[tuple[int, int]], unknown: int = 0,
                     examples: Sequence[tuple[int, str, str]] = ()) -> str:
    if unknown:
        first = "; ".join(f"line {line}: {show_value(item)}" for line, _, item in examples)
        return (f"none of the rows names an item_id of the items file ({counted(unknown, 'row')} "
                f"with unknown items, first: {first}); check that the column read as item_id "
                "holds the items file's ids")
    if bad:
        return f"no data rows left after skipping {counted(len(bad), 'bad line')}"
    return "the file has a header but no data rows"


def drop_unnamed(table: Table) -> pd.DataFrame:
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
        dropped = counted(len(positions), "empty column")
        table.report.warnings.append(f"dropped {dropped} with no name")
        frame = frame.iloc[:, [i for i in range(frame.shape[1]) if i not in positions]]
    return frame


def show_value(value: str) -> str:
    if value == "":
        return "an empty cell"
    if len(value) <= _SHOW_CHARS:
        return repr(value)
    return f"{value[:_SHOW_CHARS]!r}... ({len(value):,} characters)"


def counted(n: int, noun: str) -> str:
    """'1 line' / '3 lines'."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def and_more(n: int, noun: str, problem: str) -> str:
    """'; 1 more row has X' / '; 3 more rows have X' / '' for none."""
    if n == 0:
        return ""
    return f"; {counted(n, 'more ' + noun)} {'has' if n == 1 else 'have'} {problem}"
