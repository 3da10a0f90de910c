"""The capability flags are set once, from the dialect, when a store is made, and say
what each dialect does, so tests that branch on a flag (COPY, notifications) still
check what they claim."""

from __future__ import annotations

from rota.store.port import Store

EXPECTED = {
    # dialect: (supports_notify, supports_copy, supports_handler_transactions)
    "sqlite": (False, False, False),
    "postgres": (True, True, True),
}


FLAGS = ("supports_notify", "supports_copy", "supports_handler_transactions")


async def test_capabilities_match_the_dialect(store: Store) -> None:
    assert tuple(getattr(store, flag) for flag in FLAGS) == EXPECTED[store.dialect]


async def test_capabilities_are_the_dialects_own_set_once(store: Store) -> None:
    dialect = store._d  # type: ignore[attr-defined]
    assert tuple(vars(type(dialect))[flag] for flag in FLAGS) == EXPECTED[store.dialect]
