"""Reading the CSV contracts: a corpus of broken inputs (exact messages) and messy valid ones."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pytest

from recsys.errors import DataError, InputError
from recsys.io.ids import MAX_ID_CHARS
from recsys.io.readers import (
    InteractionStream,
    items_from_records,
    read_interactions,
    read_items,
    read_judgments,
    read_table,
)
from recsys.io.schema import Schema
from recsys.io.text import MAX_CELL_CHARS, ReadReport, fingerprint

BAD = Path(__file__).parents[1] / "fixtures" / "bad"
REAL = Path(__file__).resolve().parents[3] / "shared" / "data"
ITEM_IDS = {"A1", "A2", "A3"}
RAGGED = (
    'expected 3 fields, found 4; 1 more line has the wrong number of fields. Quote values that '
    'contain commas ("a, b"), or pass --on-bad-lines skip (`"on_bad_lines": "skip"` in POST /admin/train) '
    "to skip such lines (they are listed in the report)"
)


def _read(path: str | Path, **options):
    """The reader a fixture is for, chosen by its name prefix (interactions naming unknown
    items are an error here, as the corpus asks)."""
    kind = Path(path).name.split("_")[0].removesuffix(".csv")
    if kind == "interactions":
        return read_interactions(path, ITEM_IDS, **{"unknown_items": "error", **options})
    if kind == "judgments":
        return read_judgments(path, ITEM_IDS, **options)
    if kind == "schema":
        return Schema.load(path)
    return read_items(path, **options)


def _write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def _message(path: str | Path, **options) -> str:
    with pytest.raises(DataError) as caught:
        _read(path, **options)
    return str(caught.value)


# --- broken inputs: one fixture each, the whole message asserted --------------------------------

def rename_hint(*entries: str) -> str:
    """How a header error ends: the [rename] entries to add, as one pasteable TOML line."""
    which = "hold them" if len(entries) > 1 else "holds it"
    return (f". Say which of the file's columns {which} in a schema file (--schema FILE.toml), e.g. "
            f"its [rename] table in one line, at the top: rename = {{{', '.join(entries)}}}")


BROKEN = [
    ("items_empty.csv", ": the file is empty (0 bytes); expected a header row and data rows"),
    ("items_blank_lines_only.csv", ": the file holds only blank lines; expected a header row"),
    ("items_header_only.csv", ": the file has a header but no data rows"),
    (
        "items_missing_title.csv",
        ", row 1: missing required column 'title'; found columns: 'item_id', 'heading', 'color'"
        + rename_hint('heading = "title"'),
    ),
    (
        "items_duplicate_column.csv",
        ", row 1, column 'color': the header names this column twice (fields 3 and 4); "
        "column names must be unique",
    ),
    (
        "items_duplicate_id.csv",
        ", row 4, column 'item_id': item_id 'A1' already appears on row 2; "
        "item_ids must be unique",
    ),
    (
        "items_empty_id.csv",
        ", row 3, column 'item_id': expected a non-empty item_id, found an empty cell; every item needs an id "
        "of its own: fill the 'item_id' column in, leave such rows out with --on-bad-lines skip "
        "(`\"on_bad_lines\": \"skip\"` in POST /admin/train), or name another column of unique ids in a "
        "schema's [rename] (rename = {\"Listing ID\" = \"item_id\"})",
    ),
    (
        "items_empty_title.csv",
        ", row 3, column 'title': expected a non-empty title, found an empty cell",
    ),
    ("items_ragged.csv", ", row 3: " + RAGGED),
    (
        "items_not_utf8.csv",
        ", row 3: byte 0xe9 at byte offset 33 is not valid UTF-8; "
        "if the file uses another encoding, name it, e.g. --encoding cp1252",
    ),
    (
        "items_binary.csv",
        ", row 2: contains a NUL byte at byte offset 17; "
        "this looks like a binary file, not CSV text",
    ),
    (
        "items_unclosed_quote.csv",
        ", row 3: a quoted value that starts in this record is never closed (missing '\"')",
    ),
    (
        "items_text_after_quote.csv",
        ", row 2: a closing quote must be followed by a comma or the end of the line; "
        'to put a quote inside a quoted value, double it ("")',
    ),
    (
        "items_unnamed_column.csv",
        ", row 1: field 3 has no name in the header but holds values (first on row 3); "
        "name the column or remove it",
    ),
    (
        "interactions_label_text.csv",
        ", row 3, column 'label': expected a finite number >= 0, found 'high'",
    ),
    (
        "interactions_label_negative.csv",
        ", row 2, column 'label': expected a finite number >= 0, found '-1'; "
        "1 more row has the same problem",
    ),
    (
        "interactions_label_nan.csv",
        ", row 2, column 'label': expected a finite number >= 0, found 'NaN'",
    ),
    (
        "interactions_label_inf.csv",
        ", row 3, column 'label': expected a finite number >= 0, found 'inf'",
    ),
    (
        "interactions_label_empty.csv",
        ", row 2, column 'label': expected a finite number >= 0, found an empty cell",
    ),
    (
        "interactions_unknown_item.csv",
        ", row 3, column 'item_id': expected an item_id from the items file, found 'Z9'; "
        "2 more rows have unknown item_ids (2 distinct)",
    ),
    (
        "interactions_unknown_event.csv",
        ", row 3, column 'event': expected one of impression, click, cart, purchase (or as analytics tools "
        "name them: select_item, add_to_cart, purchase, Product Clicked, ...), found 'view'",
    ),
    (
        "interactions_no_label.csv",
        ", row 1: missing required column 'label' (or 'event' to derive it: impression, click, "
        "cart, purchase); found columns: 'query', 'item_id', 'score'"
        + rename_hint('score = "label"'),
    ),
    (
        "interactions_weight_zero.csv",
        ", row 3, column 'weight': expected a finite number > 0, found '0'",
    ),
    (
        "interactions_empty_query.csv",
        ", row 2, column 'query': expected a non-empty query, found an empty cell; "
        '--on-bad-lines skip (`"on_bad_lines": "skip"` in POST /admin/train) leaves such rows out',
    ),
    (
        "judgments_grade_negative.csv",
        ", row 3, column 'grade': expected a finite number >= 0, found '-1'",
    ),
    (
        "judgments_missing_grade.csv",
        ", row 1: missing required column 'grade'; "
        "found columns: 'query', 'item_id', 'stars'"
        + rename_hint('stars = "grade"'),
    ),
    ("schema_bad_toml.toml", ": not valid TOML: Invalid value (at line 2, column 14)"),
    (
        "schema_unknown_facet.toml",
        ": [columns] baseColour: unknown facet 'colour'; "
        "use one of quality, color, style, other or 'ignore', or add it: [facets] add = [\"colour\"]",
    ),
    (
        "schema_no_columns.toml",
        ": expected only [columns], [rename], [missing], [lexicon] and [facets] tables, "
        "found 'baseColour' outside them",
    ),
    (
        "schema_not_string.toml",
        ": [columns] year: expected a facet name in quotes, found 2012",
    ),
    (
        "schema_facet_added_twice.toml",
        ": [facets] add: facet 'color' is there already; the facets are quality, color, style, "
        "other, material",
    ),
    (
        "schema_facet_bad_name.toml",
        ": [facets] add: 'fabric type' is not a usable facet name: use lower-case letters, digits "
        "and '_', starting with a letter (at most 32), e.g. 'material'",
    ),
    (
        "schema_facet_not_added.toml",
        ": [columns] material: unknown facet 'material'; use one of quality, color, style, other "
        "or 'ignore', or add it: [facets] add = [\"material\"]",
    ),
]


@pytest.mark.parametrize(("fixture", "expected"), BROKEN, ids=[f for f, _ in BROKEN])
def test_broken_fixture_message(fixture: str, expected: str) -> None:
    path = str(BAD / fixture)
    assert _message(path) == path + expected


def test_every_bad_fixture_is_in_the_corpus() -> None:
    assert sorted(p.name for p in BAD.iterdir()) == sorted(f for f, _ in BROKEN)


@pytest.mark.parametrize("separator", ["\t", ";"])
def test_a_file_whose_header_has_no_comma_is_read_with_its_tabs_or_semicolons(tmp_path: Path,
                                                                             separator: str) -> None:
    """Spreadsheets in many locales write ';'-separated CSV, and exports are often TSV: the
    same rows as the comma-separated file, a comma inside a cell kept."""
    rows = [["item_id", "title", "color"], ["A1", "Red shirt, cotton", "red"], ["A2", "Blue cap", ""]]
    (tmp_path / "comma.csv").write_text("item_id,title,color\nA1,\"Red shirt, cotton\",red\nA2,Blue cap,\n")
    (tmp_path / "other.csv").write_text("\n".join(separator.join(r) for r in rows) + "\n")
    want, got = read_items(tmp_path / "comma.csv")[0], read_items(tmp_path / "other.csv")[0]
    assert got.to_dict("records") == want.to_dict("records")
    assert got.loc[0, "title"] == "Red shirt, cotton"


@pytest.mark.parametrize("preamble", [
    # GA4's CSV export: comments, then a blank line
    "# ----------------------------------------\n# Search terms: Item ID\n# Account: Shop, Inc\n"
    "# ----------------------------------------\n\n",
    "Search terms report\n\"March 1, 2024 - March 31, 2024\"\n",  # a Google Ads report's title
])
@pytest.mark.parametrize("streamed", [False, True])
def test_a_reports_lines_above_its_header_are_read_past(tmp_path: Path, preamble: str, streamed: bool) -> None:
    """An analytics export opens with its own title or `#` comments: read as the header, the
    error said "expected 1 fields, found 3" and its fix renamed the comment to `query`."""
    log = tmp_path / "log.csv"
    log.write_text(preamble + "Search term,item_id,Clicks\nlinen shirt,A1,3\nbeanie,B2,\"2\"\n")
    above = preamble.count("\n")
    rename = {"Search term": "query", "Clicks": "label"}
    if streamed:
        stream = InteractionStream(log, {"A1", "B2"}, rename=rename)
        rows, report = pd.concat(list(stream)), stream.report
    else:
        rows, report = read_interactions(log, {"A1", "B2"}, rename=rename)
    assert rows["query"].tolist() == ["linen shirt", "beanie"] and rows["label"].tolist() == [3, 2]
    assert f"the header is line {above + 1}: the {above} lines above it" in " ".join(report.notices)


def test_a_file_of_one_column_keeps_its_first_line_as_its_header(tmp_path: Path) -> None:
    """No line near the top looks like a header (one field each): the first is, as before."""
    from recsys.io.text import csv_records

    lines = ["\n", "title\n"] + [f"item {n}\n" for n in range(30)]
    records = list(csv_records("one.csv", lines))
    assert records[0] == (2, ["title"]) and records[1] == (3, ["item 0"]) and len(records) == 31
    # a header whose first column is `#...` is one
    assert list(csv_records("h.csv", ["#id,title\n", "1,a\n"])) == [(1, ["#id", "title"]), (2, ["1", "a"])]


def test_skipping_bad_lines_leaves_out_items_rows_that_break_the_contract(tmp_path: Path) -> None:
    """One empty title or repeated id in a shop's export need not stop it: with
    on_bad_lines="skip" such rows are left out, each kind said with its rows; the first of a
    repeated item_id is kept. Without it the first is refused, as before."""
    path = tmp_path / "items.csv"
    path.write_text("item_id,title\nA1,Red shirt\nA2,\n,Lamp\nA1,Blue shirt\nA3,Oak table\n")
    frame, report = read_items(path, on_bad_lines="skip")
    assert frame["item_id"].tolist() == ["A1", "A3"] and frame["title"].tolist() == ["Red shirt", "Oak table"]
    assert report.skipped_lines == [3, 4, 5]
    assert "skipped 1 row with no title (rows 3)" in report.notices
    assert "skipped 1 row repeating an earlier row's item_id (rows 5)" in report.notices
    with pytest.raises(DataError, match="expected a non-empty item_id"):
        read_items(path)
    path.write_text("item_id,title\nA1,\n")
    with pytest.raises(DataError, match="no row is left"):
        read_items(path, on_bad_lines="skip")


def test_a_row_repeated_whole_is_its_item_once(tmp_path: Path) -> None:
    """A feed exported twice into one file, or a file appended to itself, repeats rows whole:
    each is its item once, said; a repeated item_id whose row says something else is refused."""
    path = tmp_path / "items.csv"
    path.write_text("item_id,title,color\nA1,Red shirt,red\nA2,Blue shirt,blue\nA1,Red shirt,red\n"
                    "A2,Blue shirt,blue\nA3,Oak table,\n")
    frame, report = read_items(path)
    assert frame["item_id"].tolist() == ["A1", "A2", "A3"] and report.dropped_duplicates == 2
    assert report.notices == ["dropped 2 duplicate rows identical to an earlier row (first on row 4)"]
    path.write_text("item_id,title,color\nA1,Red shirt,red\nA1,Red shirt,red\nA1,Red shirt,crimson\n")
    with pytest.raises(DataError, match="row 4, column 'item_id': item_id 'A1' already appears on row 2"):
        read_items(path)


def test_error_carries_row_and_column() -> None:
    with pytest.raises(DataError) as caught:
        read_items(BAD / "items_duplicate_id.csv")
    error = caught.value
    assert (error.file, error.row, error.column) == (
        str(BAD / "items_duplicate_id.csv"),
        4,
        "item_id",
    )


# --- broken inputs built in the test -------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "nope.csv")
    assert _message(path) == f"{path}: file not found"


def test_directory_instead_of_file(tmp_path: Path) -> None:
    assert _message(str(tmp_path)) == f"{tmp_path}: is a directory; expected a file"


def test_enormous_cell(tmp_path: Path) -> None:
    path = _write(tmp_path, "items.csv", b"item_id,title\nA1,x\nA2," + b"y" * 100_001 + b"\n")
    assert _message(path) == (
        f"{path}, row 3, column 'title': the cell holds 100,001 characters; the limit is 100,000"
    )


def test_cell_beyond_the_csv_module_limit(tmp_path: Path) -> None:
    path = _write(tmp_path, "items.csv", b"item_id,title\nA1,x\nA2," + b"y" * 200_000 + b"\n")
    assert _message(path) == f"{path}, row 3: a cell is longer than the limit of 100,000 characters"


def test_cell_at_the_limit_is_fine(tmp_path: Path) -> None:
    path = _write(tmp_path, "items.csv", b"item_id,title\nA1," + b"y" * MAX_CELL_CHARS + b"\n")
    items, _ = read_items(path)
    assert len(items.loc[0, "title"]) == MAX_CELL_CHARS


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            b"PK\x03\x04\x14\x00",
            "looks like a zip archive, not CSV text (an .xlsx workbook is one); export it as CSV",
        ),
        (
            b"\x1f\x8b\x08\x00",
            "looks like a gzip-compressed file, not CSV text; decompress it first",
        ),
        (
            "item_id,title\n".encode("utf-16"),
            "looks like UTF-16 text; save it as UTF-8 or pass --encoding utf-16",
        ),
    ],
    ids=["zip", "gzip", "utf16"],
)
def test_not_csv_text(tmp_path: Path, data: bytes, expected: str) -> None:
    path = _write(tmp_path, "items.csv", data)
    assert _message(path) == f"{path}: {expected}"


def test_unknown_encoding(tmp_path: Path) -> None:
    path = _write(tmp_path, "items.csv", b"item_id,title\nA1,x\n")
    assert _message(path, encoding="klingon") == (
        f"{path}: unknown encoding 'klingon'; try utf-8 or cp1252"
    )


def test_wrong_named_encoding(tmp_path: Path) -> None:
    path = _write(tmp_path, "items.csv", b"item_id,title\nA1,caf\xc3\xa9\n")
    assert _message(path, encoding="ascii") == (
        f"{path}, row 2: byte 0xc3 at byte offset 20 is not valid ascii; "
        "if the file uses another encoding, name it, with --encoding"
    )


def test_fewer_fields_is_ragged_too(tmp_path: Path) -> None:
    path = _write(tmp_path, "items.csv", b"item_id,title,color\nA1,x,red\nA2,y\n")
    assert _message(path) == (
        f"{path}, row 3: expected 3 fields, found 2. Quote values that contain commas "
        '("a, b"), or pass --on-bad-lines skip (`"on_bad_lines": "skip"` in POST /admin/train) to skip such '
        "lines (they are listed in the report)"
    )


def test_long_value_is_truncated_in_the_message(tmp_path: Path) -> None:
    path = _write(tmp_path, "interactions.csv", b"query,item_id,label\nq,A1," + b"x" * 60 + b"\n")
    assert _message(path) == (
        f"{path}, row 2, column 'label': expected a finite number >= 0, "
        f"found {'x' * 40!r}... (60 characters)"
    )


def test_rows_are_numbered_by_the_line_where_a_record_starts(tmp_path: Path) -> None:
    data = b'item_id,title\nA1,"two\nline title"\nA2,"three\nline\ntitle"\nA3,\n'
    path = _write(tmp_path, "items.csv", data)
    assert _message(path) == (
        f"{path}, row 7, column 'title': expected a non-empty title, found an empty cell"
    )


def test_bad_line_after_a_multiline_record(tmp_path: Path) -> None:
    path = _write(tmp_path, "items.csv", b'item_id,title\nA1,"a\nb"\nA2,x,y\n')
    _, report = read_items(path, on_bad_lines="skip")
    assert report.skipped_lines == [4]


def test_all_lines_bad_when_skipping(tmp_path: Path) -> None:
    path = _write(tmp_path, "items.csv", b"item_id,title\nA1,x,y\nA2,x,y\n")
    assert _message(path, on_bad_lines="skip") == (
        f"{path}: no data rows left after skipping 2 bad lines"
    )


def test_rows_count_from_the_header_after_leading_blank_lines(tmp_path: Path) -> None:
    path = _write(tmp_path, "items.csv", b"\n\nitem_id,heading\nA1,x\n")
    assert _message(path) == (
        f"{path}, row 3: missing required column 'title'; found columns: 'item_id', 'heading'"
        + rename_hint('heading = "title"')
    )


def test_on_bad_lines_must_be_known(tmp_path: Path) -> None:
    path = _write(tmp_path, "items.csv", b"item_id,title\nA1,x\n")
    with pytest.raises(InputError, match="on_bad_lines must be 'error' or 'skip', got 'warn'"):
        read_items(path, on_bad_lines="warn")


def test_a_bad_line_is_reported_before_a_missing_column(tmp_path: Path) -> None:
    path = _write(tmp_path, "items.csv", b"pid,heading\n1,a\n2,b,c\n")
    assert _message(path).startswith(f"{path}, row 3: expected 2 fields, found 3.")
    assert _message(path, on_bad_lines="skip") == (
        f"{path}, row 1: missing required columns 'item_id', 'title'; found columns: 'pid', "
        "'heading'" + rename_hint('pid = "item_id"', 'heading = "title"')
    )


def test_the_whole_files_encoding_is_checked_before_its_records(tmp_path: Path) -> None:
    # the file is read a block at a time (4 MiB): a byte that is not UTF-8 in a later block is
    # still reported before a bad line in the first, as when the file was decoded whole
    filler = b"".join(b"A%d,title %d\n" % (i, i) for i in range(400_000))
    assert len(filler) > 5 * 2**20
    path = _write(tmp_path, "items.csv", b"item_id,title\nA,b,c\n" + filler + b"B,caf\xe9\n")
    offset = len(b"item_id,title\nA,b,c\n" + filler) + 5
    assert _message(path) == (
        f"{path}, row 400003: byte 0xe9 at byte offset {offset} is not valid UTF-8; "
        "if the file uses another encoding, name it, e.g. --encoding cp1252"
    )
    binary = _write(tmp_path, "binary.csv", b"item_id,title\n" + b"\xe9,x\n" + filler + b"B,\x00\n")
    assert _message(binary).endswith("this looks like a binary file, not CSV text")



@pytest.mark.parametrize("block_bytes", [1, 3, 7, 1 << 22])
def test_binary_content_after_a_bad_byte_is_what_the_file_is_told_by(tmp_path: Path,
                                                                     block_bytes: int) -> None:
    # one pass checks each block for binary content and decodes it: a bad byte is held until
    # the whole file is found free of binary content, in whichever block either of them is
    from recsys.io.text import check_text

    head = b"item_id,title\nA1,caf\xe9\nA2,"  # 0xe9 at byte 20, row 2
    cases = [
        (head + b"x\x00y\n", "row 3: contains a NUL byte at byte offset 26; "
                              "this looks like a binary file, not CSV text"),
        (head + b"xy\n", "row 2: byte 0xe9 at byte offset 20 is not valid UTF-8; "
                         "if the file uses another encoding, name it, e.g. --encoding cp1252"),
        # a character split by the blocks decodes; one cut off by the file's end is named
        (b"item_id,title\nA1,\xe2\x82\xac\nA2,\xe2\x82", "row 3: byte 0xe2 at byte offset 24 is not "
         "valid UTF-8; if the file uses another encoding, name it, e.g. --encoding cp1252"),
    ]
    for data, expected in cases:
        path = _write(tmp_path, "items.csv", data)
        with pytest.raises(DataError) as caught:
            check_text(path, None, block_bytes)
        assert str(caught.value) == f"{path}, {expected}"
    zipped = _write(tmp_path, "items.zip", b"PK\x03\x04\x14\x00\xe9")
    with pytest.raises(DataError, match="looks like a zip archive"):
        check_text(zipped, "klingon")  # before the encoding that is not one
    path = _write(tmp_path, "items.csv", b"item_id,title\nA1,\xe2\x82\xac\n")
    check_text(path, None, block_bytes)
    assert read_items(path)[0].to_numpy().tolist() == [["A1", "\u20ac"]]


def test_repeated_cells_read_as_they_are(tmp_path: Path) -> None:
    rows = [f"A{i},title {i},{('red', 'blue')[i % 2]},{i % 3}" for i in range(10_000)]
    path = _write(tmp_path, "items.csv", ("item_id,title,color,size\n" + "\n".join(rows)).encode())
    items, _ = read_items(path)
    assert items.to_numpy().tolist() == [r.split(",") for r in rows]


# --- messy but valid input -----------------------------------------------------------------------


def test_items_are_stripped_strings_with_other_columns_kept(tmp_path: Path) -> None:
    path = _write(tmp_path, "items.csv", b"item_id, title ,price,color\n A1 , Red shirt ,19.90,\n")
    items, report = read_items(path)
    assert list(items.columns) == ["item_id", "title", "price", "color"]
    assert items.iloc[0].tolist() == ["A1", "Red shirt", "19.90", ""]
    assert all(dtype == "str" for dtype in items.dtypes)
    assert report == ReadReport(rows=1, skipped_lines=[], encoding="utf-8")


def test_utf8_with_bom(tmp_path: Path) -> None:
    path = _write(tmp_path, "items.csv", b"\xef\xbb\xbfitem_id,title\nA1,Caf\xc3\xa9\n")
    items, _ = read_items(path)
    assert list(items.columns) == ["item_id", "title"]
    assert items.loc[0, "title"] == "Café"


def test_latin1_when_named() -> None:
    items, report = read_items(BAD / "items_not_utf8.csv", encoding="latin-1")
    assert items["title"].tolist() == ["Red shirt", "Café table"]
    assert report.encoding == "latin-1"


@pytest.mark.parametrize("streamed", [False, True], ids=["file", "stream"])
def test_a_log_s_empty_queries_are_left_out_when_asked_and_every_notice_told(tmp_path: Path, streamed) -> None:
    """With --on-bad-lines skip a search log's rows with an empty query (clicks from browsing)
    are left out and counted; empty weights and columns not read are notices (printed by
    `recsys train`), not only warnings; the file read whole and streamed in chunks agree."""
    data = b"query,item_id,label,weight,store\nlamp,A1,1,,x\n,A2,1,1,x\n  ,A1,1,2,x\nchair,A2,1,,x\nlamp,A1,1,,y\n"
    path = _write(tmp_path, "interactions.csv", data)
    ids = {"A1", "A2"}
    if streamed:
        stream = InteractionStream(path, ids, on_bad_lines="skip", chunk_rows=2)
        rows = pd.concat(list(stream))
        report = stream.report
    else:
        rows, report = read_interactions(path, ids, on_bad_lines="skip")
    assert rows["query"].tolist() == ["lamp", "chair"]
    assert report.notices == ["skipped 2 rows with an empty query (rows 3, 4)",
                              "3 empty weight cells taken as 1.0", "ignored columns: store",
                              "dropped 1 duplicate row identical to an earlier row (first on row 6): a repeated "
                              "row counts once; to count each click, give the rows a timestamp or user_id "
                              "column, or the count as weight"]
    assert report.skipped_lines == [3, 4] and report.empty_queries == 2
    with pytest.raises(DataError, match=r"row 3, column 'query'.*1 more row.*--on-bad-lines skip"):
        read_interactions(path, ids)


def test_an_id_written_with_spaces_around_it_names_its_item(tmp_path: Path) -> None:
    """Cells are read stripped, so an id asked for as the file writes it, spaces and all, is
    the item's (in `similar`, `explain`, events and exclusions alike: `Catalog.canonical`)."""
    from recsys.catalog import Catalog
    from recsys.errors import UnknownItemError
    data = b'item_id,title\n" leading",Brass Lamp\n"trailing ",Oak Chair\n'
    items, _ = read_items(_write(tmp_path, "items.csv", data))
    catalog = Catalog.build(items, {})
    assert catalog.item_ids == ["leading", "trailing"]
    assert catalog.idx(" leading") == 0 and catalog.canonical("trailing ") == "trailing"
    assert catalog.canonical(" nope ") == " nope "
    with pytest.raises(UnknownItemError, match="' nope'"):
        catalog.idx(" nope")


