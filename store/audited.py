"""Shop controls kept with who changed what and when: the one way rules (`store.rules`) and
synonyms (`store.synonyms`) are written, listed and followed.

Each write (create, update, delete) changes the control's table and appends to its changes
table in one transaction, under the control's store-wide lock: changes commit in the order of
their ids, so the newest id (`AuditedTable.revision`) tells every serving process whether it has
the controls in force.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection, Table, delete, func, insert, select, update

from .db import Database, NamedLock

LOCK_WAIT_S = 30.0  # a change waits this long for another one to finish (then a 503)
C = TypeVar("C")  # the control: `recsys.rules.Rule`, `recsys.synonyms.Synonym`


class Conflict(RuntimeError):
    """A name taken (create) or missing (update, delete); the message says which."""

    def __init__(self, message: str, missing: bool = False):
        super().__init__(message)
        self.missing = missing


class Limit(RuntimeError):
    """More controls than the store keeps."""


@dataclass(frozen=True)
class Stored(Generic[C]):
    item: C
    created_at: datetime
    updated_at: datetime
    updated_by: str


@dataclass(frozen=True)
class Change:
    id: int
    name: str
    action: str  # create | update | delete
    actor: str
    changed_at: datetime
    before: dict[str, Any] | None
    after: dict[str, Any] | None


def now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class AuditedTable(Generic[C]):
    """One kind of control in `table` (primary key `name`), its trail in `changes`. `to_row`
    gives a control's columns, `from_row` the control back, `to_json` what the trail keeps;
    `noun` and `route` word the errors ("rule", "/admin/rules")."""

    def __init__(self, table: Table, changes: Table, lock: NamedLock, noun: str, route: str,
                 to_row: Callable[[C], dict[str, Any]], from_row: Callable[[Any], C],
                 to_json: Callable[[C], dict[str, Any]], name_of: Callable[[C], str]):
        self.table, self.changes, self.lock, self.noun, self.route = table, changes, lock, noun, route
        self.to_row, self.from_row, self.to_json, self.name_of = to_row, from_row, to_json, name_of

    def _existing(self, conn: Connection, names: Sequence[str]) -> dict[str, C]:
        rows = conn.execute(select(self.table).where(self.table.c.name.in_(list(names)))).all()
        return {r._mapping["name"]: self.from_row(r._mapping) for r in rows}

    def _log(self, conn: Connection, name: str, action: str, actor: str, at: datetime,
             before: C | None, after: C | None) -> None:
        conn.execute(insert(self.changes).values(
            name=name, action=action, actor=actor, changed_at=at,
            before=self.to_json(before) if before is not None else None,
            after=self.to_json(after) if after is not None else None))

    def create(self, db: Database, new: Sequence[C], actor: str, most: int) -> None:
        """Store every control of `new` or none: Conflict when a name is taken, Limit when the
        store would hold more than `most`."""
        def work(conn: Connection) -> None:
            taken = self._existing(conn, [self.name_of(c) for c in new])
            if taken:
                names = ", ".join(repr(n) for n in sorted(taken)[:5])
                raise Conflict(f"{self.noun} {names} exists already: change it with PUT "
                               f"{self.route}/{{name}} or choose another name")
            count = int(conn.execute(select(func.count()).select_from(self.table)).scalar_one())
            if count + len(new) > most:
                raise Limit(f"the store keeps at most {most} {self.noun}s; it has {count} and "
                            f"{len(new)} more were sent: delete some first")
            at = now()
            for c in new:
                conn.execute(insert(self.table).values(**self.to_row(c), created_at=at, updated_at=at,
                                                       updated_by=actor))
                self._log(conn, self.name_of(c), "create", actor, at, None, c)

        with db.exclusive(self.lock, LOCK_WAIT_S):
            db.transaction(work)

    def update(self, db: Database, control: C, actor: str) -> None:
        """Replace the control of the same name; Conflict(missing=True) when there is none."""
        name = self.name_of(control)

        def work(conn: Connection) -> None:
            before = self._existing(conn, [name]).get(name)
            if before is None:
                raise Conflict(f"no {self.noun} named {name!r}: create it with POST {self.route}",
                               missing=True)
            at = now()
            conn.execute(update(self.table).where(self.table.c.name == name)
                         .values(**self.to_row(control), updated_at=at, updated_by=actor))
            self._log(conn, name, "update", actor, at, before, control)

        with db.exclusive(self.lock, LOCK_WAIT_S):
            db.transaction(work)

    def delete(self, db: Database, name: str, actor: str) -> C:
        """Delete the control `name` and return it; Conflict(missing=True) when there is none."""
        def work(conn: Connection) -> C:
            before = self._existing(conn, [name]).get(name)
            if before is None:
                raise Conflict(f"no {self.noun} named {name!r}: see GET {self.route}", missing=True)
            conn.execute(delete(self.table).where(self.table.c.name == name))
            self._log(conn, name, "delete", actor, now(), before, None)
            return before

        with db.exclusive(self.lock, LOCK_WAIT_S):
            return db.transaction(work)

    def read(self, db: Database) -> tuple[int, list[Stored[C]]]:
        """(revision, the controls in the order they were created, then by name), read together."""
        with db.engine.connect() as conn:
            revision = conn.execute(select(func.max(self.changes.c.id))).scalar_one()
            rows = conn.execute(select(self.table).order_by(self.table.c.created_at, self.table.c.name)).all()
        return int(revision or 0), [Stored(self.from_row(r._mapping), r._mapping["created_at"],
                                           r._mapping["updated_at"], r._mapping["updated_by"]) for r in rows]

    def revision(self, db: Database) -> int:
        """The newest change's id (0 before any): what a serving process compares with its own."""
        with db.engine.connect() as conn:
            return int(conn.execute(select(func.max(self.changes.c.id))).scalar_one() or 0)

    def history(self, db: Database, name: str | None, limit: int) -> list[Change]:
        """The newest `limit` changes, newest first (of control `name` alone when given)."""
        query = select(self.changes).order_by(self.changes.c.id.desc()).limit(limit)
        if name is not None:
            query = query.where(self.changes.c.name == name)
        with db.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [Change(**r._mapping) for r in rows]
