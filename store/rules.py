"""Merchandising rules in the store, with who changed what and when (`store.audited`: each write
and its `rule_changes` row in one transaction under RULES_LOCK, the newest change id the rules'
revision)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from recsys.rules import Rule

from .audited import AuditedTable, Change, Conflict, Limit, Stored
from .db import RULES_LOCK, Database
from .tables import rule_changes, rules

RuleConflict, RuleLimit, RuleChange = Conflict, Limit, Change
StoredRule = Stored[Rule]


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


def rule_from_json(m: dict[str, Any]) -> Rule:
    """The rule `rule_json` wrote."""
    times = {key: datetime.fromisoformat(m[key]) if m[key] is not None else None for key in ("starts_at", "ends_at")}
    return _rule({**m, **times})


RULES: AuditedTable[Rule] = AuditedTable(rules, rule_changes, RULES_LOCK, "rule", "/admin/rules", _row, _rule,
                                         rule_json, lambda r: r.name)


def create_rules(db: Database, new: Sequence[Rule], actor: str, max_rules: int) -> None:
    """Store every rule of `new` or none: RuleConflict when a name is taken, RuleLimit when the
    store would hold more than `max_rules`."""
    RULES.create(db, new, actor, max_rules)


def update_rule(db: Database, rule: Rule, actor: str) -> None:
    """Replace the rule named `rule.name`; RuleConflict(missing=True) when there is none."""
    RULES.update(db, rule, actor)


def delete_rule(db: Database, name: str, actor: str) -> Rule:
    """Delete the rule `name` and return it; RuleConflict(missing=True) when there is none."""
    return RULES.delete(db, name, actor)


def list_rules(db: Database) -> tuple[int, list[StoredRule]]:
    """(revision, the rules in the order they were created, then by name), read together."""
    return RULES.read(db)


def rules_revision(db: Database) -> int:
    """The newest change's id (0 before any): what a serving process compares with its own."""
    return RULES.revision(db)


def rule_history(db: Database, name: str | None, limit: int) -> list[Change]:
    """The newest `limit` changes, newest first (of rule `name` alone when given)."""
    return RULES.history(db, name, limit)
