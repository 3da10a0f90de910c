"""rota's fault-injection suite (``make chaos``).

Each scenario starts real worker processes against a database of its own, injects one
kind of fault (a database restart, a paused process, a network partition, a killed
leader, a skewed clock, ...), then checks rota's invariants with SQL on what the
database holds, as River's external chaos harness does. The runner bounds every
scenario in time, kills whatever it started, drops its database and writes the figures
into docs/reliability.md.

This is not part of ``make test``: it restarts the shared PostgreSQL server, pauses
processes for seconds at a time and runs for minutes.
"""
