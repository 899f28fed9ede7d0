"""Products a shop's export holds but does not sell: left out of the catalogue.

A platform's product export holds every product the shop has, also those it does not show:
Shopify's drafts and archived products (`Status`) and those not published to the online store
(`Published` FALSE), WooCommerce's drafts and private products (`Published` 0 / -1) and those
hidden from the catalogue (`Visibility in catalog` hidden), Magento's disabled products
(`product_online` 2) and those not visible on their own (`visibility` "Not Visible
Individually", a configurable product's children, when not read into their parent). Served, a
shopper would be shown a product the shop never put on sale. They are left out and said, and
the column that said so goes (a value every listed item shares tells nothing). A schema's
`[columns]` entry for such a column keeps every product, its values read as any column's.
A file in which no product would be left keeps them all, with a warning: a store that is not
open yet is still a catalogue to try.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from ..tokenize import fold
from .headers import normalized
from .text import Table, counted

# A status and a "published" column in the languages of shop exports too: a Spanish shop's
# `estado` of "borrador" drafts were served (a probe, 7 December 2026). Values are compared
# folded (lower case, accents off: "archivé", "veröffentlicht").
_DRAFT = ("draft", "archived", "borrador", "archivado", "rascunho", "arquivado", "brouillon", "archive",
          "bozza", "archiviato", "entwurf", "archiviert", "concept", "gearchiveerd")
_STATUS = (frozenset({"active", "unlisted", "", "activo", "publicado", "inactivo", "ativo", "inativo", "actif",
                      "publie", "inactif", "attivo", "pubblicato", "inattivo", "aktiv", "veroffentlicht",
                      "inaktiv", "actief", "gepubliceerd", "inactief", *_DRAFT}),
           lambda v: v in _DRAFT)
_NO = ("false", "no", "0", "-1", "falso", "nao", "non", "faux", "nein", "falsch", "nee", "onwaar")
_PUBLISHED = (frozenset({"true", "yes", "1", "", "si", "verdadero", "sim", "oui", "vrai", "vero", "ja", "wahr",
                         "waar", *_NO}), lambda v: v in _NO)
# column (normalized) -> (the values it may hold, folded; whether a value leaves its row out)
_RULES: dict[str, tuple[frozenset[str], Callable[[str], bool]]] = {
    **dict.fromkeys(("status", "estado", "statut", "stato"), _STATUS),
    **dict.fromkeys(("published", "publicado", "publie", "pubblicato", "veroffentlicht", "gepubliceerd"),
                    _PUBLISHED),
    "visibilityincatalog": (frozenset({"visible", "catalog", "search", "hidden", ""}), lambda v: v == "hidden"),
    "productonline": (frozenset({"1", "2", ""}), lambda v: v == "2"),
    "visibility": (frozenset({"not visible individually", "catalog", "search", "catalog, search", ""}),
                   lambda v: v == "not visible individually"),
}
# the columns `recsys.io.variants` keeps as the product's own, never joined with its variants'
LISTING_COLUMNS = tuple(_RULES)


def drop_unlisted(table: Table, mapped: Mapping[str, str] | None = None) -> None:
    """Leave out the rows a listing column marks as not for sale (the module's docstring), in
    place, said in `table.report`; `mapped`: a schema's `[columns]` (a column named there is
    left alone)."""
    frame = table.frame
    named = {key.strip().lower() for key in (mapped or {})}
    out = np.zeros(len(frame), dtype=bool)
    used: list[str] = []
    for column in frame.columns:
        rule = _RULES.get(normalized(column))
        if rule is None or column.strip().lower() in named:
            continue
        allowed, leaves_out = rule
        values = frame[column].map(fold)  # cells are stripped already
        if not set(values.unique().tolist()) <= allowed:
            continue  # a column of this name that is something else
        out |= values.map(leaves_out).to_numpy(dtype=bool)
        used.append(column)
    if not used:
        return
    if out.all():
        table.report.warnings.append(
            f"every item is marked not for sale by {', '.join(used)} (drafts, archived, hidden or "
            "disabled): all are read, as a store that is not open yet")
        table.report.notices.append(table.report.warnings[-1])
        return
    table.frame = frame[~out].drop(columns=used).reset_index(drop=True)
    table.lines = [line for line, gone in zip(table.lines, out, strict=True) if not gone]
    if out.any():
        table.report.warnings.append(
            f"left out {counted(int(out.sum()), 'item')} the shop does not sell by {', '.join(used)} "
            "(drafts, archived, hidden or disabled; a schema's [columns] entry for the column keeps them)")
        table.report.notices.append(table.report.warnings[-1])
