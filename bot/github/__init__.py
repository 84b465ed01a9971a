"""GitHub, sans I/O: webhook signatures and event parsing."""
