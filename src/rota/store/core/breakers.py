"""The one SQL store: circuit breakers (ADR 0016).

A breaker's row changes in exactly three transactions: the completion that records an
attempt's outcome a breaker must judge (:func:`record_outcomes`, called on the same
session by ``store/core/runs.py``; a success that moves nothing never gets here: the
``complete`` statement writes it alone), the serialised limited claim
(:meth:`CoreBreakers._breaker_view` / :meth:`CoreBreakers._save_view`), and an
operator's reset. The rules themselves are in ``rota.domain.breakers``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from rota.domain.breakers import (
    Breaker,
    BreakerRow,
    BreakerState,
    BreakerView,
    Transition,
    WhenOpen,
    is_failure,
    on_outcome,
)
from rota.domain.rates import micros
from rota.domain.runs import Outcome
from rota.domain.webhooks import EVENT_OF_BREAKER_MOVE
from rota.errors import InvalidArgument
from rota.store.core.base import CoreBase
from rota.store.core.recent import Recent
from rota.store.dialect import Row, Session


def _row(r: Row) -> BreakerRow:
    return BreakerRow(
        r["handler"],
        r["breaker_key"],
        BreakerState(r["state"]),
        r["failures"],
        r["streak_started_at"],
        r["opened_at"],
        r["probes_left"],
        r["cause"],
        r["window_started_at"],
        r["window_calls"],
        r["window_failures"],
    )


def _saved(row: BreakerRow) -> dict[str, Any]:
    return {
        "handler": row.handler,
        "breaker_key": row.key,
        "state": row.state.value,
        "failures": row.failures,
        "streak_started_at": row.streak_started_at,
        "opened_at": row.opened_at,
        "probes_left": row.probes_left,
        "cause": row.cause,
        "window_started_at": row.window_started_at,
        "window_calls": row.window_calls,
        "window_failures": row.window_failures,
    }


def _transition(t: Transition) -> dict[str, Any]:
    return {
        "handler": t.handler,
        "breaker_key": t.key,
        "from_state": t.from_state.value,
        "to_state": t.to_state.value,
        "at": t.at,
        "cause": t.cause,
    }


async def _now(session: Session) -> int:
    [row] = await session.rows("claim_now")
    return micros(row["now"])


Ident = tuple[str, str]  # (handler, breaker_key)


async def _locked(session: Session, idents: set[Ident]) -> dict[Ident, BreakerRow]:
    """The rows of these (handler, key) pairs, created closed if new, locked."""
    ordered = sorted(idents)
    await session.batch("breaker_ensure", [{"handler": h, "breaker_key": k} for h, k in ordered])
    handlers = sorted({h for h, _ in ordered})
    rows = await session.rows("breakers_locked", {"handlers": handlers})
    return {(r["handler"], r["breaker_key"]): _row(r) for r in rows}


async def _record_namespaces(session: Session, written: Sequence[Row], judged: set[Ident]) -> None:
    """Which namespaces' runs moved these breakers: who may see them (ADR 0028)."""
    moved_by = sorted(
        {
            (r["handler"], r["breaker_key"] or "", r["namespace"])
            for r in written
            if (r["handler"], r["breaker_key"] or "") in judged
        }
    )
    items = [{"handler": h, "breaker_key": k, "namespace": n} for h, k, n in moved_by]
    await session.batch("breaker_namespaces_record", items)


async def _save(
    session: Session, rows: Sequence[BreakerRow], transitions: Sequence[Transition]
) -> None:
    if rows:
        await session.batch("breaker_save", [_saved(r) for r in rows])
    if transitions:
        await session.batch("breaker_transition", [_transition(t) for t in transitions])


async def record_outcomes(
    session: Session,
    written: Sequence[Row],
    outcomes: Sequence[Outcome],
    rules: Mapping[str, Breaker],
) -> list[Transition]:
    """Move the breakers of the runs whose outcome ``written`` says was just recorded,
    on the same session (so in the same transaction as the outcome)."""
    by_id = {o.run_id: o for o in outcomes}
    judged: list[tuple[Ident, bool, int]] = []  # (breaker, failed, run id)
    for r in written:
        outcome = by_id.get(r["id"])
        if outcome is None or r["handler"] not in rules:
            continue
        failed = is_failure(outcome.attempt_outcome)
        if failed is not None:
            judged.append(((r["handler"], r["breaker_key"] or ""), failed, r["id"]))
    if not judged:
        return []
    now = await _now(session)
    rows = await _locked(session, {ident for ident, _, _ in judged})
    await _record_namespaces(session, written, {ident for ident, _, _ in judged})
    transitions = []
    for ident, failed, run_id in judged:
        rows[ident], transition = on_outcome(rows[ident], rules[ident[0]], failed, now)
        if transition is not None:
            transitions.append(transition)
            await _announce(session, transition, run_id)
    await _save(session, [rows[ident] for ident in {i: 0 for i, _, _ in judged}], transitions)
    return transitions


