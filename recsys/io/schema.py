"""The schema file: an optional TOML file that adapts a catalogue to the items contract
(`Schema`), checked against the pydantic models of the file (`SchemaFile`)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from recsys.errors import DataError
from recsys.facets import FACETS, facet_name_problem, with_added
from recsys.lexicon import LexiconConfig

from .headers import (
    check_rename,
    rename_problems,
)
from .text import decode_error, read_bytes


@dataclass(frozen=True)
class Schema:
    """An optional TOML file that adapts a catalogue to the items contract.

    - `[columns]`: column (or attribute-key) name -> facet or "ignore", e.g. `baseColour = "color"`,
      `year = "ignore"` (names are matched case-insensitively).
    - `[rename]`: a column of a file -> a contract column of that file (item_id, title,
      description, attributes; query, label, event, weight, user_id, timestamp; grade; word,
      facet, value), e.g. `id = "item_id"`, `search_term = "query"`; applied to every file that
      has the column, before the automatic mapping of common export names (`recsys.io.headers`).
    - `[missing]`: `values = ["NA"]`: cells (other than item_id and title) holding exactly one of
      these are empty, so they feed no facet; applied by `read_items`.
    - `[lexicon]`: `enabled = false` turns reading facet values out of titles off, `builtin = false`
      keeps only the schema's own entries; subtables add words, `[lexicon.color] teal = ["peacock",
      "petrol"]` (kind -> canonical value -> synonyms; kinds color, style, quality feed their facet,
      any other kind, like `material`, feeds `other` as `material:<value>`, or its own facet when
      `[facets] add` names it).
    - `[facets]`: `add = ["material"]`: facets (heads) beyond the default four, after them in
      order; `[columns]` then maps columns to them (`material = "material"`).

    `load` checks the file against the pydantic models of the file (`SchemaFile`, below).
    """

    columns: dict[str, str] = field(default_factory=dict)
    rename: dict[str, str] = field(default_factory=dict)
    lexicon: LexiconConfig = field(default_factory=LexiconConfig)
    missing: tuple[str, ...] = ()
    added_facets: tuple[str, ...] = ()

    @property
    def facets(self) -> tuple[str, ...]:
        """The facets a catalogue read with this schema has: the default ones, then the added."""
        return with_added(self.added_facets)

    @classmethod
    def load(cls, path: str | Path) -> Schema:
        name = str(path)
        return _read_schema(name, read_bytes(name))

    def to_json(self) -> dict[str, Any]:
        """Everything the file said, for a model's manifest."""
        return {"columns": dict(self.columns), "rename": dict(self.rename),
                "missing": list(self.missing), "lexicon": self.lexicon.to_json(),
                "facets": {"add": list(self.added_facets)}}

    @classmethod
    def from_json(cls, obj: dict[str, Any] | None) -> Schema:
        """What `to_json` wrote (a model version keeps it in its manifest)."""
        obj = obj or {}
        return cls(dict(obj.get("columns", {})), dict(obj.get("rename", {})),
                   LexiconConfig.from_json(obj.get("lexicon")), tuple(obj.get("missing", ())),
                   tuple(obj.get("facets", {}).get("add", ())))


# --- schema file --------------------------------------------------------------------------------
#
# The file's shape is declared by the pydantic models below, one per table; each check raises a
# `_problem`, whose message is what the user reads after "[table] entry: ". A later table (e.g.
# `[facets] add = ["material"]`) is one more field of `SchemaFile`, and `SchemaFile.facet_names()`
# is the one place that says which facet names `[columns]` may use.


def _problem(message: str, *at: str) -> PydanticCustomError:
    """A schema problem. `at`: the entry it is about, below the location pydantic reports (for a
    check of a whole table, which pydantic locates at the table)."""
    return PydanticCustomError("schema", "{message}", {"message": message, "at": at})


def _schema_message(error: Any) -> str:
    """'[table] entry: problem' (tables nested as in TOML, '[lexicon.color] teal: ...'); a problem
    with the file's top level or a whole table stands alone: its message names the table."""
    parts = [str(p) for p in error["loc"]] + list((error.get("ctx") or {}).get("at", ()))
    message = str(error["msg"])
    if len(parts) < 2:
        return message
    entry = f" {parts[-1]}" if parts[-1] else ""
    return f"[{'.'.join(parts[:-1])}]{entry}: {message}"


class _SchemaTable(BaseModel):
    """A TOML table of the schema file: only its own keys, each checked."""

    model_config = ConfigDict(frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, value: Any) -> Any:
        if cls.model_config.get("extra") == "allow":  # other keys are checked by the extras' type
            return value
        for key in value if isinstance(value, dict) else ():
            if key not in cls.model_fields:
                raise _problem(cls._unknown(key), key)
        return value

    @classmethod
    def _unknown(cls, key: str) -> str:
        """The problem with a key that is none of the table's own."""
        return "unknown setting"


def _table(example: str) -> BeforeValidator:
    """A top-level entry must be a table: else a problem saying what the table holds."""

    def check(value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, dict):
            raise _problem(f"expected a [{info.field_name}] table of {example}, found {value!r}")
        return value

    return BeforeValidator(check)


def _facet_name(value: Any) -> str:
    if not isinstance(value, str):
        raise _problem(f"expected a facet name in quotes, found {value!r}")
    return value.strip().lower()


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):  # pydantic's own bool would take "no" as false
        raise _problem(f"expected true or false, found {value!r}")
    return value


def _word_table(table: Any) -> dict[str, list[str]]:
    """`[lexicon.<kind>]`: canonical value -> synonyms (one word in quotes is a list of one)."""
    if not isinstance(table, dict):
        raise _problem("unknown setting; expected enabled = true/false, builtin = true/false or a "
                       'word table such as [lexicon.color] with teal = ["peacock", "petrol"]')
    out: dict[str, list[str]] = {}
    for canonical, synonyms in table.items():
        if isinstance(synonyms, str):
            synonyms = [synonyms]
        if not isinstance(synonyms, list) or not all(isinstance(s, str) for s in synonyms):
            raise _problem(f'expected a list of words in quotes, e.g. {canonical} = ["word", "two '
                           f'words"], found {synonyms!r}', canonical)
        if not canonical.strip():
            raise _problem("a canonical value must not be empty", "")
        out[canonical.strip().lower()] = [s.strip() for s in synonyms if s.strip()]
    return out


FacetName = Annotated[str, BeforeValidator(_facet_name)]
Flag = Annotated[bool, BeforeValidator(_flag)]
WordTable = Annotated[dict[str, list[str]], BeforeValidator(_word_table)]


class MissingTable(_SchemaTable):
    """`[missing]`: `values = ["NA"]`: cells holding exactly one of these are empty."""

    values: tuple[str, ...] = ()

    @classmethod
    def _unknown(cls, key: str) -> str:
        return 'unknown setting; expected values = ["NA", ...]'

    @field_validator("values", mode="before")
    @classmethod
    def _non_empty_strings(cls, values: Any) -> tuple[str, ...]:
        if not isinstance(values, list) or not all(isinstance(v, str) and v.strip() for v in values):
            raise _problem(f'expected a list of non-empty strings, e.g. ["NA"], found {values!r}')
        return tuple(v.strip() for v in values)


class LexiconTable(_SchemaTable):
    """`[lexicon]`: `enabled`, `builtin`, and a word table per kind (`[lexicon.color]`, ...)."""

    model_config = ConfigDict(frozen=True, extra="allow")
    __pydantic_extra__: dict[str, WordTable] = Field(init=False)  # kind -> its word table
    enabled: Flag = True
    builtin: Flag = True

    @model_validator(mode="after")
    def _usable_kinds(self) -> LexiconTable:
        for key in self.model_extra or {}:
            if key.strip().lower() in ("", "ignore"):
                raise _problem("not a usable kind name", key)
        return self

    def config(self) -> LexiconConfig:
        entries: dict[str, dict[str, list[str]]] = {}
        for key, words in (self.model_extra or {}).items():
            entries.setdefault(key.strip().lower(), {}).update(words)
        return LexiconConfig(self.enabled, self.builtin, entries)


class FacetsTable(_SchemaTable):
    """`[facets]`: `add = ["material"]`: heads beyond the default ones."""

    add: tuple[str, ...] = ()

    @classmethod
    def _unknown(cls, key: str) -> str:
        return 'unknown setting; expected add = ["material", ...]'

    @field_validator("add", mode="before")
    @classmethod
    def _new_names(cls, names: Any) -> tuple[str, ...]:
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise _problem(f'expected a list of facet names in quotes, e.g. ["material"], found {names!r}')
        out: list[str] = []
        for raw in names:
            name = raw.strip().lower()
            problem = facet_name_problem(name, [*FACETS, *out])
            if problem:
                raise _problem(problem)
            out.append(name)
        return tuple(out)


class SchemaFile(_SchemaTable):
    """The whole file; its tables in the order their problems are reported."""

    columns: Annotated[dict[str, FacetName],
                       _table('column name = facet, e.g. baseColour = "color"')] = {}
    rename: Annotated[dict[str, Any], _table('column = contract column, e.g. id = "item_id"')] = {}
    missing: Annotated[MissingTable,
                       _table('values = [markers of an empty cell], e.g. values = ["NA"]')
                       ] = MissingTable()
    lexicon: Annotated[LexiconTable,
                       _table("settings and word lists, e.g. enabled = false or [lexicon.color]")
                       ] = LexiconTable()
    facets: Annotated[FacetsTable, _table('facets to add, e.g. add = ["material"]')] = FacetsTable()

    @classmethod
    def _unknown(cls, key: str) -> str:
        tables = [f"[{name}]" for name in cls.model_fields]
        return (f"expected only {', '.join(tables[:-1])} and {tables[-1]} tables, found {key!r} "
                "outside them")

    def facet_names(self) -> tuple[str, ...]:
        """The facet names `[columns]` may use (besides "ignore"): the default ones and the added."""
        return (*FACETS, *self.facets.add)

    @field_validator("columns", mode="after")
    @classmethod
    def _one_facet_per_column(cls, columns: dict[str, str]) -> dict[str, str]:
        seen: dict[str, str] = {}
        for key, facet in columns.items():
            if seen.setdefault(key.strip().lower(), facet) != facet:
                raise _problem("names the same column as another entry, with another facet", key)
        return columns

    @field_validator("rename", mode="after")
    @classmethod
    def _usable_renames(cls, rename: dict[str, Any]) -> dict[str, Any]:
        for column, problem in rename_problems(rename):
            raise _problem(problem, column)
        return rename

    @model_validator(mode="after")
    def _known_facets(self) -> SchemaFile:
        facets = self.facet_names()
        for key, facet in self.columns.items():
            if facet not in facets and facet != "ignore":
                raise _problem(f"unknown facet {facet!r}; use one of {', '.join(facets)} or "
                               f"'ignore', or add it: [facets] add = [\"{facet}\"]", "columns", key)
        return self

    def to_schema(self) -> Schema:
        return Schema({key.strip().lower(): facet for key, facet in self.columns.items()},
                      check_rename(self.rename, "[rename]"), self.lexicon.config(),
                      self.missing.values, self.facets.add)


def _read_schema(name: str, data: bytes) -> Schema:
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise decode_error(name, data, None, error.start) from None
    except tomllib.TOMLDecodeError as error:
        raise DataError(name, f"not valid TOML: {error}") from None
    try:
        return SchemaFile.model_validate(document).to_schema()
    except ValidationError as error:
        raise DataError(name, _schema_message(error.errors()[0])) from None
