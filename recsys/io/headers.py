"""Which column of a CSV file's header plays which part of its contract (items, interactions,
judgments, probes): the one place that maps a shop's own export names (`product_id`, `Product
Title`, `search_term`, `clicks`) to the contract's columns (`item_id`, `title`, `query`, `label`).

A column is matched by its name with case and separators ignored (`Product Description`,
`product_description` and `productDescription` are one name). For each contract column:

1. a schema's `[rename]` entry naming a column of this file wins;
2. else the contract's own name (`item_id`, or `Item ID` when there is no exact `item_id`);
3. else one of its export names (`product_id`, `sku`, ...; a Shopify `Handle` before a
   `Variant SKU`);
4. else a generic name (a bare `id`, `name`, `q`), taken only when no more specific one is there.

Two candidates at the same step are an error naming both and the `[rename]` line that settles
it; a required column with no candidate is an error listing the columns found and the
`[rename]` lines to add (the file's column most like it by name, else the first one left). Both
are `DataError`s on the header line whose message ends with the `[rename]` table as one line to
paste at the top of a schema file (`rename = {pid = "item_id", headline = "title"}`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from recsys.errors import DataError, InputError
from recsys.facets import FACETS
from recsys.tokenize import fold

ITEMS, INTERACTIONS, JUDGMENTS, PROBES = "items", "interactions", "judgments", "probes"


@dataclass(frozen=True)
class Role:
    """A contract column and the names an export gives it (normalized: see `normalized`)."""

    column: str
    names: tuple[str, ...] = ()
    generic: tuple[str, ...] = ()  # taken only when neither the column nor `names` is there
    first: tuple[str, ...] = ()  # taken before `names`: a Shopify export's `Handle` over its `Variant SKU`


# Besides English, the names Spanish, Portuguese, French, Italian, German and Dutch shops' exports
# use ("referencia", "Artikelnummer", "nombre", "omschrijving", "término de búsqueda"): a shop's
# export trains in one command in its own language (a probe of a Spanish and a Dutch shop needed
# a [rename] line for every column, 7 December 2026). A bare word for "name" is generic, as
# "name" is.
_ITEM_ID = Role("item_id", ("productid", "productuid", "sku", "itemsku", "productsku", "variantid",
                            "variantsku", "articleid", "articlenumber", "itemnumber", "productnumber",
                            "productcode", "itemcode", "asin", "objectid",
                            "referencia", "referentie", "artikelnummer", "artikelnr", "artnr", "produktnummer",
                            "codigo", "codigoproducto", "codigodeproducto", "codice", "codiceprodotto",
                            "referenceproduit", "idproducto", "idproduit", "productcodeid"), ("id", "uid"),
               # the product a Shopify export's rows are, each variant's row under it (recsys.io.variants);
               # Squarespace's `Product ID [Non Editable]` over its variants' `SKU`
               first=("handle", "productidnoneditable"))
_QUERY = Role("query", ("searchterm", "searchterms", "searchquery", "searchphrase", "searchstring",
                        "searchtext", "querytext", "searchkeyword", "keyword", "keywords",
                        "terminodebusqueda", "terminosdebusqueda", "termodebusca", "termodepesquisa",
                        "termederecherche", "requete", "terminediricerca", "suchbegriff", "suchanfrage",
                        "suchwort", "zoekterm", "zoekopdracht", "zoekwoord"),
              ("q", "search", "term", "busqueda", "consulta", "busca", "pesquisa", "recherche", "ricerca",
               "suche", "zoeken"))

# What each contract's columns are called in exports. A numeric engagement column becomes the
# interactions' `label` as it is (0 = shown and not chosen, larger = stronger): a click or
# purchase count, or a graded relevance. A log with two of them (clicks and purchases) names
# the one to learn from in `[rename]`.
CONTRACTS: dict[str, tuple[Role, ...]] = {
    ITEMS: (
        _ITEM_ID,
        Role("title", ("producttitle", "productname", "itemtitle", "itemname", "productdisplayname",
                       "displayname", "titulo", "titel", "titre", "titolo", "nombredelproducto",
                       "nombreproducto", "nomeproduto", "nomedoproduto", "nomduproduit", "nomproduit",
                       "nomeprodotto", "produktname", "produktbezeichnung", "artikelname", "artikelbezeichnung",
                       "productnaam", "artikelnaam", "produkttitel", "producttitel"),
             ("name", "nombre", "nome", "nom", "naam", "bezeichnung")),
        Role("description", ("productdescription", "itemdescription", "desc", "longdescription",
                             "productdetails", "bodyhtml", "descripcion", "descripciondelproducto",
                             "descripcionlarga", "descricao", "descricaodoproduto", "descrizione",
                             "descriptionduproduit", "beschreibung", "produktbeschreibung",
                             "artikelbeschreibung", "langbeschreibung", "omschrijving",
                             "productomschrijving", "beschrijving", "productbeschrijving")),
        Role("attributes", ("productattributes",)),
    ),
    INTERACTIONS: (
        _QUERY,
        _ITEM_ID,
        Role("label", ("relevance", "relevancescore", "clicks", "clickcount", "numclicks",
                       "purchases", "purchasecount", "orders", "conversions", "clics", "cliques",
                       "klicks", "kliks", "aantalkliks", "anzahlklicks", "numerodeclics", "nombredeclics",
                       "compras", "pedidos", "ventas", "achats", "commandes", "acquisti", "ordini",
                       "kaufe", "bestellungen", "aankopen", "bestellingen")),
        Role("event", ("eventtype", "eventname", "action", "interactiontype")),
        Role("weight", ("sampleweight",)),
        # GA4's `user_pseudo_id` and `event_timestamp`, Segment's `anonymousId`; a session id names
        # a shopper for a visit, which is what tells two clicks of one search apart
        Role("user_id", ("userid", "customerid", "visitorid", "shopperid", "userpseudoid", "clientid",
                         "anonymousid"), ("user", "customer", "sessionid", "session")),
        Role("timestamp", ("eventtime", "eventtimestamp", "searchedat", "createdat", "clickedat", "occurredat",
                           "datetime", "fechayhora", "dataehora", "horodatage", "zeitstempel", "tijdstempel",
                           "tijdstip"), ("time", "date", "fecha", "datum", "hora")),
    ),
    JUDGMENTS: (_QUERY, _ITEM_ID, Role("grade", ("relevance", "rating", "label", "score"))),
    PROBES: (_QUERY, Role("word"), Role("facet"), Role("value")),
}

_LABEL_AS_IS = " (its numbers as they are: 0 = shown and not chosen, more = stronger)"
_GRADED = ("relevance", "relevancescore")  # label names whose lowest value may mean "irrelevant"

# the columns each contract cannot do without; interactions need `label` or `event` besides
REQUIRED: dict[str, tuple[str, ...]] = {
    ITEMS: ("item_id", "title"), INTERACTIONS: ("query", "item_id"),
    JUDGMENTS: ("query", "item_id", "grade"), PROBES: ("query", "word", "facet", "value"),
}

# Columns a `[rename]` entry may produce: every contract's own names. A column that should feed
# a facet is mapped in `[columns]` instead.
RENAME_TARGETS = tuple(dict.fromkeys(r.column for roles in CONTRACTS.values() for r in roles))


def normalized(name: str) -> str:
    """A column name with case, accents and everything but letters and digits left out
    ("Descripción" and "descripcion" are one name)."""
    return re.sub(r"[\W_]+", "", fold(name.casefold()))


# the codes of a product in the languages of shop exports (a Spanish "referencia", a German or
# Dutch "Artikelnummer", a "código de barras")
_FOREIGN_CODES = ("referencia", "referentie", "artikelnummer", "artikelnr", "artnr", "produktnummer",
                  "bestellnummer", "herstellernummer", "codigo", "codice", "codigodebarras", "streepjescode",
                  "strichcode", "codebarre", "codiceabarre")
# a column of codes (a Merchant feed's `gtin` and `mpn`, a `Variant Barcode`, an `ISBN`) is
# never a number: bucketed, a GTIN was `gtin:5900000000000+` on a fifth of the catalogue, and a
# shopper who types the code found nothing; read as text, each code is the item's own value
_CODE_ENDINGS = ("sku", "barcode", "gtin", "ean", "upc", "isbn", "mpn", "partnumber", "modelnumber",
                 "itemnumber", "articlenumber", "productid", "variantid", "itemid", *_FOREIGN_CODES)


def is_code_column(name: str) -> bool:
    """Whether the column's cells are codes (`_CODE_ENDINGS`, digits after them aside: `gtin13`)."""
    key = normalized(name).rstrip("0123456789")
    return key == "id" or key.endswith(_CODE_ENDINGS)


