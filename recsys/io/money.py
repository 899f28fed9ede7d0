"""A number as exports write a price: a currency sign or code before or after ("$19.99", "19.99
USD", "EUR 5", "19,99 Euro", "Fr. 24.90"), thousands with commas ("1,299.00", "1,299") or dots
("1.299,00"; "1.299,-" and "1.299 €" too: a whole amount, or a price, has no third decimal) or a
decimal comma ("19,99"). The one reading of such cells: a catalogue's numeric columns
(`recsys.catalog`) and the least price of a product's variants (`recsys.io.variants`)."""

from __future__ import annotations

import re
from collections.abc import Iterable

_CURRENCY = r"(?:US\$|[$€£¥₹]|Euros?|S?Fr\.|[A-Z]{3})"
_SPACES = "[ \u00a0\u202f]"  # a space, a no-break space, a narrow one: French thousands
_AMOUNT = (r"[-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?"  # 1,299.00
           r"|\d{1,3}(?:\.\d{3})+,\d+|\d{1,3}(?:\.\d{3}){2,}"  # 1.299,00 and 1.299.000 (a lone 1.299 is 1.299)
           rf"|\d{{1,3}}(?:{_SPACES}\d{{3}})+(?:[.,]\d+)?"  # 1 299,00
           r"|\d+(?:[.,]\d+)?)")
_WHOLE = r"(?:[.,][-–—])?"  # "45.–", "45,-": a whole amount, as Swiss and German shops write it
# a trailing "*" is a footnote's mark ("19,99 €*": prices include VAT)
MONEY = re.compile(rf"^\s*(?P<before>{_CURRENCY})?\s*(?P<amount>{_AMOUNT})(?P<whole>{_WHOLE})\s*"
                   rf"(?P<after>{_CURRENCY})?\s*\*?\s*$")
# one lone dot before three digits: 1.299 (thousands where a price or a whole amount says so)
_DOT_THOUSANDS = re.compile(r"^[-+]?\d{1,3}\.\d{3}$")
# the codes `currency_of` names (ISO 4217, the currencies shops price in most): another three
# capitals beside a number ("DLM 1310") are read as a price's but name no currency
_CODES = frozenset("USD EUR GBP CHF JPY CNY INR CAD AUD NZD SEK NOK DKK PLN CZK HUF RON BGN RUB UAH TRY "
                   "BRL MXN ARS CLP COP ZAR KRW SGD HKD TWD THB MYR IDR PHP VND AED SAR ILS EGP NGN".split())
# the signs that name one currency, as its code
_SIGNS = {"$": "USD", "US$": "USD", "€": "EUR", "EURO": "EUR", "EUROS": "EUR", "£": "GBP", "₹": "INR",
          "FR.": "CHF", "SFR.": "CHF"}


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


def match_value(m: re.Match[str]) -> float:
    """The number of a `MONEY` match: `money_value`, except that a lone dot before three digits
    separates thousands where the cell is a price (a currency named) or a whole amount ("1.299,-"):
    no price has a third decimal, and German shops write 1.299 € for a thousand and more."""
    amount = m.group("amount")
    if (m.group("before") or m.group("after") or m.group("whole")) and _DOT_THOUSANDS.match(amount):
        return float(amount.replace(".", ""))
    return money_value(amount)


def currency_of(text: str) -> str | None:
    """The currency a price cell names, as a code ("€" -> "EUR", "$" -> "USD"), or None."""
    m = MONEY.match(text)
    if m is None:
        return None
    sign = m.group("before") or m.group("after")
    if sign is None:
        return None
    code = _SIGNS.get(sign.upper(), sign.upper())
    return code if code in _CODES else None


def currencies(cells: Iterable[str]) -> list[str]:
    """The currencies the price cells name, each once, in sorted order."""
    return sorted({c for c in map(currency_of, cells) if c is not None})


def as_number(text: str) -> float | None:
    """A cell as a number, a price as exports write it too; None for anything else."""
    try:
        return float(text)
    except ValueError:
        m = MONEY.match(text)
        return match_value(m) if m is not None else None
