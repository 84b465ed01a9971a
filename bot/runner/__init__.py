"""Verification: proving a fix on the GPU type that failed, before and after, and reporting it."""
