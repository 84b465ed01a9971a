"""The pre-merge contract check against a hostile PR (the GitHub double, real repositories): the
PR's own ``.repairbot.toml`` changes nothing in its check, a tree that would write more than
the check's budget writes nothing more and gets an error, and a stranger's review carrying the
bot's marker neither stops the status nor is taken for the bot's."""

from __future__ import annotations

from sqlalchemy import select

from bot.db.records.contract_checks import ContractCheck
from bot.db.session import session_scope
from bot.forges.github.review_text import marker
from bot.pipeline.contract_check.answer import CONFIG_NOTE
from tests.bot.pipeline.contract_check.test_task import REPO, _check, _open, _statuses
from tests.bot.pipeline.pr_repos import commit, worker
from tests.fakes.github_reviews import add_review, reviews_of

BAD = {"spec/ngram.py": worker("NGramWorker")}


def _status(github_api) -> tuple[str, str]:
    [status] = _statuses(github_api)
    return status["state"], status["description"]


def test_a_prs_own_exclude_does_not_hide_its_violation(gh_settings, github_api, spec_repo):
    config = {".repairbot.toml": 'exclude = ["spec/*"]\n'}
    number, _ = _open(github_api, spec_repo, "hide", {**BAD, **config})

    _check(gh_settings, number)

    state, description = _status(github_api)
    assert state == "failure" and description.startswith(CONFIG_NOTE)
    assert "NGramWorker" in description
    assert len(reviews_of(github_api, REPO, number)) == 1


def test_a_prs_own_file_size_cap_does_not_hide_its_violation(gh_settings, github_api, spec_repo):
    number, _ = _open(
        github_api, spec_repo, "tiny-cap", {**BAD, ".repairbot.toml": "max_file_bytes = 1\n"}
    )

    _check(gh_settings, number)

    assert _status(github_api)[0] == "failure"


def test_without_its_config_the_same_pr_fails_the_same_way(gh_settings, github_api, spec_repo):
    number, _ = _open(github_api, spec_repo, "plain", BAD)
    _check(gh_settings, number)
    assert _status(github_api) == (
        "failure",
        "1 contract violation introduced: NGramWorker (forbidden-override)",
    )


def test_a_tree_over_the_write_budget_is_an_error_and_writes_nothing_more(
    gh_settings, github_api, spec_repo
):
    repo, _ = spec_repo
    # The base's maintainers raised the per-file cap (trusted); a PR then points 40 paths at
    # one 3 MB blob: 120 MB to write for a PR of a few kilobytes of git objects.
    commit(repo.path, "main", {".repairbot.toml": "max_file_bytes = 8388608\n"}, parent="main",
           message="larger files")  # fmt: skip
    blob = "X = 1\n" + "# padding\n" * 300_000
    files: dict[str, str | None] = {f"gen/m{i:02}.py": blob for i in range(40)}
    settings = gh_settings.model_copy(update={"contract_check_max_write_bytes": 20 * 1024 * 1024})
    number, head = _open(github_api, spec_repo, "huge", files)

    _check(settings, number)

    state, description = _status(github_api)
    assert state == "error" and description.startswith("not checked: the trees would need")
    written = sum(p.stat().st_blocks * 512 for p in settings.contract_trees_dir.rglob("*"))
    assert written < 20 * 1024 * 1024  # the base tree only: not one of the 40 copies
    assert not (settings.contract_trees_dir / REPO / "gen").exists()
    with session_scope(settings.resolved_database_url) as session:
        row = session.scalars(select(ContractCheck)).one()
        assert (row.head_sha, row.state) == (head, "error")
        assert 0 < row.written_bytes <= 20 * 1024 * 1024


def test_a_strangers_review_with_the_bots_marker_changes_nothing(
    gh_settings, github_api, spec_repo
):
    number, head = _open(github_api, spec_repo, "spoof", BAD)
    spoofed = marker(head, "0" * 16, "open")
    add_review(github_api, REPO, number, "mallory", f"{spoofed}\nlooks fine to me", head)

    _check(gh_settings, number)

    assert _status(github_api)[0] == "failure"  # the status is set all the same
    reviews = reviews_of(github_api, REPO, number)
    assert [r["user"]["login"] for r in reviews] == ["mallory", "repairbot[bot]"]
    assert reviews[0]["body"].endswith("looks fine to me")  # never edited by the bot
