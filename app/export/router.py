from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from starlette.responses import StreamingResponse

from app.auth.gate import TenantAdminDep
from app.challenge.reference import ChallengeIdDep
from app.export import service
from app.export.formats import ExportFormat
from app.export.responses import export_response
from app.export.schemas import ExportList
from app.kit.deps import SessionDep
from app.kit.routing import ApiRoute
from app.kit.schemas import Limit, Offset

router = APIRouter(prefix="/v1", tags=["exports"], route_class=ApiRoute)

ExportName = Annotated[str, Path(max_length=64, description="An export's name (see the list).")]
FormatQuery = Annotated[
    ExportFormat,
    Query(description="`csv` (a header row, then one row per record) or `json` (JSON Lines)."),
]


@router.get("/challenges/{challenge_id}/exports")
def list_exports(
    challenge_id: ChallengeIdDep,
    session: SessionDep,
    caller: TenantAdminDep,
    limit: Limit = 50,
    offset: Offset = 0,
) -> ExportList:
    """The challenge's exports (its kind's datasets): their URLs and CSV columns."""
    return service.list_exports(session, caller, challenge_id, limit=limit, offset=offset)


@router.get(
    "/challenges/{challenge_id}/exports/{name}",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "The export, streamed (docs/exports.md).",
            # Text, for a generated client to hand over as it came.
            "content": {
                "text/csv": {"schema": {"type": "string"}},
                "application/x-ndjson": {"schema": {"type": "string"}},
            },
            "headers": {
                "Gauntlet-Frozen-At": {
                    "description": "While the challenge's public boards are frozen: when "
                    "they froze (the export's boards are the live ones).",
                    "schema": {"type": "string", "format": "date-time"},
                }
            },
        }
    },
)
def get_export(
    challenge_id: ChallengeIdDep,
    name: ExportName,
    session: SessionDep,
    caller: TenantAdminDep,
    format: FormatQuery = ExportFormat.CSV,
) -> StreamingResponse:
    """Download one export of any size, streamed as it is read: CSV, or JSON Lines with one
    object per line as the API's reads show it. Tenant admins only (it holds private texts),
    so its boards are the live ones; while the challenge's public boards are frozen, the
    `Gauntlet-Frozen-At` header says since when."""
    return export_response(service.open_export(session, caller, challenge_id, name, format))
