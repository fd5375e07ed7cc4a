"""Whether the HTTP server can be reached from off the host, and the warning when it can.

The API has no authentication yet: on loopback only the host's own users reach it; on any other
address anyone who can route to the port can read the status and add silences that mute every
alert. That is allowed (a fleet's Prometheus may scrape over the network) but never silently.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable


def is_loopback(address: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``; anything else (a wildcard, a name that
    resolves elsewhere) may be reachable from outside."""
    host = address.strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


def exposure_problem(addresses: Iterable[str]) -> str | None:
    """The warning for the status API's problems list, or None when every address is loopback."""
    exposed = sorted({a for a in addresses if not is_loopback(a)})
    if not exposed:
        return None
    return (
        f"the HTTP API listens on {', '.join(exposed)} (not loopback) without authentication: "
        "anyone who can reach the port can read the status and add or expire silences; "
        "listen on 127.0.0.1 or put an authenticating proxy or firewall in front"
    )


__all__ = ["exposure_problem", "is_loopback"]
