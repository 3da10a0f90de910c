"""What each of ``rota.Settings``' fields may hold, stated once: the constructor checks
values against it and the ``ROTA_*`` reader parses text with it, so a bad value is the
same one line wherever it comes from (naming the setting, the value, what is allowed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rota.errors import InvalidArgument

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True)
class Kind:
    """A number with a lower bound, a switch or a text."""

    python_type: type
    allowed: str  # how an error message says it
    minimum: float | None = None
    minimum_allowed: bool = True  # >= minimum (else > minimum)

    def holds(self, value: Any) -> bool:
        if self.python_type is bool or self.python_type is str:
            return isinstance(value, self.python_type)
        numeric = int if self.python_type is int else int | float
        if isinstance(value, bool) or not isinstance(value, numeric):
            return False
        if value != value or value in (float("inf"), float("-inf")):
            return False  # NaN and infinities are no number of seconds
        if self.minimum is None:
            return True
        return value >= self.minimum if self.minimum_allowed else value > self.minimum

    def parse(self, text: str) -> Any:
        """The value ``text`` spells, or ValueError."""
        if self.python_type is bool:
            word = text.strip().lower()
            if word in TRUE_WORDS or word in FALSE_WORDS:
                return word in TRUE_WORDS
            raise ValueError(text)
        if self.python_type is int:
            return int(text)
        if self.python_type is float:
            return float(text)
        return text

    def check(self, name: str, value: Any) -> Any:
        if not self.holds(value):
            raise InvalidArgument(name, value, self.allowed)
        return value


SECONDS = Kind(float, "a number of seconds > 0", minimum=0, minimum_allowed=False)
SECONDS_OR_ZERO = Kind(float, "a number of seconds >= 0", minimum=0)
COUNT = Kind(int, "an integer >= 1", minimum=1)
SWITCH = Kind(bool, "true or false (also 1/0, yes/no, on/off)")
TEXT = Kind(str, "a text")


def parse_setting(variable: str, kind: Kind, text: str) -> Any:
    """The value of environment variable ``variable``, parsed and checked: the error
    names the variable, as the user wrote it."""
    try:
        value = kind.parse(text)
    except ValueError:
        raise InvalidArgument(variable, text, kind.allowed) from None
    if not kind.holds(value):
        raise InvalidArgument(variable, text, kind.allowed)
    return value


# Every field of rota.Settings but database_url (config.check_url states that one).
KINDS: dict[str, Kind] = {
    "lease_seconds": SECONDS,
    "poll_seconds": SECONDS,
    "sqlite_poll_seconds": SECONDS,
    "aging_seconds": SECONDS,
    "poison_after": COUNT,
    "reap_interval_seconds": SECONDS,
    "worker_heartbeat_seconds": SECONDS,
    "worker_dead_seconds": SECONDS,
    "leader_lease_seconds": SECONDS,
    "planner_interval_seconds": SECONDS,
    "vacuum_interval_seconds": SECONDS,
    "planner_horizon_seconds": SECONDS,
    "retention_seconds": SECONDS,
    "event_retention_seconds": SECONDS,
    "shutdown_grace_seconds": SECONDS_OR_ZERO,
    "cancel_grace_seconds": SECONDS,
    "auto_migrate": SWITCH,
    "pool_size": COUNT,
    "handler_pool_size": COUNT,
    "handler_pool_wait_seconds": SECONDS,
    "handler_idle_in_transaction_seconds": SECONDS,
    "handler_statement_timeout_seconds": SECONDS,
    "handler_lock_timeout_seconds": SECONDS,
    "webhook_allow_private_addresses": SWITCH,
    "webhook_timeout_seconds": SECONDS,
    "webhook_max_tries": COUNT,
    "webhook_disable_after": COUNT,
    "map_max_items": COUNT,
}
