"""An opened export as an HTTP response, the same for the API and the admin pages."""

from __future__ import annotations

from starlette.responses import StreamingResponse

from app.export.service import OpenedExport

# Sent while the challenge's public boards are frozen: when they froze (the export's boards
# are the live ones, the admins' view).
FROZEN_AT_HEADER = "Gauntlet-Frozen-At"


def export_response(opened: OpenedExport) -> StreamingResponse:
    """Streamed as it is read (chunked), saved under its file name, kept by no cache: the
    rows hold private texts."""
    headers = {
        "Content-Disposition": f'attachment; filename="{opened.filename}"',
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
    }
    if opened.frozen_at is not None:
        headers[FROZEN_AT_HEADER] = opened.frozen_at.isoformat().replace("+00:00", "Z")
    return StreamingResponse(opened.body, media_type=opened.media_type, headers=headers)
