"""promtool: promtool's rule-test format and runner, and the export for a real Prometheus."""
