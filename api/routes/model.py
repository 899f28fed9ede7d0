from __future__ import annotations

from pathlib import PurePath
from typing import Any

from fastapi import APIRouter

from ..deps import ModelDep, VersionsDep
from ..schemas import ErrorOut, ModelOut

router = APIRouter(prefix="/model", tags=["model"])


@router.get("", response_model=ModelOut, responses={503: {"model": ErrorOut}})
async def get_model_info(rec: ModelDep, versions: VersionsDep) -> dict:
    """The served version: when it was trained, on which data (fingerprints), its metrics."""
    m = rec.manifest
    return {
        "version": rec.version, "trained_at": m.get("trained_at"),
        "facets": list(rec.facets),
        "attributes": {f: len(rec.catalog.vocab.get(f, ())) for f in rec.facets},
        "n_items": rec.catalog.n_items,
        "key_names": rec.catalog.key_names,
        "loaded_at": versions.loaded_at or "", "data": public_paths(m.get("data", {})),
        "metrics": m.get("metrics", {}),
        "config": m.get("config", {}), "training": m.get("training", {}),
    }


def public_paths(obj: Any) -> Any:
    """The manifest's data section with every file named by its base name: the server's folders
    are nobody's business (the fingerprint says which data it was)."""
    if isinstance(obj, dict):
        return {k: PurePath(v).name if k in ("file", "path") and isinstance(v, str) else public_paths(v)
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [public_paths(v) for v in obj]
    return obj
