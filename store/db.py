"""The connection to the store, and bringing its schema to Alembic's head."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TypeVar

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, create_engine, event, make_url, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL

MIGRATIONS = Path(__file__).parent / "migrations"
log = logging.getLogger("recsys.store")


@dataclass(frozen=True)
class NamedLock:
    """A lock shared by every process of the store: PostgreSQL's advisory lock `key`, or for a
    SQLite file the flock of `<database>-<name>.lock` beside it."""

    key: int
    name: str


# concurrent `upgrade` calls (several processes starting) migrate one at a time
UPGRADE_LOCK = NamedLock(7_151_015, "upgrade")
# catalogue changes (PUT/DELETE /admin/items) through any worker or replica, one at a time
CATALOGUE_LOCK = NamedLock(7_151_016, "catalogue")
# rule changes one at a time: each commits before the next takes a change id, so a process that
# has seen change n has seen every change before it (`store.rules.rules_revision`)
RULES_LOCK = NamedLock(7_151_017, "rules")
# synonym changes one at a time, for the same reason (`store.synonyms.synonyms_revision`)
SYNONYMS_LOCK = NamedLock(7_151_018, "synonyms")
# a transaction PostgreSQL rolled back to break a deadlock or a serialisation conflict is tried
# again this many times in all, after a short random pause (so the two do not collide again)
RETRY_ATTEMPTS = 5
_RETRY_PAUSE_S = (0.01, 0.1)
# SQLSTATEs of a transaction that is fine to run again as it was: serialization_failure,
# deadlock_detected
_RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})
# sqlite3 calls a syntax error an OperationalError too: only these mean the file cannot be used
_SQLITE_UNAVAILABLE = ("database is locked", "database table is locked", "unable to open",
                       "disk i/o error", "readonly database", "database or disk is full")
# how long a SQLite statement waits for a lock another connection holds (sqlite3's busy
# timeout) unless its `Database` says otherwise; the server passes its request budget
BUSY_TIMEOUT_S = 30.0
T = TypeVar("T")


class StoreError(RuntimeError):
    """The store cannot be used (bad URL, server unreachable); the message says which and why."""


def retryable(exc: BaseException) -> bool:
    """A deadlock or serialisation failure: the transaction was rolled back and may run again."""
    return getattr(getattr(exc, "orig", None), "sqlstate", None) in _RETRYABLE_SQLSTATES


def unavailable(exc: BaseException) -> bool:
    """The store cannot answer now, though the request was fine: the server is down or the
    connection was lost (both backends), the pool has no connection free, the SQLite file is
    locked or cannot be opened, a deadlock outlived its retries. A client should try again
    later; anything else a store call raises is a bug."""
    if isinstance(exc, StoreError | sa_exc.TimeoutError):
        return True
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    if not isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError):
        return False
    if type(exc.orig).__module__.startswith("sqlite3"):
        return any(words in str(exc.orig).lower() for words in _SQLITE_UNAVAILABLE)
    return True  # psycopg: connection, operator intervention, resources, transaction rollback


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{Path(path)}"


class Database:
    """An engine for `url` (SQLAlchemy form; `postgresql://` uses psycopg 3).

    SQLite runs in WAL mode with `synchronous=FULL`: a commit returns only after the WAL is
    synced to disk, so a committed transaction survives a killed process and a power loss.
    """

    def __init__(self, url: str, busy_timeout_s: float = BUSY_TIMEOUT_S):
        """`busy_timeout_s`: how long a SQLite statement waits for a lock another connection
        (another process's, often) holds before it fails as unavailable (`unavailable`: a 503)."""
        if not busy_timeout_s > 0:
            raise StoreError(f"a store's busy timeout must be above 0 s, got {busy_timeout_s!r}")
        self.busy_timeout_s = float(busy_timeout_s)
        try:
            parsed = make_url(url)
        except Exception as exc:  # noqa: BLE001 - SQLAlchemy raises ArgumentError or ValueError
            raise StoreError(f"RECSYS_DATABASE_URL {url!r} is not a database URL ({exc}); "
                             f"use e.g. sqlite:///data/recsys.db or "
                             f"postgresql://user:password@host:5432/db") from None
        if parsed.drivername in ("postgresql", "postgres"):
            parsed = parsed.set(drivername="postgresql+psycopg")
        self.url: URL = parsed
        self.is_sqlite = parsed.get_backend_name() == "sqlite"
        self.engine = self._engine()
        # per lock name, the one thread of this process that may wait for the store's lock
        # (`exclusive`): the others wait here, holding no pooled connection
        self._gates: dict[str, threading.Lock] = {}
        self._gates_lock = threading.Lock()

    def _engine(self) -> Engine:
        if not self.is_sqlite:
            return create_engine(self.url, pool_pre_ping=True, pool_size=5, max_overflow=5)
        if self.url.database and self.url.database != ":memory:":
            Path(self.url.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(self.url, connect_args={"check_same_thread": False, "timeout": self.busy_timeout_s})
        busy_ms = max(1, round(self.busy_timeout_s * 1000))
        event.listen(engine, "connect", lambda conn, _record: _sqlite_pragmas(conn, busy_ms))
        return engine

    @property
    def public_url(self) -> str:
        """The URL without its password, for logs and manifests."""
        return self.url.render_as_string(hide_password=True)

    def upgrade(self) -> None:
        """Create or migrate the schema to the newest revision (idempotent)."""
        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        try:
            # pysqlite runs DDL outside a transaction, so SQLite's own locks do not serialise
            # the migration: the lock file does (PostgreSQL's advisory lock is the transaction's)
            with self._file_lock(UPGRADE_LOCK, wait_s=None), self.engine.begin() as conn:
                if not self.is_sqlite:
                    _advisory_lock(conn, UPGRADE_LOCK, wait_s=None)
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
        except Exception as exc:
            raise StoreError(f"the store at {self.public_url} cannot be opened or migrated: "
                             f"{type(exc).__name__}: {exc}") from exc

    @contextlib.contextmanager
    def exclusive(self, lock: NamedLock, wait_s: float) -> Iterator[HeldLock]:
        """Hold `lock` for the block, against every process using this store (workers,
        replicas): PostgreSQL's advisory lock in a transaction of its own (one pooled connection
        for the block), or the lock file of a SQLite store. Not held after `wait_s`: StoreError
        (the store is busy, a 503 to a client, see `unavailable`).

        PostgreSQL releases the lock when the lock's connection dies (a restart of the server):
        the block may then run beside another process's. What the block must not do without
        the lock it does after `HeldLock.check`. A release that fails once the block is done
        is logged, not raised: the lock went with the connection, and what the block did (an
        activation recorded, a change committed) stands, so its caller must not be told that
        it failed."""
        deadline = time.monotonic() + wait_s
        with self._gate(lock, wait_s):
            yield from self._exclusive(lock, max(0.001, deadline - time.monotonic()))

    @contextlib.contextmanager
    def _gate(self, lock: NamedLock, wait_s: float) -> Iterator[None]:
        """One thread of this process at a time toward `lock`. A waiter for PostgreSQL's lock
        holds a pooled connection, and the holder's work takes a second one: ten threads waiting
        (the pool's size) left the holder none until the pool's timeout, 30 s for every change."""
        with self._gates_lock:
            gate = self._gates.setdefault(lock.name, threading.Lock())
        if not gate.acquire(timeout=wait_s):
            raise StoreError(f"the store's {lock.name} lock is still held after {wait_s:g} s "
                             f"(changes in this process wait their turn); try again later")
        try:
            yield
        finally:
            gate.release()

    def _exclusive(self, lock: NamedLock, wait_s: float) -> Iterator[HeldLock]:
        if self.is_sqlite:
            with self._file_lock(lock, wait_s=wait_s):
                yield HeldLock(None)
            return
        with self.engine.connect() as conn:
            transaction = conn.begin()
            try:
                _advisory_lock(conn, lock, wait_s=wait_s)
                yield HeldLock(conn)
            except BaseException:
                with contextlib.suppress(sa_exc.SQLAlchemyError):
                    transaction.rollback()
                raise
            lost = "its connection died in the block" if conn.invalidated else None
            if lost is None:
                try:
                    transaction.commit()  # releases it
                except sa_exc.DBAPIError as exc:
                    if not unavailable(exc):
                        raise
                    lost = str(exc.orig)
            if lost is not None:  # the lock went with the connection
                with contextlib.suppress(sa_exc.SQLAlchemyError):
                    transaction.rollback()
                log.warning("the store's lock was lost with its connection; the work under it was done",
                            extra={"lock": lock.name, "error": lost})

    @contextlib.contextmanager
    def _file_lock(self, lock: NamedLock, wait_s: float | None) -> Iterator[None]:
        """What the advisory lock is on PostgreSQL, for a SQLite file: a lock file beside the
        database (flock: the processes of one machine, which is what a SQLite store is shared
        by), waited for at most `wait_s` (None: as long as it takes). Nothing for PostgreSQL or
        an in-memory database (one process)."""
        database = self.url.database
        if not self.is_sqlite or not database or database == ":memory:":
            yield
            return
        held = _flock_within(f"{database}-{lock.name}.lock", wait_s, lock.name)
        try:
            yield
        finally:
            held.close()  # releases it

    def transaction(self, work: Callable[[Connection], T]) -> T:
        """`work(conn)` in one transaction, committed; run again (at most `RETRY_ATTEMPTS` in
        all) when PostgreSQL rolled it back for a deadlock or a serialisation failure, which
        concurrent writers can cause on a request that is fine. `work` must only touch the
        database: a retry runs it again from the start."""
        for attempt in range(1, RETRY_ATTEMPTS + 1):
            try:
                with self.engine.begin() as conn:
                    return work(conn)
            except sa_exc.DBAPIError as exc:
                if attempt == RETRY_ATTEMPTS or not retryable(exc):
                    raise
                time.sleep(random.uniform(*_RETRY_PAUSE_S) * attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def dispose(self) -> None:
        self.engine.dispose()


@dataclass(frozen=True)
class HeldLock:
    """A lock `Database.exclusive` holds: on PostgreSQL its connection, None for a lock file."""

    conn: Connection | None

    def check(self) -> None:
        """Raise (a DBAPIError that `unavailable` calls a 503) when the lock is no longer held:
        its connection died, and PostgreSQL released it. A lock file is held until closed."""
        if self.conn is not None:
            self.conn.execute(text("SELECT 1"))


def _advisory_lock(conn: Connection, lock: NamedLock, wait_s: float | None) -> None:
    """PostgreSQL's advisory lock `lock.key`, held until `conn`'s transaction ends; waited for
    at most `wait_s` (lock_timeout: LockNotAvailable, an OperationalError, after it)."""
    if wait_s is not None:
        conn.execute(text(f"SET LOCAL lock_timeout = {max(1, round(wait_s * 1000))}"))
    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": lock.key})


def _flock_within(path: str, wait_s: float | None, name: str) -> IO[str]:
    """`path` opened and exclusively flocked (closing it releases the lock), waited for at most
    `wait_s` (None: as long as it takes); StoreError then. A blocking flock, in a thread of its
    own so that the wait can end: the kernel wakes a blocked waiter the moment the lock is
    released, where a poller with LOCK_NB could miss it again and again to the holder's process
    taking it for its next change."""
    fh = open(path, "a")  # noqa: SIM115 - the caller closes it, or `take` when it is abandoned
    outcome = threading.Lock()  # whichever of `take` and the timeout is first decides
    taken, abandoned = threading.Event(), threading.Event()

    def take() -> None:
        fcntl.flock(fh, fcntl.LOCK_EX)
        with outcome:
            if abandoned.is_set():
                fh.close()  # too late: no one will release it
            else:
                taken.set()

    threading.Thread(target=take, name=f"flock-{name}", daemon=True).start()
    if not taken.wait(wait_s):
        with outcome:
            if not taken.is_set():
                abandoned.set()
                raise StoreError(f"the store's {name} lock is still held by another process "
                                 f"after {wait_s:g} s; try again later")
    return fh


def _sqlite_pragmas(dbapi_connection, busy_ms: int) -> None:
    cur = dbapi_connection.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=FULL")
    cur.execute(f"PRAGMA busy_timeout={busy_ms}")
    cur.close()
