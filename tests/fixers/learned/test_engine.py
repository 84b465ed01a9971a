"""Learned migrations end to end on real git histories (built by ``history_repos``): each shape
of contract break, fixed or reported the way its own commit migrated the siblings."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixers.classify.root_causes import classify_file
from fixers.learned.policy import Policy
from fixers.sweep.outcome import FixResult
from fixers.sweep.run import fix, write_changes
from tests.fixers.git_repos import git
from tests.fixers.learned import history_repos as repos

MISSING_SHIP = (
    "TypeError: Can't instantiate abstract class RailCarrier without an implementation for "
    "abstract method 'ship'"
)


def _fix(repo: Path, tmp_path: Path, line: str, **options: object) -> FixResult:
    log = repos.failure_log(tmp_path / "failure.log", line)
    return fix(repo, [], imports=False, findings=classify_file(log), **options)  # type: ignore[arg-type]


def _decisions(result: FixResult) -> dict[str, tuple[str, str]]:
    return {
        d.class_name: (d.outcome, d.reason)
        for learning in result.learned
        for d in learning.decisions
    }


def test_a_renamed_abstract_method_with_a_new_keyword_is_applied_to_every_missed_subclass(
    tmp_path: Path,
) -> None:
    repo = repos.shipping_repo(tmp_path / "repo")
    result = _fix(repo, tmp_path, MISSING_SHIP)
    [learning] = result.learned
    assert learning.commit is not None
    assert learning.commit.subject == "Carrier.dispatch becomes ship with a priority"
    assert learning.rule is not None
    assert learning.rule.words().startswith(
        "rename dispatch -> ship, add *, priority=0, as in AirCarrier, RoadCarrier, SeaCarrier"
    )
    assert sorted(c.path for c in result.changes) == ["shipping/rail.py", "tests/test_shipping.py"]
    assert write_changes(repo, result) == ["shipping/rail.py", "tests/test_shipping.py"]
    rail = (repo / "shipping/rail.py").read_text()
    assert "    # railcarrier legs\n    def ship(self, parcel, *, priority=0):\n" in rail
    assert 'return "rail:" + parcel' in rail
    # A class with a method of the same name that does not derive from the base: untouched.
    assert "def dispatch(self, parcel)" in (repo / "shipping/courier.py").read_text()
    assert "Courier" not in _decisions(result)
    # The siblings the commit migrated are left as they are, each with its reason.
    assert _decisions(result)["RoadCarrier"] == ("skipped", "already defines ship")


def test_two_missed_classes_in_one_log_are_one_root_cause(tmp_path: Path) -> None:
    repo = repos.shipping_repo(tmp_path / "repo")
    log = tmp_path / "two.log"
    log.write_text(
        f"E   {MISSING_SHIP}\n"
        "E   TypeError: Can't instantiate abstract class FakeCarrier without an implementation "
        "for abstract method 'ship'\n",
        encoding="utf-8",
    )
    findings = classify_file(log)
    result = fix(repo, [], imports=False, findings=findings)
    assert len(result.learned) == 1
    assert sorted(c.path for c in result.changes) == ["shipping/rail.py", "tests/test_shipping.py"]


def test_a_runtime_guard_naming_the_method_is_learned_like_the_abstract_error(
    tmp_path: Path,
) -> None:
    repo = repos.shipping_repo(tmp_path / "repo")
    result = _fix(repo, tmp_path, "TypeError: RailCarrier must implement ship()")
    assert "shipping/rail.py" in {c.path for c in result.changes}


def test_evidence_holds_and_a_second_run_finds_nothing_to_do(tmp_path: Path) -> None:
    repo = repos.shipping_repo(tmp_path / "repo")
    result = _fix(repo, tmp_path, MISSING_SHIP)
    assert all(c.evidence is not None and c.evidence.ok for c in result.changes)
    write_changes(repo, result)
    again = _fix(repo, tmp_path, MISSING_SHIP)
    assert again.changes == []


def test_a_subclass_added_on_a_concurrent_branch_is_as_broken_as_a_missed_one(
    tmp_path: Path,
) -> None:
    repo = repos.shipping_with_concurrent_branch(tmp_path / "repo")
    result = _fix(repo, tmp_path, MISSING_SHIP)
    assert "shipping/truck.py" in {c.path for c in result.changes}
    assert _decisions(result)["TruckCarrier"][0] == "fixed"


def test_a_new_keyword_the_base_passes_is_added_with_the_siblings_kind_and_default(
    tmp_path: Path,
) -> None:
    repo = repos.metering_repo(tmp_path / "repo")
    result = _fix(
        repo, tmp_path, "TypeError: Gauge.sample() got an unexpected keyword argument 'labels'"
    )
    [change] = result.changes
    assert change.path == "metering/gauge.py"
    assert "    def sample(self, value, *, labels: dict | None = None):\n" in change.after


def test_a_new_positional_argument_the_base_passes_is_added_to_the_missed_override(
    tmp_path: Path,
) -> None:
    repo = repos.metering_repo(tmp_path / "repo", positional=True)
    line = "TypeError: Gauge.sample() takes 2 positional arguments but 3 were given"
    [change] = _fix(repo, tmp_path, line).changes
    assert "    def sample(self, value, labels=None):\n" in change.after


def test_a_test_double_gets_a_typed_stub_and_a_production_class_is_reported(
    tmp_path: Path,
) -> None:
    repo = repos.storage_repo(tmp_path / "repo")
    result = _fix(
        repo,
        tmp_path,
        "TypeError: Can't instantiate abstract class FakeStore with abstract method scan",
    )
    [change] = result.changes
    assert change.path == "tests/test_storage.py"
    assert change.after.endswith(
        "        return None\n\n    def scan(self, prefix: str) -> list[str]:\n"
        "        raise NotImplementedError\n"
    )
    outcome, reason = _decisions(result)["DiskStore"]
    assert outcome == "reported" and "each sibling wrote its own body" in reason
    assert any(s.class_qualname == "DiskStore" for s in result.report.skips)


def test_a_method_only_decorated_abstract_is_found_and_the_double_gets_a_stub(
    tmp_path: Path,
) -> None:
    # aiocache d3fb375 "Make BaseCache an ABC": @abstractmethod added over unchanged defs.
    repo = repos.made_abstract_storage_repo(tmp_path / "repo")
    line = "TypeError: Can't instantiate abstract class FakeStore without an implementation for abstract method 'compact'"  # fmt: skip
    result = _fix(repo, tmp_path, line)
    [learning] = result.learned
    assert learning.commit is not None and learning.commit.subject == "Make Store an ABC"
    assert learning.rule is not None, learning.problem
    assert learning.rule.words() == (
        f"add method compact, made abstract in Store by {learning.commit.short()}"
    )
    [change] = result.changes
    assert change.path == "tests/test_storage.py"
    assert (
        "class FakeStore(Store):\n    pass\n\n"
        "    def compact(self, level: int = 1) -> None:\n        raise NotImplementedError\n"
    ) in change.after
    decisions = _decisions(result)
    assert decisions["MemoryStore"][0] == decisions["DiskStore"][0] == "skipped"
    # A double derived from the stubbed double inherits its stub.
    assert decisions["SlowFakeStore"] == ("skipped", "inherits the stub FakeStore gets")


def test_siblings_that_disagree_teach_nothing_and_nothing_is_written(tmp_path: Path) -> None:
    repo = repos.shipping_repo(tmp_path / "repo", priorities={"road": "0", "air": "1", "sea": "0"})
    result = _fix(repo, tmp_path, MISSING_SHIP)
    [learning] = result.learned
    assert learning.rule is None and result.changes == []
    assert "migrated ship in 2 different ways" in learning.problem
    assert any("AirCarrier" in line and "priority=1" in line for line in learning.evidence)
    assert _decisions(result)["RailCarrier"][0] == "reported"


def test_a_base_outside_the_repository_learns_from_the_upgrade_commit(tmp_path: Path) -> None:
    repo = repos.plugins_repo(tmp_path / "repo")
    result = _fix(
        repo,
        tmp_path,
        "TypeError: Can't instantiate abstract class GammaPlugin without an implementation for "
        "abstract method 'start'",
    )
    [learning] = result.learned
    assert learning.base == "Plugin" and learning.base_path is None
    [change] = result.changes
    assert "    def start(self, app):\n" in change.after


def test_a_shallow_clone_is_deepened_from_its_origin(tmp_path: Path) -> None:
    origin = repos.shipping_repo(tmp_path / "origin")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(clone))
    result = _fix(clone, tmp_path, MISSING_SHIP)
    [learning] = result.learned
    assert learning.rule is not None and learning.commit is not None
    assert "shipping/rail.py" in {c.path for c in result.changes}


def test_history_beyond_the_depth_limit_is_reported_not_guessed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    origin = repos.shipping_repo(tmp_path / "origin")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(clone))
    # The limit is a setting of the policy; one commit of history is all this clone may have.
    monkeypatch.setattr("fixers.sweep.run.Policy", lambda *a, **kw: Policy(*a, **kw, max_depth=1))
    result = _fix(clone, tmp_path, MISSING_SHIP)
    [learning] = result.learned
    assert learning.problem.startswith("contract commit not in history (shallow clone")
    assert result.changes == []


def test_a_forbidden_rule_is_reported_not_applied(tmp_path: Path) -> None:
    repo = repos.shipping_repo(tmp_path / "repo")
    repos.commit(repo, "forbid", {".repairbot.toml": '[learned]\nforbid = ["Carrier.*"]\n'})
    result = _fix(repo, tmp_path, MISSING_SHIP)
    assert result.changes == []
    assert "forbidden by .repairbot.toml" in result.learned[0].problem


def test_a_pinned_rule_applies_where_the_siblings_disagree(tmp_path: Path) -> None:
    repo = repos.shipping_repo(tmp_path / "repo", priorities={"road": "0", "air": "1", "sea": "0"})
    pin = '[[learned.pin]]\nbase = "Carrier"\nmethod = "ship"\nfrom = "dispatch"\nadd = "*, priority=2"\n'
    repos.commit(repo, "pin", {".repairbot.toml": pin})
    result = _fix(repo, tmp_path, MISSING_SHIP)
    [learning] = result.learned
    assert learning.rule is not None and learning.rule.words() == (
        "rename dispatch -> ship, add *, priority=2, as pinned in .repairbot.toml"
    )
    assert any("the pin applies" in note for note in learning.notes)
    rail = next(c for c in result.changes if c.path == "shipping/rail.py")
    assert "    def ship(self, parcel, *, priority=2):\n" in rail.after


def test_a_directory_that_is_not_a_repository_has_no_history_to_learn_from(tmp_path: Path) -> None:
    repo = repos.shipping_repo(tmp_path / "repo")
    git(repo, "rev-parse", "HEAD")
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "rail.py").write_text((repo / "shipping/rail.py").read_text())
    result = _fix(plain, tmp_path, MISSING_SHIP)
    assert result.learned[0].problem.startswith("no history to learn from")


def test_a_base_defined_twice_is_the_one_the_imports_name(tmp_path: Path) -> None:
    repo = repos.shipping_repo(tmp_path / "repo")
    repos.commit(repo, "a second Carrier", {
        "legacy/__init__.py": "",
        "legacy/base.py": "class Carrier:\n    def ship(self):\n        pass\n",
        "legacy/van.py": "from legacy.base import Carrier\n\n\nclass Van(Carrier):\n"
        "    def dispatch(self, parcel):\n        return parcel\n",
    })  # fmt: skip
    result = _fix(repo, tmp_path, MISSING_SHIP)
    [learning] = result.learned
    assert learning.base_path == "shipping/base.py" and learning.rule is not None
    # Van derives from the other Carrier: not this contract's, never touched.
    assert "legacy/van.py" not in {c.path for c in result.changes}
    assert "Van" not in _decisions(result)


def test_a_binary_or_huge_file_in_the_contract_commit_is_passed_over_with_a_note(
    tmp_path: Path,
) -> None:
    repo = repos.new_repo(tmp_path / "repo")
    repos.shipping_before(repo)
    huge = "X = 1\n" * 400_000  # 2.4 MB: over the examples' cap
    repos.commit(repo, "assets", {"shipping/blob.py": "B = 0\n", "shipping/huge.py": "X = 0\n"})
    (repo / "shipping/blob.py").write_bytes(b"\x00\x01binary")
    repos.write(repo, {"shipping/huge.py": huge})
    repos.shipping_contract_commit(repo)  # commits the binary and the huge file along with it
    result = _fix(repo, tmp_path, MISSING_SHIP)
    [learning] = result.learned
    assert learning.rule is not None and "shipping/rail.py" in {c.path for c in result.changes}
    notes = " ".join(learning.notes)
    assert "shipping/blob.py" in notes and "shipping/huge.py" in notes


def test_a_class_name_defined_twice_is_the_one_that_has_the_break(tmp_path: Path) -> None:
    # limits has a sync and an asyncio MemoryStorage on bases of the same name: the log names
    # only "MemoryStorage", and the class that lacks the method is the one it means.
    repo = repos.shipping_repo(tmp_path / "repo")
    repos.commit(repo, "an asyncio twin", {
        "asyncio_shipping/__init__.py": "",
        "asyncio_shipping/base.py": "import abc\n\n\nclass Carrier(abc.ABC):\n"
        "    @abc.abstractmethod\n    async def dispatch(self, parcel):\n        pass\n",
        "asyncio_shipping/rail.py": "from asyncio_shipping.base import Carrier\n\n\n"
        "class RailCarrier(Carrier):\n    async def dispatch(self, parcel):\n        return parcel\n",
    })  # fmt: skip
    result = _fix(repo, tmp_path, MISSING_SHIP)
    [learning] = result.learned
    assert learning.base_path == "shipping/base.py" and learning.rule is not None
    assert "shipping/rail.py" in {c.path for c in result.changes}
    assert "asyncio_shipping/rail.py" not in {c.path for c in result.changes}


# ----- a base from an installed library, no commit that migrated a sibling --------------------


def test_a_keyword_the_installed_base_now_passes_is_added_from_its_signature(
    tmp_path: Path,
) -> None:
    repo = repos.upgraded_plugins_repo(tmp_path / "repo")
    line = "TypeError: AlphaPlugin.start() got an unexpected keyword argument 'timeout'"
    result = _fix(repo, tmp_path, line)
    [learning] = result.learned
    assert learning.rule is not None and learning.base_path is None
    assert learning.rule.words() == (
        "add *, timeout: float = 5.0, from the signature of plugkit.core._Hooks.start "
        "(installed: site-packages/plugkit/core.py)"
    )
    assert sorted(c.path for c in result.changes) == ["plugins/alpha.py", "plugins/beta.py"]
    alpha = next(c.after for c in result.changes if c.path == "plugins/alpha.py")
    assert "    def start(self, app, *, timeout: float = 5.0):\n" in alpha
    assert _decisions(result)["FakePlugin"][0] == "skipped"  # already takes it


def test_a_positional_argument_the_installed_base_now_passes_is_added(tmp_path: Path) -> None:
    repo = repos.upgraded_plugins_repo(tmp_path / "repo")
    line = "TypeError: BetaPlugin.render() takes 2 positional arguments but 3 were given"
    result = _fix(repo, tmp_path, line)
    assert sorted(c.path for c in result.changes) == ["plugins/alpha.py", "plugins/beta.py"]
    assert all("    def render(self, page, context):\n" in c.after for c in result.changes)


def test_a_new_abstract_method_of_an_installed_base_stubs_the_double_and_reports_the_rest(
    tmp_path: Path,
) -> None:
    repo = repos.upgraded_plugins_repo(tmp_path / "repo")
    result = _fix(
        repo,
        tmp_path,
        "TypeError: Can't instantiate abstract class FakePlugin without an implementation for "
        "abstract method 'stop'",
    )
    [change] = result.changes
    assert change.path == "tests/fakes.py"
    assert "    def stop(self, *, force: bool = False) -> None:\n" in change.after
    assert "raise NotImplementedError" in change.after
    # The production plugins define stop already: nothing to do for them.
    assert _decisions(result)["AlphaPlugin"][0] == "skipped"


def test_an_installed_base_that_cannot_be_read_is_reported_with_where_it_was_looked_for(
    tmp_path: Path,
) -> None:
    repo = repos.upgraded_plugins_repo(tmp_path / "repo", venv=False)
    line = "TypeError: AlphaPlugin.start() got an unexpected keyword argument 'timeout'"
    result = _fix(repo, tmp_path, line)
    [learning] = result.learned
    assert learning.rule is None and result.changes == []
    assert "plugkit.Plugin.start is not installed where repairbot can read it" in learning.problem


def test_a_virtualenv_linked_outside_the_repository_is_not_read(tmp_path: Path) -> None:
    repo = repos.upgraded_plugins_repo(tmp_path / "repo", venv=False)
    outside = tmp_path / "elsewhere"
    repos.plugkit_library(outside / "lib/python3.12/site-packages")
    (repo / ".venv").symlink_to(outside, target_is_directory=True)
    line = "TypeError: AlphaPlugin.start() got an unexpected keyword argument 'timeout'"
    result = _fix(repo, tmp_path, line)
    assert result.learned[0].rule is None and result.changes == []


def test_a_contract_commit_that_also_changed_unrelated_code_teaches_only_the_method(
    tmp_path: Path,
) -> None:
    repo = repos.new_repo(tmp_path / "repo")
    repos.shipping_before(repo)
    # The same commit reformats the unrelated Courier and gives AirCarrier a new helper.
    repos.write(repo, {"shipping/courier.py": "class Courier:\n    def dispatch(self, p, q=1):\n        return p\n"})  # fmt: skip
    repos.shipping_contract_commit(repo)
    air = (repo / "shipping/air.py").read_text()
    repos.write(repo, {"shipping/air.py": air + "\n    def weigh(self, parcel):\n        return 1\n"})  # fmt: skip
    git(repo, "commit", "-q", "--amend", "--no-edit", "-a")
    result = _fix(repo, tmp_path, MISSING_SHIP)
    [learning] = result.learned
    assert learning.rule is not None
    assert learning.rule.words().startswith("rename dispatch -> ship, add *, priority=0, as in")
    assert "weigh" not in learning.rule.words()
    assert sorted(c.path for c in result.changes) == ["shipping/rail.py", "tests/test_shipping.py"]
    assert "Courier" not in _decisions(result)


def test_a_sibling_that_kept_the_old_name_as_a_wrapper_still_teaches_the_rename(
    tmp_path: Path,
) -> None:
    # tenacity 78a462e: Retrying.call became __call__ and a deprecated call() wrapper stayed;
    # AsyncRetrying and TornadoRetrying were only renamed.
    repo = repos.new_repo(tmp_path / "repo")
    repos.shipping_before(repo)
    repos.shipping_contract_commit(repo)
    air = (repo / "shipping/air.py").read_text()
    wrapper = "\n    def dispatch(self, parcel):\n        warnings.warn('use ship')\n        return self.ship(parcel)\n"  # fmt: skip
    repos.write(repo, {"shipping/air.py": "import warnings\n" + air + wrapper})
    git(repo, "commit", "-q", "--amend", "--no-edit", "-a")
    result = _fix(repo, tmp_path, MISSING_SHIP)
    [learning] = result.learned
    assert learning.rule is not None, learning.problem
    assert learning.rule.words().startswith(
        "rename dispatch -> ship, add *, priority=0, as in AirCarrier, RoadCarrier, SeaCarrier"
    )
    assert any("AirCarrier also kept dispatch as a wrapper" in n for n in learning.notes)
    assert sorted(c.path for c in result.changes) == ["shipping/rail.py", "tests/test_shipping.py"]


def test_a_twin_family_migrated_differently_in_the_same_commit_does_not_teach(
    tmp_path: Path,
) -> None:
    # limits' contract commit edited the sync and the asyncio storages together: the asyncio
    # twins (same class names, another base) are not examples for the sync base's rule.
    repo = repos.new_repo(tmp_path / "repo")
    repos.shipping_before(repo)
    twin = "from asyncio_shipping.base import Carrier\n\n\nclass RoadCarrier(Carrier):\n"
    repos.commit(repo, "asyncio twin", {
        "asyncio_shipping/__init__.py": "",
        "asyncio_shipping/base.py": "import abc\n\n\nclass Carrier(abc.ABC):\n"
        "    @abc.abstractmethod\n    async def dispatch(self, parcel):\n        pass\n",
        "asyncio_shipping/road.py": twin + "    async def dispatch(self, parcel):\n        return 1\n",
    })  # fmt: skip
    repos.write(repo, {
        "asyncio_shipping/base.py": "import abc\n\n\nclass Carrier(abc.ABC):\n"
        "    @abc.abstractmethod\n    async def ship(self, parcel, *, priority=5):\n        pass\n",
        "asyncio_shipping/road.py": twin + "    async def ship(self, parcel, *, priority=5):\n"
        "        return 1\n",
    })  # fmt: skip
    repos.shipping_contract_commit(repo)  # commits the twin's different migration with it
    result = _fix(repo, tmp_path, MISSING_SHIP)
    [learning] = result.learned
    assert learning.rule is not None, learning.problem
    assert learning.rule.words().startswith("rename dispatch -> ship, add *, priority=0, as in")
    assert "shipping/rail.py" in {c.path for c in result.changes}


def _handlers_repo(
    path: Path, before: str, after: str, call: str, two_after: str | None = None
) -> Path:
    """Handler.handle's signature goes from ``before`` to ``after`` (the base calls it with
    ``call``): two siblings migrated (``TwoHandler`` to ``two_after`` when given),
    ``MissedHandler`` missed."""
    repo = repos.new_repo(path)
    base = "import abc\n\n\nclass Handler(abc.ABC):\n    def run(self):\n        return self.handle({call})\n\n    @abc.abstractmethod\n    def handle({params}):\n        pass\n"  # fmt: skip
    sub = "from hooks.base import Handler\n\n\nclass {cls}(Handler):\n    def handle({params}):\n        return 1\n"  # fmt: skip
    files = {"hooks/__init__.py": "", "hooks/base.py": base.format(call="a, k", params=before)}
    for cls in ("OneHandler", "TwoHandler", "MissedHandler"):
        files[f"hooks/{cls.lower()}.py"] = sub.format(cls=cls, params=before)
    repos.commit(repo, "handlers", files)
    files = {"hooks/base.py": base.format(call=call, params=after)}
    for cls in ("OneHandler", "TwoHandler"):
        params = two_after if two_after and cls == "TwoHandler" else after
        files[f"hooks/{cls.lower()}.py"] = sub.format(cls=cls, params=params)
    repos.commit(repo, "Handler.handle changes", files)
    return repo


def test_a_positional_parameter_the_siblings_put_first_is_inserted_there(tmp_path: Path) -> None:
    # webargs 5da3754: get_request_from_view_args(self, view, args, kwargs); appending `view`
    # would make the base's arguments land in the wrong parameters.
    repo = _handlers_repo(tmp_path / "repo", "self, args, kwargs", "self, view, args, kwargs", "v, a, k")  # fmt: skip
    line = "TypeError: MissedHandler.handle() takes 3 positional arguments but 4 were given"
    result = _fix(repo, tmp_path, line)
    [learning] = result.learned
    assert learning.rule is not None, learning.problem
    assert learning.rule.words().startswith("add view as the first parameter after self, as in")
    assert _decisions(result)["MissedHandler"][0] == "fixed"
    [change] = result.changes
    assert "    def handle(self, view, args, kwargs):\n" in change.after


def test_siblings_that_put_a_positional_parameter_in_different_places_disagree(
    tmp_path: Path,
) -> None:
    repo = _handlers_repo(tmp_path / "repo", "self, args, kwargs", "self, view, args, kwargs", "v, a, k", two_after="self, args, view, kwargs")  # fmt: skip
    line = "TypeError: MissedHandler.handle() takes 3 positional arguments but 4 were given"
    result = _fix(repo, tmp_path, line)
    [learning] = result.learned
    assert learning.rule is None and result.changes == []
    assert "2 different ways" in learning.problem
    assert any("as the second parameter after self" in e for e in learning.evidence)


def test_siblings_that_already_take_an_added_star_kwargs_are_not_labelled_fixed(
    tmp_path: Path,
) -> None:
    repo = _handlers_repo(tmp_path / "repo", "self, a, k", "self, a, k, privacy=False, **kwargs", "a, k, privacy=True")  # fmt: skip
    line = "TypeError: MissedHandler.handle() got an unexpected keyword argument 'privacy'"
    result = _fix(repo, tmp_path, line)
    decisions = _decisions(result)
    assert decisions["OneHandler"][0] == decisions["TwoHandler"][0] == "skipped"
    assert decisions["MissedHandler"][0] == "fixed"
    [change] = result.changes
    assert "    def handle(self, a, k, privacy=False, **kwargs):\n" in change.after