def test_the_encoding_the_error_names_reads_an_excel_export(tmp_path: Path) -> None:
    """Excel's Windows-1252 export (euro sign, en dash) fails as UTF-8, and the encoding the error
    names reads it as written: latin-1 would read it too, with control characters in place."""
    path = _write(tmp_path, "items.csv", "item_id,title\nA1,Café – Tasse €5\n".encode("cp1252"))
    with pytest.raises(DataError, match="--encoding cp1252"):
        read_items(path)
    items, _ = read_items(path, encoding="cp1252")
    assert items.loc[0, "title"] == "Café – Tasse €5"


def test_quoted_commas_newlines_and_crlf(tmp_path: Path) -> None:
    data = b'item_id,title,description\r\nA1,"Shirt, red","line one\r\nline two"\r\nA2,Plain,x\r\n'
    items, report = read_items(_write(tmp_path, "items.csv", data))
    assert items["title"].tolist() == ["Shirt, red", "Plain"]
    assert items.loc[0, "description"] == "line one\r\nline two"
    assert report.rows == 2


def test_blank_lines_and_empty_spreadsheet_rows_are_not_data(tmp_path: Path) -> None:
    data = b"item_id,title\n\nA1,x\n,\n  \nA2,y\n\n\r\n\n"
    items, report = read_items(_write(tmp_path, "items.csv", data))
    assert items["item_id"].tolist() == ["A1", "A2"]
    assert report.skipped_lines == []


