"""promql: the PromQL engine over the in-memory store."""
