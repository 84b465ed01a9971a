"""The wheel a team installs: built from the tracked files, checked with twine, installed in a
new virtual environment (from the package index, as a user would) without torch, and its
command line run on a real repository."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from pathlib import Path

from bot.version import __version__
from tests.fixers.git_repos import BAD, commit_all, git, worker_repo, write

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=900, check=False
    )


def _tracked_copy(target: Path) -> Path:
    listed = _run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT)
    for rel in filter(None, listed.stdout.split("\0")):
        source = ROOT / rel
        if source.is_file():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / rel)
    return target


def test_the_wheel_installs_without_torch_and_its_command_line_works(tmp_path: Path) -> None:
    source = _tracked_copy(tmp_path / "src")
    built = _run(sys.executable, "-m", "build", "--wheel", "--outdir", tmp_path / "dist", source)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    [wheel] = (tmp_path / "dist").glob("repairbot-*.whl")
    assert wheel.name.startswith(f"repairbot-{__version__}-")
    checked = _run(sys.executable, "-m", "twine", "check", "--strict", wheel)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python, cli = env / "bin" / "python", env / "bin" / "repairbot"
    installed = _run(python, "-m", "pip", "install", "--quiet", wheel)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    assert _run(python, "-c", "import torch").returncode != 0  # the runtime is an extra
    assert _run(cli, "--version").stdout.strip() == f"repairbot {__version__}"

    repo = worker_repo(tmp_path / "repo", old_violation=False)
    write(repo, "pkg/new.py", BAD.format(name="NewWorker"))
    git(repo, "add", "pkg/new.py")
    check = _run(cli, "check", cwd=repo)
    assert check.returncode == 1 and "NewWorker" in check.stdout, check.stdout + check.stderr
    fixed = _run(cli, "fix", ".", "--diff", "--no-import-check", cwd=repo)
    assert fixed.returncode == 0 and "+++ b/pkg/new.py" in fixed.stdout, fixed.stderr
    commit_all(repo, "the new worker")
    # The service is an extra too: asked for without it, one line says what to install.
    served = _run(cli, "serve", "--port", "9", cwd=tmp_path)
    assert served.returncode == 2
    assert "pip install 'repairbot[service]'" in served.stderr, served.stderr
