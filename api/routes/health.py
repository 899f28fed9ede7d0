from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from ..deps import VersionsDep
from ..schemas import HealthOut, ReadyOut

router = APIRouter(tags=["health"])


@router.get("/health", response_model=HealthOut)
async def health() -> dict:
    """The process is up (liveness)."""
    return {"status": "ok"}


@router.get("/ready", response_model=ReadyOut, responses={503: {"model": ReadyOut}})
async def ready(versions: VersionsDep):
    """200 once a model is loaded and served, 503 before (readiness)."""
    rec = versions.current
    if rec is not None:  # detail: what `current` names, when it was refused
        return {"status": "ready", "model_version": rec.version, "detail": versions.pointer_problem}
    status = "failed" if versions.error else "loading"
    return JSONResponse(status_code=503, headers={"Retry-After": "5"},
                        content={"status": status, "model_version": None, "detail": versions.error})
