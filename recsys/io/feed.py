"""A product feed in XML read as the items table a CSV file gives: Google Merchant's RSS 2.0 or
Atom feed (its `g:` elements), which a shop that advertises has ready, as Shopify, WooCommerce
and Magento write it.

Each `<item>` (RSS) or `<entry>` (Atom) is a row and each of its child elements a column by its
local name (`g:price` is `price`, `g:id` is `id`); an element said more than once
(`g:additional_image_link`) gives its distinct values joined with `|`; a nested one
(`g:shipping`: country, service, price) its parts joined with `:`; an Atom `<link href=...>` its
address. The channel's own title and link are not a product. A DataError's row is the product's
place in the feed (the 3rd `<item>` is row 3).

Parsed with defusedxml a product at a time, each freed once read: an uploaded feed is untrusted,
and a feed that declares entities (the "billion laughs") or refers to outside files is refused,
not expanded.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from xml.etree.ElementTree import Element, ParseError

import pandas as pd
from defusedxml import DefusedXmlException
from defusedxml.ElementTree import iterparse

from recsys.errors import DataError

from .text import ReadReport, Table, check_cell_sizes

# the element of one product: RSS 2.0's and Atom's (Google Merchant, Meta catalogues), and the
# `<product>` and `<offer>` of other shops' feeds
_PRODUCTS = ("item", "entry", "product", "offer")


def read_feed(path: str | Path) -> Table:
    name = str(path)
    rows = list(_products(name))
    if not rows:
        raise DataError(name, "an XML file with no <item> or <entry> element: a product feed (Google "
                              "Merchant's RSS or Atom) has one for each product")
    columns = list(dict.fromkeys(column for row in rows for column in row))
    frame = pd.DataFrame([[row.get(c, "") for c in columns] for row in rows], columns=columns, dtype=str)
    table = Table(name, frame, list(range(1, len(rows) + 1)), ReadReport(rows=len(rows)))
    check_cell_sizes(table)
    return table


def feed_columns(path: str | Path) -> list[str]:
    """The columns of the feed's first product (a header check needs no more)."""
    for row in _products(str(path)):
        return list(row)
    return []


def _products(name: str) -> Iterator[dict[str, str]]:
    """Each outermost product element's columns, in feed order; each is dropped from the tree
    once read, so a feed of a million products is never whole in memory."""
    open_elements: list[Element] = []
    try:
        for event, element in iterparse(name, events=("start", "end")):
            if event == "start":
                open_elements.append(element)
                continue
            open_elements.pop()
            if _local(element.tag) not in _PRODUCTS or any(_local(e.tag) in _PRODUCTS for e in open_elements):
                continue
            row: dict[str, str] = {}
            for child in element:
                value, column = _text(child), _local(child.tag)
                if value and value not in row.get(column, "").split("|"):
                    row[column] = f"{row[column]}|{value}" if column in row else value
            yield row
            if open_elements:
                open_elements[-1].remove(element)
    except DefusedXmlException as e:
        raise DataError(name, f"the feed declares entities or refers to other files ({type(e).__name__}), "
                              "which are not read: export it without a DOCTYPE") from None
    except ParseError as e:
        raise DataError(name, f"not well-formed XML: {e}") from None


def _local(tag: object) -> str:
    """`{http://base.google.com/ns/1.0}price` -> `price`."""
    return str(tag).rsplit("}", 1)[-1]


def _text(element: Element) -> str:
    if len(element):
        return ":".join(part for part in (_text(child) for child in element) if part)
    return (element.text or "").strip() or element.get("href", "").strip()
