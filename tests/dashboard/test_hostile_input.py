"""Defects 4 and 5 of issue 31: an over-large or malformed form, and a number written
with digits that are not ASCII ('²'), each answered 500 with a traceback. Now every form
goes through one reader (400/413) and every number through one parser (400/404)."""

from __future__ import annotations

import logging

import httpx
import pytest

from .conftest import SignedIn, csrf_of

UNICODE_DIGIT = "\u00b2"  # '²': str.isdigit() says yes, int() says no

NUMBER_PATHS = (
    f"/runs/{UNICODE_DIGIT}",
    f"/runs/{UNICODE_DIGIT}/logs",
    f"/runs/1/logs?after={UNICODE_DIGIT}",
    f"/workflows/{UNICODE_DIGIT}",
    f"/runs?before={UNICODE_DIGIT}",
    f"/dlq?before={UNICODE_DIGIT}",
    f"/runs?notice=cancelled-many&n={UNICODE_DIGIT}",
    f"/breakers?notice=cancelled-many&n={UNICODE_DIGIT}",
    f"/runs/{'9' * 5000}",
    f"/runs/1/logs?after={'9' * 5000}",
)


async def test_numbers_in_paths_and_queries_never_answer_500(
    signed_in: SignedIn, caplog: pytest.LogCaptureFixture
) -> None:
    client = await signed_in()
    caplog.set_level(logging.INFO)
    for path in NUMBER_PATHS:
        answer = await client.get(path)
        assert answer.status_code in (200, 400, 404), (path, answer.status_code)
    assert "Traceback" not in caplog.text


async def test_a_form_with_too_many_fields_answers_413_before_sign_in(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    body = "&".join(f"f{i}=x" for i in range(700))
    answer = await client.post(
        "/signin",
        content=body,
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert answer.status_code == 413, answer.text[:300]
    assert "too many fields" in answer.text
    assert "Traceback" not in caplog.text


async def test_a_bulk_form_with_too_many_fields_answers_413(
    signed_in: SignedIn, caplog: pytest.LogCaptureFixture
) -> None:
    client = await signed_in()
    csrf = csrf_of(await client.get("/runs"))
    caplog.set_level(logging.INFO)
    body = f"csrf={csrf}&" + "&".join(f"run_id={i}" for i in range(700))
    answer = await client.post(
        "/runs/bulk",
        content=body,
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert answer.status_code == 413, answer.text[:300]
    assert "Traceback" not in caplog.text


async def test_a_form_that_is_not_utf8_answers_400(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    answer = await client.post(
        "/signin",
        content=b"credential=\xff\xfe&next=/",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert answer.status_code == 400, answer.text[:300]
    assert "Traceback" not in caplog.text


async def test_a_token_with_non_ascii_characters_is_refused_not_a_500(
    signed_in: SignedIn, caplog: pytest.LogCaptureFixture
) -> None:
    """Found by the dashboard's fuzz test: hmac.compare_digest raises TypeError for a
    str with non-ASCII characters, so a CSRF or sign-in token of '²' answered 500."""
    client = await signed_in()
    caplog.set_level(logging.INFO)
    form = {"content-type": "application/x-www-form-urlencoded"}
    forged = await client.post("/runs/bulk", content="csrf=%C2%B2&run_id=1", headers=form)
    assert forged.status_code == 403
    signin = await client.post("/signin", content="signin_token=%C2%B2", headers=form)
    assert signin.status_code == 403
    assert "Traceback" not in caplog.text
