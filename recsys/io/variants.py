"""A product exported as several rows, and its options named in columns of their own.

Shop exports write a product with variants as several rows:
- Shopify: the product's first row (handle, title, description, vendor, type, tags), then a row
  for each further variant and image, with the same handle and an empty title;
- WooCommerce: a row for each variation, with its own SKU and name ("Hoodie - Blue") and a
  `Parent` naming the product's SKU (or `id:44`, its `ID`);
- Google Merchant feeds: a row for each variant, with its own id and title ("Linen Shirt - Navy
  / M"), one `item_group_id` for the product's rows;
- Squarespace: the product's first row (`Product ID [Non Editable]`, title, description), then a
  row for each further variant with its own `SKU` and neither the product's id nor a title;
- BigCommerce: an `Item Type` (Product, SKU, Rule) or `Item` (Product, Variant, Image, Video)
  column says what each row is, a product's other rows under it, a SKU row's name its options
  ("[S]Size=Small,[RT]Color=Red").
- Magento 2: a product's rows for its store views (`store_view_code` set: `de_de`) after its
  default-scope row (`store_view_code` empty), each in that store view's words: the default
  scope's rows are read, the store views' left out and counted (`drop_store_view_rows`).
Options are columns in pairs, a name and a value: `Option1 Name` "Color", `Option1 Value` "Navy"
(the name only on the first row; WooCommerce's `Attribute 1 name` / `Attribute 1 value(s)` the
same, the values comma-separated; Squarespace's `Option Name 1` / `Option Value 1`). Read row by
row, a Shopify file was refused at its first variant row (no title), each variation or variant
was an item beside its siblings, and option values were words with no kind ("navy" under
`option1 value`, never a colour).

So, on the items table with its header mapped: each numbered name/value pair of columns becomes
a column named by the name's cell ("Color": navy|white), fed to the facets by the usual rule;
then the rows of one product are read into its first: each column's distinct values joined with
`|`, a column of numbers (a variant's price, weight) its least (the "from" price a shop shows),
the first row's item_id and description, and its title, or of a group the words every variant's
title has ("Linen Shirt"). The other ids of the rows read into a product are kept as its
aliases (`ReadReport.aliases`), which a search log that names the variants is read through.
Each step is said in the report.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .headers import CONTRACTS, ITEMS, is_code_column, is_price_column, normalized
from .listing import LISTING_COLUMNS
from .money import as_number, currency_of
from .text import Table, counted

# a numbered pair of columns: `Option1 Name` / `Option1 Value`, `Attribute 1 name` / `Attribute 1 value(s)`
_PAIR_STEM = re.compile(r"[a-z]+\d+")
_NUMBER_AFTER = re.compile(r"([a-z]+)name(\d+)")  # `Option Name 1` / `Option Value 1`
# option names that are not read: the contract's columns (Shopify names the one option of a
# product without variants "Title", valued "Default Title")
_CONTRACT = ("itemid", "title", "description", "attributes")


def fold_variants(table: Table) -> None:
    """Reads option column pairs as columns and continuation rows into their item (the module's
    docstring), in place, each said in `table.report`."""
    drop_store_view_rows(table)
    frame = table.frame
    if "item_id" not in frame.columns or "title" not in frame.columns:
        return
    row_kinds = _row_kind_column(frame)
    kinds = frame[row_kinds].str.lower() if row_kinds is not None else None  # (R,) what each row is
    if kinds is not None:
        _bracket_options(frame, kinds)
    ids = frame["item_id"]
    untitled = (frame["title"] == "").to_numpy()
    same_id = ((ids == ids.shift()) & (ids != "")).to_numpy() & untitled
    no_id = (ids == "").to_numpy() & untitled  # Squarespace's variant rows: the product's id on its first only
    no_id[:1] = False  # nothing above to be read into: refused by the contract
    continues = same_id | no_id
    read: list[str] = []  # what tied rows to an item, each said when it tied any
    if kinds is not None:
        of_item = (kinds != "product").to_numpy() & ~continues
        of_item[:1] = False
        continues |= of_item
        if of_item.any():
            read.append(f"{counted(int(of_item.sum()), 'row')} whose {row_kinds} is not Product")
        table.frame = frame = frame.drop(columns=[row_kinds])  # said by the rows read into their product
    into = np.maximum.accumulate(np.where(continues, 0, np.arange(len(frame))))  # (R,) the row each is read into
    if same_id.any():
        read.append(counted(int(same_id.sum()), "row") + " with the item_id of the row above and no title")
    if no_id.any():
        read.append(counted(int(no_id.sum()), "row") + " with no item_id and no title")
    column = _parent_column(frame)
    parents = _parent_rows(frame, column) if column is not None else None
    if parents is not None:
        into = np.where(parents >= 0, into[np.maximum(parents, 0)], into)
        if (parents >= 0).any():
            read.append(f"{counted(int((parents >= 0).sum()), 'row')} tied to a parent item by {column}")
        table.frame = frame = frame.drop(columns=[column])  # said by the rows read into their parent
    group_column = next((c for c in frame.columns if normalized(c) in _GROUP_COLUMNS), None)
    if group_column is not None:
        leaders = _group_leaders(frame[group_column].tolist())
        grouped = leaders != np.arange(len(frame))
        into = np.where(grouped, into[leaders], into)
        if grouped.any():
            read.append(f"{counted(int(grouped.sum()), 'row')} with the {group_column} of an earlier row")
        _name_groups(frame, leaders)
        table.frame = frame = frame.drop(columns=[group_column])  # a product's id, not an attribute
    _read_options(table, into)
    _drop_platform_types(table)
    if read:
        table.report.aliases = _aliases(table.frame, into)
        _fold(table, into, read)


_STORE_VIEW_COLUMNS = ("storeviewcode", "storeview")  # Magento 2's `store_view_code`


def drop_store_view_rows(table: Table) -> None:
    """Leaves out the rows of a Magento export that set a store view (`store_view_code`), when
    the file also has default-scope rows (the code empty): each repeats a product's sku in a
    store view's words ("Joust Reisetasche"), and read as items they were refused as duplicate
    ids. The column itself, a scope and no property of the product, is dropped in any case."""
    frame = table.frame
    column = next((c for c in frame.columns if normalized(c) in _STORE_VIEW_COLUMNS), None)
    if column is None:
        return
    views = (frame[column] != "").to_numpy()
    if views.any() and not views.all():
        codes = sorted(set(frame.loc[views, column]))
        shown = ", ".join(codes[:3]) + (", ..." if len(codes) > 3 else "")
        table.frame = frame = frame.loc[~views].reset_index(drop=True)
        table.lines = [line for line, view in zip(table.lines, views.tolist(), strict=True) if not view]
        table.report.notices.append(
            f"left out {counted(int(views.sum()), 'store-view row')} ({column} {shown}): the default "
            "scope's rows are read; to serve a store view, export it alone")
        table.report.warnings.append(table.report.notices[-1])
    table.frame = frame.drop(columns=[column])


# BigCommerce's `Item Type` (Product, SKU, Rule) or `Item` (Product, Variant, Image, Video): what
# each row is; a row that is not a product's is read into the product above it
_ROW_KIND_COLUMNS = ("itemtype", "item")
_ROW_KINDS = frozenset({"product", "sku", "rule", "variant", "image", "video", "modifier", "customfield",
                        "custom field"})
# a BigCommerce SKU row's name says its options: "[S]Size=Small,[RT]Color=Red"
_BRACKET_OPTION = re.compile(r"\[[A-Za-z]{1,3}\]\s*([^=,\[\]]+?)\s*=\s*([^,\[\]]+)")


def _row_kind_column(frame: pd.DataFrame) -> str | None:
    """The column that says what each row is, when its cells are all such kinds and some say
    Product."""
    for column in frame.columns:
        if normalized(column) in _ROW_KIND_COLUMNS:
            kinds = set(frame[column].str.lower())  # cells are stripped already
            if "product" in kinds and kinds <= _ROW_KINDS:
                return column
    return None


def _bracket_options(frame: pd.DataFrame, kinds: pd.Series) -> None:
    """The options a variant row's title names in BigCommerce's form, as numbered option
    columns (`Option1 Name` "Size", `Option1 Value` "Small"), which `_read_options` reads;
    `kinds`: what each row is, lower case."""
    found: list[list[tuple[str, str]]] = []
    for kind, title in zip(kinds.tolist(), frame["title"].tolist(), strict=True):
        found.append([(n.strip(), v.strip()) for n, v in _BRACKET_OPTION.findall(title)] if kind != "product" else [])
    width = max(map(len, found), default=0)
    for k in range(width):
        frame[f"Option{k + 1} Name"] = [o[k][0] if k < len(o) else "" for o in found]
        frame[f"Option{k + 1} Value"] = [o[k][1] if k < len(o) else "" for o in found]


# a column that groups a product's variants when each is a row with its own id and title
# (Google Merchant's `item_group_id`)
_GROUP_COLUMNS = ("itemgroupid", "variantgroupid")
_TITLE_PUNCTUATION = " -–—/|,:;"


def _group_leaders(groups: list[str]) -> np.ndarray:
    """(R,) the first row of each row's group (itself where its cell is empty)."""
    first: dict[str, int] = {}
    return np.array([first.setdefault(g, row) if g else row for row, g in enumerate(groups)], dtype=np.int64)


