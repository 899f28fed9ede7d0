"""Catalogue changes without retraining: PUT /admin/items upserts a batch, DELETE
/admin/items/{item_id} removes one. Behind the admin token.

Each change is a new catalogue revision (`api.revision`): the served weights over the changed
items, saved as a new version and activated, so it is served at once (new items scored from
their attributes), survives a restart, and a rollback is activating the version before it.
Changes are serialised across every process sharing the store and the artifacts folder
(workers, replicas), and with activations: each takes the store's catalogue lock
(`ServedVersions.changing`), then revises the version `current` names, the newest revision
whichever process made it, and points
`current` at the result, which the other processes follow (`ServedVersions.follow_activations`,
`follow_pointer`). Revising the process's own served version instead lost the changes made
through another process that it had not followed yet.
"""

from __future__ import annotations

import pandas as pd
from fastapi import APIRouter, HTTPException

from recsys.artifact import served_catalogue
from recsys.errors import ArtifactError, DataError
from recsys.io.readers import items_from_records, read_items
from recsys.io.schema import Schema
from recsys.recommender import Recommender

from ..deps import AdminDep, SettingsDep, VersionsDep
from ..limits import field_error
from ..revision import Change, remove, save_revision, upsert
from ..schemas import CatalogueChangeOut, ItemId, ItemsUpsertRequest, error_responses
from ..served_versions import ServedVersions, Superseded

router = APIRouter(prefix="/admin/items", tags=["admin"], dependencies=[AdminDep],
                   responses=error_responses(401, 403, 404, 409, 422, 500, 503))


@router.put("", response_model=CatalogueChangeOut)
def put_items(req: ItemsUpsertRequest, versions: VersionsDep, settings: SettingsDep) -> dict:
    """Add items, or replace those whose item_id is in the catalogue (the whole row), checked as
    the items CSV is: a bad row is a 422 naming its index and column, and nothing changes.
    `variants` gives items other ids (their variants' SKUs) that name them from then on."""
    if len(req.items) > settings.max_item_batch:
        raise field_error(("items",), f"at most {settings.max_item_batch} items in one batch "
                                      f"(RECSYS_MAX_ITEM_BATCH), got {len(req.items)}: split it")
    with versions.changing():
        rec, base, schema = _latest_items(versions)
        try:
            items = items_from_records(req.items, schema=schema)
        except DataError as exc:
            loc = ("items",) if exc.row is None else ("items", exc.row, *([exc.column] if exc.column else []))
            raise field_error(loc, exc.detail) from None
        merged, change = upsert(base, items)
        return _revise(versions, rec, merged, schema, change, _variant_ids(req.variants, merged))


@router.delete("/{item_id:path}", response_model=CatalogueChangeOut)
def delete_item(item_id: ItemId, versions: VersionsDep) -> dict:
    """Remove an item: from now on no answer returns it (recommend, explain, items, compare) and
    events about it are refused. 404 for an item the newest revision does not have."""
    with versions.changing():
        rec, base, schema = _latest_items(versions)
        kept, change = remove(base, [item_id])  # UnknownItemError -> 404
        return _revise(versions, rec, kept, schema, change)


def _latest_items(versions: ServedVersions) -> tuple[Recommender, pd.DataFrame, Schema]:
    """The newest revision (`ServedVersions.latest`, under the catalogue lock: no other process
    changes it meanwhile), its items (its schema's [rename] applied) and schema."""
    rec = versions.latest()  # ArtifactError (a broken version) -> 409
    if versions.current is None or rec is None:
        raise HTTPException(503, detail="no model version is being served yet; see GET /ready",
                            headers={"Retry-After": "5"})
    folder = versions.version_dir(rec.version)
    try:
        path, schema = served_catalogue(folder)
        frame, _ = read_items(path, schema=schema)
    except DataError as exc:
        raise HTTPException(409, detail=f"cannot change the catalogue of {folder.name}: "
                                        f"{exc.detail}") from None
    return rec, frame, schema


def _variant_ids(variants: dict[str, list[str]], items: pd.DataFrame) -> dict[str, str]:
    """The request's `variants` as aliases (a variant's id -> its item_id), checked against the
    catalogue after the change: a 422 naming the item for one that is not there, or a variant id
    that is an item's own or is given to two items."""
    ids = set(items["item_id"])
    aliases: dict[str, str] = {}
    for item_id, variant_ids in variants.items():
        if item_id not in ids:
            raise field_error(("variants", item_id), f"no item {item_id!r} in the catalogue or in this "
                                                     "batch's items: add it under `items`")
        for variant in variant_ids:
            if variant in ids:
                raise field_error(("variants", item_id), f"{variant!r} is an item's own item_id; a "
                                                         "variant's id must name no item")
            if aliases.setdefault(variant, item_id) != item_id:
                raise field_error(("variants", item_id), f"{variant!r} is given to {aliases[variant]!r} "
                                                         "too; a variant belongs to one item")
    return aliases


def _revise(versions: ServedVersions, rec: Recommender, items: pd.DataFrame, schema: Schema,
            change: Change, aliases: dict[str, str] | None = None) -> dict:
    """Save the revision, then serve it as every other process will: loaded from its folder,
    its files' checksums verified and a few queries scored (`load_version`), not the model in
    memory that was saved, which a damaged write would leave serving here alone."""
    revised = save_revision(rec, items, schema, change, versions.artifacts_dir, aliases)
    try:
        versions.activate(revised.version, reason=f"catalogue revision of {rec.version}: "
                                               f"{change.summary()}", base=rec.version)
    except Superseded as exc:  # sent again, it is made on the newest version: not a 409
        raise HTTPException(503, detail=exc.public, headers={"Retry-After": "1"}) from None
    except ArtifactError as exc:
        raise HTTPException(409, detail=f"the revision {revised.version} was saved but refused "
                                        f"on load, so the change is not applied (still "
                                        f"serving {rec.version}): {exc.public}") from None
    # the version revised, which this process may not have served (another one made it)
    return {"serving": revised.version, "previous": rec.version, "items": len(items),
            "added": change.added, "replaced": change.replaced, "removed": change.removed}
