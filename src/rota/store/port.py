"""The store port: everything rota needs from a database, as one Protocol.

One SqlStore implements it over a dialect seam (store/sql_store.py, ADR 0011); one
contract suite (tests/contract) proves SQLite and PostgreSQL behave the same. Every
write made under a lease names its fence. ``now`` is ``None`` in production (the
database clock decides, so machines with skewed clocks agree) and a fixed instant in
tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from rota.domain.access import ApiKey, AuditEntry, AuditQuery, NewApiKey, NewAuditEntry
from rota.domain.breakers import Breaker, BreakerRow, Transition
from rota.domain.charts import ChartAsk, ChartBatch, ChartRead
from rota.domain.jobs import Job, JobAdvance, JobSpec, RecentStart, UnreadableJob
from rota.domain.limits import Limit
from rota.domain.queues import QueueControl
from rota.domain.rates import RateLimit
from rota.domain.runs import (
    LOG_READ_LIMIT,
    Attempt,
    ClaimedRun,
    Enqueued,
    Lease,
    LogLine,
    NewRun,
    Outcome,
    ReapedRun,
    RenewResult,
    Run,
    RunFilter,
)
from rota.domain.search import RunSearch
from rota.domain.stats import FinishedCount, QueueCount
from rota.domain.workers import UnclaimableRun, WorkerInfo, WorkerState
from rota.domain.workflow_runs import WorkflowRunView
from rota.domain.workflows import StoredWorkflow, WorkflowDefinition
from rota.store.bulk_port import BulkRunStore
from rota.store.event_port import EventStore
from rota.store.limit_port import ApiLimitStore

# Re-exported: callers import these from the port, as they always have.
from rota.store.values import ClaimRequest as ClaimRequest
from rota.store.values import LeaderInfo as LeaderInfo
from rota.store.values import LeaderTerm as LeaderTerm
from rota.store.values import SchemaStatus as SchemaStatus
from rota.store.webhook_port import WebhookStore


class Store(Protocol):
    dialect: str
    # Capabilities, set once from the dialect when the store is made, so callers test a
    # flag instead of the store's type or its URL (optional ports: rota.bootstrap).
    supports_notify: bool  # LISTEN/NOTIFY wakes idle workers (else they poll often)
    supports_copy: bool  # large unkeyed batches are written with COPY
    supports_handler_transactions: bool  # ctx.transaction(): writes commit with completion

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    # -- the store's other ports (rota.store.*_port), handed out by the store itself --
    @property
    def webhooks(self) -> WebhookStore: ...

    @property
    def events(self) -> EventStore: ...

    @property
    def api_limits(self) -> ApiLimitStore: ...

    @property
    def bulk(self) -> BulkRunStore: ...

    # -- schema -------------------------------------------------------------
    async def schema_status(self) -> SchemaStatus: ...

    async def migrate(self) -> list[int]:
        """Apply pending migrations; returns the versions applied."""

    # -- producing ----------------------------------------------------------
    async def enqueue(self, runs: Sequence[NewRun], now: datetime | None) -> list[Enqueued]: ...

    # -- the worker's hot path (all fenced) ----------------------------------
    async def claim(self, request: ClaimRequest, now: datetime | None) -> list[ClaimedRun]:
        """Lease up to ``request.limit`` due runs. A claim that found runs may leave
        others that are due (keyed runs, which a limit governs) to the next claim: a
        caller claims again at once after any claim that returned runs, and treats only
        an empty claim as "nothing to do"."""

    async def renew(
        self, worker_id: str, leases: Sequence[Lease], lease_seconds: float, now: datetime | None
    ) -> RenewResult: ...

    async def complete(self, outcomes: Sequence[Outcome], now: datetime | None) -> set[int]:
        """Record outcomes whose fence still holds. Returns the run ids written; any
        other outcome was stale and is discarded."""

    async def recorded_outcomes(self, outcomes: Sequence[Outcome]) -> set[int]:
        """After an ambiguous commit: which of these outcomes are already recorded."""

    async def release(self, leases: Sequence[Lease], now: datetime | None) -> set[int]:
        """Hand runs back (graceful shutdown) without spending an attempt."""

    async def append_logs(self, lines: Sequence[LogLine], fences: Mapping[int, int]) -> int:
        """Store the lines of runs whose fence (``fences[run_id]``) still holds, in
        order; returns how many were stored (a stale attempt's lines are not)."""

    # -- housekeeping -------------------------------------------------------
    # Housekeeping is a leader duty: with ``leader_term`` set, the write happens only
    # while that term is current, so a deposed leader changes nothing.
    async def reap_expired(
        self, now: datetime | None, poison_after: int, limit: int, leader_term: int | None = None
    ) -> list[ReapedRun]: ...

    async def prune_finished(
        self, older_than: datetime, limit: int, leader_term: int | None = None
    ) -> int: ...

    async def retire_history(self, older_than: datetime, leader_term: int | None = None) -> int:
        """Drop whole days of history that ended before ``older_than`` (with their
        attempts, logs and keys) and make the coming days' partitions; the runs retired.
        Where history is one table (SQLite), :meth:`prune_finished` does it all."""

    # -- reading and steering -----------------------------------------------
    async def get_run(self, run_id: int) -> Run | None: ...

    async def list_runs(self, run_filter: RunFilter) -> list[Run]: ...

    async def attempts(self, run_id: int) -> list[Attempt]: ...

    async def logs(
        self, run_id: int, after: int | None = None, limit: int = LOG_READ_LIMIT
    ) -> list[LogLine]:
        """The run's lines in order; with ``after``, only those whose seq is greater."""

    async def request_cancel(self, run_id: int, now: datetime | None) -> Run: ...

    async def replay(self, run_id: int, now: datetime | None) -> int: ...

    # -- workflows (store/core/workflows.py) ----------------------------------
    async def start_workflow_run(
        self,
        definition: WorkflowDefinition,
        payload_json: str,
        steps: Sequence[NewRun],
        now: datetime | None,
        namespace: str = "default",
        idempotency_key: str | None = None,
    ) -> int:
        """A new workflow run's id (the first one's, for a repeated idempotency key)."""

    async def cancel_workflow_run(self, workflow_run_id: int, now: datetime | None) -> None: ...

    async def workflow_run(self, workflow_run_id: int) -> WorkflowRunView: ...

    async def list_workflow_runs(
        self,
        name: str | None,
        limit: int,
        namespace: str | None = None,
        namespaces: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """The newest workflow runs (of ``name``, in ``namespace``, within ``namespaces``
        when given): id, namespace, name, created_at, cancelled_at, idempotency_key."""

    async def prune_workflow_runs(
        self, older_than: datetime, limit: int, leader_term: int | None = None
    ) -> int:
        """Finished workflow runs whose steps all ended before ``older_than``, whole."""

    async def workflow_step_of(self, run_id: int) -> dict[str, Any] | None:
        """The workflow run, step name and map index of a run, if it is a step."""

    # -- workflow definitions (store/core/workflow_defs.py) -------------------
    async def save_workflow(
        self, namespace: str, definition: WorkflowDefinition, now: datetime | None
    ) -> StoredWorkflow:
        """Create or replace (namespace, definition.name); the version counts changes."""

    async def get_workflow(self, namespace: str, name: str) -> StoredWorkflow | None: ...

    async def list_workflows(self, namespace: str | None) -> list[StoredWorkflow]:
        """Every saved definition (in ``namespace``, if given), by namespace and name."""

    # -- jobs and schedules -------------------------------------------------
    async def now(self, now: datetime | None) -> datetime:
        """``now`` if given, else the database clock's reading."""

    async def save_job(
        self, spec: JobSpec, cursor: datetime, next_fire_at: datetime | None, now: datetime | None
    ) -> Job:
        """Create or replace the job named (spec.namespace, spec.name)."""

    async def get_job(self, namespace: str, name: str) -> Job | None: ...

    async def get_job_by_id(self, job_id: int) -> Job | None: ...

    async def list_jobs(self, namespace: str | None = None) -> list[Job]:
        """Jobs by namespace and name; one whose definition cannot be read is logged
        and left out (get_job raises JobUnreadable for it)."""

    async def delete_job(self, namespace: str, name: str) -> bool: ...

    async def set_job_paused(
        self,
        namespace: str,
        name: str,
        paused: bool,
        cursor: datetime,
        next_fire_at: datetime | None,
        now: datetime | None,
    ) -> Job | None:
        """Pause, or resume planning from ``cursor`` (slots in the pause are skipped)."""

    async def due_jobs(self, until: datetime, limit: int) -> list[Job | UnreadableJob]:
        """Jobs with a slot due by ``until``, oldest first, leaving out those set aside
        until later; a row whose definition cannot be read comes as an UnreadableJob."""

    async def set_job_aside(
        self, job_id: int, error: str, retry_at: datetime, now: datetime | None
    ) -> None:
        """Record that planning the job failed (``error``), and skip it until ``retry_at``;
        the next successful planning, an update or a resume clears it."""

    async def recent_starts(
        self, job_ids: Sequence[int], per_job: int
    ) -> dict[int, list[RecentStart]]:
        """The newest ``per_job`` slot runs of each job (both homes), oldest slot first:
        when each slot's run started (issue 25: how late schedules start)."""

    async def advance_jobs(
        self, advances: Sequence[JobAdvance], now: datetime | None, leader_term: int | None
    ) -> set[int]:
        """Apply planning decisions in one transaction: each job's cursor moves by
        compare-and-set and its runs are created. Returns the ids of the jobs advanced;
        the others were advanced first by another planner (or ``leader_term`` is stale)."""

    # -- leadership ---------------------------------------------------------
    async def acquire_leadership(
        self, holder: str, term: int | None, lease_seconds: float, now: datetime | None
    ) -> int | None:
        """Renew (holding ``term``) or take over an expired lease; the term held, or None."""

    async def resign_leadership(self, holder: str, term: int, now: datetime | None) -> None: ...

    async def leader(self) -> LeaderInfo | None: ...

    async def leader_history(self, limit: int) -> list[LeaderTerm]:
        """The newest ``limit`` terms, newest first (kept by the database itself)."""

    # -- claim-time controls and the worker registry -------------------------
    async def set_limit(self, limit: Limit) -> None: ...

    async def clear_limit(self, scope: str, name: str) -> bool: ...

    async def list_limits(self) -> list[Limit]: ...

    async def set_rate(self, limit: RateLimit) -> None:
        """At most ``limit.rate`` starts of its queue or handler (per rate_key)."""

    async def clear_rate(self, scope: str, name: str) -> bool: ...

    async def list_rates(self) -> list[RateLimit]: ...

    async def list_queues(self) -> list[QueueControl]:
        """Every queue an operator has acted on (paused or resumed), by name."""

    async def set_queue_paused(
        self, name: str, paused: bool, paused_by: str | None, now: datetime | None
    ) -> QueueControl:
        """Pause a queue cluster-wide (claims skip it within a second plus one claim;
        runs held go on and finish) or resume it. Pausing a paused queue keeps its first
        ``paused_at`` and ``paused_by``."""

    async def paused_queues(self) -> frozenset[str]:
        """The paused queues as this process's claims see them (at most ~1 s old)."""

    async def set_breaker_rule(self, handler: str, rule: Breaker) -> None: ...

    async def breaker_rules(self) -> dict[str, Breaker]:
        """Every handler's breaker rule, as written by its workers."""

    async def list_breakers(self, namespaces: Sequence[str] | None = None) -> list[BreakerRow]:
        """Every breaker; with ``namespaces``, those that runs of these namespaces moved
        (a breaker is shared by every namespace whose runs use its handler)."""

    async def breaker_transitions(
        self, limit: int, namespaces: Sequence[str] | None = None
    ) -> list[Transition]:
        """The newest ``limit`` breaker transitions, newest first (of the breakers
        ``namespaces`` moved, if given)."""

    async def reset_breaker(self, handler: str, key: str, now: datetime | None) -> BreakerRow:
        """Close a breaker by hand; the transition is recorded."""

    async def expire_deadlines(
        self, now: datetime | None, leader_term: int | None = None
    ) -> list[int]:
        """Cancel runs never started by their deadline (deadline_exceeded)."""

    async def register_worker(self, worker: WorkerInfo, now: datetime | None) -> None: ...

    async def worker_heartbeat(self, node_id: str, now: datetime | None) -> WorkerState | None:
        """Record a heartbeat; the worker's state (None if it is not registered)."""

    async def set_worker_state(self, node_id: str, state: WorkerState) -> bool: ...

    async def deregister_worker(self, node_id: str) -> None: ...

    async def list_workers(self) -> list[WorkerInfo]: ...

    async def mark_dead_workers(
        self, dead_after: float, now: datetime | None, leader_term: int | None = None
    ) -> list[str]:
        """Workers silent for ``dead_after`` seconds become dead and their leases end now."""

    async def prune_workers(self, older_than: datetime) -> int: ...

    async def unclaimable_runs(self, now: datetime | None, limit: int) -> list[UnclaimableRun]: ...

    async def vacuum(self) -> None:
        """Reclaim dead row versions in the hot tables (a leader duty; every claim and
        completion leaves one behind, and a queue decays without it)."""

    async def next_due_in(
        self, queues: Sequence[str], now: datetime | None, looked_ago: float = 0.0
    ) -> float | None:
        """Seconds until the earliest waiting run in ``queues`` is due, if one is waiting
        and not due yet (or fell due less than ``looked_ago`` seconds ago: 0.0); lets an
        idle worker wake for it instead of at its next poll. None when none is."""

    async def wait_for_work(self, timeout: float) -> None:
        """Return when new work may be claimable (a notification) or after ``timeout``."""

    # -- api ----------------------------------------------------------------
    async def search_runs(self, search: RunSearch) -> list[Run]:
        """Runs matching every given filter, newest first, keyset-paged by id."""

    async def oldest_due_run_at(self, now: datetime | None) -> datetime | None:
        """The ``run_at`` of the longest-waiting run that is due (pending or retrying
        with ``run_at`` <= now), or None if none is due."""

    async def live_queue_counts(self, now: datetime | None) -> list[QueueCount]:
        """Runs that are not finished (pending, claimed, running, retrying) plus the dead
        letters, counted per namespace, queue and state; waiting states carry the oldest
        due ``run_at`` (<= now). Reads indexes only: cheap enough for a timer, never for
        every scrape of every process."""

    async def finished_counts(self, since: datetime, bucket_seconds: int) -> list[FinishedCount]:
        """Runs that finished at or after ``since``, counted per time bucket, namespace,
        queue and final state. With whole-minute buckets, the minutes the leader has
        counted for the charts (:meth:`count_chart_batch`) are read from those counts;
        the answer is the same either way."""

    async def count_chart_batch(self, now: datetime) -> ChartBatch:
        """The leader's duty: one bounded, idempotent transaction of the charts' rollup
        (domain.charts.chart_batch); call again until it is ``caught_up``."""

    async def chart_read(self, ask: ChartAsk) -> ChartRead | None:
        """A chart's keys and series, summed in the database from the rollup only (the
        level whose rows are the range's bars); None before its first count."""

    async def create_api_key(self, key: NewApiKey, now: datetime | None) -> ApiKey: ...

    async def get_api_key(self, key_id: str) -> ApiKey | None: ...

    async def list_api_keys(self) -> list[ApiKey]: ...

    async def revoke_api_key(self, key_id: str, now: datetime | None) -> ApiKey | None:
        """Mark a key revoked (the first revocation's instant stands); None if unknown."""

    async def sign_out_session(
        self, session_id: str, expires_at: datetime, now: datetime | None
    ) -> None:
        """Refuse the dashboard session ``session_id`` everywhere until ``expires_at``
        (and forget sessions signed out earlier that have expired by ``now``)."""

    async def session_signed_out(self, session_id: str) -> bool: ...

    async def append_audit(self, entry: NewAuditEntry, now: datetime | None) -> int: ...

    async def list_audit(self, query: AuditQuery) -> list[AuditEntry]:
        """Entries newest first, keyset-paged by id, limited to ``query.namespaces``."""
