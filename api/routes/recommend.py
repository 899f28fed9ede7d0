from __future__ import annotations

import time

from fastapi import APIRouter, Request, Response

from recsys.catalog import FilterValues, NumberRange
from recsys.did_you_mean import did_you_mean, every_word_matches
from recsys.errors import InputError
from recsys.profile import Profile
from recsys.recommender import Recommender

from ..body_route import JsonBodyRoute
from ..deps import get_scoring, served_model
from ..limits import check_recommend, within_budget
from ..logs import request_id_var
from ..profiles import OFF, history_out
from ..rules import ServedRules
from ..schemas import (
    SCORING_RESPONSES,
    FilterRange,
    RecommendOut,
    RecommendRequest,
    recommend_json,
)
from ..suggestions import Suggestions

# the body read and validated by pydantic-core from the bytes, the endpoint called without
# FastAPI's parameter solving (api/body_route.py): together a fifth of a short answer
router = APIRouter(tags=["recommend"], route_class=JsonBodyRoute)
NOT_ASKED = Profile([], {}, {}, 0, OFF)  # a user_id with personalize false

# the most a request answered on the event loop may ask for (`_answers_at_once`): at 100k items a
# warm top 10 takes 0.75 ms (p99 1.7 ms, `recsys bench`); ten explanations 0.3-0.6 ms at 3k items
# (more on a busy machine), so twenty keep the loop's turn well inside the switch interval (5 ms)
INLINE_MAX_RANK = 20
INLINE_MAX_ITEMS = 100_000


@router.post("/recommend", response_model=RecommendOut, responses=SCORING_RESPONSES)
async def recommend(req: RecommendRequest, request: Request) -> Response:
    """Rank the catalogue (or the `candidates`) for a query, with per-head explanations.

    Each item's `score` is exactly `explanation.prior` plus the sum of its heads' contributions
    plus the amounts of the merchandising rules that acted on it (`explanation.rules`; a pin or
    a hide says so instead of an amount).
    While an experiment runs, a request with a `user_id` is answered by that user's arm (the
    answer's `experiment` and `model_version` say which); one without, by the active version.
    """
    # what the routes' dependencies give, read here rather than declared: FastAPI's resolution
    # of five of them cost more than ranking 3k items (the answer's X-Model-Version header is
    # the version that answered: `recommend_json`)
    state = request.app.state
    settings, rec = state.settings, served_model(request)
    check_recommend(req, settings)
    arm = state.experiments.choose(req.user_id)
    experiment = None
    if arm is not None:
        rec, experiment = arm.model, {"name": arm.experiment, "arm": arm.arm}
        if arm.removed:  # what a catalogue change removed meanwhile is in no answer, an arm's neither
            req = req.model_copy(update={"exclude": [*req.exclude, *arm.removed]})
    request_id = request_id_var.get() or ""
    suggestions, served_rules = state.suggestions, state.rules
    profile = None if req.user_id is None else await _profile(req, req.user_id, rec, request)
    if _answers_at_once(req, rec, profile):
        return _recommend(req, rec, request_id, experiment, suggestions, profile, served_rules)
    return await within_budget(_recommend, req, rec, request_id, experiment, suggestions, profile,
                               served_rules, s=settings,
                               limiter=await get_scoring(request))


async def _profile(req: RecommendRequest, user_id: str, rec: Recommender, request: Request) -> Profile:
    """The profile to rank with (`personalize`): the shopper's (a typed query with `personalize`
    left out: its sure words alone, `Profile.sure`), or an empty one saying why not."""
    if req.personalize is False:
        return NOT_ASKED
    profile: Profile = await request.app.state.profiles.profile(user_id, rec)
    return profile.sure() if req.personalize is None and rec.is_typed(req.query) else profile


def _answers_at_once(req: RecommendRequest, rec: Recommender, profile: Profile | None) -> bool:
    """Whether the request is answered on the event loop rather than in a worker thread.

    A thread keeps a long request (words never seen: up to 0.4 ms each on Home Depot, 32 of
    them; filters; a deep page) from holding up the others, /health included, and puts it under
    the time budget. It buys nothing for a short one: the thread holds the GIL while it works,
    so the loop waits all the same, and the hop itself (a thread woken, the GIL handed over and
    back, the loop woken) cost 0.37 ms of CPU a request, more than ranking 3k items and
    explaining ten. So a request whose work is bounded small is answered at once: every word
    already in the index's per-word cache, no filter, candidate, exclusion or head weight, at
    most INLINE_MAX_RANK ranks (and explanations), a catalogue of at most INLINE_MAX_ITEMS, and
    facet counts only when every word's item mask is cached too.
    """
    return (req.offset + req.k <= INLINE_MAX_RANK and not req.filters and req.candidates is None
            and not req.exclude and not req.head_weights and rec.catalog.n_items <= INLINE_MAX_ITEMS
            and rec.is_warm(" ".join([req.query, *(profile.words if profile else ())]))
            and (not req.facet_counts or rec.facet_counter.is_warm(req.query)))


def _recommend(req: RecommendRequest, rec: Recommender, request_id: str,
               experiment: dict[str, str] | None, suggestions: Suggestions,
               profile: Profile | None, served_rules: ServedRules) -> Response:
    start = time.perf_counter()
    rules = served_rules.for_query(req.query, rec)
    result = rec.recommend(req.query, k=req.k, offset=req.offset, filters=_filters(req),
                           exclude=req.exclude, candidates=req.candidates,
                           head_weights=req.head_weights, explain=req.explain,
                           history=profile.words if profile else (), rules=rules)
    counts = None
    if req.facet_counts:
        keys = None if req.facet_counts is True else req.facet_counts
        counts = rec.facet_counts(req.query, keys, _filters(req), req.exclude, req.candidates, rules)
    offered = None
    if result.unmatched_tokens:  # the suggester's terms are read at install, its searches by the first such query
        offered = did_you_mean(req.query, result.unmatched_tokens, suggestions.ready_for(rec) or suggestions.build(rec),
                               lambda text: every_word_matches(rec.index, text))
    took_ms = (time.perf_counter() - start) * 1000
    # the documented RecommendOut (response_model, for /docs), built without validating it again
    return recommend_json(result, req.offset, round(took_ms, 3), request_id, experiment, counts, offered,
                          history_out(profile, result.history))


def _filters(req: RecommendRequest) -> dict[str, FilterValues] | None:
    """The request's filters for the recommender: a range as a `NumberRange` (checked there: an
    empty or inverted range is an InputError, a 422)."""
    out: dict[str, FilterValues] = {}
    for key, v in req.filters.items():
        try:
            out[key] = NumberRange(v.min, v.max) if isinstance(v, FilterRange) else v
        except InputError as e:  # said at its key, as the other filters' problems are
            raise InputError(f"filters: {key.strip()!r}: {e}") from None
    return out or None
