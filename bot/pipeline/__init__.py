"""The pipeline: triage → repair → verify → report, each a stage over ids that is safe to run
twice, with its Celery task a thin wrapper named by a constant in ``bot.queue.names``."""
