"""Observability: Prometheus metrics, the cluster gauges the leader publishes, the
finished-run log line and (with ``rota[otel]``) OpenTelemetry traces.

Hooks in the worker, the leader and the API are one-line calls into
:mod:`rota.observe.hooks`; none of them ever raises into the code that calls it
(docs/adr/0013-observability.md).
"""