def test_empty_unnamed_column_is_dropped_with_a_warning(tmp_path: Path) -> None:
    items, report = read_items(_write(tmp_path, "items.csv", b"item_id,title,\nA1,x,\nA2,y,\n"))
    assert list(items.columns) == ["item_id", "title"]
    assert report.warnings == ["dropped 1 empty column with no name"]


def test_skip_bad_lines_lists_them() -> None:
    items, report = read_items(BAD / "items_ragged.csv", on_bad_lines="skip")
    assert items["item_id"].tolist() == ["A1", "A3"]
    assert report.skipped_lines == [3, 5]
    assert report.rows == 2
    assert report.warnings == [
        "skipped 2 lines with the wrong number of fields (expected 3): lines 3, 5"
    ]


def test_interactions_labels_weights_and_duplicates(tmp_path: Path) -> None:
    data = (
        b"query,item_id,label,weight,user_id,timestamp,source\n"
        b"red shirt,A1,0.5,2,u1,2024-01-01,web\n"
        b"red shirt,A2,0,,u1,2024-01-01,web\n"
        b"red shirt,A1,0.5,2,u1,2024-01-01,web\n"
        b"blue shirt, A3 ,3,1.5,u2,2024-01-02,app\n"
    )
    frame, report = read_interactions(_write(tmp_path, "interactions.csv", data), ITEM_IDS)
    assert list(frame.columns) == ["query", "item_id", "label", "weight", "user_id", "timestamp"]
    assert frame["item_id"].tolist() == ["A1", "A2", "A3"]
    assert frame["label"].tolist() == [0.5, 0.0, 3.0]
    assert frame["weight"].tolist() == [2.0, 1.0, 1.5]
    assert (report.rows, report.dropped_duplicates) == (3, 1)
    assert report.warnings == [
        "1 empty weight cell taken as 1.0",
        "ignored columns: source",
        "dropped 1 duplicate row identical to an earlier row (first on row 4): a repeated row counts once; "
        "to count each click, give the rows a timestamp or user_id column, or the count as weight",
    ]
    assert report.notices == report.warnings  # each printed by `recsys train`


