"""The PR text of a learned migration says where its rule comes from: the contract commit and
the siblings, or (no sibling migrated) the installed base's signature."""

from __future__ import annotations

from pathlib import Path

from bot.forges.pr_text import compose
from fixers.classify.root_causes import classify_file
from fixers.sweep.run import fix
from tests.fixers.learned import history_repos as repos


def _body(repo: Path, tmp_path: Path, line: str) -> str:
    findings = classify_file(repos.failure_log(tmp_path / "failure.log", line))
    result = fix(repo, [], imports=False, findings=findings)
    [learning] = result.learned
    text = compose(
        contract=learning.brk.as_contract(),
        result=result,
        signature=findings[0].signature,
        classes_in_log=[learning.brk.class_name],
        tests=[],
        build_url=None,
        base_sha="0" * 40,
        repo_root=repo,
    )
    return text.body


def test_a_rule_from_an_installed_signature_cites_it_not_a_commit(tmp_path: Path) -> None:
    repo = repos.upgraded_plugins_repo(tmp_path / "repo")
    body = _body(repo, tmp_path, "TypeError: AlphaPlugin.start() got an unexpected keyword argument 'timeout'")  # fmt: skip
    assert "no commit of this repository migrated a subclass" in body
    assert "from the signature of plugkit.core._Hooks.start" in body
    assert "sibling(s) that agree" not in body


def test_a_rule_from_the_contract_commit_cites_the_commit_and_siblings(tmp_path: Path) -> None:
    repo = repos.shipping_repo(tmp_path / "repo")
    body = _body(
        repo,
        tmp_path,
        "TypeError: Can't instantiate abstract class RailCarrier without an implementation for "
        "abstract method 'ship'",
    )
    assert "`Carrier.dispatch becomes ship with a priority`" in body
    assert "as in AirCarrier, RoadCarrier, SeaCarrier" in body
