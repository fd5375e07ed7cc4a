"""GPU faults the NVIDIA driver logs without an Xid token (reference/xid.md; driver sources).

The lines come from the driver's own prints (open-gpu-kernel-modules): `RmInitAdapter failed!
(0x..:0x..:N)` with the bus id (osinit.c), GSP boot failures (`_kgspBootGspRm: unexpected WPR2
already up ...`, `RmInitAdapter: Cannot initialize GSP firmware RM`), GSP heartbeat timeouts
(`_kgspIsHeartbeatTimedOut: Heartbeat timed out ...`, `GSP RM heartbeat timed out`, `LibOS
heartbeat timed out`), GSP RPC timeouts (the `GSP Timeout` banner of `_kgspLogRpcTimeout` /
`_kgspLogXid119`, `Timeout after Ns of waiting for RPC response` printed without an Xid, a failed
RPC sanity check), falcon core dumps (`kflcnCoreDump*`, printed only while a GSP timeout or boot
failure is reported) and `Memory Subsystem Error detected` (the check behind Xid 175).

Newer drivers put the driver's own GPU number in front (`NVRM: GPU6 _kgspBootGspRm: ...`). That
number is the driver's instance, not the NVML index nor the device minor: it is kept as
`nvrm_gpu` and turned into a bus id only where the log itself pairs them (an Xid line saying
`... from GPU4 GSP!`). Pure functions, total on any string.
"""

from __future__ import annotations

import re

_NVRM_GPU = re.compile(r"^(?:NVRM: ?)?GPU(\d+) ")
_XID_NAMES_GPU = re.compile(r"\bfrom GPU(\d+) GSP\b")

# (needle, kind), first match wins; kinds in COUNTED are faults by themselves.
_FAULTS: tuple[tuple[str, str], ...] = (
    ("RmInitAdapter failed!", "init_failed"),
    ("Memory Subsystem Error detected", "memory_subsystem_error"),
    ("Heartbeat timed out", "gsp_heartbeat_timeout"),
    ("heartbeat timed out", "gsp_heartbeat_timeout"),
    ("GSP Timeout", "gsp_timeout_report"),
    ("_kgspLogXid119", "gsp_timeout_report"),
    ("unresponsive ===", "gsp_timeout_report"),
    ("GSP-RM is slow ===", "gsp_timeout_report"),
    ("waiting for RPC response", "gsp_rpc_timeout"),
    ("_kgspLogRpcTimeout", "gsp_rpc_timeout"),
    ("kflcnCoreDump", "gsp_core_dump"),
    ("_kgspBootGspRm", "gsp_boot_failed"),
    ("Cannot initialize GSP firmware", "gsp_boot_failed"),
)

COUNTED = frozenset(
    {"init_failed", "memory_subsystem_error", "gsp_heartbeat_timeout", "gsp_rpc_timeout",
     "gsp_core_dump"}
)  # fmt: skip
"""Kinds that are a fault on their own. Not counted: `gsp_boot_failed` (always followed by the
`RmInitAdapter failed!` line of the same GPU, which names its bus id) and `gsp_timeout_report`
(the banner the driver prints right before the Xid 119/175 line that reports the timeout)."""


def driver_fault_kind(body: str) -> str | None:
    """The kind of driver fault an NVRM message body reports, or None."""
    for needle, kind in _FAULTS:
        if needle in body:
            return kind
    return None


def nvrm_gpu(body: str) -> int | None:
    """The driver's GPU number in front of an NVRM message (`NVRM: GPU6 ...`), or None."""
    match = _NVRM_GPU.match(body)
    return int(match[1]) if match else None


def nvrm_gpu_of_xid(xid_message: str) -> int | None:
    """The driver's GPU number an Xid's text names for its own GPU (`... from GPU4 GSP!`)."""
    match = _XID_NAMES_GPU.search(xid_message)
    return int(match[1]) if match else None
