"""Tests of the bundled speculative runtime."""
