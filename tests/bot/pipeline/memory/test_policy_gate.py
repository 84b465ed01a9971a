"""Autonomy and opt-outs on a real repair: a real git repository (the legacy workers), a report
posted to the served app, and the triage and repair tasks run in process. The repository's
``.repairbot.toml`` is read from its base branch, never from the failing (PR) commit."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from bot.app import create_app
from bot.cli.demo_target import build_target
from bot.db.models import Fix, RepairRun, Verification
from bot.db.records.opt_outs import OptOutVia, opt_out
from bot.db.session import session_scope
from bot.git import commit_all, git
from bot.pipeline.memory.policy_gate import read_policy, suggestion_text
from bot.pipeline.repair.task import repair
from bot.pipeline.repair.trusted_config import MAX_POLICY_BYTES
from bot.pipeline.triage import triage
from fixers.contracts.model import SPEC_WORKER_CONTRACT
from fixers.repo.policy import Autonomy, RepoPolicy
from tests.conftest import CI_TOKEN

LOG = Path(__file__).parents[3] / "fixtures" / "logs" / "py312" / "combined.console.txt"
SIGNATURE = "contract-forward-override"


@pytest.fixture
def use_settings(settings, task_settings):
    return task_settings(settings)


def _target(tmp_path: Path, policy: str | None) -> tuple[Path, str]:
    """The legacy workers on ``main``, with ``policy`` as its ``.repairbot.toml``."""
    repo = tmp_path / "target"
    head = build_target(repo)
    if policy is not None:
        (repo / ".repairbot.toml").write_text(policy)
        head = commit_all(repo, "repairbot policy")
    return repo, head


def _repair(settings, repo: Path, head: str, extra: str = "") -> RepairRun:
    query = f"?repository={repo}&head_sha={head}&base_ref=main{extra}"
    with TestClient(create_app(settings)) as client:
        answer = client.post(
            f"/api/v1/ci-failures{query}",
            content=LOG.read_bytes(),
            headers={"Authorization": f"Bearer {CI_TOKEN}"},
        )
    assert answer.status_code == 202, answer.text
    report_id = answer.json()["report_id"]
    triage.run(report_id)
    with session_scope(settings.resolved_database_url) as session:
        run_id = session.scalars(select(RepairRun.id).where(RepairRun.report_id == report_id)).one()
    repair.run(run_id)
    with session_scope(settings.resolved_database_url) as session:
        run = session.get_one(RepairRun, run_id)
        run.transitions  # noqa: B018  (loaded before the session closes)
        session.expunge_all()
    return run


def _counts(settings) -> tuple[int, int]:
    with session_scope(settings.resolved_database_url) as session:
        fixes = len(session.scalars(select(Fix)).all())
        return fixes, len(session.scalars(select(Verification)).all())


def test_report_classifies_and_opens_nothing(use_settings, tmp_path):
    repo, head = _target(tmp_path, f'[autonomy.signatures]\n"{SIGNATURE}" = "report"\n')
    run = _repair(use_settings, repo, head)
    assert run.state == "reported", run.reason
    assert f'autonomy "report" for {SIGNATURE}' in run.reason and "nothing swept" in run.reason
    assert [t.to_state for t in run.transitions] == ["classified", "reported"]
    assert _counts(use_settings) == (0, 0)


def test_suggest_on_the_local_forge_records_the_fix_on_the_run(use_settings, tmp_path):
    repo, head = _target(tmp_path, '[autonomy]\ndefault = "suggest"\n')
    run = _repair(use_settings, repo, head)
    assert run.state == "suggested", run.reason
    assert 'autonomy "suggest" ([autonomy] default' in run.reason
    assert "the suggested fix" in run.reason and "+    def _forward_impl(" in run.reason
    assert "--- a/legacy_spec/" in run.reason
    assert _counts(use_settings) == (0, 0)
    assert git(repo, "branch", "--list", "repairbot/*") == ""  # no branch pushed either


def test_pr_opens_the_fix_without_verifying_it(use_settings, tmp_path):
    repo, head = _target(tmp_path, '[autonomy]\ndefault = "pr"\n')
    run = _repair(use_settings, repo, head)
    assert run.state == "pr_opened", run.reason
    assert 'autonomy "pr"' in run.reason and "not verified automatically" in run.reason
    assert _counts(use_settings) == (1, 0)


def test_pr_verify_is_the_default(use_settings, tmp_path):
    repo, head = _target(tmp_path, None)
    run = _repair(use_settings, repo, head)
    assert run.state == "pr_opened", run.reason
    assert _counts(use_settings) == (1, 1)


def test_the_policy_of_the_failing_commit_is_not_read(use_settings, tmp_path):
    """A PR that writes ``report`` (or switches the bot off) for itself changes nothing: the
    base branch says nothing, so the default holds."""
    repo, _ = _target(tmp_path, None)
    git(repo, "checkout", "--quiet", "-b", "pr")
    (repo / ".repairbot.toml").write_text(
        '[repairbot]\nenabled = false\n[autonomy]\ndefault = "report"\n'
    )
    pr_head = commit_all(repo, "opt myself out")
    git(repo, "checkout", "--quiet", "main")
    run = _repair(use_settings, repo, pr_head)
    assert run.state == "pr_opened", run.reason
    assert _counts(use_settings) == (1, 1)


def test_a_repository_switched_off_is_left_alone(use_settings, tmp_path):
    repo, head = _target(tmp_path, "[repairbot]\nenabled = false\n")
    run = _repair(use_settings, repo, head)
    assert run.state == "opted_out", run.reason
    assert "switched off for this repository ([repairbot] enabled = false" in run.reason
    assert _counts(use_settings) == (0, 0)


def test_an_invalid_policy_says_so_and_keeps_the_default(use_settings, tmp_path):
    repo, head = _target(tmp_path, '[autonomy]\ndefault = "yolo"\n')
    run = _repair(use_settings, repo, head)
    assert run.state == "pr_opened", run.reason
    [swept] = [t.reason for t in run.transitions if t.to_state == "swept"]
    assert "autonomy.default: must be one of" in swept and "got 'yolo'" in swept, swept
    assert _counts(use_settings) == (1, 1)


def test_opt_out_paths_leave_their_violations_out_and_the_run_says_how_many(use_settings, tmp_path):
    repo, head = _target(tmp_path, '[repairbot]\nopt_out_paths = ["tests/**"]\n')
    run = _repair(use_settings, repo, head)
    assert run.state == "pr_opened", run.reason
    [swept] = [t.reason for t in run.transitions if t.to_state == "swept"]
    assert "1 violation(s) left out under opt_out_paths" in swept, swept
    with session_scope(use_settings.resolved_database_url) as session:
        [fixed] = session.scalars(select(Fix)).all()
        assert fixed.files and not [f for f in fixed.files if f.startswith("tests/")]
        assert all(not line.startswith("tests/") for line in fixed.violations)


def test_opt_out_paths_over_every_violation_open_nothing(use_settings, tmp_path):
    repo, head = _target(tmp_path, '[repairbot]\nopt_out_paths = ["**"]\n')
    run = _repair(use_settings, repo, head)
    assert run.state == "opted_out", run.reason
    assert "are under opt_out_paths (**): nothing fixed" in run.reason
    assert _counts(use_settings) == (0, 0)


def test_an_opted_out_pr_gets_no_fix_run(use_settings, tmp_path):
    repo, head = _target(tmp_path, None)
    with session_scope(use_settings.resolved_database_url) as session:
        opt_out(session, repository=str(repo), pr_number=7, via=OptOutVia.COMMAND, by="alice")
    run = _repair(use_settings, repo, head, "&pr_number=7")
    assert run.state == "opted_out", run.reason
    assert f"{repo}#7 opted out by alice with /repairbot opt-out" in run.reason
    assert [t.to_state for t in run.transitions] == ["classified", "opted_out"]
    assert _counts(use_settings) == (0, 0)
    other = _repair(use_settings, repo, head, "&pr_number=8")  # another PR is not held
    assert other.state == "pr_opened", other.reason


def _committed(tmp_path: Path, write) -> tuple[Path, str]:
    repo = tmp_path / "policy-repo"
    repo.mkdir()
    git(repo, "init", "--quiet", "--initial-branch", "main")
    (repo / "README").write_text("x\n")
    write(repo / ".repairbot.toml")
    return repo, commit_all(repo, "policy")


@pytest.mark.parametrize(
    ("write", "error"),
    [
        (lambda p: p.symlink_to("/etc/passwd"), "not a regular file; ignored"),
        (lambda p: p.mkdir() or (p / "x").write_text("y"), "not a regular file; ignored"),
        (lambda p: p.write_bytes(b"#" * (MAX_POLICY_BYTES + 1)), "over 262144; ignored"),
        (lambda p: p.write_bytes(b'[autonomy]\ndefault = "\xff"\n'), "not UTF-8"),
    ],
    ids=["symlink", "directory", "too large", "not utf-8"],
)
def test_a_hostile_policy_file_is_refused_with_the_reason(tmp_path, write, error):
    repo, commit = _committed(tmp_path, write)
    policy = read_policy(repo, commit, "main")
    assert policy.enabled and policy.mode_for(SIGNATURE) is Autonomy.PR_VERIFY
    assert len(policy.errors) == 1 and error in policy.errors[0], policy.errors
    assert policy.errors[0].startswith(".repairbot.toml on main")


def test_no_policy_file_is_every_default(tmp_path):
    repo, commit = _committed(tmp_path, lambda p: None)
    assert read_policy(repo, commit, "main") == RepoPolicy(source=".repairbot.toml on main")


def test_a_suggested_patch_is_fenced_past_its_backticks_and_cut_when_too_long() -> None:
    patch = '--- a/w.py\n+++ b/w.py\n@@ -1 +1 @@\n-"""```x```"""\n+"""````y````"""\n'
    text = suggestion_text(["w.py:1 `W` (forbidden-override)"], SPEC_WORKER_CONTRACT, patch, "why")
    assert f"`````diff\n{patch}`````\n" in text and "`git apply` takes it" in text

    long = "".join(f"+line {n}\n" for n in range(20_000))
    cut = suggestion_text([], SPEC_WORKER_CONTRACT, long, "why")
    assert len(cut) < 65_000 and "too long for a comment" in cut
    assert cut.endswith("\n```\n") and "`git apply` takes it" not in cut
    shown = cut.split("```diff\n", 1)[1].removesuffix("```\n")
    assert long.startswith(shown) and shown.endswith("\n")  # cut at a line
