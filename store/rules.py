"""Merchandising rules in the store, with who changed what and when.

Each write (create, update, delete) changes `rules` and appends to `rule_changes` in one
transaction, under the store's RULES_LOCK: changes commit in the order of their ids, so the
newest id (`rules_revision`) tells every serving process whether it has the rules in force.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, update

from recsys.rules import Rule

from .db import RULES_LOCK, Database
from .tables import rule_changes, rules

LOCK_WAIT_S = 30.0  # a change waits this long for another one to finish (then a 503)


class RuleConflict(RuntimeError):
    """A name taken (create) or missing (update, delete); the message says which."""

    def __init__(self, message: str, missing: bool = False):
        super().__init__(message)
        self.missing = missing


class RuleLimit(RuntimeError):
    """More rules than the store keeps."""


@dataclass(frozen=True)
class StoredRule:
    rule: Rule
    created_at: datetime
    updated_at: datetime
    updated_by: str


@dataclass(frozen=True)
class RuleChange:
    id: int
    name: str
    action: str  # create | update | delete
    actor: str
    changed_at: datetime
    before: dict[str, Any] | None
    after: dict[str, Any] | None


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _row(rule: Rule) -> dict[str, Any]:
    return {"name": rule.name, "kind": rule.kind, "attribute": rule.attribute, "item_id": rule.item_id,
            "amount": rule.amount, "position": rule.position, "match": rule.match, "query": rule.query,
            "starts_at": rule.start, "ends_at": rule.end}


def rule_json(rule: Rule) -> dict[str, Any]:
    """The rule as the audit trail keeps it (times as ISO text)."""
    out = _row(rule)
    for key in ("starts_at", "ends_at"):
        out[key] = out[key].isoformat() if out[key] is not None else None
    return out


def _rule(m: Any) -> Rule:
    return Rule(name=m["name"], kind=m["kind"], attribute=m["attribute"], item_id=m["item_id"],
                amount=m["amount"], position=m["position"], match=m["match"], query=m["query"],
                start=m["starts_at"], end=m["ends_at"])


def _stored(row: Any) -> StoredRule:
    m = row._mapping
    return StoredRule(_rule(m), m["created_at"], m["updated_at"], m["updated_by"])


def _log(conn: Connection, name: str, action: str, actor: str, now: datetime,
         before: Rule | None, after: Rule | None) -> None:
    conn.execute(insert(rule_changes).values(
        name=name, action=action, actor=actor, changed_at=now,
        before=rule_json(before) if before else None, after=rule_json(after) if after else None))


def _existing(conn: Connection, names: Sequence[str]) -> dict[str, Rule]:
    rows = conn.execute(select(rules).where(rules.c.name.in_(list(names)))).all()
    return {r._mapping["name"]: _rule(r._mapping) for r in rows}


def create_rules(db: Database, new: Sequence[Rule], actor: str, max_rules: int) -> None:
    """Store every rule of `new` or none: RuleConflict when a name is taken, RuleLimit when the
    store would hold more than `max_rules`."""
    def work(conn: Connection) -> None:
        taken = _existing(conn, [r.name for r in new])
        if taken:
            names = ", ".join(repr(n) for n in sorted(taken)[:5])
            raise RuleConflict(f"rule {names} exists already: change it with PUT /admin/rules/{{name}} "
                               f"or choose another name")
        count = int(conn.execute(select(func.count()).select_from(rules)).scalar_one())
        if count + len(new) > max_rules:
            raise RuleLimit(f"the store keeps at most {max_rules} rules; it has {count} and "
                            f"{len(new)} more were sent: delete some first")
        now = _now()
        for r in new:
            conn.execute(insert(rules).values(**_row(r), created_at=now, updated_at=now, updated_by=actor))
            _log(conn, r.name, "create", actor, now, None, r)

    with db.exclusive(RULES_LOCK, LOCK_WAIT_S):
        db.transaction(work)


def update_rule(db: Database, rule: Rule, actor: str) -> None:
    """Replace the rule named `rule.name`; RuleConflict(missing=True) when there is none."""
    def work(conn: Connection) -> None:
        before = _existing(conn, [rule.name]).get(rule.name)
        if before is None:
            raise RuleConflict(f"no rule named {rule.name!r}: create it with POST /admin/rules",
                               missing=True)
        now = _now()
        conn.execute(update(rules).where(rules.c.name == rule.name)
                     .values(**_row(rule), updated_at=now, updated_by=actor))
        _log(conn, rule.name, "update", actor, now, before, rule)

    with db.exclusive(RULES_LOCK, LOCK_WAIT_S):
        db.transaction(work)


def delete_rule(db: Database, name: str, actor: str) -> Rule:
    """Delete the rule `name` and return it; RuleConflict(missing=True) when there is none."""
    def work(conn: Connection) -> Rule:
        before = _existing(conn, [name]).get(name)
        if before is None:
            raise RuleConflict(f"no rule named {name!r}: see GET /admin/rules", missing=True)
        conn.execute(delete(rules).where(rules.c.name == name))
        _log(conn, name, "delete", actor, _now(), before, None)
        return before

    with db.exclusive(RULES_LOCK, LOCK_WAIT_S):
        return db.transaction(work)


def list_rules(db: Database) -> tuple[int, list[StoredRule]]:
    """(revision, the rules in the order they were created, then by name), read together."""
    with db.engine.connect() as conn:
        revision = conn.execute(select(func.max(rule_changes.c.id))).scalar_one()
        rows = conn.execute(select(rules).order_by(rules.c.created_at, rules.c.name)).all()
    return int(revision or 0), [_stored(r) for r in rows]


def rules_revision(db: Database) -> int:
    """The newest change's id (0 before any): what a serving process compares with its own."""
    with db.engine.connect() as conn:
        return int(conn.execute(select(func.max(rule_changes.c.id))).scalar_one() or 0)


def rule_history(db: Database, name: str | None, limit: int) -> list[RuleChange]:
    """The newest `limit` changes, newest first (of rule `name` alone when given)."""
    query = select(rule_changes).order_by(rule_changes.c.id.desc()).limit(limit)
    if name is not None:
        query = query.where(rule_changes.c.name == name)
    with db.engine.connect() as conn:
        rows = conn.execute(query).all()
    return [RuleChange(**r._mapping) for r in rows]
