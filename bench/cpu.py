"""Who used the two cores: CPU seconds of the PostgreSQL server during a window.

On a small machine the workers and the database share the CPUs, so "what bounds it" is
first a question of where the CPU time went. Workers report their own CPU time
(``time.process_time``); the server's is read here from /proc (Linux only; elsewhere the
split is left out of the report).
"""

from __future__ import annotations

import os
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


class ServerCpu:
    """CPU seconds the PostgreSQL processes used between ``start()`` and ``stop()``.

    A backend's CPU time vanishes from /proc when it exits (a worker in drain mode
    disconnects as soon as it is done), so ``sample()`` is called during the window and
    the last value seen for each backend is kept. Backends that start inside the window
    count in full.
    """

    def __init__(self) -> None:
        self._before: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self.seconds: float | None = None

    def start(self) -> None:
        if Path("/proc/self/stat").exists():
            self._before = {pid: _cpu_seconds(pid) for pid in _postgres_pids()}
            self._last = dict(self._before)

    def sample(self) -> None:
        if not self._before:
            return
        for pid in _postgres_pids():
            seconds = _cpu_seconds(pid)
            if seconds > 0:  # 0.0 also means "exited while we read it": keep the last
                self._last[pid] = max(seconds, self._last.get(pid, 0.0))

    def so_far(self) -> float | None:
        """CPU seconds used since start(), as of the last sample()."""
        if not self._before:
            return None
        return max(0.0, sum(t - self._before.get(pid, 0.0) for pid, t in self._last.items()))

    def stop(self) -> float | None:
        self.sample()
        self.seconds = self.so_far()
        return self.seconds
