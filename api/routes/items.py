from __future__ import annotations

from fastapi import APIRouter

from ..deps import ModelDep
from ..schemas import ErrorOut, ItemDetailOut, ItemId

router = APIRouter(prefix="/items", tags=["items"])


@router.get("/{item_id:path}", response_model=ItemDetailOut,
            responses={404: {"model": ErrorOut}, 422: {"model": ErrorOut}, 503: {"model": ErrorOut}})
async def get_item(item_id: ItemId, rec: ModelDep) -> dict:
    """One catalogue item of the served model and its attributes per facet."""
    item_id = rec.catalog.canonical(item_id)  # a variant's SKU: its product
    idx = rec.catalog.idx(item_id)  # UnknownItemError -> 404
    descriptions = rec.catalog.descriptions
    labels = rec.catalog.attribute_labels(idx)
    return {"item_id": item_id, "title": rec.catalog.titles[idx],
            "attributes": labels, "numbers": rec.catalog.item_numbers(idx),
            "value_names": rec.catalog.item_value_names(labels), "model_version": rec.version,
            "description": (descriptions[idx] or None) if descriptions is not None else None}
