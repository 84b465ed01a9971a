"""Buildkite, the CI (no code is hosted there): webhook payloads and REST objects (events), the
REST client with its rate limits (rest), and job logs in bounded memory (logs)."""
