"""Register the built-in WeightedScorer as `builtin.weighted_scorer`.

The values are written out here rather than imported from `scorers.weighted`, so this
migration stays what it was when later code changes.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-25
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PLUGIN_ID = "builtin.weighted_scorer"


def _number(default: float, description: str) -> dict[str, object]:
    return {"type": "number", "default": default, "description": description}


def upgrade() -> None:
    plugins = sa.table(
        "scorer_plugins",
        sa.column("plugin_id", sa.String),
        sa.column("entrypoint", sa.String),
        sa.column("description", sa.Text),
        sa.column("default_config", sa.JSON),
        sa.column("config_schema", sa.JSON),
        sa.column("enabled", sa.Boolean),
        sa.column("created_at", sa.DateTime(timezone=True)),
        sa.column("updated_at", sa.DateTime(timezone=True)),
    )
    now = datetime.now(UTC)
    op.bulk_insert(
        plugins,
        [
            {
                "plugin_id": PLUGIN_ID,
                "entrypoint": "scorers.weighted:WeightedScorer",
                "description": "success_bonus if succeeded + rating x rating_weight "
                "- elapsed seconds x time_penalty - tokens x token_penalty, clamped at 0.",
                "default_config": {
                    "success_bonus": 100.0,
                    "rating_weight": 10.0,
                    "time_penalty": 1.0,
                    "token_penalty": 0.01,
                },
                "config_schema": {
                    "type": "object",
                    "properties": {
                        "success_bonus": _number(100.0, "Points for a successful attempt."),
                        "rating_weight": _number(10.0, "Points per unit of rating."),
                        "time_penalty": _number(1.0, "Points taken per second of elapsed time."),
                        "token_penalty": _number(0.01, "Points taken per token used."),
                    },
                    "additionalProperties": False,
                },
                "enabled": True,
                "created_at": now,
                "updated_at": now,
            }
        ],
    )


def downgrade() -> None:
    op.execute(sa.text("DELETE FROM scorer_plugins WHERE plugin_id = :id").bindparams(id=PLUGIN_ID))
