"""Forges: where fix branches go and pull requests are opened (local git, GitHub)."""
