"""Contract breaks found without a log: concrete classes missing their base's abstract methods."""

from __future__ import annotations

from pathlib import Path

from fixers.learned.static_breaks import static_breaks
from fixers.sweep.index import RepoIndex
from tests.fixers.learned import history_repos as repos

TRUCK = """
    from shipping.base import Carrier


    class TruckCarrier(Carrier):
        def dispatch(self, parcel):
            return parcel
    """


def test_a_subclass_against_the_old_contract_is_a_break_and_an_abstract_one_is_not(
    tmp_path: Path,
) -> None:
    repo = repos.shipping_repo(tmp_path / "repo")
    repos.commit(repo, "more carriers", {
        "shipping/truck.py": TRUCK,
        "shipping/partial.py": """
            import abc

            from shipping.base import Carrier


            class Partial(Carrier):
                @abc.abstractmethod
                def weigh(self, parcel): ...
            """,
        "shipping/fine.py": """
            from shipping.road import RoadCarrier


            class Express(RoadCarrier):
                pass
            """,
    })  # fmt: skip
    files = ["shipping/truck.py", "shipping/partial.py", "shipping/fine.py", "missing.py"]
    found = static_breaks(RepoIndex(repo), files)
    assert [(b.class_name, b.method, b.kind) for b in found] == [
        ("TruckCarrier", "ship", "missing-abstract")
    ]


def test_only_the_given_files_are_looked_at(tmp_path: Path) -> None:
    repo = repos.shipping_repo(tmp_path / "repo")
    # RailCarrier (missed by the contract commit) is broken too, but not in the files given.
    assert static_breaks(RepoIndex(repo), ["shipping/road.py"]) == []
    assert [b.class_name for b in static_breaks(RepoIndex(repo), ["shipping/rail.py"])] == [
        "RailCarrier"
    ]


def test_a_file_that_does_not_parse_is_passed_over(tmp_path: Path) -> None:
    repo = repos.shipping_repo(tmp_path / "repo")
    repos.commit(repo, "broken", {"shipping/broken.py": "class Broken(Carrier:\n"})
    assert static_breaks(RepoIndex(repo), ["shipping/broken.py"]) == []
