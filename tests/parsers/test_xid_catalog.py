"""The Xid catalog holds every code of reference/xid.md section 8, and lookups never fail."""

from __future__ import annotations

from typing import get_args

import pytest

from inferwatch.parsers.xid_catalog import (
    CATALOG,
    RECOVERY_ACTIONS,
    Category,
    lookup,
    recovery_action,
    severity_of,
)

# code: (category, default severity, NVIDIA immediate action), from xid.md section 8.
DOCUMENTED = {
    13: ("application", "warning", "RESTART_APP"),
    31: ("application", "warning", "RESTART_APP"),
    32: ("hardware-bus", "warning", "RESTART_APP"),
    38: ("driver", "warning", "IGNORE"),
    43: ("application", "warning", "IGNORE"),
    45: ("informational", "info", "WORKFLOW_XID_45"),
    48: ("hardware-memory", "critical", "WORKFLOW_XID_48"),
    61: ("driver", "critical", "CONTACT_SUPPORT"),
    62: ("hardware-other", "critical", "RESET_GPU"),
    63: ("hardware-memory", "warning", "IGNORE"),
    64: ("hardware-memory", "critical", "RESET_GPU"),
    68: ("application", "warning", "RESTART_APP"),
    69: ("driver", "warning", "RESTART_APP"),
    74: ("nvlink", "critical", "WORKFLOW_NVLINK_ERR"),
    79: ("hardware-bus", "critical", "RESTART_BM"),
    92: ("hardware-memory", "warning", "IGNORE"),
    94: ("hardware-memory", "warning", "RESTART_APP"),
    95: ("hardware-memory", "critical", "RESET_GPU"),
    109: ("driver", "critical", "RESET_GPU"),
    119: ("driver", "critical", "RESET_GPU"),
    120: ("driver", "critical", "RESET_GPU"),
    121: ("nvlink", "warning", "IGNORE"),
    137: ("nvlink", "warning", "IGNORE"),
    140: ("hardware-memory", "critical", "RESET_GPU"),
    143: ("hardware-other", "critical", "RESET_GPU"),
    **dict.fromkeys(range(144, 151), ("nvlink", "warning", "WORKFLOW_NVLINK5_ERR")),
    154: ("informational", "info", "XID_154"),
    171: ("hardware-memory", "critical", None),
    172: ("hardware-memory", "critical", None),
}


@pytest.mark.parametrize("code", sorted(DOCUMENTED))
def test_documented_codes(code: int) -> None:
    info = lookup(code)
    assert (info.category, info.severity, info.immediate) == DOCUMENTED[code]
    assert info.code == code and info.known
    assert info.mnemonic and info.meaning and info.action_text


def test_catalog_has_exactly_the_documented_codes() -> None:
    assert set(CATALOG) == set(DOCUMENTED)


def test_nvlink5_mnemonics_in_order() -> None:
    units = ["SAW", "RLW", "TLW", "TREX", "NVLPW_CTRL", "NETIR", "MSE"]
    assert [lookup(c).mnemonic for c in range(144, 151)] == [f"NVLINK_{u}_ERROR" for u in units]


def test_categories_are_from_the_fixed_vocabulary() -> None:
    allowed = set(get_args(Category))
    assert {info.category for info in CATALOG.values()} <= allowed
    assert "thermal-power" in allowed and "unknown" in allowed


@pytest.mark.parametrize("code", [14, 999, 0, -1, 10**12])
def test_unknown_codes_get_an_unknown_entry(code: int) -> None:
    info = lookup(code)
    assert (info.code, info.category, info.severity, info.known) == (code, "unknown", "warning",
                                                                    False)  # fmt: skip
    assert str(code) in info.meaning


def test_severity_from_the_line() -> None:
    assert severity_of(149, fatal=True) == "critical"
    assert severity_of(145, fatal=False) == "warning"
    assert severity_of(145) == "warning"
    assert severity_of(154, recovery_to=1) == "critical"
    assert severity_of(154, recovery_to=0) == "info"
    assert severity_of(79, fatal=False) == "critical"  # fixed severity ignores the line
    assert severity_of(14) == "warning"


def test_recovery_actions() -> None:
    assert sorted(RECOVERY_ACTIONS) == list(range(8))
    blocking = {value for value, info in RECOVERY_ACTIONS.items() if info.blocks_gpu}
    assert blocking == {1, 2, 4, 6, 7}
    assert recovery_action(2).name == "NODE_REBOOT"
    assert recovery_action(42).blocks_gpu
