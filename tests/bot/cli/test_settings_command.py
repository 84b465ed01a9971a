"""``repairbot settings``: the reference of every setting is the settings model's own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bot.cli.settings_command import markdown, rows
from bot.config import Settings

ROOT = Path(__file__).resolve().parents[3]
REPAIRBOT = Path(sys.executable).with_name("repairbot")


def test_docs_settings_is_what_the_model_says() -> None:
    # Regenerate with: repairbot settings --markdown > docs/settings.md
    assert (ROOT / "docs" / "settings.md").read_text(encoding="utf-8") == markdown()


def test_every_setting_is_described_and_listed_once() -> None:
    listed = [variable for variable, _, _ in rows()]
    assert len(listed) == len(set(listed)) == len(Settings.model_fields)
    assert all(text for _, _, text in rows())
    defaults = dict((v, d) for v, d, _ in rows())
    assert defaults["REPAIRBOT_CI_TOKEN"].endswith("(development only)")


def test_the_command_prints_the_reference() -> None:
    out = subprocess.run(
        [str(REPAIRBOT), "settings", "--markdown"], capture_output=True, text=True, check=True
    ).stdout
    assert out == markdown()
