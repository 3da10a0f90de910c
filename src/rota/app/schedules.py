"""An App's jobs and schedules (rota.services.schedules)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from rota.app.base import AppBase
from rota.domain.jobs import Job
from rota.services import schedules


class AppSchedules(AppBase):
    """Creating, changing, pausing and triggering jobs."""

    def schedule(
        self,
        name: str,
        *,
        handler: str,
        payload: Any = None,
        cron: str | None = None,
        interval: float | timedelta | None = None,
        at: datetime | None = None,
        timezone: str = "UTC",
        misfire: str = "fire_now",
        overlap: str = "allow",
        **options: Any,
    ) -> Job:
        """Create or replace the job ``name``: ``cron=`` (5 or 6 fields, seconds first),
        ``interval=`` (seconds or a timedelta) or ``at=`` (once); none of them for a
        manual job. Options: ``jitter``, ``catch_up_window``, ``run_all_cap``,
        ``queue``, ``priority``, ``max_attempts``, ``timeout``, ``namespace``,
        ``owner`` and ``labels`` (its runs', see ``enqueue``), and ``parameters`` (a
        template's JSON Schema of the payload, with defaults: the payload and each
        trigger's must fit it)."""
        spec = schedules.job_spec(
            self.registry,
            name,
            handler,
            payload,
            cron=cron,
            interval=interval,
            at=at,
            timezone=timezone,
            misfire=misfire,
            overlap=overlap,
            **options,
        )
        return self._stores.use(schedules.save_job, self.clock, spec)

    def update_schedule(self, name: str, namespace: str = "default", **changes: Any) -> Job:
        """Change some fields of a job's spec (e.g. ``cron=``; ``paused`` is separate):
        the same merge as the API's ``PATCH /jobs/{name}`` (see
        :func:`rota.services.schedules.merge_job_changes`)."""
        return self._stores.use(schedules.update_job, self.clock, namespace, name, **changes)

    def pause_schedule(self, name: str, namespace: str = "default") -> Job:
        return self._stores.use(schedules.set_paused, self.clock, namespace, name, True)

    def resume_schedule(self, name: str, namespace: str = "default") -> Job:
        """Resume planning from now; slots that fell in the pause are skipped."""
        return self._stores.use(schedules.set_paused, self.clock, namespace, name, False)

    def delete_schedule(self, name: str, namespace: str = "default") -> None:
        self._stores.use(schedules.delete_job, namespace, name)

    def get_schedule(self, name: str, namespace: str = "default") -> Job:
        return self._stores.use(schedules.get_job, namespace, name)

    def list_schedules(
        self,
        namespace: str | None = None,
        *,
        owner: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> list[Job]:
        """Jobs by namespace and name; with ``owner`` or ``labels``, only those of that
        owner holding every label given."""
        return self._stores.use(schedules.list_jobs, namespace, owner=owner, labels=labels)

    def trigger(
        self,
        name: str,
        payload: Any = None,
        *,
        idempotency_key: str | None = None,
        namespace: str = "default",
    ) -> int:
        """Run a job now (optionally with another payload); returns the run id."""
        return self._stores.use(
            schedules.trigger_job, self.clock, namespace, name, payload, idempotency_key
        )
