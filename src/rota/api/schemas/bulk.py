"""Bulk actions on the runs a filter matches: the confirmation sent back, the preview
and the result (rota.services.bulk_actions)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from rota.api.schemas.fields import Request
from rota.domain.bulk_actions import BulkAction, BulkPreview, BulkResult

MAX_COUNT = 2**53 - 1  # what a JSON number holds exactly


class BulkConfirm(Request):
    """The count the preview showed, sent back as the confirmation: the action is done
    only while the filter still matches that many runs (else 409 count-changed)."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"expected_count": 1200}]}
    )

    expected_count: Annotated[int, Field(ge=0, le=MAX_COUNT)]


class BulkPreviewOut(BaseModel):
    """How many runs the action would act on now; send ``count`` back as
    ``expected_count`` to do it."""

    action: BulkAction
    count: int

    @classmethod
    def of(cls, preview: BulkPreview) -> BulkPreviewOut:
        return cls(action=preview.action, count=preview.count)


class BulkResultOut(BaseModel):
    """What the action did: ``matched`` runs when it began, ``affected`` ones changed,
    ``skipped`` ones not (their state no longer allowed it, or they left the filter
    before the walk reached them), in ``batches`` keyset pages of at most 500."""

    action: BulkAction
    matched: int
    affected: int
    skipped: int
    batches: int

    @classmethod
    def of(cls, result: BulkResult) -> BulkResultOut:
        return cls(
            action=result.action,
            matched=result.matched,
            affected=result.affected,
            skipped=result.skipped,
            batches=result.batches,
        )
