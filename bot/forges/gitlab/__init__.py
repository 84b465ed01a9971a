"""GitLab: webhook payloads (events), the REST reads the intake makes (rest, traces), the
python-gitlab client, the forge's writes through the outbox, the project's git remote and
publishing fixes as merge requests."""
