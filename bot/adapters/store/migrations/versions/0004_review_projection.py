"""Reviews keep what the sticky comment is composed from (the rendered blocks, whether the review
wants a comment, its reasons, its check run), and pull requests' heads keep when they were pushed.

Revision ID: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("reviews") as reviews:
        reviews.add_column(sa.Column("check_run_id", sa.BigInteger))
        reviews.add_column(sa.Column("blocks", sa.Text))
        reviews.add_column(sa.Column("wants_comment", sa.Boolean, nullable=False, server_default=sa.false()))
        reviews.add_column(sa.Column("reasons", sa.Text))
    op.create_table(
        "pull_heads",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("pushed_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("repo", "number", "head_sha", name="uq_pull_heads_pr_sha"),
    )


def downgrade() -> None:
    op.drop_table("pull_heads")
    with op.batch_alter_table("reviews") as reviews:
        for column in ("reasons", "wants_comment", "blocks", "check_run_id"):
            reviews.drop_column(column)