# a column of prices, in the languages of shop exports: a product's variants are "from" its least
_PRICE_WORDS = ("price", "preis", "prix", "precio", "prezzo", "prijs", "pris", "cost", "msrp", "rrp", "uvp")


def is_price_column(name: str) -> bool:
    """Whether a column named `name` holds prices (`_PRICE_WORDS` in its name: `Variant Price`,
    `sale_price`, `Preis`)."""
    key = normalized(name)
    return any(w in key for w in _PRICE_WORDS)


# the codes a shop prints on its products and a shopper may type ("WC-PDO-000", an ASIN), unlike
# a database's ids (`ID`, `product_id`, `variant_id`, Shopify's `Handle`)
_TYPED_CODE_ENDINGS = ("sku", "barcode", "gtin", "ean", "upc", "isbn", "mpn", "asin", "partnumber",
                       "modelnumber", "itemnumber", "articlenumber", "productnumber", "productcode", "itemcode",
                       *_FOREIGN_CODES)


def is_typed_code(name: str) -> bool:
    """Whether a column named `name` holds codes a shopper may search by (`_TYPED_CODE_ENDINGS`,
    digits after them aside)."""
    return normalized(name).rstrip("0123456789").endswith(_TYPED_CODE_ENDINGS)


@dataclass(frozen=True)
class HeaderMap:
    """A file's columns -> the contract's names, for the columns whose name changes."""

    renamed: dict[str, str]  # file column -> contract column, in the header's order
    explicit: frozenset[str]  # the file columns a `[rename]` entry named

    def describe(self) -> str:
        """'product_id -> item_id, clicks -> label (...)' ('' when nothing is renamed)."""
        return ", ".join(f"{a} -> {t}{_LABEL_AS_IS if t == 'label' else ''}"
                         for a, t in self.renamed.items())

    def source_of(self, target: str) -> str | None:
        """The file column renamed to `target`, or None."""
        return next((column for column, to in self.renamed.items() if to == target), None)

    def graded_label(self) -> str | None:
        """The column read as the label when it is a graded relevance (`relevance`), else None:
        such a scale may start at 1 for "not relevant", which the label contract calls 0."""
        return next((a for a, t in self.renamed.items()
                     if t == "label" and normalized(a) in _GRADED), None)


