"""Dashboard: who merged what and why it was risky, each merge's benchmark outcome and triage,
repository visibility, the list of metric series, and how far the derived columns have read.

Revision ID: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("merges") as merges:
        merges.add_column(sa.Column("author", sa.String(100)))
        merges.add_column(sa.Column("url", sa.Text))
        merges.add_column(sa.Column("top_reason", sa.Text))
        merges.add_column(sa.Column("reasons", sa.Text))
        merges.add_column(sa.Column("bench_verdict", sa.String(16)))
        merges.add_column(sa.Column("headline_metric", sa.String(100)))
        merges.add_column(sa.Column("headline_change", sa.Float))
        merges.add_column(sa.Column("acked", sa.Boolean, nullable=False, server_default=sa.false()))
        merges.add_column(sa.Column("triage_state", sa.String(16)))
        merges.add_column(sa.Column("fixed_by", sa.Integer))
    with op.batch_alter_table("merges") as merges:
        merges.alter_column("acked", server_default=None)
    # Covering on PostgreSQL: a list of flagged merges is counted, filtered and ordered from it.
    op.create_index(
        "ix_merges_flagged_merged_at",
        "merges",
        ["flagged", "merged_at"],
        postgresql_include=[
            "id",
            "repo",
            "number",
            "level",
            "score",
            "bench_verdict",
            "headline_change",
            "triage_state",
            "acked",
        ],
    )
    op.create_index("ix_merges_repo_merged_at", "merges", ["repo", "merged_at"])
    op.create_index("ix_merges_repo_flagged_merged_at", "merges", ["repo", "flagged", "merged_at"])
    op.create_index("ix_merges_merge_sha", "merges", ["merge_sha"])
    with op.batch_alter_table("repositories") as repositories:
        repositories.add_column(sa.Column("private", sa.Boolean))
    op.create_table(
        "triage_events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("fixed_by", sa.Integer),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("user", sa.String(100), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
    )
    op.create_index("ix_triage_events_repo_number", "triage_events", ["repo", "number"])
    op.create_table(
        "metric_series",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("suite", sa.String(100), nullable=False),
        sa.Column("metric", sa.String(100), nullable=False),
        sa.Column("unit", sa.String(40), nullable=False),
        sa.Column("better", sa.String(8), nullable=False),
        sa.Column("points", sa.Integer, nullable=False),
        sa.Column("last_at", _TS, nullable=False),
        sa.UniqueConstraint("repo", "suite", "metric", name="uq_metric_series_key"),
    )
    op.create_table(
        "dashboard_sync",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("results_seen", sa.Integer, nullable=False),
        sa.Column("acks_seen", sa.Integer, nullable=False),
        sa.Column("points_seen", sa.Integer, nullable=False),
    )
    op.execute("INSERT INTO dashboard_sync (id, results_seen, acks_seen, points_seen) VALUES (1, 0, 0, 0)")


def downgrade() -> None:
    for table in ("dashboard_sync", "metric_series", "triage_events"):
        op.drop_table(table)
    with op.batch_alter_table("repositories") as repositories:
        repositories.drop_column("private")
    op.drop_index("ix_merges_merge_sha", "merges")
    op.drop_index("ix_merges_repo_flagged_merged_at", "merges")
    op.drop_index("ix_merges_repo_merged_at", "merges")
    op.drop_index("ix_merges_flagged_merged_at", "merges")
    with op.batch_alter_table("merges") as merges:
        for column in (
            "fixed_by",
            "triage_state",
            "acked",
            "headline_change",
            "headline_metric",
            "bench_verdict",
            "reasons",
            "top_reason",
            "url",
            "author",
        ):
            merges.drop_column(column)
