"""The store's tables (SQLAlchemy Core). A change here needs a migration in `migrations/versions`."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData()

# SQLite autoincrements only an INTEGER PRIMARY KEY; PostgreSQL gets a 64-bit one
_ROW_ID = BigInteger().with_variant(Integer(), "sqlite")

# Times are naive UTC (`timestamp without time zone`): the same value on both backends.
events = Table(
    "events", metadata,
    Column("id", _ROW_ID, primary_key=True, autoincrement=True),
    Column("event_id", String(128), unique=True, nullable=True),  # the client's, for retries
    Column("type", String(16), nullable=False),
    Column("request_id", String(128), nullable=True),
    Column("query", Text, nullable=False),
    Column("item_id", String(256), nullable=False),
    Column("position", Integer, nullable=True),  # 1-based rank the item was shown at
    Column("user_id", String(256), nullable=True),
    Column("timestamp", DateTime(timezone=False), nullable=False),
    Column("received_at", DateTime(timezone=False), nullable=False),
    Index("ix_events_timestamp", "timestamp"),
    Index("ix_events_user_id", "user_id", "timestamp"),  # a shopper's history, newest first
)

# one row per DELETE /admin/users/{user_id}, without the user id (forgotten means forgotten):
# every serving process drops its cached profiles when the newest id changes (`api.profiles`)
forgotten_shoppers = Table(
    "forgotten_shoppers", metadata,
    Column("id", _ROW_ID, primary_key=True, autoincrement=True),
    Column("forgotten_at", DateTime(timezone=False), nullable=False),
)

# why each trained version is or is not served (written once, when its job publishes it)
decisions = Table(
    "version_decisions", metadata,
    Column("version", String(128), primary_key=True),
    Column("job_id", String(64), nullable=True),
    Column("decided_at", DateTime(timezone=False), nullable=False),
    Column("activated", Boolean, nullable=False),
    Column("reason", Text, nullable=False),
)

# every activation, in order: the last row is the version the service should serve
activations = Table(
    "activations", metadata,
    Column("id", _ROW_ID, primary_key=True, autoincrement=True),
    Column("version", String(128), nullable=False),
    Column("activated_at", DateTime(timezone=False), nullable=False),
    Column("reason", Text, nullable=False),
)

jobs = Table(
    "jobs", metadata,
    Column("id", String(64), primary_key=True),
    Column("owner", String(256), nullable=False),  # host:pid of the process running it
    Column("status", String(16), nullable=False),
    Column("created_at", String(40), nullable=False),
    Column("started_at", String(40), nullable=True),
    Column("finished_at", String(40), nullable=True),
    Column("step", Integer, nullable=False, default=0),
    Column("total", Integer, nullable=False, default=0),
    Column("loss", Float, nullable=True),
    Column("version", String(128), nullable=True),
    Column("activated", Boolean, nullable=False, default=False),
    Column("decision", Text, nullable=True),
    Column("metrics", JSON, nullable=True),
    Column("error", Text, nullable=True),
    # when its owner last said it lives (`store.records.beat_jobs`, every few seconds while it is
    # queued or running): a row silent for long is a job whose process is gone, on any host
    Column("heartbeat_at", String(40), nullable=True),
)

# online experiments between versions (api/experiments.py); `arms` is a JSON list of
# {"arm", "version", "traffic"} in the order the split walks them, the first arm the control
experiments = Table(
    "experiments", metadata,
    Column("name", String(64), primary_key=True),
    Column("arms", JSON, nullable=False),
    Column("status", String(16), nullable=False),  # running | ended
    # 1 while running, NULL once ended: the unique index lets one experiment run at a time,
    # across every process sharing the store (NULLs never collide)
    Column("running_slot", Integer, nullable=True, unique=True),
    Column("started_at", DateTime(timezone=False), nullable=False),
    Column("ended_at", DateTime(timezone=False), nullable=True),
    Column("winner", String(32), nullable=True),
    # the version served when it started: what a catalogue change made while it runs is told by
    # (`api.experiments`); NULL for experiments started before it was kept
    Column("served_at_start", String(128), nullable=True),
)

def _changes(name: str) -> tuple:
    """The columns of a shop control's audit trail (`store.audited`): who, when, the control
    before and after; the newest id is the controls' revision."""
    return (name, metadata,
            Column("id", _ROW_ID, primary_key=True, autoincrement=True),
            Column("name", String(64), nullable=False),
            Column("action", String(8), nullable=False),  # create | update | delete
            Column("actor", String(256), nullable=False),
            Column("changed_at", DateTime(timezone=False), nullable=False),
            Column("before", JSON, nullable=True),
            Column("after", JSON, nullable=True),
            Index(f"ix_{name}_name", "name", "id"))


# merchandising rules (`recsys.rules.Rule`, api/routes/rules.py): one row per rule in force;
# what `attribute` or `item_id` names and what the rule does, its query scope and time window
rules = Table(
    "rules", metadata,
    Column("name", String(64), primary_key=True),
    Column("kind", String(8), nullable=False),  # pin | boost | bury | hide
    Column("attribute", Text, nullable=True),  # key:value
    Column("item_id", String(256), nullable=True),
    Column("amount", Float, nullable=True),
    Column("position", Integer, nullable=True),
    Column("match", String(16), nullable=False),  # any | exact | contains
    Column("query", Text, nullable=False),
    Column("starts_at", DateTime(timezone=False), nullable=True),
    Column("ends_at", DateTime(timezone=False), nullable=True),
    Column("created_at", DateTime(timezone=False), nullable=False),
    Column("updated_at", DateTime(timezone=False), nullable=False),
    Column("updated_by", String(256), nullable=False),
)

# every change to `rules`, in order (who, when, the rule before and after): the audit trail; the
# newest id is the rules' revision, which every serving process follows (`api.rules`)
rule_changes = Table(*_changes("rule_changes"))

# a shop's synonyms (`recsys.synonyms.Synonym`, api/routes/synonyms.py): one row per rule in
# force; `to` is [] for a two-way list
synonyms = Table(
    "synonyms", metadata,
    Column("name", String(64), primary_key=True),
    Column("words", JSON, nullable=False),  # the query words
    Column("to", JSON, nullable=False),  # what they count as (one-way), or []
    Column("created_at", DateTime(timezone=False), nullable=False),
    Column("updated_at", DateTime(timezone=False), nullable=False),
    Column("updated_by", String(256), nullable=False),
)

# every change to `synonyms`, in order: the audit trail, whose newest id is the synonyms'
# revision every serving process follows (`api.synonyms`)
synonym_changes = Table(*_changes("synonym_changes"))
