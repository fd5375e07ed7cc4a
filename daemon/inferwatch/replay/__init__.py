"""replay: the daemon's parsers, correlators and rules over recorded files, on a virtual clock."""
