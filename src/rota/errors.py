"""Every error rota raises derives from :class:`RotaError`.

Errors carry the ids and values they are about as attributes, so the API, the CLI and
logs can report them without parsing messages. Store adapters translate driver errors
into these; nothing above the store sees a psycopg or sqlite3 exception.
"""

from __future__ import annotations

from typing import Any


class RotaError(Exception):
    """Root of rota's errors."""


class InvalidArgument(RotaError, ValueError):
    """A value a caller passed is not allowed. Nothing was written."""

    def __init__(self, name: str, value: Any, allowed: str) -> None:
        self.name = name
        self.value = value
        self.allowed = allowed
        super().__init__(f"invalid {name}: {value!r}; expected {allowed}")


class UnstorableValue(InvalidArgument):
    """A value no store can hold (a NUL character, an unpaired surrogate, NaN, ...) or
    past a size limit. ``name`` is the field, a dotted path into a payload; the value
    itself is never repeated, since it may be a secret or part of a payload."""

    def __init__(self, name: str, allowed: str) -> None:
        self.name = name
        self.value = None
        self.allowed = allowed
        Exception.__init__(self, f"invalid {name}: expected {allowed}")


class UnknownHandler(InvalidArgument):
    def __init__(self, handler: str, known: list[str]) -> None:
        listing = ", ".join(sorted(known)) or "none registered"
        super().__init__("handler", handler, f"a registered handler ({listing})")


class RunNotFound(RotaError, LookupError):
    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        super().__init__(f"run {run_id} does not exist")


class JobNotFound(RotaError, LookupError):
    def __init__(self, namespace: str, name: str) -> None:
        self.namespace = namespace
        self.name = name
        super().__init__(f"job {name!r} does not exist in namespace {namespace!r}")


class WorkflowNotFound(RotaError, LookupError):
    def __init__(self, namespace: str, name: str) -> None:
        self.namespace = namespace
        self.name = name
        super().__init__(f"workflow {name!r} does not exist in namespace {namespace!r}")


class WorkflowRunNotFound(RotaError, LookupError):
    def __init__(self, workflow_run_id: int) -> None:
        self.workflow_run_id = workflow_run_id
        super().__init__(f"workflow run {workflow_run_id} does not exist")


class WorkerNotFound(RotaError, LookupError):
    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        super().__init__(f"worker {node_id!r} is not registered (or is dead)")


class InvalidTransition(RotaError):
    """The run is not in a state that allows what was asked (e.g. replaying a live run)."""

    def __init__(self, run_id: int, state: str, action: str, what: str = "run") -> None:
        # ``what``: a workflow run refuses a cancel once finished the same way, by id.
        self.run_id = run_id
        self.state = state
        self.action = action
        super().__init__(f"cannot {action} {what} {run_id}: it is {state}")


class SchemaMismatch(RotaError):
    """The database schema is newer than this rota, or older and not upgraded."""

    def __init__(self, found: int, known: int) -> None:
        self.found = found
        self.known = known
        if found > known:
            message = (
                f"database schema is version {found}, newer than this rota, which knows up to "
                f"{known}: this rota is older than the database; upgrade rota before starting it"
            )
        else:
            message = (
                f"database schema is version {found}, older than this rota's {known}: "
                "run `rota db upgrade` (or start with auto_migrate on)"
            )
        super().__init__(message)


class UnsupportedFeature(RotaError):
    """The chosen store cannot do what was asked (e.g. ctx.transaction() on SQLite)."""


class PermanentFailure(RotaError):
    """Raised by a handler to say: this failure will not go away by retrying.

    The run ends Failed at once, without further attempts.
    """


class StoreError(RotaError):
    """The store failed an operation: it refused it, or (:class:`StoreUnavailable`) it
    could not be reached. Code that survives store failures catches this one class, so
    "the database is down" is handled everywhere "the database said no" is."""


class StoreUnavailable(StoreError):
    """The database cannot be reached (down, refused, or the connection broke). A
    transient failure: the same operation may succeed once the database is back."""


class StoreConflict(StoreUnavailable):
    """A statement met a concurrent write it cannot follow (a serialization failure:
    on PostgreSQL, a row moved between the two homes meanwhile). It did nothing; the
    store runs it again a few times before passing this on."""


class HandlerTransactionsExhausted(StoreUnavailable):
    """Every connection for handler transactions (``ctx.transaction()``) was in use for
    longer than the wait allows. Transient, like an unreachable store: the run is tried
    again without spending an attempt."""

    def __init__(self, size: int, waited_seconds: float) -> None:
        self.size = size
        self.waited_seconds = waited_seconds
        super().__init__(
            f"no connection for ctx.transaction() within {waited_seconds:g} s: all "
            f"{size} are held by other handlers (setting handler_pool_size, "
            f"ROTA_HANDLER_POOL_SIZE; or hold transactions for less time)"
        )


class JobUnreadable(RotaError):
    """A stored job whose definition this rota cannot read (written by another version
    or edited by hand). It can be deleted or replaced; the planner sets it aside."""

    def __init__(self, job_id: int, namespace: str, name: str, reason: str) -> None:
        self.job_id = job_id
        self.namespace = namespace
        self.name = name
        self.reason = reason
        super().__init__(
            f"job {name!r} in namespace {namespace!r} has a stored definition this rota "
            f"cannot read ({reason}); replace it or delete it"
        )


class JobExists(RotaError):
    """Creating a job whose (namespace, name) is taken; update it instead."""

    def __init__(self, namespace: str, name: str) -> None:
        self.namespace = namespace
        self.name = name
        super().__init__(f"job {name!r} already exists in namespace {namespace!r}")


class InvalidPayload(InvalidArgument):
    """A payload does not fit the type its handler declares. ``errors`` holds one
    ``(field, message)`` per problem, the field as a dotted path from ``payload``."""

    def __init__(self, handler: str, errors: list[tuple[str, str]]) -> None:
        self.handler = handler
        self.errors = errors
        listing = "; ".join(f"{field}: {message}" for field, message in errors)
        self.name = "payload"
        self.value = None
        self.allowed = f"a payload that fits handler {handler!r}"
        Exception.__init__(self, f"invalid payload for handler {handler!r}: {listing}")


class CountChanged(InvalidArgument):
    """A bulk action's ``expected_count`` (what its preview showed the caller) is not
    what its filter matches now; nothing was done. Preview again and confirm anew."""

    def __init__(self, expected: int, count: int) -> None:
        self.count = count
        super().__init__(
            "expected_count", expected, f"{count}, the runs the filter matches now (preview again)"
        )


class ApiKeyNotFound(RotaError, LookupError):
    def __init__(self, key_id: str) -> None:
        self.key_id = key_id
        super().__init__(f"API key {key_id!r} does not exist")


class DrainLimitReached(RotaError):
    """``rota.testing.drain`` ran ``max_runs`` runs and still found more due: most
    likely a handler that enqueues itself. The run it found last was handed back."""

    def __init__(self, max_runs: int) -> None:
        self.max_runs = max_runs
        super().__init__(
            f"drain ran {max_runs} runs and more are still due; a handler that enqueues "
            "itself? (raise max_runs if the test really makes that many)"
        )


class NotEnqueued(RotaError, AssertionError):
    """``rota.testing.assert_enqueued`` found no run like the one expected. An
    AssertionError too, so pytest reports it as a failed assertion."""
