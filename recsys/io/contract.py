"""The contract pass of reading a CSV file: its columns mapped to the contract's names, and
every cell value checked (ids, labels, weights, duplicates, unknown items, empty-cell markers).
Each problem is a `DataError` naming the file, the row, the column, what was expected and what
was found."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from recsys.errors import DataError
from recsys.facets import RESERVED_COLUMNS

from .headers import (
    HeaderMap,
    check_rename,
    is_code_column,
    map_header,
    normalized,
)
from .ids import item_id_problem
from .money import currencies
from .text import Table, and_more, counted, show_value

EVENT_LABELS: dict[str, float] = {"impression": 0.0, "click": 1.0, "cart": 2.0, "purchase": 3.0}
# what a search log's `event` column may say for each (`headers.normalized`: case, spaces and
# underscores aside): analytics exports name them their own way, GA4 `select_item` and
# `add_to_cart`, Segment "Product Clicked" and "Order Completed", a shop "Add to Cart"
EVENT_NAMES: dict[str, tuple[str, ...]] = {
    "impression": ("impression", "impressions", "viewitemlist", "viewsearchresults",
                   "productlistviewed", "productimpression"),
    "click": ("click", "clicks", "selectitem", "viewitem", "productclicked", "productviewed"),
    "cart": ("cart", "addtocart", "addedtocart", "productadded", "addtobasket", "addtobag"),
    "purchase": ("purchase", "purchased", "order", "ordercompleted", "checkoutcompleted", "buy"),
}
_EVENT_OF = {name: event for event, names in EVENT_NAMES.items() for name in names}


_EXAMPLES = 3  # rows shown of those skipped for an unknown item
_ERROR_INSTEAD = "; --unknown-items error stops at them instead"


# --- contract pass: columns and values ----------------------------------------------------------


def map_columns(table: Table, contract: str, rename: Mapping[str, str] | None) -> HeaderMap:
    """Rename the table's columns to `contract`'s names (`recsys.io.headers.map_header`), said in
    the report."""
    header = map_header(table.name, table.header_line, list(table.frame.columns), contract,
                        check_rename(dict(rename), "rename") if rename else None)
    if header.renamed:
        table.frame = table.frame.rename(columns=header.renamed)
        table.report.renamed = dict(header.renamed)
        table.report.warnings.append(f"renamed columns: {header.describe()}")
    return header


def _fail(
    table: Table, mask: pd.Series | np.ndarray, column: str, expected: str, more: str = "", fix: str = ""
) -> None:
    """Raise for the first row where `mask` is true, counting the others; `fix` ("; ...") after."""
    mask = np.asarray(mask, dtype=bool)
    if not mask.any():
        return
    first = int(mask.argmax())
    others = int(mask.sum()) - 1
    more = more or and_more(others, "row", "the same problem")
    found = show_value(table.frame[column].iloc[first])
    message = f"expected {expected}, found {found}{more}{fix}"
    raise DataError(table.name, message, table.lines[first], column)


def check_nonempty(table: Table, column: str, fix: str = "") -> None:
    """Refuses the first row whose `column` is empty; `fix` ("; ...") is said after the count."""
    _fail(table, table.frame[column] == "", column, f"a non-empty {column}", fix=fix)


def skipped_rows_notice(lines: list[int], why: str) -> str:
    shown = ", ".join(map(str, lines[:_EXAMPLES])) + (", ..." if len(lines) > _EXAMPLES else "")
    return f"skipped {counted(len(lines), 'row')} {why} (rows {shown})"


def check_item_ids(table: Table) -> None:
    """Every item_id valid as `recsys.io.ids` defines it (the first bad one named, the others
    counted)."""
    problems = [item_id_problem(v) for v in table.frame["item_id"]]
    bad = [i for i, p in enumerate(problems) if p is not None]
    if not bad:
        return
    first = bad[0]
    found = show_value(table.frame["item_id"].iloc[first])
    more = and_more(len(bad) - 1, "row", "a bad item_id")
    raise DataError(table.name, f"{problems[first]} (found {found}){more}", table.lines[first],
                    "item_id")


def drop_repeated_items(table: Table) -> None:
    """Rows identical in every column to an earlier row of the same item_id (a feed exported
    twice into one file, a file appended to itself) are that item once: left out and said. A
    repeated item_id whose row says something else is still refused (`check_unique`)."""
    frame = table.frame
    repeated = frame["item_id"].duplicated().to_numpy()
    if not repeated.any():
        return
    same = repeated & frame.duplicated().to_numpy()
    if not same.any():
        return
    count = int(same.sum())
    table.report.warnings.append(duplicates_warning(count, table.lines[int(same.argmax())]))
    table.report.notices.append(table.report.warnings[-1])
    table.report.dropped_duplicates += count
    table.frame = frame[~same].reset_index(drop=True)
    table.lines = [line for line, out in zip(table.lines, same, strict=True) if not out]


def check_unique(table: Table, column: str) -> None:
    values = table.frame[column]
    repeated = values.duplicated().to_numpy()
    if not repeated.any():
        return
    later = int(repeated.argmax())
    earlier = int((values == values.iloc[later]).to_numpy().argmax())
    others = int(repeated.sum()) - 1
    more = and_more(others, "row", f"a repeated {column}")
    raise DataError(
        table.name,
        f"{column} {show_value(values.iloc[later])} already appears on row {table.lines[earlier]}; "
        f"{column}s must be unique{more}",
        table.lines[later],
        column,
    )


def resolve_aliases(table: Table, aliases: Mapping[str, str]) -> int:
    """Rows that name an item by another of its ids (`ReadReport.aliases`: a variant's SKU) are
    read as naming the item; how many did."""
    if not aliases:
        return 0
    ids = table.frame["item_id"]
    found = ids.map(aliases)
    named = found.notna().to_numpy()
    if named.any():
        table.frame["item_id"] = found.fillna(ids)
    return int(named.sum())


def aliases_note(n: int) -> str:
    return (f"{counted(n, 'row')} {'names' if n == 1 else 'name'} an item by a variant's id (its SKU, "
            "read into its product): read as that item")


def skip_unknown(table: Table, item_ids: set[str], examples: list[tuple[int, str, str]],
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
    skipped = drop_rows(table, ~known)
    table.report.unknown_items += len(skipped)
    table.report.warnings.append(unknown_items_warning(skipped, examples, instead))
    table.report.notices.append(table.report.warnings[-1])


def drop_rows(table: Table, bad: np.ndarray) -> list[int]:
    """Leave out the rows where `bad` is true, listed in the report's skipped lines; returns
    their lines."""
    skipped = [table.lines[i] for i in np.flatnonzero(bad)]
    table.frame = table.frame[~bad].reset_index(drop=True)
    table.lines = [line for line, out in zip(table.lines, bad) if not out]
    table.report.skipped_lines = sorted(table.report.skipped_lines + skipped)
    return skipped


# what the items contract refuses in a row, in the order `skip_bad_items` leaves such rows out
_ITEM_ROW_PROBLEMS: tuple[tuple[str, Callable[[pd.DataFrame], np.ndarray]], ...] = (
    ("with no item_id", lambda f: (f["item_id"] == "").to_numpy()),
    ("with a bad item_id", lambda f: np.array([item_id_problem(v) is not None for v in f["item_id"]], dtype=bool)),
    ("with no title", lambda f: (f["title"] == "").to_numpy()),
    ("repeating an earlier row's item_id", lambda f: f["item_id"].duplicated().to_numpy()),
)


def skip_bad_items(table: Table) -> None:
    """With `--on-bad-lines skip`: items rows the contract refuses (no item_id, a bad one, no
    title, an item_id seen on an earlier row) are left out and said in a warning each, as rows
    with the wrong number of fields are; the first of repeated ids is kept."""
    for why, problem in _ITEM_ROW_PROBLEMS:
        bad = problem(table.frame)
        if bad.any():
            table.report.warnings.append(skipped_rows_notice(drop_rows(table, bad), why))
            table.report.notices.append(table.report.warnings[-1])



def unknown_items_warning(skipped: list[int], examples: list[tuple[int, str, str]],
                           instead: str = _ERROR_INSTEAD) -> str:
    shown = ", ".join(str(line) for line in skipped[:10]) + (", ..." if len(skipped) > 10 else "")
    rows = "; ".join(f"line {line}: {query!r}, {show_value(item)}" for line, query, item in examples)
    return (f"skipped {counted(len(skipped), 'row')} whose item_id is not in the items file: lines "
            f"{shown} (first: {rows}){instead}")


def label_scale_note(header: HeaderMap, lowest: float) -> list[str]:
    """A note when a graded relevance read as the label never says "not relevant" (0)."""
    source = header.graded_label()
    if source is None or lowest < 1:
        return []
    return [f"every label (from {source!r}) is {lowest:g} or more, so every row counts as "
            f"chosen; if {lowest:g} means not relevant, subtract it in the file so that not "
            "relevant is 0"]


def check_known(table: Table, item_ids: set[str]) -> None:
    values = table.frame["item_id"]
    unknown = ~values.isin(item_ids).to_numpy()
    if not unknown.any():
        return
    others = int(unknown.sum()) - 1
    distinct = values[unknown].nunique()
    more = and_more(others, "row", f"unknown item_ids ({distinct:,} distinct)")
    _fail(table, unknown, "item_id", "an item_id from the items file", more)


# a count with its thousands grouped by commas, as analytics reports write them ("1,381"); "1,5"
# is no such count (a decimal comma, or a typo) and stays refused
_GROUPED = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?"


def numbers(
    table: Table, column: str, *, positive: bool, default: float | None = None
) -> pd.Series:
    text = table.frame[column]
    if default is not None:
        text = text.mask(text == "", str(default))
    values = pd.to_numeric(text, errors="coerce").astype(float)
    missed = values.isna()
    if missed.any():  # a report's "1,381" clicks, looked for among the cells that are no number
        grouped = text[missed][text[missed].str.fullmatch(_GROUPED)]
        values[grouped.index] = pd.to_numeric(grouped.str.replace(",", "", regex=False)).astype(float)
    bad = ~np.isfinite(values) | ((values <= 0) if positive else (values < 0))
    _fail(table, bad, column, f"a finite number {'> 0' if positive else '>= 0'}")
    return values


def labels(table: Table) -> pd.Series:
    if "label" in table.frame.columns:  # else `event` (map_header requires one of them)
        return numbers(table, "label", positive=False)
    names = table.frame["event"]
    # a log's rows say a few names: each is normalized once, not once a row
    events = names.map({name: _EVENT_OF.get(normalized(name)) for name in names.unique().tolist()})
    _fail(table, events.isna(), "event", f"one of {', '.join(EVENT_LABELS)} (or as analytics tools name them: "
                                         f"select_item, add_to_cart, purchase, Product Clicked, ...)")
    return events.map(EVENT_LABELS).astype(float)


def weights(table: Table) -> pd.Series:
    if "weight" not in table.frame.columns:
        return pd.Series(1.0, index=table.frame.index)
    empty = int((table.frame["weight"] == "").sum())
    if empty:
        table.report.warnings.append(empty_weights_warning(empty))
        table.report.notices.append(table.report.warnings[-1])
    return numbers(table, "weight", positive=True, default=1.0)


def empty_weights_warning(empty: int) -> str:
    return f"{counted(empty, 'empty weight cell')} taken as 1.0"


# a column's first filled cells read for a currency before all of it is: a column of prices
# names its currency from the first cells on
_CURRENCY_SAMPLE = 200


def note_mixed_currencies(table: Table) -> None:
    """Say which columns name prices in several currencies ("19,99 EUR", "USD 21.50"): they are
    compared as plain numbers (filters, ranges, a product's least), never converted."""
    for column in table.frame.columns:
        if column in RESERVED_COLUMNS:
            continue
        cells = table.frame[column]
        filled = cells[cells != ""]
        if filled.empty or not currencies(filled.iloc[:_CURRENCY_SAMPLE].tolist()):
            continue
        named = currencies(filled.unique().tolist())
        if len(named) > 1:
            table.report.warnings.append(
                f"column {column!r} names prices in {len(named)} currencies ({', '.join(named)}): they are "
                "compared as plain numbers (price filters, ranges, a product's least price), never converted; "
                "convert them to one currency in the export")
            table.report.notices.append(table.report.warnings[-1])


def note_ignored(table: Table, used: set[str]) -> None:
    ignored = [column for column in table.frame.columns if column not in used]
    if ignored:
        table.report.warnings.append(f"ignored columns: {', '.join(ignored)}")
        table.report.notices.append(table.report.warnings[-1])


def drop_duplicates(table: Table, frame: pd.DataFrame, events: bool = False) -> pd.DataFrame:
    """`frame` without rows identical to an earlier one, counted; `events` (a search log): said
    as a notice, with how to count repeated clicks (`repeated_events_notice`)."""
    repeated = frame.duplicated().to_numpy()
    count = int(repeated.sum())
    if count:
        first = table.lines[int(repeated.argmax())]
        table.report.warnings.append((repeated_events_notice if events else duplicates_warning)(count, first))
        if events:
            table.report.notices.append(table.report.warnings[-1])
        frame = frame[~repeated].reset_index(drop=True)
    table.report.dropped_duplicates = count
    table.report.rows = len(frame)
    return frame


def duplicates_warning(count: int, first: int) -> str:
    return f"dropped {counted(count, 'duplicate row')} identical to an earlier row (first on row {first})"


def repeated_events_notice(count: int, first: int) -> str:
    """A search log's rows identical in every column read are one event (a file appended to
    itself would count twice otherwise): said, with how a log of one row an event counts them."""
    return (f"{duplicates_warning(count, first)}: a repeated row counts once; to count each click, "
            "give the rows a timestamp or user_id column, or the count as weight")


# --- empty-cell markers --------------------------------------------------------------------------


def blank_missing(table: Table, markers: tuple[str, ...]) -> None:
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
            f"{counted(sum(counts.values()), 'cell')} holding {' or '.join(map(repr, markers))} "
            f"taken as empty ({shown})"
        )


_MARKUP = re.compile(r"<(script|style)\b.*?</\1\s*>|<!--.*?-->|</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>",
                     re.S | re.I)
_ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-f]+|[a-z][a-z0-9]*);", re.I)


