"""Merchandising rules (admin token): create, list, change, delete, and who did what when.

Rules are checked against the served catalogue before anything is stored: a bad field is a 422
naming it (nothing stored, however many rules were sent); a rule acting on no item is stored
with a warning (the catalogue may gain one). Every serving process applies a change within a
poll of the store (api/rules.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Query

from recsys.recommender import Recommender
from recsys.rules import Rule, RuleError, check_rule, matching_items
from recsys.score_scale import score_scale
from store.db import Database
from store.rules import (
    RuleConflict,
    RuleLimit,
    StoredRule,
    create_rules,
    delete_rule,
    list_rules,
    rule_history,
    update_rule,
)

from ..deps import AdminDep, DatabaseDep, ModelDep, RulesDep
from ..limits import field_error, in_utc
from ..rules import utc_now
from ..schemas import (
    RuleBody,
    RuleChangesOut,
    RuleName,
    RulesOut,
    RulesRequest,
    error_responses,
)

router = APIRouter(prefix="/admin/rules", tags=["admin"], dependencies=[AdminDep],
                   responses=error_responses(401, 403, 500, 503))

# rules one request may send, and the store may hold: each applying rule costs a request a
# mask over its items, so thousands would slow every answer (benchmarks/rules_bench.py: 100)
MAX_RULES_PER_REQUEST = 500
MAX_RULES = 1000
ActorHeader = Annotated[str, Header(alias="X-Actor", max_length=256,
                                    description="who makes the change, for the audit trail")]


def _naive_utc(t: datetime | None, loc: tuple) -> datetime | None:
    """`t` in UTC without its zone, as the store keeps a rule's window; a 422 at `loc` for a
    time outside the years 1-9999 once in UTC (`in_utc`)."""
    at = in_utc(t, loc)
    return at.replace(tzinfo=None) if at is not None else None


def _rule(name: str, body: RuleBody, loc: tuple = ()) -> Rule:
    return Rule(name=name, kind=body.kind, attribute=body.attribute, item_id=body.item_id,
                amount=body.amount, position=body.position, match=body.match, query=body.query,
                start=_naive_utc(body.start, (*loc, "start")), end=_naive_utc(body.end, (*loc, "end")))


def _checked(rule: Rule, rec: Recommender, loc: tuple) -> str | None:
    try:
        return check_rule(rule, rec.catalog)
    except RuleError as exc:
        raise field_error((*loc, exc.field), str(exc)) from None


def _out(stored: list[StoredRule], revision: int, rec: Recommender, warnings: list[str]) -> dict:
    now = utc_now()
    rules = [{**vars(s.item), "active": s.item.in_window(now),
              "matches": int(matching_items(s.item, rec.catalog).size), "created_at": s.created_at,
              "updated_at": s.updated_at, "updated_by": s.updated_by} for s in stored]
    scale = score_scale(rec)
    return {"revision": revision, "rules": rules, "warnings": warnings,
            "scale": {"searches": scale.searches, "first_to_tenth": scale.first_to_tenth,
                      "neighbours": scale.neighbours, "note": scale.note}}


@router.get("", response_model=RulesOut)
def list_all(db: DatabaseDep, rec: ModelDep) -> dict:
    """Every rule in the store, oldest first, with whether its window holds now and how many
    items of the served catalogue it acts on."""
    revision, stored = list_rules(db)
    return _out(stored, revision, rec, [])


@router.post("", status_code=201, response_model=RulesOut, responses=error_responses(409, 422))
def create(req: RulesRequest, db: DatabaseDep, rec: ModelDep, served: RulesDep,
           actor: ActorHeader = "admin") -> dict:
    """Store rules, all or none: a 422 names the first bad field (`rules.3.position`), a 409 a
    name taken. Each serving process applies them within RECSYS_WATCH_INTERVAL_S."""
    if len(req.rules) > MAX_RULES_PER_REQUEST:
        raise field_error(("rules",), f"at most {MAX_RULES_PER_REQUEST} rules a request, got "
                                      f"{len(req.rules)}: send them in parts")
    names = [r.name for r in req.rules]
    twice = sorted({n for n in names if names.count(n) > 1}) if len(set(names)) < len(names) else []
    if twice:
        raise field_error(("rules",), f"rule {twice[0]!r} is sent twice: names are unique")
    rules = [_rule(r.name, r, ("rules", n)) for n, r in enumerate(req.rules)]
    warnings = [w for n, r in enumerate(rules) if (w := _checked(r, rec, ("rules", n)))]
    try:
        create_rules(db, rules, actor, MAX_RULES)
    except RuleConflict as exc:
        raise HTTPException(409, detail=str(exc)) from None
    except RuleLimit as exc:
        raise field_error(("rules",), str(exc)) from None
    served.follow()
    return _created(db, rec, set(names), warnings)


def _created(db: Database, rec: Recommender, names: set[str], warnings: list[str]) -> dict:
    revision, stored = list_rules(db)
    return _out([s for s in stored if s.item.name in names], revision, rec, warnings + _pin_warnings(stored, names))


def _pin_warnings(stored: list[StoredRule], names: set[str]) -> list[str]:
    """A warning for each pin of `names` whose item, or whose position, another stored pin takes
    too: an answer lists the item once, at the higher place, and of two items pinned at one place
    the later takes the next free one (`recsys.rules.Adjustments`, `place_pins`)."""
    pins = [s.item for s in stored if s.item.kind == "pin"]
    out = []
    for rule in pins:
        if rule.name in names:
            others = [p for p in pins if p.item_id == rule.item_id and p.name != rule.name and p.meets(rule)]
            if others:
                named = ", ".join(f"{p.name!r} (position {p.position})" for p in others)
                out.append(f"rule {rule.name!r}: item {rule.item_id!r} is pinned by {named} too; where both "
                           f"apply, it is placed once, at the higher place")
            crowded = [p for p in pins if p.position == rule.position and p.item_id != rule.item_id
                       and p.meets(rule)]
            if crowded:
                named = ", ".join(f"{p.name!r} (item {p.item_id!r})" for p in crowded)
                out.append(f"rule {rule.name!r}: position {rule.position} is pinned by {named} too; where "
                           f"both apply, the older rule takes it and the other the next free place")
    return out


@router.put("/{name}", response_model=RulesOut, responses=error_responses(404, 422))
def change(name: RuleName, body: RuleBody, db: DatabaseDep, rec: ModelDep, served: RulesDep,
           actor: ActorHeader = "admin") -> dict:
    """Replace the rule `name` with `body` (every field: a field left out takes its default)."""
    rule = _rule(name, body)
    warning = _checked(rule, rec, ())
    try:
        update_rule(db, rule, actor)
    except RuleConflict as exc:
        raise HTTPException(404, detail=str(exc)) from None
    served.follow()
    return _created(db, rec, {name}, [warning] if warning else [])


@router.delete("/{name}", response_model=RulesOut, responses=error_responses(404))
def remove(name: RuleName, db: DatabaseDep, rec: ModelDep, served: RulesDep,
           actor: ActorHeader = "admin") -> dict:
    """Delete the rule `name`; the answer lists the rules left."""
    try:
        delete_rule(db, name, actor)
    except RuleConflict as exc:
        raise HTTPException(404, detail=str(exc)) from None
    served.follow()
    revision, stored = list_rules(db)
    return _out(stored, revision, rec, [])


@router.get("/changes", response_model=RuleChangesOut)
def changes(db: DatabaseDep, name: Annotated[RuleName | None, Query()] = None,
            limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict:
    """The audit trail: who created, changed or deleted which rule when, with the rule before
    and after, newest first (of rule `name` alone when given)."""
    return {"changes": rule_history(db, name, limit)}
