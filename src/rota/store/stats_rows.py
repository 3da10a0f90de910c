"""Rows of the cluster-count queries as domain values, for both dialects."""

from __future__ import annotations

from typing import Any

from rota.domain.states import RunState
from rota.domain.stats import FinishedCount, QueueCount


def positive_bucket(bucket_seconds: int) -> int:
    if isinstance(bucket_seconds, bool) or not isinstance(bucket_seconds, int):
        raise TypeError(f"bucket_seconds must be an int, got {type(bucket_seconds).__name__}")
    if not 1 <= bucket_seconds <= 86_400:
        raise ValueError(f"bucket_seconds={bucket_seconds} is not allowed: use 1 to 86400")
    return bucket_seconds


def queue_count_from_row(row: dict[str, Any]) -> QueueCount:
    return QueueCount(
        namespace=row["namespace"],
        queue=row["queue"],
        state=RunState(row["state"]),
        count=int(row["count"]),
        oldest_due_at=row["oldest_due_at"],
    )


def finished_count_from_row(row: dict[str, Any]) -> FinishedCount:
    return FinishedCount(
        bucket_start=row["bucket_start"],
        namespace=row["namespace"],
        queue=row["queue"],
        state=RunState(row["state"]),
        count=int(row["count"]),
    )
