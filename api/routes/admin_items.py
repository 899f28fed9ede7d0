"""Catalogue changes without retraining: PUT /admin/items upserts a batch, DELETE
/admin/items/{item_id} removes one. Behind the admin token.

Each change is a new catalogue revision (`recsys.revision`): the served weights over the changed
items, saved as a new version and activated, so it is served at once (new items scored from
their attributes), survives a restart, and a rollback is activating the version before it.
Changes are serialised; each one revises the version being served when it starts.
"""

from __future__ import annotations

import threading

import pandas as pd
from fastapi import APIRouter, HTTPException

from recsys.dataio import Schema, items_from_records, read_items
from recsys.errors import DataError
from recsys.revision import Change, remove, save_revision, upsert
from training.events import served_catalogue

from ..deps import AdminDep, SettingsDep, StoreDep
from ..limits import field_error
from ..model_store import ModelStore
from ..schemas import CatalogueChangeOut, ItemsUpsertRequest, error_responses

router = APIRouter(prefix="/admin/items", tags=["admin"], dependencies=[AdminDep],
                   responses=error_responses(401, 403, 404, 409, 422, 500, 503))

_changing = threading.Lock()  # one catalogue change at a time in this process


@router.put("", response_model=CatalogueChangeOut)
def put_items(req: ItemsUpsertRequest, store: StoreDep, settings: SettingsDep) -> dict:
    """Add items, or replace those whose item_id is in the catalogue (the whole row), checked as
    the items CSV is: a bad row is a 422 naming its index and column, and nothing changes."""
    if len(req.items) > settings.max_item_batch:
        raise field_error(("items",), f"at most {settings.max_item_batch} items in one batch "
                                      f"(RECSYS_MAX_ITEM_BATCH), got {len(req.items)}: split it")
    with _changing:
        base, schema = _served_items(store)
        try:
            items = items_from_records(req.items, schema=schema)
        except DataError as exc:
            loc = ("items",) if exc.row is None else ("items", exc.row, *([exc.column] if exc.column else []))
            raise field_error(loc, exc.detail) from None
        merged, change = upsert(base, items)
        return _revise(store, merged, schema, change)


@router.delete("/{item_id:path}", response_model=CatalogueChangeOut)
def delete_item(item_id: str, store: StoreDep) -> dict:
    """Remove an item: from now on no answer returns it (recommend, explain, items, compare) and
    events about it are refused. 404 for an item the served catalogue does not have."""
    with _changing:
        base, schema = _served_items(store)
        kept, change = remove(base, [item_id])  # UnknownItemError -> 404
        return _revise(store, kept, schema, change)


def _served_items(store: ModelStore) -> tuple[pd.DataFrame, Schema]:
    """The served version's items (its schema's [rename] applied) and schema."""
    folder = store.served_dir()
    if store.current is None or folder is None:
        raise HTTPException(503, detail="no model version is being served yet; see GET /ready")
    try:
        path, schema = served_catalogue(folder)
        frame, _ = read_items(path, schema=schema)
    except DataError as exc:
        raise HTTPException(409, detail=f"cannot change the catalogue of {folder.name}: "
                                        f"{exc.detail}") from None
    return frame, schema


def _revise(store: ModelStore, items: pd.DataFrame, schema: Schema, change: Change) -> dict:
    rec = store.current
    assert rec is not None  # _served_items checked it
    folder = save_revision(rec, items, schema, change, store.artifacts_dir)
    _, previous = store.activate(folder.name, reason=f"catalogue revision of {rec.version}: "
                                                      f"{change.summary()}")
    return {"serving": folder.name, "previous": previous, "items": len(items),
            "added": change.added, "replaced": change.replaced, "removed": change.removed}
