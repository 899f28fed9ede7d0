from __future__ import annotations

import time

from fastapi import APIRouter, Response

from ..deps import ModelDep, SettingsDep
from ..limits import check_recommend
from ..schemas import ErrorOut, RecommendOut, RecommendRequest, recommend_json

router = APIRouter(tags=["recommend"])


@router.post("/recommend", response_model=RecommendOut,
             responses={404: {"model": ErrorOut}, 422: {"model": ErrorOut}, 503: {"model": ErrorOut}})
def recommend(req: RecommendRequest, rec: ModelDep, settings: SettingsDep) -> Response:
    """Rank the catalogue (or the `candidates`) for a query, with per-head explanations.

    Each item's `score` is exactly `explanation.prior` plus the sum of its heads' contributions.
    """
    check_recommend(req, settings)
    start = time.perf_counter()
    result = rec.recommend(req.query, k=req.k, offset=req.offset, filters=req.filters or None,
                           exclude=req.exclude, candidates=req.candidates,
                           head_weights=req.head_weights, explain=req.explain)
    took_ms = (time.perf_counter() - start) * 1000
    # the documented RecommendOut (response_model, for /docs), built without validating it again
    return recommend_json(result, req.offset, round(took_ms, 3))
