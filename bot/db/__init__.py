"""Persistence: SQLAlchemy 2 models, sessions, data functions and Alembic migrations."""
