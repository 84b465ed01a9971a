"""Learned signature edits beyond adding a parameter, end to end on real git histories:
parameters the siblings reordered or re-defaulted, and edits that cannot be made as they did
them (reported, never written half-right)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixers.classify.root_causes import classify_file
from fixers.sweep.outcome import FixResult
from fixers.sweep.run import fix, write_changes
from tests.fixers.learned import history_repos as repos

MISSING_SEND = (
    "TypeError: Can't instantiate abstract class SmsNotifier without an implementation for "
    "abstract method 'send'"
)


def _fix(repo: Path, tmp_path: Path) -> FixResult:
    log = repos.failure_log(tmp_path / "failure.log", MISSING_SEND)
    return fix(repo, [], imports=False, findings=classify_file(log))


def _sms(result: FixResult) -> tuple[str, str]:
    [learning] = result.learned
    [decision] = [d for d in learning.decisions if d.class_name == "SmsNotifier"]
    return decision.outcome, decision.reason


def test_parameters_the_siblings_swapped_are_swapped_in_the_missed_class(tmp_path: Path) -> None:
    repo = repos.notifiers_repo(tmp_path / "repo", new="body, title")
    result = _fix(repo, tmp_path)
    [learning] = result.learned
    assert learning.rule is not None
    assert learning.rule.words().startswith(
        "rename notify -> send, reorder to (self, body, title), as in MailNotifier, SlackNotifier"
    )
    assert write_changes(repo, result) == ["notifiers/sms.py"]
    assert "    def send(self, body, title):\n" in (repo / "notifiers/sms.py").read_text()
    assert _sms(result)[0] == "fixed"
    assert not learning.unrepaired


def test_a_swap_with_a_new_default_gives_a_valid_def(tmp_path: Path) -> None:
    repo = repos.notifiers_repo(tmp_path / "repo", new='body, title=""')
    result = _fix(repo, tmp_path)
    assert write_changes(repo, result) == ["notifiers/sms.py"]
    assert '    def send(self, body, title=""):\n' in (repo / "notifiers/sms.py").read_text()


def test_parameters_named_differently_from_the_siblings_are_reported_not_guessed(
    tmp_path: Path,
) -> None:
    repo = repos.notifiers_repo(tmp_path / "repo", new="body, title", missed="subject, text")
    result = _fix(repo, tmp_path)
    assert result.changes == []
    outcome, reason = _sms(result)
    assert outcome == "reported"
    assert "does not take body, title, which the siblings reordered" in reason
    [learning] = result.learned
    assert learning.unrepaired


def test_an_edit_the_codemod_cannot_make_is_reported_not_labelled_fixed(tmp_path: Path) -> None:
    # The siblings gave both parameters defaults; the missed class has a third parameter with
    # none, which may not follow them: nothing is written and the decision says why.
    repo = repos.notifiers_repo(
        tmp_path / "repo", new='title="", body=""', missed="title, body, urgency"
    )
    result = _fix(repo, tmp_path)
    assert result.changes == []
    outcome, reason = _sms(result)
    assert outcome == "reported"
    assert reason.startswith("the edit could not be made: ")
    assert "urgency has no default but would follow title, which has one" in reason
    [learning] = result.learned
    assert learning.unrepaired


def test_a_class_already_in_the_siblings_order_is_skipped(tmp_path: Path) -> None:
    repo = repos.notifiers_repo(tmp_path / "repo", new="body, title")
    first = _fix(repo, tmp_path)
    write_changes(repo, first)
    again = _fix(repo, tmp_path)
    assert again.changes == []


def test_a_base_in_a_namespace_package_is_found_in_the_repository(tmp_path: Path) -> None:
    repo = repos.notifiers_repo(tmp_path / "repo", new="body, title")
    (repo / "notifiers/__init__.py").unlink()
    repos.commit(repo, "notifiers is a namespace package")
    result = _fix(repo, tmp_path)
    [learning] = result.learned
    assert learning.base_path == "notifiers/base.py"
    assert _sms(result)[0] == "fixed"


def test_a_class_in_a_file_that_does_not_parse_says_so(tmp_path: Path) -> None:
    repo = repos.notifiers_repo(tmp_path / "repo", new="body, title")
    sms = repo / "notifiers/sms.py"
    sms.write_text(sms.read_text() + "\nprint 'py2'\n")
    repos.commit(repo, "a Python 2 line")
    result = _fix(repo, tmp_path)
    [learning] = result.learned
    assert learning.problem.startswith(
        "class SmsNotifier is defined only in files that were not read: notifiers/sms.py "
        "(syntax error at line"
    )


def test_a_contract_commit_file_that_does_not_parse_is_noted_as_such(tmp_path: Path) -> None:
    repo = repos.new_repo(tmp_path / "repo")
    repos.commit(repo, "legacy", {"notifiers/legacy.py": "X = 1\n"})
    repos.commit(repo, "notifiers", {
        "notifiers/__init__.py": "",
        "notifiers/base.py": "import abc\n\n\nclass Notifier(abc.ABC):\n    @abc.abstractmethod\n    def notify(self, title, body): ...\n",
        "notifiers/mail.py": "from notifiers.base import Notifier\n\n\nclass MailNotifier(Notifier):\n    def notify(self, title, body):\n        return 1\n",
        "notifiers/sms.py": "from notifiers.base import Notifier\n\n\nclass SmsNotifier(Notifier):\n    def notify(self, title, body):\n        return 1\n",
    })  # fmt: skip
    repos.commit(repo, "Notifier.notify becomes send", {
        "notifiers/base.py": "import abc\n\n\nclass Notifier(abc.ABC):\n    @abc.abstractmethod\n    def send(self, body, title): ...\n",
        "notifiers/mail.py": "from notifiers.base import Notifier\n\n\nclass MailNotifier(Notifier):\n    def send(self, body, title):\n        return 1\n",
        "notifiers/legacy.py": "print 'send it'\n",
    })  # fmt: skip
    result = _fix(repo, tmp_path)
    [learning] = result.learned
    assert any(
        n.startswith("notifiers/legacy.py at ") and "does not parse: syntax error at line 1" in n
        for n in learning.notes
    ), learning.notes


@pytest.mark.parametrize("base_takes_it", [True, False])
def test_a_keyword_passed_from_another_module_is_traced_to_its_commit(
    tmp_path: Path, base_takes_it: bool
) -> None:
    repo = repos.counters_repo(tmp_path / "repo", base_takes_it=base_takes_it)
    line = "TypeError: DiskStorage.incr() got an unexpected keyword argument 'amount'"
    log = repos.failure_log(tmp_path / "failure.log", line)
    result = fix(repo, [], imports=False, findings=classify_file(log))
    [learning] = result.learned
    assert learning.commit is not None and learning.commit.subject == "Hit by an amount"
    assert write_changes(repo, result) == ["counters/disk.py"]
    assert "def incr(self, key, amount: int = 1):" in (repo / "counters/disk.py").read_text()
    [disk] = [d for d in learning.decisions if d.class_name == "DiskStorage"]
    assert disk.reason.endswith(
        "; note: the siblings' bodies use amount (2 of 2), its body does not (bodies are not "
        "learned: check whether it should)"
    )


def test_the_base_is_the_class_that_makes_the_call_not_an_interface_above_it(
    tmp_path: Path,
) -> None:
    repo = repos.fields_repo(tmp_path / "repo")
    line = "TypeError: Email._deserialize() got an unexpected keyword argument 'partial'"
    log = repos.failure_log(tmp_path / "failure.log", line)
    result = fix(repo, [], imports=False, findings=classify_file(log))
    [learning] = result.learned
    assert (learning.base, learning.base_path) == ("Field", "fields/field.py")
    assert learning.commit is not None
    assert learning.commit.subject == "Field passes partial to _deserialize"
    assert write_changes(repo, result) == ["fields/email.py"]
    assert (
        "def _deserialize(self, value, *, partial=False):" in (repo / "fields/email.py").read_text()
    )


def test_a_super_call_that_does_not_pass_the_new_argument_on_is_noted(tmp_path: Path) -> None:
    repo = repos.fields_repo(tmp_path / "repo")
    repos.commit(repo, "Email defers to Field", {"fields/email.py": """
        from fields.field import Field


        class Email(Field):
            def _deserialize(self, value):
                return super()._deserialize(value).lower()
        """})  # fmt: skip
    line = "TypeError: Email._deserialize() got an unexpected keyword argument 'partial'"
    log = repos.failure_log(tmp_path / "failure.log", line)
    result = fix(repo, [], imports=False, findings=classify_file(log))
    [learning] = result.learned
    [email] = [d for d in learning.decisions if d.class_name == "Email"]
    assert email.outcome == "fixed"
    assert email.reason.endswith(
        "; note: its super()._deserialize(...) call does not pass partial on (bodies are not "
        "learned: check whether it should)"
    )


def test_a_re_default_the_override_cannot_take_by_name_is_reported(tmp_path: Path) -> None:
    # The siblings only gave title a default; the missed class names its parameters otherwise.
    repo = repos.notifiers_repo(tmp_path / "repo", new='title, body=""', missed="subject, text")
    result = _fix(repo, tmp_path)
    outcome, reason = _sms(result)
    assert outcome == "reported" and "does not take body, which the siblings changed" in reason