def map_header(source: str, line: int, columns: Sequence[str], contract: str,
               rename: Mapping[str, str] | None = None) -> HeaderMap:
    """Which of `columns` (a header of file `source`, on `line`) is which column of `contract`.

    `rename`: a schema's `[rename]` table (checked by `check_rename`); its entries whose column
    this file has apply, the others are left to the other files."""
    roles = CONTRACTS[contract]
    explicit = _explicit(source, line, columns, {r.column for r in roles}, rename or {})
    renamed = dict(explicit)
    taken = {*explicit, *(c for c in columns if c in {r.column for r in roles})}
    filled = {*explicit.values(), *(c for c in columns if c in {r.column for r in roles}
                                    and c not in explicit)}
    for role in roles:
        if role.column in filled:
            continue
        found = _candidates(role, [c for c in columns if c not in taken])
        if len(found) > 1:
            raise DataError(source, f"{_quoted(found)} could each be {role.column!r}; say which "
                                    f"in a schema file (--schema FILE.toml),"
                                    f"{_block([(found[0], role.column)], rename)}", row=line)
        if found:
            renamed[found[0]] = role.column
            taken.add(found[0])
            filled.add(role.column)
    _check_required(source, line, columns, contract, filled, taken, rename or {})
    order = {c: i for i, c in enumerate(columns)}
    return HeaderMap(dict(sorted(renamed.items(), key=lambda kv: order[kv[0]])), frozenset(explicit))


def check_rename(rename: Mapping[str, object], source: str) -> dict[str, str]:
    """The rename table, checked: string names, known targets, no target named twice.

    Raises InputError naming `source` (e.g. "rename") and the entry."""
    for column, problem in rename_problems(rename):
        raise InputError(f"{source} {column}: {problem}")
    return {column.strip(): str(target).strip() for column, target in rename.items()}


def rename_problems(rename: Mapping[str, object]) -> Iterator[tuple[str, str]]:
    """(column, what is wrong with its entry) for each bad entry of a rename table, in order."""
    seen: dict[str, str] = {}
    for column, target in rename.items():
        if not isinstance(target, str) or not target.strip():
            yield column, f'expected a column name in quotes, e.g. {column} = "item_id", found {target!r}'
            continue
        target = target.strip()
        if target not in RENAME_TARGETS:
            hint = ""
            if target.lower() in FACETS:
                hint = f' (to feed a facet, use [columns] {column} = "{target.lower()}")'
            yield column, (f"unknown target {target!r}; a column can be renamed to one of "
                           f"{', '.join(RENAME_TARGETS)}{hint}")
        elif column.strip() in seen:
            yield column, "names the same column as another entry"
        elif twice := [c for c, t in seen.items() if t == target]:
            yield column, f"renames a second column to {target!r} (so does {twice[0]!r})"
        else:
            seen[column.strip()] = target