def test_interactions_labels_from_events(tmp_path: Path) -> None:
    data = b"query,item_id,event\nq,A1,impression\nq,A2,Click\nq,A3,cart\nr,A1,purchase\n"
    frame, report = read_interactions(_write(tmp_path, "interactions.csv", data), ITEM_IDS)
    assert frame["label"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert frame["weight"].tolist() == [1.0] * 4
    assert report.warnings == []


def test_label_wins_over_event(tmp_path: Path) -> None:
    data = b"query,item_id,label,event\nq,A1,2,view\n"
    frame, report = read_interactions(_write(tmp_path, "interactions.csv", data), ITEM_IDS)
    assert frame["label"].tolist() == [2.0]
    assert report.warnings == ["ignored columns: event"]


def test_judgments(tmp_path: Path) -> None:
    data = b"query,item_id,grade\nq,A1,2\nq,A1,2\nq,A2,1.5\nq,A2,0\n"
    frame, report = read_judgments(_write(tmp_path, "judgments.csv", data), ITEM_IDS)
    assert list(frame.columns) == ["query", "item_id", "grade"]
    assert frame["grade"].tolist() == [2.0, 1.5, 0.0]
    assert report.dropped_duplicates == 1
    assert report.warnings == [
        "dropped 1 duplicate row identical to an earlier row (first on row 3)",
        "1 query-item pair is graded more than once, with different grades",
    ]


def test_read_table_checks_structure_only(tmp_path: Path) -> None:
    frame, report = read_table(_write(tmp_path, "any.csv", b"a,b\n1,2\n"))
    assert frame.iloc[0].tolist() == ["1", "2"]
    assert report.rows == 1


# --- schema and fingerprint ----------------------------------------------------------------------


def test_schema_load(tmp_path: Path) -> None:
    text = (
        '[columns]\nbaseColour = "color"\nusage = "Style"\n'
        'articleType = "other"\nyear = "ignore"\n'
    )
    path = tmp_path / "schema.toml"
    path.write_text(text)
    schema = Schema.load(path)
    assert schema.columns == {
        "basecolour": "color",
        "usage": "style",
        "articletype": "other",
        "year": "ignore",
    }
    assert Schema().columns == {}


def test_schema_names_one_column_twice(tmp_path: Path) -> None:
    path = tmp_path / "schema.toml"
    path.write_text('[columns]\nbaseColour = "color"\nbasecolour = "other"\n')
    with pytest.raises(DataError) as caught:
        Schema.load(path)
    assert str(caught.value) == (
        f"{path}: [columns] basecolour: names the same column as another entry, with another facet"
    )


def test_schema_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "schema.toml"
    with pytest.raises(DataError, match=r"schema\.toml: file not found$"):
        Schema.load(path)


def test_fingerprint(tmp_path: Path) -> None:
    path = _write(tmp_path, "items.csv", b"item_id,title\nA1,x\n")
    assert fingerprint(path) == "sha256:" + hashlib.sha256(b"item_id,title\nA1,x\n").hexdigest()
    with pytest.raises(DataError, match="file not found"):
        fingerprint(tmp_path / "nope.csv")


# --- real catalogues, when present next to the project (never copied into it) --------------------

STYLES = REAL / "fashion" / "styles.csv"
HOMEDEPOT = REAL / "homedepot"


@pytest.mark.skipif(not STYLES.exists(), reason="real fashion catalogue not present")
def test_real_fashion_catalogue_bad_lines() -> None:
    with pytest.raises(DataError) as caught:
        read_items(STYLES)
    assert caught.value.row == 6044
    assert "expected 10 fields, found 11; 21 more lines" in str(caught.value)
    frame, report = read_table(STYLES, on_bad_lines="skip")
    assert (len(frame), report.rows, len(report.skipped_lines)) == (44_424, 44_424, 22)
    assert report.skipped_lines[0] == 6044


@pytest.mark.skipif(not HOMEDEPOT.exists(), reason="real Home Depot data not present")
def test_real_homedepot_loads() -> None:
    items, _ = read_items(HOMEDEPOT / "items.csv")
    interactions, report = read_interactions(HOMEDEPOT / "interactions.csv", set(items["item_id"]))
    assert len(items) == 54_667
    assert (len(interactions), report.skipped_lines) == (58_875, [])


# --- schema: renames, missing markers, lexicon ---------------------------------------------------

FASHION_HEADER = (
    "id,gender,masterCategory,subCategory,articleType,baseColour,season,year,usage,productDisplayName\n"
)


def _schema(tmp_path: Path, text: str) -> Schema:
    path = tmp_path / "schema.toml"
    path.write_text(text)
    return Schema.load(path)


def _schema_message(tmp_path: Path, text: str) -> str:
    path = tmp_path / "schema.toml"
    path.write_text(text)
    with pytest.raises(DataError) as caught:
        Schema.load(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    return message.removeprefix(f"{path}: ")


def test_schema_rename_missing_and_lexicon(tmp_path: Path) -> None:
    schema = _schema(tmp_path, (
        '[rename]\nid = "item_id"\nproductDisplayName = "title"\n'
        '[columns]\nusage = "style"\n'
        '[missing]\nvalues = ["NA", "n/a"]\n'
        '[lexicon]\nbuiltin = true\n[lexicon.color]\nteal = ["peacock", "petrol"]\n'
        '[lexicon.Pattern]\nstriped = "stripes"\n'
    ))
    assert schema.rename == {"id": "item_id", "productDisplayName": "title"}
    assert schema.columns == {"usage": "style"}
    assert schema.missing == ("NA", "n/a")
    assert schema.lexicon.enabled and schema.lexicon.builtin
    assert schema.lexicon.entries == {"color": {"teal": ["peacock", "petrol"]},
                                      "pattern": {"striped": ["stripes"]}}
    assert Schema.from_json(schema.to_json()) == schema  # a model version keeps it whole
    assert schema.to_json()["rename"] == schema.rename
    assert Schema().rename == {} and Schema().lexicon.enabled and Schema().missing == ()


def test_schema_without_columns_table_is_fine(tmp_path: Path) -> None:
    schema = _schema(tmp_path, "[lexicon]\nenabled = false\n")
    assert schema.columns == {} and not schema.lexicon.enabled


OTHER_TARGETS = "query, label, event, weight, user_id, timestamp, grade, word, facet, value"


@pytest.mark.parametrize(("text", "expected"), [
    ('[rename]\nusage = "style"\n',
     "[rename] usage: unknown target 'style'; a column can be renamed to one of item_id, title, "
     f'description, attributes, {OTHER_TARGETS} (to feed a facet, use [columns] usage = "style")'),
    ('[rename]\nsku = "product_id"\n',
     "[rename] sku: unknown target 'product_id'; a column can be renamed to one of item_id, title, "
     f"description, attributes, {OTHER_TARGETS}"),
    ('[rename]\nid = "item_id"\nsku = "item_id"\n',
     "[rename] sku: renames a second column to 'item_id' (so does 'id')"),
    ("[rename]\nid = 3\n", '[rename] id: expected a column name in quotes, e.g. id = "item_id", found 3'),
    ('rename = "id"\n', "expected a [rename] table of column = contract column, e.g. id = \"item_id\", "
     "found 'id'"),
    ("[lexicon]\nenabled = 'no'\n", "[lexicon] enabled: expected true or false, found 'no'"),
    ("[lexicon]\ncolour = 3\n",
     "[lexicon] colour: unknown setting; expected enabled = true/false, builtin = true/false or a "
     'word table such as [lexicon.color] with teal = ["peacock", "petrol"]'),
    ("[lexicon.color]\nteal = [1]\n",
     '[lexicon.color] teal: expected a list of words in quotes, e.g. teal = ["word", "two words"], '
     "found [1]"),
    ("[missing]\nvalues = 'NA'\n",
     "[missing] values: expected a list of non-empty strings, e.g. [\"NA\"], found 'NA'"),
    ("[missing]\nmarkers = ['NA']\n", '[missing] markers: unknown setting; expected values = ["NA", ...]'),
    ("missing = ['NA']\n", 'expected a [missing] table of values = [markers of an empty cell], e.g. '
     "values = [\"NA\"], found ['NA']"),
    ('[lexicon.Ignore]\nx = "y"\n', "[lexicon] Ignore: not a usable kind name"),
    ('[lexicon.color]\n" " = ["y"]\n', "[lexicon.color]: a canonical value must not be empty"),
    ('[lexicon]\nbuiltin = 0\n', "[lexicon] builtin: expected true or false, found 0"),
    ('[rename]\nsku = "id"\n[columns]\nyear = 2012\n',  # two problems: [columns] is checked first
     "[columns] year: expected a facet name in quotes, found 2012"),
])
def test_schema_errors_name_the_entry(tmp_path: Path, text: str, expected: str) -> None:
    assert _schema_message(tmp_path, text) == expected


def test_read_items_renames_columns(tmp_path: Path) -> None:
    path = _write(tmp_path, "styles.csv", (FASHION_HEADER + "7,Men,Apparel,Topwear,Shirts,Navy Blue,"
                                           "Fall,2011,Casual,Turtle Men Navy Shirt\n").encode())
    items, report = read_items(path, rename={"id": "item_id", "productDisplayName": "title"})
    assert items.loc[0, "item_id"] == "7" and items.loc[0, "title"] == "Turtle Men Navy Shirt"
    assert "id" not in items.columns and "productDisplayName" not in items.columns
    assert "renamed columns: id -> item_id, productDisplayName -> title" in report.warnings
    items, _ = read_items(path, rename={"ID": "item_id", "productdisplayname": "title"})  # any case
    assert list(items.columns[:1]) == ["item_id"]


def test_read_items_without_rename_maps_the_export_names(tmp_path: Path) -> None:
    path = _write(tmp_path, "styles.csv", (FASHION_HEADER + "7,Men,A,T,S,Navy,Fall,2011,Casual,x\n").encode())
    items, report = read_items(path)
    assert (items.loc[0, "item_id"], items.loc[0, "title"]) == ("7", "x")
    assert report.renamed == {"id": "item_id", "productDisplayName": "title"}


def test_rename_onto_an_existing_column_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "items.csv", b"id,item_id,title\n1,A1,x\n")
    with pytest.raises(DataError) as caught:
        read_items(path, rename={"id": "item_id"})
    assert str(caught.value) == (
        f"{path}, row 1, column 'item_id': cannot rename 'id' to 'item_id': the file already has a "
        "column 'item_id'; remove that [rename] entry or one of the two columns"
    )


def test_rename_swapping_two_columns_is_fine(tmp_path: Path) -> None:
    path = _write(tmp_path, "items.csv", b"title,name\nA1,Red shirt\n")
    items, _ = read_items(path, rename={"title": "item_id", "name": "title"})
    assert items.iloc[0].to_dict() == {"item_id": "A1", "title": "Red shirt"}


def test_rename_of_a_column_the_file_lacks_is_named_when_its_column_is_missing(tmp_path: Path) -> None:
    # [rename] applies to every file: an entry another file has is no error here, unless the
    # column it names is the one this file lacks
    path = _write(tmp_path, "items.csv", b"item_id,heading\nA1,x\n")
    with pytest.raises(DataError) as caught:
        read_items(path, rename={"productDisplayName": "title"})
    assert str(caught.value) == (
        f"{path}, row 1: missing required column 'title'; found columns: 'item_id', 'heading'; the "
        "schema's [rename] names 'productDisplayName', which this file does not have"
        + rename_hint('heading = "title"')
    )


def test_rename_with_an_unknown_target_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "items.csv", b"id,title\nA1,x\n")
    with pytest.raises(InputError, match="rename id: unknown target 'sku'"):
        read_items(path, rename={"id": "sku"})


