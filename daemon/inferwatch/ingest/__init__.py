"""ingest: the glue between records from live sources and the pure pipelines, for the daemon."""
