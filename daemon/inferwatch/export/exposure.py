"""Whether the HTTP server can be reached from off the host, and the warning when it can.

Without ``web.basic_auth_users``, on loopback only the host's own users reach the API; on any
other address anyone who can route to the port can read the status and add silences that mute
every alert. That is allowed (a fleet's Prometheus may scrape over the network) but never
silently: a warning, a status problem and the ``InferwatchHttpUnauthenticated`` alert (driven by
:data:`EXPOSED_METRIC`), all gone once auth is configured. Basic auth without TLS beyond
loopback is a problem too (passwords in clear), but no alert.
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


EXPOSED_METRIC = "inferwatch_http_exposed_without_auth"
EXPOSED_HELP = "1 while the HTTP API listens beyond loopback without basic_auth_users."


def exposure_problem(
    addresses: Iterable[str], *, authenticated: bool = False, encrypted: bool = False
) -> str | None:
    """The warning for the status API's problems list, or None when every address is loopback
    (or the server asks for passwords over TLS)."""
    exposed = sorted({a for a in addresses if not is_loopback(a)})
    if not exposed or (authenticated and encrypted):
        return None
    if authenticated:
        return (
            f"the HTTP API listens on {', '.join(exposed)} (not loopback) with basic auth but "
            "without TLS: passwords cross the network in clear text; set "
            "web.tls_server_config"
        )
    return (
        f"the HTTP API listens on {', '.join(exposed)} (not loopback) without authentication: "
        "anyone who can reach the port can read the status and add or expire silences; "
        "set web.basic_auth_users, listen on 127.0.0.1, or put an authenticating proxy or "
        "firewall in front"
    )


__all__ = ["EXPOSED_HELP", "EXPOSED_METRIC", "exposure_problem", "is_loopback"]
