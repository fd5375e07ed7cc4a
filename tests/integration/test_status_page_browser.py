"""The status page in a real browser (Debian's chromium, driven by Playwright without any browser
download): a running ``inferwatch demo`` shows its alerts, engines and sources, refreshes itself,
fits a phone's screen, and the page asks nothing of any host but the daemon itself."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from conftest import IN_CI, free_port, require_tool, wait_until

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # a dev extra: the test says so instead of failing to import
    sync_playwright = None

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "deploy" / "screenshots"
CHROMIUM = "/usr/bin/chromium"


def playwright_api():  # type: ignore[no-untyped-def]
    if sync_playwright is None:
        if IN_CI:
            pytest.fail("playwright is not installed (pip install -e '.[dev]')")
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    return sync_playwright


class Guard:
    """Every request the page makes: those to anywhere but ``allowed`` are refused and kept."""

    def __init__(self, allowed: set[str]) -> None:
        self.allowed = allowed
        self.seen: list[str] = []
        self.refused: list[str] = []

    def route(self, route, request) -> None:  # type: ignore[no-untyped-def]
        self.seen.append(request.url)
        parts = urlsplit(request.url)
        where = parts.netloc if parts.scheme in ("http", "https", "ws", "wss") else parts.scheme
        if where in self.allowed or parts.scheme in ("data", "about"):
            route.continue_()
        else:
            self.refused.append(request.url)
            route.abort()


@pytest.fixture
def demo() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "inferwatch",
            "demo",
            "--listen",
            f"127.0.0.1:{port}",
            "--duration",
            "240",
            "--log-level",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _get(url: str) -> httpx.Response | None:
    try:
        return httpx.get(url, timeout=5, trust_env=False)
    except httpx.HTTPError:
        return None


def _firing(base: str, name: str = "EngineCrashed") -> bool:
    r = _get(f"{base}/api/v1/alerts")
    return r is not None and any(
        a["state"] == "firing" and a["labels"].get("alertname") == name for a in r.json()["alerts"]
    )


def _decoding(base: str) -> bool:
    q = "inferwatch_engine_decode_tokens_per_second > 0"
    r = _get(f"{base}/api/v1/query?query={q}")
    return r is not None and bool(r.json()["data"]["result"])


def test_status_page_shows_the_demo_and_asks_only_the_daemon(demo: str, tmp_path: Path) -> None:
    require_tool(CHROMIUM)
    sync_playwright = playwright_api()
    wait_until(
        lambda: _firing(demo) and _decoding(demo), 90, "the demo's crash alert and decode data"
    )
    silence = {
        "matchers": [{"name": "alertname", "value": "EngineCrashed", "isRegex": False}],
        "startsAt": "2026-01-01T00:00:00Z",
        "endsAt": "2099-01-01T00:00:00Z",
        "createdBy": "ops",
        "comment": "engine upgrade <b>tonight</b>",
    }
    assert httpx.post(f"{demo}/api/v1/silences", json=silence, trust_env=False).status_code == 200
    guard = Guard({urlsplit(demo).netloc})
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.route("**/*", guard.route)
            page.goto(f"{demo}/", wait_until="load")
            alerts = page.locator("#alerts").inner_text()
            assert "EngineCrashed" in alerts and "CUDA illegal memory access" in alerts
            engines = page.locator("#engines")
            assert "demo" in engines.inner_text()
            decode = engines.locator('[data-metric="decode"] .v').first.inner_text()
            assert float(decode) >= 0  # a number (the demo idles between phases)
            assert engines.locator("svg.spark polyline").count() == 3  # decode, MAL, step rate
            assert "engine:demo" in page.locator("#sources").inner_text()
            silences = page.locator("#silences").inner_text()
            assert "<b>tonight</b>" in silences  # text, not markup
            assert "mutes: EngineCrashed engine=demo" in silences
            assert 'silenced by: {alertname="EngineCrashed"}' in alerts
            assert "GPU 0" in page.locator("#gpus").inner_text()
            probes = page.locator("#downloads").inner_text()
            assert "demo-api" in probes and "demo-model" in probes  # the service, the download
            first = page.locator(".updated").inner_text()
            page.evaluate("window.scrollTo(0, 300)")
            page.wait_for_function(
                f"document.querySelector('.updated').innerText !== {first!r}", timeout=15000
            )  # refreshed in place, scrolling kept
            assert page.evaluate("window.scrollY") == 300
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(tmp_path / "status-page.png"), full_page=True)

            phone = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True)
            phone.route("**/*", guard.route)
            phone.goto(f"{demo}/", wait_until="load")
            assert "EngineCrashed" in phone.locator("#alerts").inner_text()
            width = phone.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, f"the page is {width} px wide on a 390-px phone"
            phone.screenshot(path=str(tmp_path / "status-page-phone.png"), full_page=False)
        finally:
            browser.close()
    assert guard.seen, "the route guard saw no request"
    assert guard.refused == [], f"requests left the daemon: {guard.refused}"
    if os.environ.get("INFERWATCH_SCREENSHOTS") == "1":  # to refresh the README's pictures
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        for name in ("status-page.png", "status-page-phone.png"):
            (SCREENSHOTS / name).write_bytes((tmp_path / name).read_bytes())


def test_replay_report_opens_from_disk_and_asks_nothing(tmp_path: Path) -> None:
    require_tool(CHROMIUM)
    sync_playwright = playwright_api()
    report = tmp_path / "report.html"
    result = subprocess.run(
        [
            sys.executable, "-m", "inferwatch", "replay",
            "--engine-log", str(REPO / "tests/fixtures/engine/constructed_stack_regression.log"),
            "--kernel", str(REPO / "tests/fixtures/signal/kernel-xid31-all-ranks-openmm.log"),
            "--boot-time", "2026-05-08T15:00:00Z",
            "--report", str(report),
        ],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    guard = Guard({"file"})  # the report itself, from disk: nothing else
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.route("**/*", guard.route)
            page.goto(report.as_uri(), wait_until="load")
            assert "stack regression" in page.locator("#summary").inner_text()
            assert "GpuMmuFaultOnAllRanks" in page.locator("#alerts").inner_text()
            engines = page.locator("#engines")
            assert engines.locator("svg.chart polyline").count() == 3  # decode, MAL, step rate
            assert engines.locator("svg.chart rect.busy").count() == 6  # 2 busy periods each
            assert "software-oob-all-ranks" in page.locator("#incidents").inner_text()
            page.screenshot(path=str(tmp_path / "replay-report.png"), full_page=True)
        finally:
            browser.close()
    assert guard.seen and all(u.startswith("file://") for u in guard.seen)
    assert guard.refused == [], f"the report asked for: {guard.refused}"
    if os.environ.get("INFERWATCH_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        (SCREENSHOTS / "replay-report.png").write_bytes(
            (tmp_path / "replay-report.png").read_bytes()
        )
