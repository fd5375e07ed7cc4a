"""The rotation-safe tailer every file source uses."""
