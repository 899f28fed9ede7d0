from __future__ import annotations

import time

from fastapi import APIRouter, Response
from starlette.concurrency import run_in_threadpool

from recsys.recommender import Recommender

from ..deps import ModelDep, SettingsDep
from ..limits import check_recommend
from ..schemas import ErrorOut, RecommendOut, RecommendRequest, recommend_json

router = APIRouter(tags=["recommend"])

# Ranks up to this deep (offset + k) without filters are served on the event loop itself.
INLINE_MAX_RANK = 100


@router.post("/recommend", response_model=RecommendOut,
             responses={404: {"model": ErrorOut}, 422: {"model": ErrorOut}, 503: {"model": ErrorOut}})
async def recommend(req: RecommendRequest, rec: ModelDep, settings: SettingsDep) -> Response:
    """Rank the catalogue (or the `candidates`) for a query, with per-head explanations.

    Each item's `score` is exactly `explanation.prior` plus the sum of its heads' contributions.
    """
    # A plain request (top 10 with explanations: about 0.3 ms at 100k items) is Python and small
    # numpy work that holds the GIL throughout, so a worker thread runs it no sooner; the hop
    # there and back only adds GIL hand-offs between the thread and the event loop, which cost
    # throughput and p99 under load (README, "Measured figures").
    # Filters and deep pages do more (and partly GIL-free) work: the thread pool keeps them off
    # the event loop.
    check_recommend(req, settings)
    if req.filters or req.offset + req.k > INLINE_MAX_RANK:
        return await run_in_threadpool(_recommend, req, rec)
    return _recommend(req, rec)


def _recommend(req: RecommendRequest, rec: Recommender) -> Response:
    start = time.perf_counter()
    result = rec.recommend(req.query, k=req.k, offset=req.offset, filters=req.filters or None,
                           exclude=req.exclude, candidates=req.candidates,
                           head_weights=req.head_weights, explain=req.explain)
    took_ms = (time.perf_counter() - start) * 1000
    # the documented RecommendOut (response_model, for /docs), built without validating it again
    return recommend_json(result, req.offset, round(took_ms, 3))
