"""Forged, stale and misdirected tokens are all 401, with a problem body saying why."""

from __future__ import annotations

import base64
import json
import time
import warnings
from typing import Any

import httpx
import jwt
import pytest

import rota
from rota.asgi import create_api

from .conftest import SIGNING_KEY, api_settings, serving

NOW = int(time.time())
GOOD: dict[str, Any] = {
    "iss": "rota",
    "aud": "rota-api",
    "sub": "mallory",
    "iat": NOW,
    "exp": NOW + 600,
    "scope": "jobs:read",
    "namespaces": ["*"],
}


@pytest.fixture(autouse=True)
def _claims_dated_now() -> None:
    """Date the claims when each test runs, not at import: a busy machine may reach
    this module more than the token's 10 minutes after the suite was collected."""
    global NOW
    NOW = int(time.time())
    GOOD.update(iat=NOW, exp=NOW + 600)


def signed(claims: dict[str, Any], key: str = SIGNING_KEY, algorithm: str = "HS256") -> str:
    with warnings.catch_warnings():
        # HS512 with our 44-byte key is the point of one attack: PyJWT warns about it.
        warnings.simplefilter("ignore", jwt.warnings.InsecureKeyLengthWarning)
        return jwt.encode(claims, key, algorithm=algorithm)


def unsigned(claims: dict[str, Any]) -> str:
    """alg=none: a header and payload with an empty signature."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


def tampered_scope() -> str:
    """A genuine read-only token whose payload was edited to claim admin."""
    header, _, signature = signed(GOOD).split(".")
    forged = {**GOOD, "scope": "jobs:read jobs:admin"}
    payload = base64.urlsafe_b64encode(json.dumps(forged).encode()).decode().rstrip("=")
    return f"{header}.{payload}.{signature}"


def without(claim: str) -> dict[str, Any]:
    return {k: v for k, v in GOOD.items() if k != claim}


ATTACKS = {
    "alg none": lambda: unsigned(GOOD),
    "alg none, no dot": lambda: unsigned(GOOD).rstrip("."),
    "wrong key": lambda: signed(GOOD, key="another-signing-key-0123456789abcdef-xyz"),
    "HS512 with the right key": lambda: signed(GOOD, algorithm="HS512"),
    "expired": lambda: signed({**GOOD, "iat": NOW - 7200, "exp": NOW - 3600}),
    "expired past the leeway": lambda: signed({**GOOD, "exp": NOW - 31}),
    "not yet valid (nbf)": lambda: signed({**GOOD, "nbf": NOW + 3600}),
    "issued in the future (iat)": lambda: signed({**GOOD, "iat": NOW + 3600}),
    "wrong audience": lambda: signed({**GOOD, "aud": "someone-else"}),
    "audience list": lambda: signed({**GOOD, "aud": ["rota-api", "other"]}),
    "wrong issuer": lambda: signed({**GOOD, "iss": "evil"}),
    "tampered scope": tampered_scope,
    "no exp": lambda: signed(without("exp")),
    "no iat": lambda: signed(without("iat")),
    "no aud": lambda: signed(without("aud")),
    "no iss": lambda: signed(without("iss")),
    "no sub": lambda: signed(without("sub")),
    "unknown scope": lambda: signed({**GOOD, "scope": "jobs:everything"}),
    "namespaces not a list": lambda: signed({**GOOD, "namespaces": "*"}),
    "empty sub": lambda: signed({**GOOD, "sub": ""}),
    "blank sub": lambda: signed({**GOOD, "sub": "   "}),
    "exp in the year 9999": lambda: signed({**GOOD, "exp": 253402300799}),
    "lifetime a second over the 24 h cap": lambda: signed({**GOOD, "exp": NOW + 24 * 3600 + 1}),
    "garbage": lambda: "not-a-token",
    "API-key shaped garbage": lambda: "rota_0123456789abcdef_" + "A" * 43,
}


@pytest.mark.parametrize("attack", list(ATTACKS))
async def test_attack_is_401(attack: str, client: httpx.AsyncClient) -> None:
    token = ATTACKS[attack]()
    response = await client.get("/api/v1/jobs", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 401, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["www-authenticate"].startswith('Bearer realm="rota"')
    assert response.json()["status"] == 401


async def test_the_untampered_token_works(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/v1/jobs", headers={"Authorization": f"Bearer {signed(GOOD)}"})
    assert response.status_code == 200, response.text


async def test_expiry_within_the_leeway_is_accepted(client: httpx.AsyncClient) -> None:
    now = int(time.time())
    token = signed({**GOOD, "iat": now - 60, "exp": now - 5})  # leeway is 10 s
    response = await client.get("/api/v1/jobs", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text


async def test_other_schemes_are_401(client: httpx.AsyncClient) -> None:
    for value in (f"Basic {signed(GOOD)}", signed(GOOD), "Bearer", "Bearer "):
        response = await client.get("/api/v1/jobs", headers={"Authorization": value})
        assert response.status_code == 401, value


async def test_a_lifetime_of_exactly_the_cap_is_accepted(client: httpx.AsyncClient) -> None:
    token = signed({**GOOD, "exp": NOW + 24 * 3600})
    response = await client.get("/api/v1/jobs", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text


async def test_the_lifetime_cap_is_configurable(rota_app: rota.App) -> None:
    api = create_api(
        rota_app, api_settings(max_token_lifetime_seconds=600, dev_token_ttl_seconds=600)
    )
    async with serving(api) as client:
        for lifetime, status in ((600, 200), (601, 401)):
            token = signed({**GOOD, "exp": NOW + lifetime})
            answer = await client.get("/api/v1/jobs", headers={"Authorization": f"Bearer {token}"})
            assert answer.status_code == status, answer.text
    assert "at most 600 s" in answer.json()["detail"]
