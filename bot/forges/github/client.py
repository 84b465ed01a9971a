"""A PyGithub client built from settings: GitHub App (JWT → installation token) or a token.

One client per process and configuration: the App's installation token (valid one hour) is
reused and PyGithub refreshes it shortly before it expires. Retries are not PyGithub's: a
POST must never be retried blindly, so ``bot.forges.github.retry`` owns them (PyGithub's own
retry is off).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from github import Auth, Github

from bot.config import Settings


class GitHubNotConfigured(RuntimeError):
    """No usable GitHub credentials in the settings; the message says what is missing."""


@dataclass(frozen=True)
class Credentials:
    """Resolved credentials: a token, or an App id with its key and installation."""

    token: str | None = None
    app_id: int | None = None
    private_key: str | None = None
    installation_id: int | None = None


def credentials(settings: Settings) -> Credentials:
    """The configured credentials, checked (App mode wins when an App id is set)."""
    if settings.github_app_id is not None:
        key = (
            settings.github_private_key.get_secret_value() if settings.github_private_key else None
        )
        if key is None and settings.github_private_key_path is not None:
            try:
                key = settings.github_private_key_path.read_text(encoding="utf-8")
            except OSError as exc:
                raise GitHubNotConfigured(
                    f"cannot read REPAIRBOT_GITHUB_PRIVATE_KEY_PATH: {exc}"
                ) from exc
        if not key or "PRIVATE KEY" not in key:
            raise GitHubNotConfigured(
                "App mode needs a PEM private key (REPAIRBOT_GITHUB_PRIVATE_KEY or _PATH)"
            )
        if settings.github_installation_id is None:
            raise GitHubNotConfigured("App mode needs REPAIRBOT_GITHUB_INSTALLATION_ID")
        return Credentials(
            app_id=settings.github_app_id,
            private_key=key,
            installation_id=settings.github_installation_id,
        )
    if settings.github_token is not None and settings.github_token.get_secret_value():
        return Credentials(token=settings.github_token.get_secret_value())
    raise GitHubNotConfigured(
        "set REPAIRBOT_GITHUB_TOKEN, or REPAIRBOT_GITHUB_APP_ID with a private key and installation"
    )


class GitHubSession:
    """A PyGithub client plus the token git needs to push (the App's current one)."""

    def __init__(self, settings: Settings) -> None:
        creds = credentials(settings)
        self.is_app = creds.app_id is not None
        auth: Auth.Auth
        if creds.app_id is not None:
            assert creds.private_key is not None and creds.installation_id is not None
            auth = Auth.AppAuth(creds.app_id, creds.private_key).get_installation_auth(
                creds.installation_id
            )
        else:
            assert creds.token is not None
            auth = Auth.Token(creds.token)
        self._auth = auth
        self.api = Github(
            auth=auth,
            base_url=settings.github_api_url.rstrip("/"),
            timeout=settings.github_timeout_s,
            retry=None,
            seconds_between_requests=None,
            seconds_between_writes=settings.github_seconds_between_writes or None,
            user_agent="repairbot",
            lazy=True,
        )

    def token(self) -> str:
        """A valid token for git over HTTPS (refreshing an App installation token if due)."""
        return self._auth.token


_sessions: dict[tuple[str, ...], GitHubSession] = {}
_lock = threading.Lock()


def github_session(settings: Settings) -> GitHubSession:
    """The process's client for these settings (made once, then reused)."""
    key = (
        settings.github_api_url,
        str(settings.github_app_id),
        str(settings.github_installation_id),
        settings.github_token.get_secret_value() if settings.github_token else "",
        str(settings.github_private_key_path),
    )
    with _lock:
        found = _sessions.get(key)
        if found is None:
            found = _sessions[key] = GitHubSession(settings)
        return found
