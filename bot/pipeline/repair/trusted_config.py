"""Reading a repository's configuration from a trusted commit (its base branch), defensively:
the file is the repository's, so its type and size are checked before a byte of it is read."""

from __future__ import annotations

from pathlib import Path

from bot.git import run_git
from fixers.contracts.model import CONFIG_FILE

MAX_POLICY_BYTES = 256 * 1024


def config_text(repo: Path, commit: str, source: str) -> tuple[str | None, str | None]:
    """``.repairbot.toml``'s text at ``commit`` and, when it cannot be used, why: read only
    when it is a regular file within the cap (its size is checked before a byte is read), as
    UTF-8. (None, None): there is no such file."""
    listed = run_git(repo, "ls-tree", "-l", commit, "--", CONFIG_FILE)
    entry = listed.stdout.decode("utf-8", "replace").split("\t")[0].split()
    if listed.returncode != 0 or len(entry) != 4:
        return None, None
    mode, kind, blob, size = entry
    if kind != "blob" or mode not in ("100644", "100755"):
        return None, f"{source}: not a regular file; ignored"
    if not size.isdigit() or int(size) > MAX_POLICY_BYTES:
        return None, f"{source}: {size} bytes, over {MAX_POLICY_BYTES}; ignored"
    try:
        return run_git(repo, "cat-file", "blob", blob).stdout.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, f"{source}: not UTF-8 ({exc}); ignored"
