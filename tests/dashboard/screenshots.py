"""`make screenshots`: a seeded demo database behind a real `rota server`, and a
screenshot of each dashboard page (Debian's chromium, 1280x800) into docs/dashboard/.

    .venv/bin/python -m tests.dashboard.screenshots docs/dashboard
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

from tests.helpers import wait_until

from .browser import CHROMIUM, CHROMIUM_ARGS, Server, rota_server


def seed(server: Server) -> dict[str, int]:
    """Jobs on a schedule across a DST change, finished, failed, dead and running runs."""
    for name, cron, zone in (
        ("nightly-report", "30 1 * * *", "Europe/London"),
        ("hourly-sync", "0 * * * *", "UTC"),
        ("monthly-invoices", "0 9 1 * *", "Europe/London"),  # its next fires cross DST
        ("heartbeat", "*/2 * * * * *", "UTC"),  # fires while the demo is seeded: a strip
    ):
        created = server.api(
            "POST",
            "/api/v1/jobs",
            json={"name": name, "handler": "quick", "cron": cron, "timezone": zone},
        )
        assert created.status_code == 201, created.text
    quick = [server.enqueue("quick", f"export-{i}") for i in range(12)]
    dead = [server.enqueue("boom", f"sync-crm-{i}") for i in range(3)]
    running = server.enqueue("long", "rebuild-index")
    wait_until(lambda: all(server.run_state(r) == "succeeded" for r in quick), timeout=60)
    wait_until(lambda: all(server.run_state(r) == "dead_lettered" for r in dead), timeout=60)
    wait_until(lambda: server.run_state(running) == "running", timeout=60)
    done_flow = server.start_workflow("nightly-etl", {"extract_seconds": 0})
    # A second run still extracting: its graph shows a step at work and steps waiting.
    busy_flow = server.start_workflow("nightly-etl", {"extract_seconds": 600})
    wait_until(lambda: _workflow_state(server, done_flow) == "succeeded", timeout=60)
    wait_until(lambda: _finished_slots(server, "heartbeat") >= 6, timeout=60)
    server.api("POST", "/api/v1/queues/reports/pause")  # the Queues page shows a pause
    # The charts read the leader's rollup of settled minutes: a minute or two behind.
    wait_until(lambda: _charted(server) > 0, timeout=180)
    return {"dead": dead[0], "running": running, "workflow": busy_flow}


def _charted(server: Server) -> int:
    answer = server.api("GET", "/api/v1/stats/series?range=1h&by=handler").json()
    return sum(series["finished"] for series in answer["series"])


def _finished_slots(server: Server, job: str) -> int:
    starts = server.api("GET", f"/api/v1/jobs/{job}").json()["recent_starts"]
    return sum(1 for start in starts if start["outcome"] == "succeeded")


def _workflow_state(server: Server, workflow_run_id: int) -> str:
    answer = server.api("GET", f"/api/v1/workflow-runs/{workflow_run_id}")
    return str(answer.json()["state"])


def shoot(page: Page, path: str, target: Path) -> None:
    page.goto(path)
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(target), full_page=True)
    print(f"  {target}")


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory() as tmp,
        rota_server(f"sqlite:///{tmp}/demo.db", Path(tmp) / "server.log") as server,
    ):
        ids = seed(server)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            context = browser.new_context(
                base_url=server.url,
                viewport={"width": 1280, "height": 800},
                color_scheme="light",
                timezone_id="Europe/London",
                locale="en-GB",
            )
            page = context.new_page()
            shoot(page, "/signin", folder / "signin.png")
            page.get_by_label("Token or API key").fill(server.token())
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url("**/")
            for name, path in (
                ("overview", "/"),
                ("runs", "/runs"),
                ("run", f"/runs/{ids['dead']}"),
                ("charts", "/charts"),
                ("jobs", "/jobs"),
                ("queues", "/queues"),
                ("bulk-action", "/runs/bulk-action?action=replay&state=dead_lettered"),
                ("job", "/jobs/default/monthly-invoices"),
                ("dead-letters", "/dlq"),
                ("workers", "/workers"),
                ("limits", "/limits"),
                ("leader", "/leader"),
                ("workflows", "/workflows"),
                ("workflow", f"/workflows/{ids['workflow']}"),
                ("run-log", f"/runs/{ids['running']}"),
            ):
                shoot(page, path, folder / f"{name}.png")
            server.api("POST", f"/api/v1/runs/{ids['running']}/cancel")
            server.api("POST", f"/api/v1/workflow-runs/{ids['workflow']}/cancel")
            browser.close()


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/dashboard"))
