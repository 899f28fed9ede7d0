from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST

router = APIRouter(tags=["health"])


@router.get("/metrics", response_class=Response)
async def metrics(request: Request) -> Response:
    """Prometheus metrics: latency per route, requests by status, the served model version."""
    return Response(request.app.state.telemetry.render(), media_type=CONTENT_TYPE_LATEST)
