"""``python -m bench``: rota beside PgQueuer and Procrastinate, in one run, on one server.

Every system gets a fresh database per scenario, every scenario has a deadline, and the
report (docs/benchmarks.md + docs/benchmarks.png) is written from what this run measured.
"""
