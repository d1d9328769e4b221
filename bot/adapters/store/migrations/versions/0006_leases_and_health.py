"""Leases that follow their worker (an owner and an expiry per delivery), the repository, subject
and failure kind of each delivery, the running consumers, and the row `/healthz` writes.

Revision ID: 0006
"""

from datetime import timedelta

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_OLD_LEASE_S = 600  # what a delivery taken before this migration was leased for


def upgrade() -> None:
    with op.batch_alter_table("deliveries") as deliveries:
        deliveries.add_column(sa.Column("lease_owner", sa.String(120)))
        deliveries.add_column(sa.Column("lease_expires_at", sa.DateTime(timezone=True)))
        deliveries.add_column(sa.Column("repo", sa.String(200)))
        deliveries.add_column(sa.Column("failure", sa.String(16)))
        deliveries.add_column(sa.Column("subject", sa.String(220)))
        deliveries.create_index("ix_deliveries_subject", ["subject"])
    # A delivery held when the schema changed keeps the lease it was taken under, by an owner
    # that no worker is named after (so none takes it over before the lease runs out).
    table = sa.table(
        "deliveries",
        sa.column("id", sa.Integer),
        sa.column("status", sa.String),
        sa.column("started_at", sa.DateTime(timezone=True)),
        sa.column("lease_owner", sa.String),
        sa.column("lease_expires_at", sa.DateTime(timezone=True)),
    )
    connection = op.get_bind()
    held = connection.execute(
        sa.select(table.c.id, table.c.started_at).where(
            table.c.status == "pending", table.c.started_at.is_not(None)
        )
    ).all()
    for delivery_id, started_at in held:
        connection.execute(
            table.update()
            .where(table.c.id == delivery_id)
            .values(
                lease_owner="a worker of an earlier version",
                lease_expires_at=started_at + timedelta(seconds=_OLD_LEASE_S),
            )
        )
    op.create_table(
        "consumers",
        sa.Column("owner", sa.String(120), primary_key=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False, index=True),
        sa.Column("periodic", sa.Boolean, nullable=False),
        sa.Column("threads", sa.Integer, nullable=False),
    )
    probes = op.create_table(
        "write_probes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("written_at", sa.DateTime(timezone=True)),
    )
    op.bulk_insert(probes, [{"id": 1, "written_at": None}])


def downgrade() -> None:
    op.drop_table("write_probes")
    op.drop_table("consumers")
    with op.batch_alter_table("deliveries") as deliveries:
        deliveries.drop_index("ix_deliveries_subject")
        for column in ("subject", "failure", "repo", "lease_expires_at", "lease_owner"):
            deliveries.drop_column(column)
