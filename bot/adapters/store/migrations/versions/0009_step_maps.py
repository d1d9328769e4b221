"""The latest per-step map of each repository and suite (`step_maps`), from the results of a
completed default-branch run: a pull request's risk review reads it to tell the functions a step
runs from those it never runs.

Revision ID: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "step_maps",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("suite", sa.String(100), nullable=False),
        sa.Column("branch", sa.String(255), nullable=False),
        sa.Column("commit_sha", sa.String(64), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("stored_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("repo", "suite", name="uq_step_maps_repo_suite"),
    )


def downgrade() -> None:
    op.drop_table("step_maps")
