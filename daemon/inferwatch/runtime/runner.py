"""Running the daemon's event loop with a bounded exit.

``asyncio.run`` cancels every task left when the main coroutine returns and then waits for them
without a limit; a task waiting on a worker thread that is stuck (a slow fsync under load, a
wedged driver call) would keep a SIGTERM'd daemon alive well past systemd's stop timeout. Here the
leftovers get ``grace`` seconds, then the loop is closed anyway (a thread cannot be killed; the
process exits and takes it along).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from inferwatch.logsetup import get_logger

T = TypeVar("T")
log = get_logger(__name__)


def run_bounded(main: Coroutine[Any, Any, T], grace: float = 1.0) -> T:
    loop = asyncio.new_event_loop()
    try:
        asyncio.set_event_loop(loop)
        result = loop.run_until_complete(main)
        left = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in left:
            task.cancel()
        if left:
            _done, stuck = loop.run_until_complete(asyncio.wait(left, timeout=grace))
            if stuck:
                log.warning(
                    "exiting with tasks still waiting", tasks=sorted(t.get_name() for t in stuck)
                )
        loop.run_until_complete(loop.shutdown_asyncgens())
        return result
    finally:
        asyncio.set_event_loop(None)
        loop.close()
