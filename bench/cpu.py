"""Who used the two cores: CPU seconds of the PostgreSQL server during a window.

On a small machine the workers and the database share the CPUs, so "what bounds it" is
first a question of where the CPU time went. Workers report their own CPU time
(``time.process_time``); the server's is read here from /proc (Linux only; elsewhere the
split is left out of the report).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    try:
        after_comm = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    # utime and stime are fields 14 and 15 of the line, 12 and 13 after "(comm)".
    return (int(after_comm[11]) + int(after_comm[12])) / TICKS


def _postgres_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() == "postgres":
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


BackendPids = Callable[[], Iterable[int]]


class ServerCpu:
    """CPU seconds the PostgreSQL processes used between ``start()`` and ``stop()``.

    With ``backends`` (a function listing the pids of the database under test's
    backends), only those count: other sessions on a shared server, and the server's
    own background processes (WAL writer, checkpointer), are left out, for every system
    alike. Without it, every postgres process counts.

    A backend's CPU time vanishes from /proc when it exits (a worker in drain mode
    disconnects as soon as it is done), so ``sample()`` is called during the window and
    the last value seen for each backend is kept. Backends that start inside the window
    count in full.
    """

    def __init__(self, backends: BackendPids | None = None) -> None:
        self._backends = backends
        self._before: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._started = False  # False off Linux (no /proc): the split is left out
        self.seconds: float | None = None

    def _pids(self) -> list[int]:
        return list(self._backends()) if self._backends is not None else _postgres_pids()

    def start(self) -> None:
        if Path("/proc/self/stat").exists():
            self._before = {pid: _cpu_seconds(pid) for pid in self._pids()}
            self._last = dict(self._before)
            self._started = True

    def sample(self) -> None:
        if not self._started:
            return
        for pid in self._pids():
            seconds = _cpu_seconds(pid)
            if seconds > 0:  # 0.0 also means "exited while we read it": keep the last
                self._last[pid] = max(seconds, self._last.get(pid, 0.0))

    def so_far(self) -> float | None:
        """CPU seconds used since start(), as of the last sample()."""
        if not self._started:
            return None
        return max(0.0, sum(t - self._before.get(pid, 0.0) for pid, t in self._last.items()))

    def stop(self) -> float | None:
        self.sample()
        self.seconds = self.so_far()
        return self.seconds