def _name_groups(frame: pd.DataFrame, leaders: np.ndarray) -> None:
    """Each group's first row takes the words every variant's title has, in its order: "Linen
    Shirt - Navy / M" and "Linen Shirt - White / S" are the "Linen Shirt"; titles with no word
    in common keep the first."""
    titles = frame["title"].tolist()
    others: dict[int, list[set[str]]] = {}
    for row, leader in enumerate(leaders.tolist()):
        if leader != row:
            others.setdefault(leader, []).append(set(titles[row].casefold().split()))
    for leader, sets in others.items():
        words = [w for w in titles[leader].split() if all(w.casefold() in s for s in sets)]
        titles[leader] = " ".join(words).strip(_TITLE_PUNCTUATION) or titles[leader]
    frame["title"] = titles


# a variant's own id that is no item_id's name (Squarespace's `Variant ID [Non Editable]`,
# BigCommerce's `Product Code/SKU`)
_VARIANT_ID_COLUMNS = ("variantidnoneditable", "productcodesku")


def _aliases(frame: pd.DataFrame, into: np.ndarray) -> dict[str, str]:
    """Each other id of a product's rows -> the product's item_id: a variation's own item_id
    (WooCommerce's SKU), and the cells of the columns an item_id could have come from (Shopify's
    `Variant SKU`, WooCommerce's `ID`), a search log's names for the variant. An id that is an
    item's own, or that two products' rows share, names none."""
    role = CONTRACTS[ITEMS][0]
    id_columns = [c for c in frame.columns if c != "item_id" and normalized(c) in {
        *role.first, *role.names, *role.generic, *_VARIANT_ID_COLUMNS}]
    items = frame["item_id"].to_numpy()[into]
    aliases: dict[str, str] = {}
    shared: set[str] = set()
    for column in ["item_id", *id_columns]:
        for alias, item in zip(frame[column].tolist(), items.tolist(), strict=True):
            if alias and aliases.setdefault(alias, item) != item:
                shared.add(alias)
    own = set(items.tolist())
    return {alias: item for alias, item in aliases.items() if alias not in shared and alias not in own}