def test_read_items_with_a_schema_applies_renames_and_missing_markers(tmp_path: Path) -> None:
    schema = _schema(tmp_path, '[rename]\nid = "item_id"\nproductDisplayName = "title"\n'
                               '[missing]\nvalues = ["NA"]\n')
    path = _write(tmp_path, "styles.csv", (FASHION_HEADER + "7,Men,Apparel,Topwear,Shirts,NA,Fall,"
                                           "2011,NA,NA\n").encode())
    items, report = read_items(path, schema=schema)
    row = items.iloc[0]
    assert (row["baseColour"], row["usage"], row["title"]) == ("", "", "NA")  # never the title
    assert "2 cells holding 'NA' taken as empty (baseColour 1, usage 1)" in report.warnings


# --- the fashion layout with unquoted commas: reported by line, never dropped silently ----------

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"
FASHION_SCHEMA = Path(__file__).resolve().parents[2] / "data" / "fashion_schema.toml"


def test_fashion_sample_bad_lines_are_named() -> None:
    schema = Schema.load(FASHION_SCHEMA)
    path = SAMPLES / "fashion_styles.csv"
    with pytest.raises(DataError) as caught:
        read_items(path, schema=schema)
    assert caught.value.row == 12
    assert "expected 10 fields, found 11; 1 more line has the wrong number of fields" in str(caught.value)
    items, report = read_items(path, schema=schema, on_bad_lines="skip")
    assert report.skipped_lines == [12, 19]
    assert len(items) == report.rows == 18
    assert "skipped 2 lines with the wrong number of fields (expected 10): lines 12, 19" in report.warnings


