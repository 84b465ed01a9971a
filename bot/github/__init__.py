"""GitHub: webhook signatures and event parsing (sans I/O), the PyGithub client, retries, the
write outbox, mirrors of repositories, publishing fixes and the webhook handlers."""
