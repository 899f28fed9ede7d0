"""Catalogue revisions: items upserted or removed under a model's weights, without retraining.

A revision is a new model version: the same weights over the changed catalogue
(`reindex.with_catalog`: new items are scored from their attributes), its items written as a
CSV named by its content next to the versions (`<artifacts>/catalogues/items-<sha256>.csv`,
never rewritten), and a manifest that says what changed from which version. So a revision
survives a restart like any version, a retrain from events trains on its catalogue, and a
rollback is activating the version before it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from recsys.artifact import CATALOGUES, save_version
from recsys.errors import InputError, UnknownItemError
from recsys.io.schema import Schema
from recsys.io.text import csv_bytes, fingerprint
from recsys.recommender import Recommender
from recsys.reindex import with_catalog

MAX_LISTED = 100  # item ids a manifest lists per kind of change


@dataclass(frozen=True)
class Change:
    added: list[str]
    replaced: list[str]
    removed: list[str]

    def summary(self) -> str:
        parts = [f"{len(ids)} {kind}" for kind, ids in
                 (("added", self.added), ("replaced", self.replaced), ("removed", self.removed)) if ids]
        return ", ".join(parts) or "no change"


def upsert(base: pd.DataFrame, items: pd.DataFrame) -> tuple[pd.DataFrame, Change]:
    """`base` with `items` in it: an item_id already there is replaced in place (the whole row),
    a new one appended. Columns are the union; a row without a column has an empty cell."""
    columns = list(dict.fromkeys([*base.columns, *items.columns]))
    at = {item_id: i for i, item_id in enumerate(base["item_id"])}
    merged = base.reindex(columns=columns, fill_value="").reset_index(drop=True)
    rows = items.reindex(columns=columns, fill_value="")
    known = rows["item_id"].isin(at).to_numpy()
    replaced = rows[known]
    if len(replaced):
        merged.loc[[at[i] for i in replaced["item_id"]], columns] = replaced.to_numpy()
    merged = pd.concat([merged, rows[~known]], ignore_index=True)
    change = Change(added=list(rows.loc[~known, "item_id"]), replaced=list(replaced["item_id"]), removed=[])
    return merged, change


def remove(base: pd.DataFrame, item_ids: list[str]) -> tuple[pd.DataFrame, Change]:
    """`base` without `item_ids`; UnknownItemError for one it does not have."""
    present = set(base["item_id"])
    # an id is read stripped everywhere (`Catalog.idx`): " A1 " names A1 here too
    item_ids = [i if i in present or i.strip() not in present else i.strip() for i in item_ids]
    for item_id in item_ids:
        if item_id not in present:
            raise UnknownItemError(item_id)
    kept = base[~base["item_id"].isin(item_ids)].reset_index(drop=True)
    if kept.empty:
        raise InputError(f"removing {', '.join(map(repr, item_ids[:3]))} would leave no item: a "
                         f"catalogue needs at least one (add items first)")
    return kept, Change(added=[], replaced=[], removed=list(item_ids))


def write_catalogue(items: pd.DataFrame, artifacts_dir: Path) -> Path:
    """`items` as a CSV under `artifacts_dir/catalogues`, named by its content; atomic (a
    temporary file, then a rename), and an existing file of that name is the same bytes."""
    data = csv_bytes(items)
    folder = Path(artifacts_dir) / CATALOGUES
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"items-{hashlib.sha256(data).hexdigest()[:32]}.csv"
    if not path.is_file():
        fd, tmp = tempfile.mkstemp(prefix=".items-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return path


def save_revision(rec: Recommender, items: pd.DataFrame, schema: Schema, change: Change,
                  artifacts_dir: Path, aliases: Mapping[str, str] | None = None) -> Recommender:
    """A new version: `rec`'s weights over `items` (already validated, the schema's [rename]
    applied), not made current (the caller activates it), with `aliases` (a variant's id ->
    its item_id, checked) beside those of the items it keeps. Returns it, as saved (its
    `version` names its folder under `artifacts_dir`)."""
    revised = with_catalog(rec, items, schema, aliases)
    path = write_catalogue(items, artifacts_dir)
    manifest = revision_manifest(rec.manifest, rec.version, path, len(items), schema, change)
    save_version(revised, artifacts_dir, manifest, popularity=revised.popularity,
                 make_current=False)
    return revised


def revision_manifest(manifest: dict[str, Any], version: str, items_file: Path, n_items: int,
                      schema: Schema, change: Change) -> dict[str, Any]:
    """The manifest of a revision of `version` (whose manifest is `manifest`): its training and
    metrics are the weights' (measured on the catalogue they were trained on), its data the new
    items file; `catalogue` says what changed, from which version, since which trained one."""
    before = manifest.get("catalogue") or {}
    data = {**(manifest.get("data") or {}),
            "items": {"file": str(items_file), "fingerprint": fingerprint(items_file),
                      "rows": n_items, "skipped_lines": []},
            # the file holds the contract's column names: nothing left to rename
            "schema": dataclasses.replace(schema, rename={}).to_json()}
    catalogue = {"revision": int(before.get("revision", 0)) + 1, "revision_of": version,
                 "weights_of": before.get("weights_of", version),
                 "revised_at": datetime.now(UTC).isoformat(timespec="seconds"),
                 "change": change.summary(),
                 **{kind: ids[:MAX_LISTED] for kind, ids in dataclasses.asdict(change).items()}}
    out = {k: v for k, v in manifest.items() if k not in ("version", "format", "config", "facets")}
    return {**out, "data": data, "catalogue": catalogue}
