"""shoppers: events read by user, forgotten shoppers

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_index("ix_events_user_id", "events", ["user_id", "timestamp"])
    op.create_table(
        "forgotten_shoppers",
        sa.Column("id", _ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("forgotten_at", sa.DateTime(timezone=False), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("forgotten_shoppers")
    op.drop_index("ix_events_user_id", "events")
