"""Repositories for the contract check's tests: a base with a contract, and PR branches on it.

The contract is one the sweep infers: ``DraftWorkerBase`` gains an ``__init_subclass__`` guard
(subclasses must implement ``_forward_impl``, never ``forward``) in :data:`CONTRACT`. Before it
(:data:`PRE_CONTRACT`) overriding ``forward`` is how workers are written. Commits are made with
``git fast-import`` straight into a bare repository: thousands of files cost one process.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.fakes.github_git import git_out

PRE_CONTRACT = {
    "spec/__init__.py": "",
    "spec/base.py": (
        "class DraftWorkerBase:\n"
        '    """Speculative-decoding draft workers."""\n'
        "\n"
        "    def forward(self, x):\n"
        "        raise NotImplementedError\n"
    ),
    "spec/eagle.py": (
        "from spec.base import DraftWorkerBase\n"
        "\n"
        "\n"
        "class EagleWorker(DraftWorkerBase):\n"
        "    def forward(self, x):\n"
        "        return x + 1\n"
    ),
    "README.md": "# spec\n",
}
CONTRACT = {
    "spec/base.py": (
        "from abc import abstractmethod\n"
        "\n"
        "\n"
        "class DraftWorkerBase:\n"
        '    """Speculative-decoding draft workers: implement _forward_impl, never forward."""\n'
        "\n"
        "    def __init_subclass__(cls, **kwargs):\n"
        "        super().__init_subclass__(**kwargs)\n"
        '        if "forward" in cls.__dict__:\n'
        '            raise TypeError(f"{cls.__name__} must not override DraftWorkerBase.forward")\n'
        "\n"
        "    def forward(self, x):\n"
        "        try:\n"
        "            return self._forward_impl(x)\n"
        "        finally:\n"
        "            self._restore(x)\n"
        "\n"
        "    @abstractmethod\n"
        "    def _forward_impl(self, x):\n"
        "        ...\n"
        "\n"
        "    def _restore(self, x):\n"
        "        pass\n"
    ),
    "spec/eagle.py": (
        "from spec.base import DraftWorkerBase\n"
        "\n"
        "\n"
        "class EagleWorker(DraftWorkerBase):\n"
        "    def _forward_impl(self, x):\n"
        "        return x + 1\n"
    ),
}


def worker(name: str, method: str = "forward") -> str:
    """A draft worker module defining ``method`` (``forward`` breaks the contract)."""
    return (
        "from spec.base import DraftWorkerBase\n"
        "\n"
        "\n"
        f"class {name}(DraftWorkerBase):\n"
        f"    def {method}(self, x):\n"
        "        return x * 2\n"
    )


def commit(
    bare: Path, branch: str, files: dict[str, str | None], *, parent: str | None, message: str
) -> str:
    """Commit ``files`` (None deletes a path) on top of ``parent`` as ``branch``; its SHA."""
    lines = [f"commit refs/heads/{branch}", "committer t <t@example.invalid> 1700000000 +0000"]
    chunks = ["\n".join(lines).encode(), _data(message.encode())]
    chunks.append(f"from {parent}".encode() if parent else b"")
    for path, text in files.items():
        if text is None:
            chunks.append(f"D {path}".encode())
        else:
            chunks.append(f"M 100644 inline {path}".encode())
            chunks.append(_data(text.encode()))
    stream = b"\n".join(c for c in chunks if c) + b"\n"
    subprocess.run(
        ["git", "-C", str(bare), "fast-import", "--quiet", "--force"],
        input=stream,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return git_out(bare, "rev-parse", f"refs/heads/{branch}")


def _data(payload: bytes) -> bytes:
    return f"data {len(payload)}\n".encode() + payload


def new_repo(path: Path, files: dict[str, str | None]) -> tuple[Path, str]:
    """A work repository at ``path`` whose ``main`` holds ``files``: (path, commit)."""
    git_out(path.parent, "init", "--quiet", "--initial-branch=main", str(path))
    sha = commit(path / ".git", "main", files, parent=None, message="pre-contract workers")
    git_out(path, "reset", "--quiet", "--hard", "main")
    return path, sha
