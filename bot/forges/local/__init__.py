"""The local forge: fix branches in a local git repository, PRs as rows."""
