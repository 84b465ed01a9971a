"""Benchmarks: one script per performance target, each printing a ratio to a same-run baseline."""
