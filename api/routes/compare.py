from __future__ import annotations

import time

from fastapi import APIRouter, Response

from recsys.recommender import Recommender

from ..deps import ModelDep, RulesDep, ScoringDep, SettingsDep
from ..limits import check_compare, within_budget
from ..rules import ServedRules
from ..schemas import SCORING_RESPONSES, CompareOut, CompareRequest, as_json

router = APIRouter(tags=["explain"])


@router.post("/compare", response_model=CompareOut, responses=SCORING_RESPONSES)
async def compare(req: CompareRequest, rec: ModelDep, settings: SettingsDep,
                  scoring: ScoringDep, rules: RulesDep) -> Response:
    """Why `item_a` and `item_b` score differently for a query, head by head."""
    check_compare(req, settings)
    return await within_budget(_compare, req, rec, rules, s=settings, limiter=scoring)


def _compare(req: CompareRequest, rec: Recommender, rules: ServedRules) -> Response:
    start = time.perf_counter()
    result = rec.compare(req.query, req.item_a, req.item_b, head_weights=req.head_weights,
                         rules=rules.for_query(req.query, rec))
    took_ms = (time.perf_counter() - start) * 1000
    out = {**vars(result), "model_version": rec.version, "took_ms": round(took_ms, 3)}
    return as_json(CompareOut.model_validate(out), rec.version)
