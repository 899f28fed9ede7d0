"""A number as exports write a price: a currency sign or code before or after ("$19.99", "19.99
USD", "EUR 5"), thousands with commas ("1,299.00", "1,299") or a decimal comma ("19,99"). The
one reading of such cells: a catalogue's numeric columns (`recsys.catalog`) and the least price
of a product's variants (`recsys.io.variants`)."""

from __future__ import annotations

import re

_CURRENCY = r"(?:[$€£¥₹]|[A-Z]{3})"
_AMOUNT = r"[-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:[.,]\d+)?)"
MONEY = re.compile(rf"^\s*{_CURRENCY}?\s*({_AMOUNT})\s*{_CURRENCY}?\s*$")


def money_value(amount: str) -> float:
    """The number of `MONEY`'s amount group."""
    if "," in amount and ("." in amount or re.search(r",\d{3}(?:,|$)", amount)):
        return float(amount.replace(",", ""))  # thousands
    return float(amount.replace(",", "."))  # a decimal comma, or none


def as_number(text: str) -> float | None:
    """A cell as a number, a price as exports write it too; None for anything else."""
    try:
        return float(text)
    except ValueError:
        m = MONEY.match(text)
        return money_value(m.group(1)) if m is not None else None