async def _announce(session: Session, transition: Transition, run_id: int | None) -> None:
    """Write breaker.opened / breaker.closed to the webhook outbox, on the session that
    records the transition (so in its transaction). The run whose outcome moved it
    gives the namespace, queue and attempt subscriptions filter on; an operator's reset
    (``run_id`` None) names the breaker's latest run instead."""
    event = EVENT_OF_BREAKER_MOVE.get((transition.from_state, transition.to_state))
    if event is None:
        return
    params = {
        "event_type": event.value,
        "run_id": run_id,
        "handler": transition.handler,
        "breaker_key": transition.key or "",
        "cause": transition.cause,
    }
    await session.rows("breaker_event", params)


def rules_of(rows: Sequence[Row]) -> dict[str, Breaker]:
    return {
        r["handler"]: Breaker(
            r["failures"],
            r["window_seconds"],
            r["cool_down_seconds"],
            r["probes"],
            r["failure_rate"],
            r["min_calls"],
            WhenOpen(r["when_open"]),
        )
        for r in rows
    }


class CoreBreakers(CoreBase):
    # Set in SqlStore.__init__ (one per store): read at most once a second.
    _rules: Recent[dict[str, Breaker]]
    _tripped: Recent[frozenset[str]]

    async def _read_rules(self) -> dict[str, Breaker]:
        return rules_of(await self._d.rows("breaker_rules"))

    async def _read_tripped(self) -> frozenset[str]:
        """Handlers with a breaker not closed. Only a hint for when to run the limited
        claim (probes may start up to a second late): the plain claim itself skips runs
        whose breaker is not closed, in its statement."""
        return frozenset(r["handler"] for r in await self._d.rows("breakers_tripped"))

    async def set_breaker_rule(self, handler: str, rule: Breaker) -> None:
        params = {
            "handler": handler,
            "failures": rule.failures,
            "window_seconds": float(rule.window),
            "cool_down_seconds": float(rule.cool_down),
            "probes": rule.probes,
            "failure_rate": None if rule.failure_rate is None else float(rule.failure_rate),
            "min_calls": rule.min_calls,
            "when_open": str(rule.when_open),
        }
        await self._d.write("set_breaker_rule", params)
        self._rules.forget()

    async def breaker_rules(self) -> dict[str, Breaker]:
        return await self._read_rules()

    async def list_breakers(self, namespaces: Sequence[str] | None = None) -> list[BreakerRow]:
        params = {"namespaces": None if namespaces is None else sorted(namespaces)}
        return [_row(r) for r in await self._d.rows("breakers", params)]

    async def breaker_transitions(
        self, limit: int, namespaces: Sequence[str] | None = None
    ) -> list[Transition]:
        params = {"limit": limit, "namespaces": None if namespaces is None else sorted(namespaces)}
        rows = await self._d.rows("breaker_transitions", params)
        return [
            Transition(
                r["handler"],
                r["breaker_key"],
                BreakerState(r["from_state"]),
                BreakerState(r["to_state"]),
                r["at_micros"],
                r["cause"],
            )
            for r in rows
        ]

    async def reset_breaker(self, handler: str, key: str, now: datetime | None) -> BreakerRow:
        """Close a breaker by hand (recorded as a transition with that cause)."""

        async def reset(session: Session) -> BreakerRow:
            rows = await session.rows("breakers_locked", {"handlers": [handler]})
            found = {r["breaker_key"]: _row(r) for r in rows}
            if key not in found:
                raise InvalidArgument("breaker", f"{handler}:{key}", "an existing breaker")
            row = found[key]
            cause = "reset by an operator"
            closed = BreakerRow(handler, key, BreakerState.CLOSED, cause=cause)
            now_us = await _now(session)
            transition = Transition(handler, key, row.state, BreakerState.CLOSED, now_us, cause)
            await _save(session, [closed], [transition])
            await _announce(session, transition, None)
            return closed

        self._tripped.forget()
        return await self._d.in_transaction(now, reset)

    async def _breaker_view(self, session: Session, rules: dict[str, Breaker]) -> BreakerView:
        view = BreakerView(rules, await _now(session))
        rows = await session.rows("breakers_locked", {"handlers": sorted(rules)})
        view.rows = {(r["handler"], r["breaker_key"]): _row(r) for r in rows}
        return view

    async def _save_view(self, session: Session, view: BreakerView) -> None:
        await _save(session, [view.rows[i] for i in sorted(view.changed)], view.transitions)
