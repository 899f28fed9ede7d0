from __future__ import annotations

import time

from fastapi import APIRouter, Response

from recsys.recommender import Recommender

from ..deps import ModelDep, RulesDep, ScoringDep, SettingsDep
from ..limits import check_explain, within_budget
from ..rules import ServedRules
from ..schemas import SCORING_RESPONSES, ExplainOut, ExplainRequest, as_json

router = APIRouter(tags=["explain"])


@router.post("/explain", response_model=ExplainOut, responses=SCORING_RESPONSES)
async def explain(req: ExplainRequest, rec: ModelDep, settings: SettingsDep,
                  scoring: ScoringDep, rules: RulesDep) -> Response:
    """Why one item scores what it does: per head, its attributes (and the no-match slot), one
    row of attention weights per query token over them, and the score change when an attribute is erased."""
    check_explain(req, settings)
    return await within_budget(_explain, req, rec, rules, s=settings, limiter=scoring)


def _explain(req: ExplainRequest, rec: Recommender, rules: ServedRules) -> Response:
    start = time.perf_counter()
    detail = rec.explain(req.query, req.item_id, head_weights=req.head_weights,
                         rules=rules.for_query(req.query, rec))
    took_ms = (time.perf_counter() - start) * 1000
    title = rec.catalog.titles[rec.catalog.idx(detail.item_id)]
    out = {**vars(detail), "title": title, "model_version": rec.version, "took_ms": round(took_ms, 3)}
    return as_json(ExplainOut.model_validate(out), rec.version)
