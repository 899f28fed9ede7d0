"""Items like an item (issue 32): `GET /items/{item_id}/similar`, ranked by its own attributes."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.exceptions import RequestValidationError

from recsys.io.ids import SIMILAR
from recsys.recommender import Recommender
from recsys.similar import same_keys

from ..deps import ModelDep, ScoringDep, SettingsDep
from ..limits import check_recommend, within_budget
from ..rules import ServedRules
from ..schemas import SCORING_RESPONSES, FilterRange, ItemId, RecommendRequest, SimilarOut, as_json

router = APIRouter(prefix="/items", tags=["items"])


@router.get(f"/{{item_id:path}}/{SIMILAR}", response_model=SimilarOut, responses=SCORING_RESPONSES)
async def similar(
    request: Request, item_id: ItemId, rec: ModelDep, settings: SettingsDep, scoring: ScoringDep,
    k: Annotated[int, Query(ge=1, description="how many items to return")] = 10,
    offset: Annotated[int, Query(ge=0, description="how many ranked items to skip (paging)")] = 0,
    explain: Annotated[bool, Query(description="include per-head explanations")] = True,
    filter: Annotated[list[str] | None, Query(
        description="`key:value`, repeatable: values of one key are OR-ed, keys AND-ed, as "
                    "`filters` of POST /recommend (`?filter=category:chair&filter=color:red`)")] = None,
    exclude: Annotated[list[ItemId] | None, Query(description="item ids never to return, repeatable")] = None,
    same: Annotated[list[str] | None, Query(
        description="a filter key whose values the results share with the item, repeatable "
                    "(`?same=category`: a chair's like-this are chairs); a key the item has no "
                    "value of restricts nothing. Not given: the item's kind (its value of the "
                    "finest of the catalogue's `articleType`, `product_type`, `type`, "
                    "`subcategory`, `category`, ... columns that at least 10 other items share; "
                    "in a catalogue with none of them, the column whose values hold the kinds its "
                    "titles name, else the kind its title names; `kept_to` says which), unless "
                    "`filter` names one of those keys; `?same=none`: items of every kind")] = None,
) -> Response:
    """Items like `item_id` (never itself): the words of its own attributes are the query, ranked
    and explained head by head as `/recommend` does; `drawn_by` says which of its attributes
    each query word came from. The merchandising rules for any query act on it (a rule scoped to
    queries has no query here to match). An unknown item is a 404."""
    filters: dict[str, list[str]] = {}
    for i, pair in enumerate(filter or ()):
        key, sep, value = pair.partition(":")
        if not (sep and key.strip() and value.strip()):
            raise RequestValidationError([{"loc": ("query", "filter", i), "type": "value_error",
                                           "msg": f"{pair!r} is not key:value (e.g. category:chair)"}])
        filters.setdefault(key.strip(), []).append(value.strip())
    as_request: dict[str, list[str] | FilterRange] = {**filters}
    req = RecommendRequest(query="", k=k, offset=offset, filters=as_request, exclude=exclude or [],
                           explain=explain)
    check_recommend(req, settings, "query")  # the limits of /recommend, on the URL's parameters
    return await within_budget(_similar, item_id, filters, same_keys(same), req, rec, request.app.state.rules,
                               s=settings, limiter=scoring)


def _similar(item_id: str, filters: dict[str, list[str]], same: Sequence[str] | None, req: RecommendRequest,
             rec: Recommender, served_rules: ServedRules) -> Response:
    start = time.perf_counter()
    rules = served_rules.for_query("", rec)  # the rules for any query alone
    asked, result = rec.similar(item_id, k=req.k, offset=req.offset, filters=filters or None,
                                exclude=req.exclude, explain=req.explain, same=same, rules=rules)
    took_ms = round((time.perf_counter() - start) * 1000, 3)
    out = SimilarOut.model_validate({
        "item_id": asked.item_id, "query": asked.query, "drawn_by": asked.drawn_by, "kept_to": asked.kept_to,
        "model_version": result.model_version, "offset": req.offset, "total": result.total,
        "items": result.items, "took_ms": took_ms})
    return as_json(out, result.model_version)
