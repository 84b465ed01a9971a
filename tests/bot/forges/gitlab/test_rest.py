"""The waits GitLab asks for (``wait_for``) and the retried GET against the double."""

from __future__ import annotations

import pytest

from bot.forges.gitlab.rest import (
    GitLabNotConfigured,
    GitLabRefused,
    GitLabUnavailable,
    get_json,
    wait_for,
)

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("status", "headers", "attempt", "wait"),
    [
        (429, {"retry-after": "7"}, 0, 7.0),
        (429, {"retry-after": "7", "ratelimit-reset": str(int(NOW) + 30)}, 0, 7.0),
        (429, {"ratelimit-reset": str(int(NOW) + 30)}, 0, 31.0),
        (429, {"ratelimit-reset": str(int(NOW) - 30)}, 0, 1.0),  # already past: a second
        (429, {"retry-after": "soon"}, 2, 4.0),  # unreadable: the backoff
        (429, {}, 1, 2.0),
        (500, {}, 0, 1.0),
        (502, {}, 3, 8.0),
        (None, {}, 1, 2.0),  # no answer at all
        (404, {}, 0, None),
        (403, {"retry-after": "7"}, 0, None),  # GitLab's 403 is a refusal, not a rate limit
        (501, {}, 0, None),
    ],
)
def test_the_wait_is_the_one_gitlab_asks_for(status, headers, attempt, wait):
    assert wait_for(status, headers, now=NOW, attempt=attempt, backoff_s=1.0) == wait


def test_a_get_waits_out_429s_and_5xx_then_answers(gl_settings, gitlab_api):
    project = gitlab_api.new_project("gpu/trt")
    gitlab_api.fault("GET", rf"/projects/{project.id}$", retry_after=3)
    gitlab_api.fault("GET", rf"/projects/{project.id}$", status=502)
    slept: list[float] = []
    found = get_json(gl_settings, f"/projects/{project.id}", sleep=slept.append)
    assert found["path_with_namespace"] == "gpu/trt"
    assert slept == [3.0, 0.02]  # Retry-After, then the second attempt's backoff


def test_a_wait_longer_than_allowed_is_left_to_a_later_task(gl_settings, gitlab_api):
    project = gitlab_api.new_project("gpu/trt")
    gitlab_api.fault("GET", rf"/projects/{project.id}$", retry_after=3600)
    with pytest.raises(GitLabUnavailable, match="429"):
        get_json(gl_settings, f"/projects/{project.id}", sleep=lambda s: None)
    assert len(gitlab_api.calls_to("GET", rf"/projects/{project.id}$")) == 1


def test_refusals_and_missing_configuration_say_why(gl_settings, gitlab_api):
    with pytest.raises(GitLabRefused, match="answered 404"):
        get_json(gl_settings, "/projects/999999")
    unauthorised = gl_settings.model_copy(update={"gitlab_token": None})
    with pytest.raises(GitLabNotConfigured, match="REPAIRBOT_GITLAB_TOKEN"):
        get_json(unauthorised, "/projects/1")
