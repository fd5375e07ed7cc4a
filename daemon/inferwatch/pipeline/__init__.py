"""pipeline: the one package that wires sources, parsers, derivations and the store."""
