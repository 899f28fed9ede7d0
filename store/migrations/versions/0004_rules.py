"""merchandising rules and their changes

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "rules",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("attribute", sa.Text, nullable=True),
        sa.Column("item_id", sa.String(256), nullable=True),
        sa.Column("amount", sa.Float, nullable=True),
        sa.Column("position", sa.Integer, nullable=True),
        sa.Column("match", sa.String(16), nullable=False),
        sa.Column("query", sa.Text, nullable=False),
        sa.Column("starts_at", sa.DateTime(timezone=False), nullable=True),
        sa.Column("ends_at", sa.DateTime(timezone=False), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=False), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=False), nullable=False),
        sa.Column("updated_by", sa.String(256), nullable=False),
    )
    op.create_table(
        "rule_changes",
        sa.Column("id", _ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("action", sa.String(8), nullable=False),
        sa.Column("actor", sa.String(256), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=False), nullable=False),
        sa.Column("before", sa.JSON, nullable=True),
        sa.Column("after", sa.JSON, nullable=True),
    )
    op.create_index("ix_rule_changes_name", "rule_changes", ["name", "id"])


def downgrade() -> None:
    op.drop_index("ix_rule_changes_name", "rule_changes")
    op.drop_table("rule_changes")
    op.drop_table("rules")