# a column that names each variation's parent product (WooCommerce's `Parent`: the parent's SKU,
# or `id:45`, its `ID`), or a parent's column that names its children (`_CHILDREN_COLUMNS`)
_PARENT_COLUMNS = ("parent", "parentid", "parentsku", "parentproductid", "parentitemid")
# WooCommerce's `Type` and Magento's `product_type` say how the shop stores a product, not what
# kind of product it is
_PLATFORM_TYPES = frozenset({"simple", "variable", "variation", "grouped", "external", "configurable", "virtual",
                             "bundle", "downloadable",
                             # Squarespace's `Product Type [Non Editable]`, BigCommerce's P and D
                             "physical", "digital", "service", "gift_card", "p", "d"})
_TYPE_COLUMNS = ("type", "producttype", "producttypenoneditable")
# Magento's configurable product lists its children: `sku=MH01-XS-Black,size=XS,color=Black|sku=...`
_CHILDREN_COLUMNS = ("configurablevariations",)


def _parent_rows(frame: pd.DataFrame, column: str) -> np.ndarray | None:
    """(R,) the row each row's parent `column` names as its parent, -1 where none is named or
    found; None when the column is empty."""
    if not (frame[column] != "").any():
        return None
    if normalized(column) in _CHILDREN_COLUMNS:
        return _children_parents(frame, column)
    by_item = {item: row for row, item in enumerate(frame["item_id"].tolist())}
    id_column = next((c for c in frame.columns if normalized(c) == "id"), None)
    by_id = {v: row for row, v in enumerate(frame[id_column].tolist())} if id_column else by_item
    parents = np.full(len(frame), -1)
    for row, ref in enumerate(frame[column].tolist()):
        if ref:
            found = by_id.get(ref[3:].strip()) if ref.lower().startswith("id:") else by_item.get(ref)
            if found is not None and found != row:
                parents[row] = found
    return parents


