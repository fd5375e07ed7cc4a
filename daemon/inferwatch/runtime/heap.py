"""Keep the cyclic garbage collector off what a running daemon loaded once.

A started daemon holds ~100,000 container objects it keeps for its whole life: modules, the
config, the compiled rules, the sources. Python's full collection walks every one of them, about
60 ms on the development machine, with the event loop stalled: an Xid arriving then is paged
that much later (the p99 of bench/notify_latency.py). After :func:`settle`, collections walk only
what was made since; reference counting still frees settled objects that are dropped (only a
reference cycle among them waits, until :func:`resettle`). A reload replaces the config and the
rules, so it collects once and settles again.

Start-up itself makes those objects and little else: :func:`hold` keeps the collector from
walking them while they are made (two full collections, ~100 ms of a start on the development
machine, found ~3,300 unreachable objects), and :func:`settle` lets it run again. The few cycles
start-up dropped are settled with the rest and freed by the first reload's collection.
"""

from __future__ import annotations

import gc


def hold() -> None:
    """No automatic collection until :func:`settle` (a daemon's start-up)."""
    gc.disable()


def settle() -> None:
    """Everything alive now is kept out of the cyclic collector's walks, which run again
    (after :func:`hold`) over what is made from now on."""
    gc.freeze()
    gc.enable()


def resettle() -> None:
    """Collect what a reload dropped, settled objects included, and settle what remains."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
