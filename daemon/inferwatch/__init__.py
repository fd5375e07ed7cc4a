"""inferwatch: watches a local LLM-inference GPU host and tells its owner what matters."""

from __future__ import annotations

__version__ = "0.1.0"
