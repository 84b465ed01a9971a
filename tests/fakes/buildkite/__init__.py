"""The Buildkite double: builds, jobs and logs (builds), the REST server (server), its documented
shapes (schema), and posting webhooks to the app (deliveries)."""