def _parent_column(frame: pd.DataFrame) -> str | None:
    return next((c for c in frame.columns if normalized(c) in _PARENT_COLUMNS + _CHILDREN_COLUMNS), None)


def _children_parents(frame: pd.DataFrame, column: str) -> np.ndarray:
    """(R,) for each row a parent's children column names (its `sku=...` of each child), that
    parent's row; -1 elsewhere."""
    by_item = {item: row for row, item in enumerate(frame["item_id"].tolist())}
    parents = np.full(len(frame), -1)
    for row, cell in enumerate(frame[column].tolist()):
        for child in cell.split("|"):
            fields = dict(part.partition("=")[::2] for part in child.split(","))
            found = by_item.get(fields.get("sku", "").strip())
            if found is not None and found != row:
                parents[found] = row
    return parents


def _drop_platform_types(table: Table) -> None:
    frame = table.frame
    for column in frame.columns:
        if normalized(column) not in _TYPE_COLUMNS:
            continue
        types = set(frame[column].str.lower()) - {""}
        if types <= _PLATFORM_TYPES:
            table.frame = frame.drop(columns=[column])
            table.report.notices.append(f"{column}: a platform's product types ({', '.join(sorted(types))}: how "
                                        "the shop stores or ships a product, not its kind), not read as attributes")
            table.report.warnings.append(table.report.notices[-1])
            return


def option_pairs(columns: list[str]) -> list[tuple[str, str]]:
    """(name column, value column) of each numbered option pair, in header order: the number
    before the name (`Option1 Name` / `Option1 Value`) or after it (Squarespace's `Option Name 1`
    / `Option Value 1`)."""
    by_name = {normalized(c): c for c in columns}
    pairs = []
    for norm, column in by_name.items():
        stem = norm[:-4] if norm.endswith("name") else ""
        after = _NUMBER_AFTER.fullmatch(norm)
        if _PAIR_STEM.fullmatch(stem):
            values = [stem + suffix for suffix in ("value", "values")]
        elif after is not None:
            values = [after[1] + word + after[2] for word in ("value", "values")]
        else:
            continue
        found = next((by_name[v] for v in values if v in by_name), None)
        if found is not None:
            pairs.append((column, found))
    return pairs


