"""Forget a shopper: DELETE /admin/users/{user_id}. Behind the admin token."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request

from ..deps import AdminDep
from ..profiles import Profiles
from ..schemas import ForgottenOut, StoredText, error_responses

router = APIRouter(prefix="/admin/users", tags=["admin"], dependencies=[AdminDep],
                   responses=error_responses(401, 403, 422, 500, 503))


async def get_profiles(request: Request) -> Profiles:
    return request.app.state.profiles


@router.delete("/{user_id:path}", response_model=ForgottenOut)
def forget_user(user_id: Annotated[StoredText, Path(min_length=1, max_length=256)],
                profiles: Annotated[Profiles, Depends(get_profiles)]) -> dict:
    """Forget a shopper: delete every event with this `user_id` from the store and their profile
    from every serving process (this one at once, the others at their next poll of the store,
    RECSYS_WATCH_INTERVAL_S). Their next answers are not personalised. Forgetting a shopper the
    store has no events of is not an error (`deleted_events`: 0)."""
    return {"user_id": user_id, "deleted_events": profiles.forget(user_id)}