def test_skipping_bad_lines_skips_interactions_with_unknown_items_and_says_which() -> None:
    path = str(BAD / "interactions_unknown_item.csv")
    rows, report = read_interactions(path, {"A1"}, on_bad_lines="skip")
    assert rows["item_id"].tolist() == ["A1"]
    assert report.skipped_lines == [3, 4, 5]
    assert any("3 rows whose item_id is not in the items file: lines 3, 4, 5" in w for w in report.warnings)


@pytest.mark.parametrize(("cell", "problem"), [
    (b"x" * (MAX_ID_CHARS + 1), f"an item_id must be at most {MAX_ID_CHARS} characters, got "
                                f"{MAX_ID_CHARS + 1}: shorten it"),
    (b"..", "an item_id must not be '.' or '..'"),
    (b'"A\tB"', "an item_id must not contain control characters or lone surrogates, found '\\t' "
                "at position 1: remove it (found 'A\\tB')"),
])
def test_an_item_id_no_url_or_event_could_use_is_refused(tmp_path: Path, cell: bytes,
                                                        problem: str) -> None:
    """recsys.io.ids: the items file takes the ids the API takes, no more (a 300-character id
    was read, then refused by /events; '..' was read, then unreachable by its URL)."""
    path = _write(tmp_path, "items.csv", b"item_id,title\nA1,Red dress\n" + cell + b",Blue\n")
    message = _message(path)
    assert message.startswith(f"{path}, row 3, column 'item_id': {problem}"), message
    ok = _write(tmp_path, "items_ok.csv", b"item_id,title\n" + b"x" * MAX_ID_CHARS + b",Red\n")
    assert len(read_items(ok)[0]) == 1  # the limit itself is fine


