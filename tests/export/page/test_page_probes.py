"""The status page's services and downloads, from /api/v1/status's documents."""

from __future__ import annotations

from inferwatch.export.page.probes import download_view, probe_views, service_view
from inferwatch.export.page.render import render_main
from inferwatch.export.page.view import PageInputs, build_view

SERVICE = {"name": "flashnext", "engine": "main", "state": "down", "since": 1_800_000_000.0,
           "failed_check": "http", "reason": "HTTP 503", "startup_overdue": False}  # fmt: skip
DOWNLOAD = {"name": "nvfp4", "state": "failed", "bytes": 3 * 2**30, "expected_bytes": 135e9,
            "rate_bytes_per_second": {"1m": 0, "10m": 1e6}, "partial_files": 2,
            "verdict_at": 1_800_000_100.0, "reason": "partial files left",
            "error": "PermissionError: [Errno 13] Permission denied", "owner": "root"}  # fmt: skip


def test_a_down_service_names_its_failed_check() -> None:
    row = service_view(SERVICE)
    assert (row.kind, row.name, row.state, row.ok) == ("service", "flashnext", "down", False)
    assert row.detail == "engine main; failed: http; HTTP 503"
    assert row.since == "2027-01-15 08:00:00 UTC"


def test_a_failed_download_says_why_and_whose_files() -> None:
    row = download_view(DOWNLOAD)
    assert row.state == "failed" and not row.ok
    assert row.detail.startswith("3.0 GiB of 125.7 GiB; 2 partial; partial files left")
    assert "Errno 13" in row.detail and row.detail.endswith("owned by root")


def test_the_page_shows_them_escaped_and_says_so_when_there_are_none() -> None:
    status = {"services": [{**SERVICE, "reason": "<script>x</script>"}], "downloads": [DOWNLOAD]}
    html = render_main(build_view(PageInputs(now=1_800_000_200.0, status=status)))
    assert "flashnext" in html and "nvfp4" in html
    assert "<script>x</script>" not in html and "&lt;script&gt;" in html
    empty = render_main(build_view(PageInputs(now=1_800_000_200.0)))
    assert "No download or service probe is configured." in empty
    assert probe_views({"services": ["junk"], "downloads": None}) == []
