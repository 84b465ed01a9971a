"""The GitLab-API double: a real HTTP server on 127.0.0.1 (server), the compact schema its
answers and webhook payloads are checked against (schema), and webhook payloads (hooks)."""
