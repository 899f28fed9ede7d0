from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

router = APIRouter(tags=["page"])
STATIC = Path(__file__).resolve().parent.parent / "static"


@router.get("/", include_in_schema=False)
async def index() -> FileResponse:
    """The web page (search box, results, per-head heatmaps); `/?q=QUERY` opens a query."""
    return FileResponse(STATIC / "index.html", media_type="text/html")
