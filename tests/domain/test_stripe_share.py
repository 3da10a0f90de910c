"""How many key stripes a key-only claim asks for (domain.limits.StripeShare): pure."""

from __future__ import annotations

from rota.domain.limits import KEY_STRIPES, SHARE_HOLD_SECONDS, SHARE_PROBE_EVERY, StripeShare

HALF = KEY_STRIPES // 2


def test_a_lone_claimer_asks_for_every_stripe() -> None:
    share = StripeShare()
    for now in range(5):
        assert share.ask(now) == KEY_STRIPES
        share.saw(KEY_STRIPES, KEY_STRIPES, now)
    assert share.ask(5.0) == KEY_STRIPES


def test_finding_stripes_held_shares_half_until_a_probe_finds_them_all() -> None:
    share = StripeShare()
    share.saw(KEY_STRIPES, 3, 0.0)  # another claimer held most
    asks = []
    for i in range(SHARE_PROBE_EVERY):
        asks.append(share.ask(0.01 * i))
        share.saw(asks[-1], asks[-1], 0.01 * i)  # got the half it asked for
    assert asks == [HALF] * SHARE_PROBE_EVERY
    assert share.ask(0.1) == KEY_STRIPES  # the probe
    share.saw(KEY_STRIPES, HALF, 0.1)  # the other is still there
    assert share.ask(0.11) == HALF
    share.saw(HALF, HALF, 0.11)
    assert share.ask(0.12) == HALF


def test_a_probe_that_gets_every_stripe_stops_sharing() -> None:
    share = StripeShare()
    share.saw(KEY_STRIPES, 1, 0.0)  # waited for one stripe
    for i in range(SHARE_PROBE_EVERY):
        share.saw(HALF, HALF, 0.01 * i)
    assert share.ask(0.2) == KEY_STRIPES
    share.saw(KEY_STRIPES, KEY_STRIPES, 0.2)
    assert share.ask(0.21) == KEY_STRIPES


def test_sharing_ends_a_while_after_the_other_was_last_seen() -> None:
    share = StripeShare()
    share.saw(KEY_STRIPES, HALF, 10.0)
    assert share.ask(10.0 + SHARE_HOLD_SECONDS) == HALF
    assert share.ask(10.0 + SHARE_HOLD_SECONDS + 0.01) == KEY_STRIPES


def test_a_short_half_counts_as_seeing_the_other() -> None:
    share = StripeShare()
    share.saw(KEY_STRIPES, HALF, 0.0)
    for i in range(SHARE_PROBE_EVERY - 1):
        share.saw(HALF, HALF, 0.01 * i)
    share.saw(HALF, 2, 0.5)  # more than half held: the probe count starts again
    assert share.ask(0.51) == HALF