def as_plain_text(cell: str) -> str:
    """A cell's text without HTML markup: tags (and scripts, styles, comments) become spaces,
    entities their characters (`&amp;` -> `&`), runs of space one. A cell without either is
    returned as it is."""
    if "<" not in cell and "&" not in cell:
        return cell
    text = _MARKUP.sub(" ", cell)
    entities = "&" in text and _ENTITY.search(text) is not None
    if text == cell and not entities:  # "Cable <3m & more" is text
        return cell
    return " ".join((html.unescape(text) if entities else text).split())


def plain_text(table: Table) -> None:
    """Every column but the ids as text: an export's HTML (Shopify's `Body (HTML)`, WooCommerce's
    `Short description`) read as words made every tag a word of every item ("strong", "span",
    "nbsp"), which a query could match, and a facet value `<p>the pebble dutch oven.</p>`."""
    counts: dict[str, int] = {}
    frame = table.frame
    for column in frame.columns:
        if column == "item_id" or is_code_column(column):
            continue
        cells = frame[column]
        if not cells.str.contains("[<&]").any():
            continue  # no tag and no entity: nothing to read
        plain = cells.map(as_plain_text)
        changed = int((plain != cells).sum())
        if changed:
            frame[column] = plain
            counts[column] = changed
    if counts:
        shown = ", ".join(f"{c} {n:,}" for c, n in counts.items())
        table.report.warnings.append(
            f"{counted(sum(counts.values()), 'cell')} with HTML markup read as its text ({shown})")
        table.report.notices.append(table.report.warnings[-1])  # `recsys train` says it
