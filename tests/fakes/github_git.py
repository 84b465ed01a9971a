"""The fake GitHub's repositories: real bare git repositories plus PRs, comments and statuses."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def git_out(repo: Path, *args: str) -> str:
    """``git -C repo args`` (no shell), stdout stripped; raises on failure."""
    result = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=60, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip()


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def user(login: str, user_type: str = "User") -> dict[str, Any]:
    """A user object as the REST API nests it."""
    return {"login": login, "id": abs(hash(login)) % 10**7, "type": user_type}


@dataclass
class FakeRepo:
    """One repository on the fake GitHub."""

    full_name: str
    path: Path
    default_branch: str
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    reactions: list[dict[str, Any]] = field(default_factory=list)
    permissions: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, root: Path, full_name: str, source: Path, default_branch: str) -> FakeRepo:
        """A bare clone of ``source`` at ``root/owner/name.git``."""
        path = root / f"{full_name}.git"
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "clone", "--bare", "--quiet", str(source), str(path)], check=True, timeout=60
        )
        return cls(full_name, path, default_branch)

    def json(self, api_url: str) -> dict[str, Any]:
        """The repository object of the REST API."""
        owner, name = self.full_name.split("/", 1)
        return {
            "id": abs(hash(self.full_name)) % 10**8,
            "name": name,
            "full_name": self.full_name,
            "owner": user(owner, "Organization"),
            "private": False,
            "default_branch": self.default_branch,
            "url": f"{api_url}/repos/{self.full_name}",
            "html_url": f"https://github.com/{self.full_name}",
        }

    def sha(self, ref: str) -> str:
        """The commit a branch (or SHA) points at."""
        return git_out(self.path, "rev-parse", "--verify", f"{ref}^{{commit}}")

    def add_pull(
        self, number: int, head: str, base: str | None, title: str, body: str, login: str
    ) -> int:
        """Record an open PR from branch ``head`` into ``base`` (default branch)."""
        base = base or self.default_branch
        head_sha = self.sha(f"refs/heads/{head}")
        owner = self.full_name.split("/")[0]
        git_out(self.path, "update-ref", f"refs/pull/{number}/head", head_sha)
        self.pulls[number] = {
            "number": number,
            "state": "open",
            "title": title,
            "body": body,
            "user": user(login, "Bot" if login.endswith("[bot]") else "User"),
            "head": {"ref": head, "sha": head_sha, "label": f"{owner}:{head}"},
            "base": {
                "ref": base,
                "sha": self.sha(f"refs/heads/{base}"),
                "label": f"{owner}:{base}",
            },
            "merged": False,
            "merged_at": None,
            "merge_commit_sha": None,
            "closed_at": None,
            "draft": False,
            "created_at": _now(),
            "updated_at": _now(),
        }
        self.comments[number] = []
        return number

    def refresh(self, number: int) -> dict[str, Any]:
        """A PR with its head SHA following its branch while it is open (pushes move it)."""
        pull = self.pulls[number]
        if pull["state"] == "open":
            head_sha = self.sha(f"refs/heads/{pull['head']['ref']}")
            if head_sha != pull["head"]["sha"]:
                pull["head"]["sha"] = head_sha
                pull["updated_at"] = _now()
                git_out(self.path, "update-ref", f"refs/pull/{number}/head", head_sha)
        return pull

    def merge(self, number: int, login: str) -> None:
        """Fast-forward the base branch to the PR's head and close the PR as merged."""
        pull = self.refresh(number)
        base_ref = f"refs/heads/{pull['base']['ref']}"
        git_out(self.path, "merge-base", "--is-ancestor", base_ref, pull["head"]["sha"])
        git_out(self.path, "update-ref", base_ref, pull["head"]["sha"])
        pull.update(
            state="closed",
            merged=True,
            merged_at=_now(),
            closed_at=_now(),
            merge_commit_sha=pull["head"]["sha"],
            merged_by=user(login),
        )

    def files(self, number: int) -> list[dict[str, Any]]:
        """The PR's changed files (``git diff --numstat`` from the merge base)."""
        pull = self.refresh(number)
        out = git_out(
            self.path, "diff", "--numstat", f"{pull['base']['sha']}...{pull['head']['sha']}"
        )
        files = []
        for line in out.splitlines():
            added, deleted, name = line.split("\t", 2)
            files.append(
                {
                    "sha": pull["head"]["sha"],
                    "filename": name,
                    "status": "modified",
                    "additions": int(added),
                    "deletions": int(deleted),
                    "changes": int(added) + int(deleted),
                }
            )
        return files

    def add_comment(
        self, comment_id: int, number: int, body: str, login: str, user_type: str, api_url: str
    ) -> dict[str, Any]:
        """A comment on issue/PR ``number``."""
        comment = {
            "id": comment_id,
            "body": body,
            "user": user(login, user_type),
            "url": f"{api_url}/repos/{self.full_name}/issues/comments/{comment_id}",
            "html_url": f"https://github.com/{self.full_name}/pull/{number}#issuecomment-{comment_id}",
            "issue_url": f"{api_url}/repos/{self.full_name}/issues/{number}",
            "created_at": _now(),
            "updated_at": _now(),
            "author_association": "NONE",
        }
        self.comments.setdefault(number, []).append(comment)
        return comment

    def find_comment(self, comment_id: int) -> dict[str, Any] | None:
        """A comment by id, on any PR."""
        for thread in self.comments.values():
            for comment in thread:
                if comment["id"] == comment_id:
                    return comment
        return None
