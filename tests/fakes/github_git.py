"""The fake GitHub's repositories: real bare git repositories plus PRs, comments and statuses."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.fakes.github_shapes import (
    PUBLIC_API,
    WEB,
    association,
    node_id,
    reaction_rollup,
    repository,
    timestamp,
    user,
)

# Who GitHub's own commits (a squash, an "Update branch" merge) are by.
AS_GITHUB = ("-c", "user.name=GitHub", "-c", "user.email=noreply@github.com")

# ``git diff --raw`` status letters as the REST API spells them.
FILE_STATUS = {"A": "added", "D": "removed", "M": "modified", "T": "changed"}


def git_out(repo: Path, *args: str) -> str:
    """``git -C repo args`` (no shell), stdout stripped; raises on failure."""
    result = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=60, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip()


def _now() -> str:
    return timestamp()


def _utc(iso: str) -> str:
    """A git ``%aI`` date (with its offset) as GitHub writes times."""
    return timestamp(datetime.fromisoformat(iso))


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
    # Where the double serves the API (``FakeGitHub.create_repo`` sets it): its objects' URLs.
    api_url: str = PUBLIC_API

    @classmethod
    def create(cls, root: Path, full_name: str, source: Path, default_branch: str) -> FakeRepo:
        """A bare clone of ``source`` at ``root/owner/name.git``."""
        path = root / f"{full_name}.git"
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "clone", "--bare", "--quiet", str(source), str(path)], check=True, timeout=60
        )
        return cls(full_name, path, default_branch)

    @property
    def owner(self) -> str:
        """The login the repository belongs to."""
        return self.full_name.split("/", 1)[0]

    def json(self, api_url: str, *, full: bool = True) -> dict[str, Any]:
        """The repository object of the REST API: ``full-repository``, or nested ``repository``."""
        return repository(self.full_name, self.default_branch, api_url, full=full)

    def association(self, login: str) -> str:
        """``author_association`` of ``login`` here (owner, collaborator or none)."""
        return association(self.owner, self.permissions, login)

    def user(self, login: str) -> dict[str, Any]:
        """``login`` as a ``simple-user`` (a ``[bot]`` login is a Bot)."""
        return user(login, "Bot" if login.endswith("[bot]") else "User", self.api_url)

    def sha(self, ref: str) -> str:
        """The commit a branch (or SHA) points at."""
        return git_out(self.path, "rev-parse", "--verify", f"{ref}^{{commit}}")

    def add_pull(
        self,
        number: int,
        head: str,
        base: str | None,
        title: str,
        body: str,
        login: str,
        *,
        head_repo: FakeRepo | None = None,
    ) -> int:
        """Record an open PR from branch ``head`` (of ``head_repo``, default this repository:
        ``tests/fakes/github_forks.py``) into ``base`` (default branch)."""
        base = base or self.default_branch
        source = head_repo or self
        head_sha = source.sha(f"refs/heads/{head}")
        owner = self.full_name.split("/")[0]
        self._track_head(number, source, head, head_sha)
        self.pulls[number] = {
            "number": number,
            "state": "open",
            "title": title,
            "body": body,
            "user": self.user(login),
            "head": {"ref": head, "sha": head_sha, "label": f"{source.owner}:{head}"},
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
        if head_repo is not None:
            self.pulls[number]["head_repo"] = head_repo
        self.comments[number] = []
        return number

    def _track_head(self, number: int, source: FakeRepo, branch: str, head_sha: str) -> None:
        """``refs/pull/N/head`` at the head commit; fetched from ``source`` when it is a fork
        (GitHub keeps a fork PR's head in the base repository too)."""
        if source is self:
            git_out(self.path, "update-ref", f"refs/pull/{number}/head", head_sha)
        else:
            refspec = f"+refs/heads/{branch}:refs/pull/{number}/head"
            git_out(self.path, "fetch", "--quiet", str(source.path), refspec)

    def commit_json(self, sha: str) -> dict[str, Any]:
        """A ``commit`` of the REST API, read from the bare repository."""
        fields = git_out(
            self.path,
            "show",
            "-s",
            "--format=%an%x1f%ae%x1f%aI%x1f%cn%x1f%ce%x1f%cI%x1f%T%x1f%P",
            sha,
        )
        author, email, authored, committer, committer_email, committed, tree, parents = (
            fields.split("\x1f")
        )
        message = git_out(self.path, "show", "-s", "--format=%B", sha)
        api = f"{self.api_url}/repos/{self.full_name}"
        return {
            "sha": sha,
            "node_id": node_id("Commit", int(sha[:7], 16)),
            "url": f"{api}/commits/{sha}",
            "html_url": f"{WEB}/{self.full_name}/commit/{sha}",
            "comments_url": f"{api}/commits/{sha}/comments",
            "commit": {
                "url": f"{api}/git/commits/{sha}",
                "author": {"name": author, "email": email, "date": _utc(authored)},
                "committer": {"name": committer, "email": committer_email, "date": _utc(committed)},
                "message": message,
                "comment_count": 0,
                "tree": {"sha": tree, "url": f"{api}/git/trees/{tree}"},
                "verification": {
                    "verified": False,
                    "reason": "unsigned",
                    "payload": None,
                    "signature": None,
                    "verified_at": None,
                },
            },
            # The double's commit authors are not GitHub accounts, which GitHub answers as null.
            "author": None,
            "committer": None,
            "parents": [
                {
                    "sha": parent,
                    "url": f"{api}/commits/{parent}",
                    "html_url": f"{WEB}/{self.full_name}/commit/{parent}",
                }
                for parent in parents.split()
            ],
        }

    def refresh(self, number: int) -> dict[str, Any]:
        """A PR with its head SHA following its branch while it is open (pushes move it)."""
        pull = self.pulls[number]
        if pull["state"] == "open":
            source = pull.get("head_repo") or self
            try:
                head_sha = source.sha(f"refs/heads/{pull['head']['ref']}")
            except RuntimeError:  # its head branch was deleted: GitHub closes the PR
                pull.update(state="closed", closed_at=_now(), updated_at=_now())
                return pull
            if head_sha != pull["head"]["sha"]:
                # Bookkeeping (not served): the head before this push, a ``synchronize``'s before.
                pull["_before"] = pull["head"]["sha"]
                pull["head"]["sha"] = head_sha
                pull["updated_at"] = _now()
                self._track_head(number, source, pull["head"]["ref"], head_sha)
        return pull

    def merge(self, number: int, login: str, *, squash: bool = False) -> None:
        """Fast-forward the base branch to the PR's head (or, ``squash``, add one commit with
        the head's tree on top of the base) and close the PR as merged."""
        pull = self.refresh(number)
        base_ref = f"refs/heads/{pull['base']['ref']}"
        head = pull["head"]["sha"]
        if squash:
            title = f"{pull['title']} (#{number})"
            landed = git_out(
                self.path,
                *AS_GITHUB,
                "commit-tree",
                "-p",
                base_ref,
                "-m",
                title,
                f"{head}^{{tree}}",
            )
        else:
            git_out(self.path, "merge-base", "--is-ancestor", base_ref, head)
            landed = head
        git_out(self.path, "update-ref", base_ref, landed)
        pull.update(
            state="closed",
            merged=True,
            merged_at=_now(),
            closed_at=_now(),
            merge_commit_sha=landed,
            merged_by=self.user(login),
        )

    def update_branch(self, number: int) -> str:
        """GitHub's "Update branch" on a PR from this repository: a merge commit of the base's
        tip into the PR's branch (parents: its head, then the base), with the clean merge's
        tree; refuses a conflict, as GitHub's button does. The new head."""
        pull = self.refresh(number)
        head, base = pull["head"]["sha"], self.sha(f"refs/heads/{pull['base']['ref']}")
        tree = git_out(self.path, "merge-tree", "--write-tree", head, base).split()[0]
        message = f"Merge branch '{pull['base']['ref']}' into {pull['head']['ref']}"
        merge = git_out(
            self.path, *AS_GITHUB, "commit-tree", "-p", head, "-p", base, "-m", message, tree
        )
        git_out(self.path, "update-ref", f"refs/heads/{pull['head']['ref']}", merge, head)
        return merge

    def files(self, number: int) -> list[dict[str, Any]]:
        """The PR's changed files (``diff-entry``), from the merge base to the head."""
        pull = self.refresh(number)
        head = pull["head"]["sha"]
        span = f"{pull['base']['sha']}...{head}"
        counts = git_out(self.path, "diff", "--no-renames", "--numstat", span)
        raw = git_out(self.path, "diff", "--no-renames", "--raw", "--no-abbrev", span)
        blobs = {}
        for line in raw.splitlines():
            meta, name = line.split("\t", 1)
            _, _, old_blob, new_blob, letter = meta.split()
            blobs[name] = (
                new_blob if letter != "D" else old_blob,
                FILE_STATUS.get(letter, "changed"),
            )
        files = []
        for line in counts.splitlines():
            added, deleted, name = line.split("\t", 2)
            # Binary files count as "-" in numstat; GitHub counts them as 0 changed lines.
            plus, minus = (int(n) if n.isdigit() else 0 for n in (added, deleted))
            blob, status = blobs[name]
            files.append(
                {
                    "sha": blob,
                    "filename": name,
                    "status": status,
                    "additions": plus,
                    "deletions": minus,
                    "changes": plus + minus,
                    "blob_url": f"{WEB}/{self.full_name}/blob/{head}/{name}",
                    "raw_url": f"{WEB}/{self.full_name}/raw/{head}/{name}",
                    "contents_url": f"{self.api_url}/repos/{self.full_name}/contents/{name}"
                    f"?ref={head}",
                }
            )
        return files

    def stats(self, number: int) -> dict[str, int]:
        """The counts a full ``pull-request`` carries."""
        pull = self.refresh(number)
        files = self.files(number)
        span = f"{pull['base']['sha']}..{pull['head']['sha']}"
        return {
            "comments": len(self.comments.get(number, [])),
            "review_comments": 0,
            "commits": int(git_out(self.path, "rev-list", "--count", span)),
            "additions": sum(f["additions"] for f in files),
            "deletions": sum(f["deletions"] for f in files),
            "changed_files": len(files),
        }

    def add_comment(
        self, comment_id: int, number: int, body: str, login: str, user_type: str, api_url: str
    ) -> dict[str, Any]:
        """A comment on issue/PR ``number``."""
        comment = {
            "id": comment_id,
            "node_id": node_id("IssueComment", comment_id),
            "url": f"{api_url}/repos/{self.full_name}/issues/comments/{comment_id}",
            "html_url": f"{WEB}/{self.full_name}/pull/{number}#issuecomment-{comment_id}",
            "body": body,
            "user": user(login, user_type, api_url),
            "created_at": _now(),
            "updated_at": _now(),
            "issue_url": f"{api_url}/repos/{self.full_name}/issues/{number}",
            "author_association": self.association(login),
            "performed_via_github_app": None,
            "reactions": reaction_rollup(
                f"{api_url}/repos/{self.full_name}/issues/comments/{comment_id}/reactions", []
            ),
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
