"""Write a synthetic `dmesg`-style kernel log for the kernel replay benchmark.

99 % ordinary kernel lines, 1 % NVRM/AER/OOM lines shaped like the corpus's captured lines
(tests/fixtures/corpus/xid-lines.jsonl). Deterministic for a given seed.

usage: python bench/gen_kernel_log.py OUT [LINES] [SEED]
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ORDINARY = (
    "usb 1-1.{n}: new high-speed USB device number {n} using xhci_hcd",
    "EXT4-fs (nvme0n1p{n}): mounted filesystem with ordered data mode. Quota mode: none.",
    'audit: type=1400 audit({t}:{n}): apparmor="STATUS" operation="profile_load"',
    "IPv6: ADDRCONF(NETDEV_CHANGE): enp{n}s0: link becomes ready",
    "perf: interrupt took too long ({n} > 2500), lowering kernel.perf_event_max_sample_rate",
    "docker0: port {n}(veth{n}a1b2) entered forwarding state",
    "nvme nvme0: {n}/0/0 default/read/poll queues",
    "systemd[1]: Started Session {n} of User root.",
    "TCP: request_sock_TCP: Possible SYN flooding on port {n}. Sending cookies.",
    "br-{n}: port 2(veth{n}) entered disabled state",
)


def gpu_lines(corpus: Path) -> list[str]:
    out = []
    for raw in corpus.read_text(encoding="utf-8").splitlines():
        line = json.loads(raw)["line"]
        body = line[line.find("NVRM") :] if "NVRM" in line else None
        if body and json.loads(raw)["expect"].get("xid") is not None:
            out.append(body)
    return out


def main() -> None:
    out = Path(sys.argv[1])
    lines = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)  # noqa: S311 - test data
    corpus = Path(__file__).parents[1] / "tests" / "fixtures" / "corpus" / "xid-lines.jsonl"
    special = [
        *gpu_lines(corpus),
        "pcieport 0000:00:01.0: AER: Corrected error received: 0000:03:00.0",
        "Out of memory: Killed process 4242 (python3) total-vm:81234567kB, anon-rss:60123456kB, "
        "file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:123456kB oom_score_adj:0",
    ]
    t = 10.0
    with out.open("w", encoding="utf-8") as fh:
        for i in range(lines):
            t += rng.expovariate(20.0)
            if i % 100 == 50:
                text = rng.choice(special)
            else:
                text = rng.choice(ORDINARY).format(n=rng.randrange(1, 99), t=int(t))
            fh.write(f"[{t:12.6f}] {text}\n")


if __name__ == "__main__":
    main()