def test_html_in_any_column_is_read_as_its_text(tmp_path: Path) -> None:
    """A shop export's descriptions are HTML (Shopify's `Body (HTML)`) and its titles hold
    entities: read as words, every tag was a word of every item ("strong" matched them all)."""
    path = tmp_path / "items.csv"
    path.write_text(
        "item_id,title,Body (HTML),color\n"
        'A1,Black &amp; Decker drill,"<p>Soft <strong>grip</strong>,<br/>2&nbsp;speeds</p>",red\n'
        'A2,Cable <3m & more,"<style>.x{color:red}</style><ul><li>USB-C</li><li>HDMI</li></ul>",<b>blue</b>\n'
        "A3,Plain title,plain words,green\n")
    items, report = read_items(path)
    assert items["title"].tolist() == ["Black & Decker drill", "Cable <3m & more", "Plain title"]
    assert items["description"].tolist() == ["Soft grip , 2 speeds", "USB-C HDMI", "plain words"]
    # a facet column too: WooCommerce's `Short description` was a value `<p>the pebble dutch oven.</p>`
    assert items["color"].tolist() == ["red", "blue", "green"]
    assert "4 cells with HTML markup read as its text (title 1, description 2, color 1)" in report.warnings


def test_items_given_as_records_lose_their_markup_too() -> None:
    items = items_from_records([{"item_id": "A1", "title": "Tom &amp; Jerry <i>mug</i>", "description": "<p>x</p>"}])
    assert items[["title", "description"]].values.tolist() == [["Tom & Jerry mug", "x"]]


