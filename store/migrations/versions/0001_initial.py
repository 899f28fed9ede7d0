"""events, version decisions, activations, jobs

Revision ID: 0001
Revises:
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("id", _ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("event_id", sa.String(128), nullable=True),
        sa.Column("type", sa.String(16), nullable=False),
        sa.Column("request_id", sa.String(128), nullable=True),
        sa.Column("query", sa.Text, nullable=False),
        sa.Column("item_id", sa.String(256), nullable=False),
        sa.Column("position", sa.Integer, nullable=True),
        sa.Column("user_id", sa.String(256), nullable=True),
        sa.Column("timestamp", sa.DateTime(timezone=False), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=False), nullable=False),
        sa.UniqueConstraint("event_id"),
    )
    op.create_index("ix_events_timestamp", "events", ["timestamp"])
    op.create_table(
        "version_decisions",
        sa.Column("version", sa.String(128), primary_key=True),
        sa.Column("job_id", sa.String(64), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=False), nullable=False),
        sa.Column("activated", sa.Boolean, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
    )
    op.create_table(
        "activations",
        sa.Column("id", _ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("version", sa.String(128), nullable=False),
        sa.Column("activated_at", sa.DateTime(timezone=False), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
    )
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("owner", sa.String(256), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("started_at", sa.String(40), nullable=True),
        sa.Column("finished_at", sa.String(40), nullable=True),
        sa.Column("step", sa.Integer, nullable=False),
        sa.Column("total", sa.Integer, nullable=False),
        sa.Column("loss", sa.Float, nullable=True),
        sa.Column("version", sa.String(128), nullable=True),
        sa.Column("activated", sa.Boolean, nullable=False),
        sa.Column("decision", sa.Text, nullable=True),
        sa.Column("metrics", sa.JSON, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
    )


def downgrade() -> None:
    for table in ("jobs", "activations", "version_decisions", "events"):
        op.drop_table(table)
