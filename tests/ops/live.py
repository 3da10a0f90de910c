"""A live `rota server`'s /metrics, for the tests that read it as Prometheus would."""

from __future__ import annotations

import httpx

from tests.helpers import wait_until


def metrics_reader(url: str) -> dict[str, str]:
    """Headers with a development token that holds metrics:read."""
    token = httpx.post(f"{url}/dev/token", json={"scopes": ["metrics:read"]}, timeout=5)
    return {"Authorization": f"Bearer {token.json()['access_token']}"}


def scrape_once_published(url: str) -> str:
    """The server's /metrics once its embedded leader has published the cluster gauges
    (within moments of starting)."""
    headers = metrics_reader(url)

    def scraped() -> str:
        text = httpx.get(f"{url}/metrics", headers=headers, timeout=5).text
        return text if "rota_workers{" in text else ""

    return wait_until(scraped, timeout=30, what="the leader's cluster gauges")
