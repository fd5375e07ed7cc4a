"""Regenerate grafana/dashboards/*.json from the dashboards as code (grafana-foundation-sdk).

    .venv/bin/python grafana/build.py           # write the JSON
    .venv/bin/python grafana/build.py --check   # exit 1 when the committed JSON is stale

Never edit the JSON by hand: change host.py / fleet.py and run this.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet import fleet_dashboard
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from host import host_dashboard

OUT = Path(__file__).resolve().parent / "dashboards"


def render() -> dict[str, str]:
    """File name -> the dashboard's JSON text."""
    boards = {"inferwatch-host.json": host_dashboard(), "inferwatch-fleet.json": fleet_dashboard()}
    out = {}
    for name, board in boards.items():
        model = board.build()
        for number, panel in enumerate(model.panels or [], start=1):
            panel.id_val = number  # unique ids, rows included (Grafana links panels by id)
        out[name] = json.dumps(model, cls=JSONEncoder, indent=2, sort_keys=True) + "\n"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    stale = []
    for name, text in render().items():
        path = OUT / name
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"stale: {', '.join(stale)}; run .venv/bin/python grafana/build.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
