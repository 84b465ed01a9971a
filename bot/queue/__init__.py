"""The task queue: the Celery app and its broker, task names, sending after commit."""
