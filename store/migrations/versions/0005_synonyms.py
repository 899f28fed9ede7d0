"""shop synonyms and their changes

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "synonyms",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("words", sa.JSON, nullable=False),
        sa.Column("to", sa.JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=False), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=False), nullable=False),
        sa.Column("updated_by", sa.String(256), nullable=False),
    )
    op.create_table(
        "synonym_changes",
        sa.Column("id", _ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("action", sa.String(8), nullable=False),
        sa.Column("actor", sa.String(256), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=False), nullable=False),
        sa.Column("before", sa.JSON, nullable=True),
        sa.Column("after", sa.JSON, nullable=True),
    )
    op.create_index("ix_synonym_changes_name", "synonym_changes", ["name", "id"])


def downgrade() -> None:
    op.drop_index("ix_synonym_changes_name", "synonym_changes")
    op.drop_table("synonym_changes")
    op.drop_table("synonyms")
