"""The systemd unit read from real ``/proc/PID/cgroup`` texts (sources: fixtures/proc/cgroup/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferwatch.sources.cgroup_unit import unit_from_cgroup

FIXTURES = Path(__file__).parent.parent / "fixtures" / "proc" / "cgroup"
DOCKER_ID = "b33dda97580e721a69fa81742190341f858ea809ec4a9d74a8cfd411b0ee7c26"

EXPECTED = {
    "v1-docker-scope.cgroup": f"docker-{DOCKER_ID}.scope",
    "v1-session-scope.cgroup": "session-1.scope",
    "hybrid-session-scope.cgroup": "session-1.scope",
    "v2-rootless-podman-scope.cgroup": "podman-6696.scope",
    "v2-docker-scope.cgroup": "docker-xxx.scope",
    "v2-user-run-scope.cgroup": "run-r42e6ac3d03ec49989f380cd3116efdeb.scope",
    "v2-user-app-service.cgroup": r"app-print\x2dapplet@autostart.service",
    "v2-service-deleted.cgroup": "flashnext.service",
    "v2-delegated-subgroup.cgroup": "flashnext.service",
    "container-root-only.cgroup": "",
}


def test_every_fixture_has_an_expectation_and_a_cited_source() -> None:
    files = {p.name for p in FIXTURES.glob("*.cgroup")}
    assert files == set(EXPECTED)
    sources = (FIXTURES / "SOURCES.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in sources for name in files)


@pytest.mark.parametrize(("name", "unit"), sorted(EXPECTED.items()))
def test_the_unit_of_each_real_cgroup_file(name: str, unit: str) -> None:
    assert unit_from_cgroup((FIXTURES / name).read_text(encoding="utf-8")) == unit


def test_the_systemd_line_wins_over_other_v1_controllers() -> None:
    """v1 controllers other than systemd's own may sit in another unit's cgroup."""
    text = "3:memory:/system.slice/other.service\n1:name=systemd:/system.slice/flashnext.service\n"
    assert unit_from_cgroup(text) == "flashnext.service"


def test_a_v2_line_at_the_root_falls_back_to_the_v1_systemd_line() -> None:
    """A hybrid host whose unified hierarchy is unused reads ``0::/``."""
    text = "1:name=systemd:/system.slice/flashnext.service\n0::/\n"
    assert unit_from_cgroup(text) == "flashnext.service"


def test_a_user_manager_names_the_innermost_unit_not_user_at_uid() -> None:
    text = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/nvfp4-download.service\n"
    assert unit_from_cgroup(text) == "nvfp4-download.service"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "0::/\n",
        "0::/user.slice/user-1000.slice\n",  # slices hold no processes of their own
        "0::/docker/52371e0edd63\n",  # a cgroupfs driver: no systemd unit
        "0::/system.slice/.service\n",  # no unit name before the type
        "garbage without colons\n",
        "1:name=systemd\n",
    ],
)
def test_no_unit(text: str) -> None:
    assert unit_from_cgroup(text) == ""
