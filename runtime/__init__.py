"""A small speculative-decoding runtime that follows the SpecWorkerBase contract."""
