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
    """A number with bounds, a switch, a text (maybe one of a few words) or a list of
    texts (comma-separated in a variable)."""

    python_type: type
    allowed: str  # how an error message says it
    minimum: float | None = None
    minimum_allowed: bool = True  # >= minimum (else > minimum)
    maximum: float | None = None
    choices: tuple[str, ...] = ()

    def holds(self, value: Any) -> bool:
        if self.python_type is str:
            return isinstance(value, str) and (not self.choices or value in self.choices)
        if self.python_type is list:
            return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
        if self.python_type is bool:
            return isinstance(value, bool)
        numeric = int if self.python_type is int else int | float
        if isinstance(value, bool) or not isinstance(value, numeric):
            return False
        if value != value or value in (float("inf"), float("-inf")):
            return False  # NaN and infinities are no number of seconds
        if self.maximum is not None and value > self.maximum:
            return False
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
        if self.python_type is list:
            return [part.strip() for part in text.split(",") if part.strip()]
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
# Beyond rota.Settings: the API's, the server's, a worker's and the client's settings
# (rota.config.schema lists them all, grouped as in rota.yaml).
NUMBER = Kind(float, "a number > 0", minimum=0, minimum_allowed=False)
BYTES = Kind(int, "an integer >= 1 (bytes)", minimum=1)
PORT = Kind(int, "a port number 1-65535", minimum=1, maximum=65535)
LEEWAY = Kind(float, "0-30 seconds", minimum=0, maximum=30)
TEXTS = Kind(list, "a list of texts (in a variable: comma-separated)")
PATH = Kind(str, "a file path")
ENVIRONMENT = Kind(
    str,
    "one of development, test, production",
    choices=("development", "test", "production"),
)
LOOP = Kind(str, "one of auto, uvloop, asyncio", choices=("auto", "uvloop", "asyncio"))


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
    "start_up_retry_seconds": SECONDS,
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