def _explicit(source: str, line: int, columns: Sequence[str], targets: set[str],
              rename: Mapping[str, str]) -> dict[str, str]:
    """The `[rename]` entries that apply to this file: file column -> contract column."""
    by_lower: dict[str, list[str]] = {}
    for column in columns:
        by_lower.setdefault(column.lower(), []).append(column)
    out: dict[str, str] = {}
    for column, target in rename.items():
        if target not in targets:
            continue
        if column in columns:
            out[column] = target
        elif len(by_lower.get(column.lower(), [])) == 1:
            out[by_lower[column.lower()][0]] = target  # `ID` in the file, `id` in the schema
    for actual, target in out.items():
        if target in columns and target not in out:
            raise DataError(source, f"cannot rename {actual!r} to {target!r}: the file already has "
                                    f"a column {target!r}; remove that [rename] entry or one of the "
                                    "two columns", row=line, column=target)
    return out


def _candidates(role: Role, columns: list[str]) -> list[str]:
    """The columns that may be `role`, from the best step that has any (see the module doc)."""
    for names in ((normalized(role.column),), role.first, role.names, role.generic):
        found = [c for c in columns if normalized(c) in names]
        if found:
            return found
    return []


def _check_required(source: str, line: int, columns: Sequence[str], contract: str, filled: set[str],
                    taken: set[str], rename: Mapping[str, str]) -> None:
    missing = [c for c in REQUIRED[contract] if c not in filled]
    if contract == INTERACTIONS and not {"label", "event"} & filled:
        missing.append("label")
    if not missing:
        return
    free = [c for c in columns if c not in taken]
    lines: list[tuple[str, str]] = []
    for column in missing:
        guess = _guess(column, free)
        if guess in free:
            free.remove(guess)
        lines.append((guess, column))
    absent = [f"{c!r}" for c, t in rename.items() if t in missing]
    unmatched = (f"; the schema's [rename] names {', '.join(absent)}, which this file does not "
                 "have" if absent else "")
    label = (" (or 'event' to derive it: impression, click, cart, purchase)"
             if "label" in missing else "")
    names = ", ".join(repr(c) for c in missing)
    raise DataError(source, f"missing required column{'s' * (len(missing) > 1)} {names}{label}; "
                            f"found columns: {_quoted(list(columns))}{unmatched}. "
                            f"{_naming(len(missing))} in a schema file (--schema FILE.toml),"
                            f"{_block(lines, rename)}", row=line)


def _naming(n: int) -> str:
    return ("Say which of the file's columns hold them" if n > 1
            else "Say which of the file's columns holds it")


def _block(entries: Sequence[tuple[str, str]], rename: Mapping[str, str] | None = None) -> str:
    """The `[rename]` entries ((column, contract column) pairs) as one line to paste at the top of a
    schema file: an inline TOML table, the same as a `[rename]` table (a failure is one line,
    cli/main.py), with the entries the schema's `rename` has already but for a column named anew:
    followed for the items file and then for the log, two `rename` lines were a TOML error
    ("Cannot overwrite a value")."""
    named = {target for _, target in entries}
    had = [(column, target) for column, target in (rename or {}).items() if target not in named]
    where = " (in place of its rename line)" if had else ""
    line = ", ".join(_entry(column, target) for column, target in [*had, *entries])
    return f" e.g. its [rename] table in one line, at the top{where}: rename = {{{line}}}"


def _guess(column: str, free: list[str]) -> str:
    """The file's column most like `column` by name, else the first one left, else a placeholder."""
    by_norm = {normalized(c): c for c in free}
    close = difflib.get_close_matches(normalized(column), list(by_norm), n=1, cutoff=0.6)
    if close:
        return by_norm[close[0]]
    return free[0] if free else "YOUR_COLUMN"


def _entry(column: str, target: str) -> str:
    """A `[rename]` line: a bare TOML key when it can be one, else a quoted one."""
    key = column if re.fullmatch(r"[A-Za-z0-9_-]+", column) else '"' + column.replace('"', '\\"') + '"'
    return f'{key} = "{target}"'


def _quoted(columns: list[str]) -> str:
    return ", ".join(repr(c) for c in columns)
