"""Intake: everything that turns an outside input (a webhook delivery, a CI report) into stored
rows and its first queued task. HTTP-free: the API, Jenkins events, GitHub Actions and GitLab CI
share it."""
