"""An opened export as an HTTP response, the same for the API and the admin pages."""

from __future__ import annotations

from starlette.responses import StreamingResponse

from app.export.service import OpenedExport


def export_response(opened: OpenedExport) -> StreamingResponse:
    """Streamed as it is read (chunked), saved under its file name, kept by no cache: the
    rows hold private texts."""
    return StreamingResponse(
        opened.body,
        media_type=opened.media_type,
        headers={
            "Content-Disposition": f'attachment; filename="{opened.filename}"',
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
        },
    )
