"""GitHub: event payloads, the PyGithub client, retries, the write outbox, mirrors of
repositories, job logs and publishing fixes as pull requests."""
