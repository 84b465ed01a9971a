"""Speculative-decoding workers; `interface` holds the SpecWorkerBase contract."""
