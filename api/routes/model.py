from __future__ import annotations

from fastapi import APIRouter

from recsys.facets import FACETS

from ..deps import ModelDep, StoreDep
from ..schemas import ErrorOut, ModelOut

router = APIRouter(prefix="/model", tags=["model"])


@router.get("", response_model=ModelOut, responses={503: {"model": ErrorOut}})
async def get_model_info(rec: ModelDep, store: StoreDep) -> dict:
    """The served version: when it was trained, on which data (fingerprints), its metrics."""
    m = rec.manifest
    return {
        "version": rec.version, "trained_at": m.get("trained_at"),
        "facets": m.get("facets", list(FACETS)), "n_items": rec.catalog.n_items,
        "loaded_at": store.loaded_at or "", "data": m.get("data", {}), "metrics": m.get("metrics", {}),
        "config": m.get("config", {}), "training": m.get("training", {}),
    }