def _read_options(table: Table, into: np.ndarray) -> None:
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
        names = names.fillna(names.groupby(into).transform("first")).fillna("")
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
    # the pair's own further columns go with it (WooCommerce's `Attribute 1 visible`, `... global`)
    stems = tuple(normalized(name)[:-4] for name, _ in pairs if normalized(name).endswith("name"))
    paired = {c for pair in pairs for c in pair}
    frame = frame.drop(columns=[c for c in frame.columns if c in paired or any(
        normalized(c).startswith(stem) and normalized(c)[len(stem):].isalpha() for stem in stems)])
    for column, rows in added.items():
        old = frame[column].tolist() if column in frame.columns else [""] * len(frame)
        frame[column] = ["|".join(dict.fromkeys([*filter(None, o.split("|")), *new])) if new else o
                         for o, new in zip(old, rows, strict=True)]
    table.frame = frame
    if added:
        said = ", ".join(f"{c} ({counted(len(np.unique(into[(frame[c] != '').to_numpy()])), 'item')})"
                         for c in added)
        table.report.notices.append(f"options read as columns of their own: {said}")
        table.report.warnings.append(table.report.notices[-1])


def _fold(table: Table, into: np.ndarray, read: list[str]) -> None:
    frame = table.frame
    rows = np.arange(len(frame))
    moved = into != rows
    # each item's rows together, its own first, items in file order
    order = np.lexsort((moved, into))
    starts = np.flatnonzero(np.r_[True, into[order][1:] != into[order][:-1]])
    bounds = list(zip(starts.tolist(), [*starts[1:].tolist(), len(order)], strict=True))
    merged = frame.iloc[order[starts]].reset_index(drop=True)  # row g: item g
    for column in frame.columns:
        if column in _OWN or normalized(column) in LISTING_COLUMNS or not (frame[column].to_numpy()[moved] != "").any():
            continue  # the item's own row says it (a variation's "Hoodie - Blue" is not a title)
        cells = frame[column].to_numpy()[order].tolist()
        if all("=" in c for c in cells if c):  # Magento's `key=value,...` pairs, a key's values after `|`
            merged[column] = ["|".join(dict.fromkeys(c for c in cells[a:b] if c)) for a, b in bounds]
            continue
        code, price = is_code_column(column), is_price_column(column)
        merged[column] = [_merged_cell(cells[a:b], code, price) if b - a > 1 else cells[a] for a, b in bounds]
    table.frame = merged
    table.lines = [table.lines[i] for i in order[starts].tolist()]
    table.report.notices.append(f"{' and '.join(read)} read into that item (a product's variants and images): "
                                f"{len(merged):,} items")
    table.report.warnings.append(table.report.notices[-1])


_OWN = ("item_id", "title", "description")  # an item's own, never joined with its variants'
# BigCommerce's price adjustments of a Rule row: relative ones ("[ADD]10.00", "[REMOVE]5.00")
# say no price, a fixed one ("[FIXED]45.00") is the variant's
_RELATIVE = re.compile(r"\[(?:add|remove)\]", re.I)
_FIXED = re.compile(r"^\[fixed\]\s*", re.I)


def _merged_cell(cells: list[str], code: bool = False, price: bool = False) -> str:
    """One item's cell from its rows': each distinct value once (`|` separates several); of
    prices (a `price` column's numbers, or cells that name a currency: "49.00 USD"), the least,
    the price a shop says "from". Other numbers are each a variant's (sizes 36, 38 and 40: a
    shopper filters by any of them), as `code`s are (`is_code_column`: each variant's barcode
    is one a shopper may type)."""
    values = list(dict.fromkeys(v.strip() for c in cells for v in c.split("|") if v.strip()))
    if not code and len(values) > 1:  # a BigCommerce Rule row's "[ADD]10.00": no price of its own
        kept = [_FIXED.sub("", v) for v in values if not _RELATIVE.match(v)]
        values = list(dict.fromkeys(kept)) or values
    if len(values) <= 1:
        return values[0] if values else ""
    if code:
        return "|".join(values)
    numbers = [as_number(v) for v in values]
    known = [n for n in numbers if n is not None]
    if len(known) < len(numbers) or not (price or any(currency_of(v) for v in values)):
        return "|".join(values)
    return values[int(np.argmin(known))]
