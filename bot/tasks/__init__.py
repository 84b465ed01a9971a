"""Celery tasks: one module per pipeline stage; every task takes ids and is safe to run twice."""
