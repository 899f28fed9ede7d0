"""A number as exports write a price: a currency sign or code before or after ("$19.99", "19.99
USD", "EUR 5"), thousands with commas ("1,299.00", "1,299") or a decimal comma ("19,99"). The
one reading of such cells: a catalogue's numeric columns (`recsys.catalog`) and the least price
of a product's variants (`recsys.io.variants`)."""

from __future__ import annotations

import re

_CURRENCY = r"(?:[$€£¥₹]|[A-Z]{3})"
_SPACES = "[ \u00a0\u202f]"  # a space, a no-break space, a narrow one: French thousands
_AMOUNT = (r"[-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?"  # 1,299.00
           r"|\d{1,3}(?:\.\d{3})+,\d+|\d{1,3}(?:\.\d{3}){2,}"  # 1.299,00 and 1.299.000 (a lone 1.299 is 1.299)
           rf"|\d{{1,3}}(?:{_SPACES}\d{{3}})+(?:[.,]\d+)?"  # 1 299,00
           r"|\d+(?:[.,]\d+)?)")
_WHOLE = r"(?:[.,][-–—])?"  # "45.–", "45,-": a whole amount, as Swiss and German shops write it
MONEY = re.compile(rf"^\s*{_CURRENCY}?\s*({_AMOUNT}){_WHOLE}\s*{_CURRENCY}?\s*$")


def money_value(amount: str) -> float:
    """The number of `MONEY`'s amount group: of "," and ".", the last one given is the decimal
    mark when both are, and a separator followed by three digits more than once, or a comma
    followed by three, separates thousands."""
    amount = re.sub(_SPACES, "", amount)
    if "," in amount and "." in amount:
        if amount.rfind(",") > amount.rfind("."):
            return float(amount.replace(".", "").replace(",", "."))  # 1.299,00
        return float(amount.replace(",", ""))  # 1,299.00
    if re.search(r",\d{3}(?:,|$)", amount):
        return float(amount.replace(",", ""))  # 1,299
    if amount.count(".") > 1:
        return float(amount.replace(".", ""))  # 1.299.000
    return float(amount.replace(",", "."))  # a decimal comma, or none


def as_number(text: str) -> float | None:
    """A cell as a number, a price as exports write it too; None for anything else."""
    try:
        return float(text)
    except ValueError:
        m = MONEY.match(text)
        return money_value(m.group(1)) if m is not None else None
