"""Completions as the shopper types (issue 31): `GET /suggest?q=`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from recsys.recommender import Recommender
from recsys.suggest import Suggester

from ..deps import ModelDep, ScoringDep, SettingsDep
from ..limits import check_query, within_budget
from ..schemas import SCORING_RESPONSES, SuggestOut, as_json

router = APIRouter(tags=["recommend"])
MAX_SUGGESTIONS = 20


@router.get("/suggest", response_model=SuggestOut, responses=SCORING_RESPONSES)
async def suggest(
    request: Request, rec: ModelDep, settings: SettingsDep, scoring: ScoringDep,
    q: Annotated[str, Query(description="what the shopper has typed so far")],
    n: Annotated[int, Query(ge=1, le=MAX_SUGGESTIONS, description="how many completions")] = 8,
) -> Response:
    """Completions of `q`, best first: searches at least 2 shoppers made that begin with it
    (one shopper's searches are never shown to another), then the catalogue's words and values
    completing its last word, then the same with the last word read as a typo of one edit
    (`corrected`). Built once per model version; the logged searches are re-read every minute."""
    check_query(q, settings, ("q",), "query")
    suggestions = request.app.state.suggestions
    ready = suggestions.ready_for(rec)
    if ready is None:  # the first request of a version builds it: seconds on a large catalogue
        ready = await within_budget(suggestions.build, rec, s=settings, limiter=scoring)
    return _answer(ready, q, n, rec)


def _answer(suggester: Suggester, q: str, n: int, rec: Recommender) -> Response:
    out = SuggestOut(query=q, suggestions=suggester.suggest(q, n), model_version=rec.version)
    return as_json(out, rec.version)
