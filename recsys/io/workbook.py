"""An Excel workbook (.xlsx) read as the table a CSV file gives (items, a search log,
judgments): a shop's product list is often a spreadsheet, an analytics tool exports its search
report as one, and saving it as CSV first was one more step (and a locale's semicolons or its
decimal commas to get wrong).

The first worksheet that holds anything is read: its first non-blank row is the header, every
further non-blank row a row, numbered as the sheet numbers it (a DataError's row is the sheet's).
Cells are read as their values, not formulas: a whole number as digits (Excel keeps 100001 as
100001.0), other numbers as the shortest text that is the same number, true/false as `yes` /
`no` (as JSON records give them), dates as ISO text. Parsed by openpyxl, which reads the
workbook's XML through defusedxml (no entity expansion). A workbook is a zip archive: one that
would unpack to more than `MAX_UNPACKED_BYTES` is refused before it is opened.
"""

from __future__ import annotations

import datetime as dt
import zipfile
from collections.abc import Iterator
from pathlib import Path

from recsys.errors import DataError

from .text import Table, table_of_records

MAX_UNPACKED_BYTES = 2 << 30  # a million products of ten columns unpack to a few hundred MB
_ZIP_MAGIC = b"PK\x03\x04"


def is_workbook(path: str | Path) -> bool:
    """Whether the file is an .xlsx workbook (a zip archive holding `xl/workbook.xml`)."""
    try:
        with open(path, "rb") as file:
            if file.read(4) != _ZIP_MAGIC:
                return False
        with zipfile.ZipFile(path) as archive:
            return "xl/workbook.xml" in archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def read_workbook(path: str | Path, on_bad_lines: str = "error") -> Table:
    name = str(path)
    return table_of_records(name, sheet_records(name), on_bad_lines)


def workbook_header(path: str | Path) -> tuple[int, list[str]]:
    """(its row, the header) of the first worksheet that holds anything (a header check needs no
    more)."""
    for row, cells in sheet_records(str(path)):
        return row, cells
    raise DataError(str(path), "the workbook holds only blank rows; expected a header row")


def sheet_records(name: str) -> Iterator[tuple[int, list[str]]]:
    """(the sheet's row number, its cells as text) of each non-blank row of the first worksheet
    that has one."""
    import openpyxl  # a workbook is rare beside CSV: loaded only for one
    from openpyxl.utils.exceptions import InvalidFileException

    _check_unpacked_size(name)
    # what a damaged workbook raises, while it is opened or as its rows are read: a part
    # missing, XML that does not parse (SyntaxError) or that declares entities (ValueError)
    damaged = (zipfile.BadZipFile, KeyError, ValueError, TypeError, SyntaxError, InvalidFileException)
    try:
        # a file, not its name: openpyxl refuses a name that does not end in .xlsx, and the
        # service keeps an upload as items.csv whatever it holds
        with open(name, "rb") as file:
            book = openpyxl.load_workbook(file, read_only=True, data_only=True)
            try:
                for sheet in book.worksheets:
                    found = False
                    for number, values in enumerate(sheet.iter_rows(values_only=True), 1):
                        cells = [_text(v) for v in values]
                        if any(cells):
                            found = True
                            yield number, cells
                    if found:
                        return
            finally:
                book.close()
    except damaged as error:
        raise DataError(name, f"cannot read the workbook ({type(error).__name__}: {error}); save it "
                              "again from the spreadsheet, or export it as CSV") from None


def _check_unpacked_size(name: str) -> None:
    with zipfile.ZipFile(name) as archive:
        unpacked = sum(info.file_size for info in archive.infolist())
    if unpacked > MAX_UNPACKED_BYTES:
        raise DataError(name, f"the workbook unpacks to {unpacked:,} bytes, more than {MAX_UNPACKED_BYTES:,}: "
                              "export it as CSV")


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ") if value.time() != dt.time() else value.date().isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return str(value).strip()
