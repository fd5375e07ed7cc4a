"""A webhook sink on 127.0.0.1 for integration tests: records every POSTed JSON body with the
time it arrived and answers 200."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from conftest import free_port


class Sink:
    def __init__(self) -> None:
        self.posts: list[tuple[float, dict[str, Any]]] = []
        self.port = free_port()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                sink.posts.append((time.time(), json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def alerts(self, name: str) -> list[tuple[float, dict[str, Any]]]:
        """Every alert named ``name`` in the posts, with its post's arrival time."""
        return [
            (t, a)
            for t, post in self.posts
            for a in post.get("alerts", [])
            if a["labels"].get("alertname") == name
        ]

    def alerts_for(self, bus: str) -> list[dict[str, Any]]:
        """Every alert about the GPU at ``bus``."""
        return [
            a
            for _, post in self.posts
            for a in post.get("alerts", [])
            if a["labels"].get("pci_bus_id") == bus
        ]


def running_sink() -> Iterator[Sink]:
    """The body of a pytest fixture: a started sink, shut down afterwards."""
    s = Sink()
    s.thread.start()
    try:
        yield s
    finally:
        s.server.shutdown()
