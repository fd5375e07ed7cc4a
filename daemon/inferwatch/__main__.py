"""``python -m inferwatch``."""

from __future__ import annotations

import sys

from inferwatch.cli import main

sys.exit(main())