def test_an_analytics_tools_log_reads_as_the_contracts(tmp_path: Path) -> None:
    """GA4's events export (`event_name` select_item / add_to_cart, `user_pseudo_id`,
    `event_timestamp`), a shop's "Add to Cart" with its `Session ID`, a report's "1,381" clicks:
    each was refused, or its clicks were dropped as repeats of one row."""
    ga4 = tmp_path / "ga4.csv"
    ga4.write_text("event_timestamp,event_name,user_pseudo_id,search_term,item_id\n"
                   "1709251200000001,select_item,111.1,linen shirt,A1\n"
                   "1709251300000001,select_item,222.2,linen shirt,A1\n"
                   "1709251400000001,add_to_cart,111.1,linen shirt,A1\n"
                   "1709251500000001,Product Clicked,333.3,beanie,B2\n"
                   "1709251600000001,purchase,333.3,beanie,B2\n")
    rows, report = read_interactions(ga4, {"A1", "B2"})
    assert rows["label"].tolist() == [1.0, 1.0, 2.0, 1.0, 3.0] and report.dropped_duplicates == 0
    assert rows["user_id"].tolist()[:2] == ["111.1", "222.2"]
    shop = tmp_path / "shop.csv"
    shop.write_text("Timestamp,Session ID,Search Term,Product Code/SKU,Action\n"
                    "2024-03-01T10:00:00Z,s1,linen shirt,A1,Click\n"
                    "2024-03-01T10:00:05Z,s1,linen shirt,A1,Add to Cart\n")
    rows, _ = read_interactions(shop, {"A1"}, rename={"Product Code/SKU": "item_id"})
    assert rows["label"].tolist() == [1.0, 2.0] and rows["user_id"].tolist() == ["s1", "s1"]
    ads = tmp_path / "ads.csv"
    ads.write_text('Search term,Item ID,Clicks\nlinen shirt,A1,"1,381"\nbeanie,B2,12\n')
    assert read_interactions(ads, {"A1", "B2"})[0]["label"].tolist() == [1381.0, 12.0]
    ads.write_text('Search term,Item ID,Clicks\nlinen shirt,A1,"1,5"\n')  # a decimal comma: no count
    with pytest.raises(DataError, match="expected a finite number >= 0, found '1,5'"):
        read_interactions(ads, {"A1"})
    shop.write_text("query,item_id,event\nlinen shirt,A1,wishlist\n")
    with pytest.raises(DataError, match=r"one of impression, click, cart, purchase \(or as analytics tools"):
        read_interactions(shop, {"A1"})


def test_the_rename_line_a_header_error_offers_keeps_the_schemas_own_entries(tmp_path: Path) -> None:
    """Told for the items file and then for the log to put `rename = {...}` at the top, a shop
    had two rename lines, a TOML error. The line offered holds the schema's entries too."""
    path = _write(tmp_path, "interactions_busquedas.csv", b"pregunta,producto,veces\nvestido,A1,1\n")
    message = _message(path, rename={"nombre": "title", "producto": "item_id"})
    assert message.endswith('(in place of its rename line): rename = {nombre = "title", producto = "item_id", '
                           'pregunta = "query", veces = "label"}'), message
