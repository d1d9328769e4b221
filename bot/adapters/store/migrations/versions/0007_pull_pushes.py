"""Every push of a pull request's head is kept (`pull_pushes`), not only each commit's first one
(`pull_heads`, dropped): an approval binds to the head last pushed before its comment was written,
and a commit pushed again later is a later push.

`pull_heads` is not carried over: it lost every push of a commit after the first, so the last push
it would name before a comment may not be the last one there was. A fork pull request pushed before
this migration is approved by naming its head's full SHA (`/bench approve` says which) until it is
pushed again.

Revision ID: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pull_pushes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("pushed_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("repo", "number", "pushed_at", "head_sha", name="uq_pull_pushes_push"),
    )
    op.drop_table("pull_heads")


def downgrade() -> None:
    heads = op.create_table(
        "pull_heads",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("pushed_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("repo", "number", "head_sha", name="uq_pull_heads_pr_sha"),
    )
    pushes = sa.table(
        "pull_pushes",
        sa.column("repo", sa.String),
        sa.column("number", sa.Integer),
        sa.column("head_sha", sa.String),
        sa.column("pushed_at", sa.DateTime(timezone=True)),
    )
    first = sa.select(
        pushes.c.repo, pushes.c.number, pushes.c.head_sha, sa.func.min(pushes.c.pushed_at)
    ).group_by(pushes.c.repo, pushes.c.number, pushes.c.head_sha)
    op.execute(heads.insert().from_select(["repo", "number", "head_sha", "pushed_at"], first))
    op.drop_table("pull_pushes")
