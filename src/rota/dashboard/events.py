"""GET /events: the change feed as Server-Sent Events. Each open page holds one
stream; all streams of the process share one ChangeFeed (one poller)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse

from rota.dashboard.sessions import Session
from rota.dashboard.web import dashboard, viewer

router = APIRouter()
KEEPALIVE_SECONDS = 15.0
RETRY_MILLISECONDS = 1000  # how soon a dropped stream reconnects
MAX_EVENT_ID = 64


@router.get("/events", name="events")
async def events(
    request: Request, session: Annotated[Session, Depends(viewer)], since: str | None = None
) -> StreamingResponse:
    """``change`` events (their data is the new event id): the page re-fetches its live
    regions. Last-Event-ID (sent by a reconnecting browser) or ``since`` (the id the
    page was rendered with) is how a page catches up on what it missed."""
    last = request.headers.get("last-event-id") or since
    if last is not None and len(last) > MAX_EVENT_ID:
        last = None
    feed = dashboard(request).feed

    async def stream() -> AsyncIterator[str]:
        yield f"retry: {RETRY_MILLISECONDS}\n\n"
        async for event_id in feed.changes(last, KEEPALIVE_SECONDS):
            if event_id is None:
                yield ": keep-alive\n\n"
            else:
                yield f"id: {event_id}\nevent: change\ndata: {event_id}\n\n"

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )
