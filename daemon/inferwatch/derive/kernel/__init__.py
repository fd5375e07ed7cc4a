"""Kernel-log derivations: Xid incidents, correlation, dedupe, repeats."""
