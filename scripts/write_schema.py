"""Regenerate fixers/schemas/failure-analysis.schema.json from the pydantic model."""

from __future__ import annotations

import json
from pathlib import Path

from fixers.intake.analysis import json_schema

TARGET = Path(__file__).resolve().parents[1] / "fixers" / "schemas" / "failure-analysis.schema.json"

if __name__ == "__main__":
    TARGET.write_text(json.dumps(json_schema(), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {TARGET}")
