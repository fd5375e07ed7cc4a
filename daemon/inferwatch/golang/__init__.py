"""golang: Go's semantics that PromQL and Go templates share (float parsing and printing, quoting,
regexp expansion), so the two engines agree with Prometheus and with each other."""
