"""The engine: the node and everything it runs (worker, execution, leader, housekeeping,
planner, supervision, webhook delivery). It calls the use cases and the store ports."""
