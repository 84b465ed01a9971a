"""The dashboard: server-rendered pages of every fix PR and every failure received."""
