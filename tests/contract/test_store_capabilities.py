"""The capability flags are set once per store class and say what each dialect does,
so tests that branch on a flag (COPY, notifications) still check what they claim."""

from __future__ import annotations

from rota.store.port import Store

EXPECTED = {
    # dialect: (supports_notify, supports_copy, supports_handler_transactions)
    "sqlite": (False, False, False),
    "postgres": (True, True, True),
}


async def test_capabilities_are_class_attributes_matching_the_dialect(store: Store) -> None:
    flags = ("supports_notify", "supports_copy", "supports_handler_transactions")
    assert tuple(vars(type(store))[flag] for flag in flags) == EXPECTED[store.dialect]
