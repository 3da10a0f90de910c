"""schemathesis over /openapi.json: generated requests for every operation, every answer
checked against the document (status codes, problem content types, response schemas)
and never a server error. Example counts are kept modest so this runs in CI."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from rota.api.auth import mint_token
from rota.asgi import create_api

from .conftest import ADMIN, api_settings, make_rota_app

# date-time values include the edges of the calendar and of rota's instant range (see
# rota.domain.values), not only ordinary instants: those found 500s before (issue 8).
# tests/api/test_fuzz_edges.py drives every edge explicitly, on both stores.
_EDGE_INSTANTS = [
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-01:00",
    "9999-12-31T23:59:59.999999Z",
    "1969-12-31T23:59:59Z",
    "1970-01-01T00:00:00Z",
    "8999-12-31T23:59:59+14:00",
    "9000-01-01T00:00:00Z",
]
schemathesis.openapi.format(
    "date-time",
    st.one_of(
        st.sampled_from(_EDGE_INSTANTS),
        st.datetimes(timezones=st.just(UTC)).map(lambda instant: instant.isoformat()),
    ),
)

# Built at import: schemathesis collects one test per operation from the document.
_DB = Path(tempfile.mkdtemp(prefix="rota-schemathesis-")) / "rota.db"
ROTA_APP = make_rota_app(f"sqlite:///{_DB}")
API = create_api(ROTA_APP, api_settings(failed_auth_burst=100_000))
schema = schemathesis.openapi.from_asgi("/openapi.json", API)
# Unknown query parameters are refused (422, tested in test_resources), but schemathesis
# may "add" one the HTTP client then drops (a None value), and report our 200 as
# accepting bad input. Generated requests keep to declared parameters.
schema.config.generation.update(allow_extra_parameters=False)
ADMIN_TOKEN = mint_token(
    api_settings(), "schemathesis", datetime.now(UTC), scopes=ADMIN, ttl_seconds=6 * 3600
)


@schema.parametrize()
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_api_conforms_to_its_openapi(case: schemathesis.Case) -> None:
    # A schema cannot say which cron expressions parse, which time zones exist, what each
    # handler's payload is or which cursors we issued: a schema-valid request can rightly
    # be 422/400 (the bad-input rules demand it), so positive_data_acceptance is off.
    excluded = [schemathesis.checks.positive_data_acceptance]
    if case.method in ("GET", "DELETE"):
        # A "negative" query value such as ["true"] is sent as handler=true, the very
        # same bytes as the valid string: no server can tell them apart (a DELETE whose
        # target is in its query, as /events/subscriptions, too). Query validation is
        # tested directly in test_resources; bodies keep this check.
        excluded.append(schemathesis.checks.negative_data_rejection)
    case.call_and_validate(
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, excluded_checks=excluded
    )
