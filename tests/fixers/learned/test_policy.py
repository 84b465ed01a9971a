"""``[learned]`` in ``.repairbot.toml``: forbidden and pinned rules, and their bad input."""

from __future__ import annotations

import pytest

from fixers.learned.policy import Pin, parse_learned
from fixers.learned.signature_edit import Param


def test_a_pin_reads_its_rename_and_its_parameters() -> None:
    config, errors = parse_learned(
        {
            "forbid": ["Exporter.*"],
            "pin": [
                {"base": "Carrier", "method": "ship", "from": "dispatch", "add": "*, priority=0"}
            ],
        },
        ".repairbot.toml",
    )
    assert errors == []
    assert config.forbid == ("Exporter.*",)
    assert config.pins == (
        Pin("Carrier", "ship", "dispatch", (Param("priority", "keyword-only", "0"),)),
    )


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("not a table", "[learned]: must be a table"),
        ({"forbid": "Exporter.*"}, "'forbid' must be a list of strings"),
        ({"pin": [{"base": "Carrier", "method": "ship"}]}, "needs 'from'"),
        ({"pin": [{"base": "Car rier", "method": "ship", "from": "x"}]}, "'base' must be"),
        ({"pin": [{"base": "C", "method": "m", "add": "*, ="}]}, "not a parameter list"),
        ({"pin": [{"base": "C", "method": "m", "from": "o", "sink": 1}]}, "unknown keys"),
        ({"pin": ["C.m"]}, "pin #1: must be a table"),
    ],
)
def test_bad_learned_tables_are_reported_not_raised(table: object, message: str) -> None:
    config, errors = parse_learned(table, ".repairbot.toml")
    assert len(errors) == 1 and message in errors[0], errors
    assert config.pins == ()
