"""Which Python runs a target's tests: the target's own environment, as its ``[verify]`` says.

* ``python = "/opt/venvs/proj/bin/python"``: an interpreter the operator prepared on the runner
  host with the target's dependencies;
* ``environment = "uv"``: one built by uv from the target's requirements (``requirements =
  [files]``: requirement files or lock files; default its lock file — ``uv.lock``,
  ``poetry.lock``, ``pylock.toml`` — else ``requirements.txt``, else ``[project] dependencies``
  of its ``pyproject.toml``), cached by their hash under the runner's cache folder;
* ``image = "name"``: a container image this runner holds (``bot.runner.images``); its root
  filesystem becomes the sandbox's system view and its Python (or ``python``, a path inside
  it) runs the tests;
* none: repairbot's own interpreter (the embedded default, what the demo uses).

Building runs no target code: every line must be a plain requirement (no ``-r``/``--index-url``
options, no URLs or paths), and uv installs wheels only (``--only-binary :all:``), which
unpack without executing anything; the interpreter built is then used only inside the sandbox.
Which environment a verdict ran in, with its Python and key package versions (read by a probe
inside the sandbox: an environment's packages may run code as Python starts), is part of the
verdict.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from uv import find_uv_bin

from bot.runner.images import ImageProblem, image_python, image_root
from bot.runner.lock_files import LOCK_FILES, LockProblem, first_lock, is_lock_file, lock_pins
from fixers.repo.paths import FileRefused, read_repo_file

BUILD_TIMEOUT_S = 900
MAX_REQUIREMENTS = 500
SHOWN_PACKAGES = 8


class EnvironmentProblem(Exception):
    """The target's environment cannot be used or built; the message says why."""


@dataclass(frozen=True)
class TargetPython:
    """The interpreter a verification runs, how to name it in a verdict, and the requirements
    whose versions the verdict shows."""

    python: str
    description: str
    requirements: tuple[str, ...] = ()
    image_root: Path | None = None  # a container image's root filesystem: python is inside it


def _verify_table(root: Path) -> dict[str, object]:
    try:
        data = tomllib.loads(read_repo_file(root, ".repairbot.toml").decode("utf-8"))
    except (OSError, FileRefused, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return {}  # absent or unreadable: the config check reports it; the default applies
    table = data.get("verify", {})
    return table if isinstance(table, dict) else {}


def requirements_of(root: Path, files: list[str] | None) -> list[str]:
    """The target's requirements as plain requirement strings; refuses anything else."""
    lines: list[str] = []
    lock = first_lock([name for name in LOCK_FILES if (root / name).is_file()])
    names = files if files is not None else [lock or "requirements.txt"]
    found = [name for name in names if (root / name).is_file()]
    if files is not None and len(found) < len(files):
        missing = sorted(set(files) - set(found))
        raise EnvironmentProblem(f"[verify] requirements: no such file {', '.join(missing)}")
    for name in found:
        text = read_repo_file(root, name).decode("utf-8", errors="replace")
        if is_lock_file(name):
            try:
                lines += lock_pins(name, text)
            except LockProblem as exc:
                raise EnvironmentProblem(str(exc)) from exc
            continue
        lines += [line.split(" #", 1)[0].strip() for line in text.splitlines()]
    if not found:
        try:
            project = tomllib.loads(read_repo_file(root, "pyproject.toml").decode("utf-8"))
        except (OSError, FileRefused, UnicodeDecodeError, tomllib.TOMLDecodeError):
            project = {}
        deps = project.get("project", {}).get("dependencies", [])
        lines = [str(d) for d in deps] if isinstance(deps, list) else []
    wanted = [line for line in lines if line and not line.startswith("#")]
    if len(wanted) > MAX_REQUIREMENTS:
        raise EnvironmentProblem(f"more than {MAX_REQUIREMENTS} requirements")
    for line in wanted:
        try:
            requirement = Requirement(line)
        except InvalidRequirement as exc:
            raise EnvironmentProblem(
                f"requirement {line[:80]!r} is not a plain requirement (options, paths and "
                f"URLs are refused: building must not reach beyond the package index): {exc}"
            ) from exc
        if requirement.url:
            raise EnvironmentProblem(f"requirement {line[:80]!r} names a URL: refused")
    return sorted(set(wanted))


def _uv() -> str:
    try:
        return str(find_uv_bin())  # the binary uv's PyPI package ships
    except FileNotFoundError:
        found = shutil.which("uv")
        if found is None:
            raise EnvironmentProblem("uv is not installed: pip install uv") from None
        return found


ENVIRONMENT_PROBE = (
    "import json, platform, sys\n"
    "from importlib import metadata\n"
    "found = {}\n"
    "for name in sys.argv[2:]:\n"
    "    try:\n"
    "        found[name] = metadata.version(name)\n"
    "    except metadata.PackageNotFoundError:\n"
    "        found[name] = 'missing'\n"
    "open(sys.argv[1], 'w').write(json.dumps([platform.python_version(), found]))\n"
)


def probe_command(python: str, out: Path, wanted: list[str]) -> list[str]:
    """A command (run in the sandbox: an environment's packages may run code as Python starts)
    that writes the interpreter's version and the versions of ``wanted`` into ``out``."""
    names = ["pytest", *(Requirement(w).name for w in wanted)][:SHOWN_PACKAGES]
    return [python, "-I", "-c", ENVIRONMENT_PROBE, str(out), *dict.fromkeys(names)]


def describe(probed: str) -> str:
    """``Python 3.11.7; pytest 8.3.2, humanize 4.9.0`` from the probe's output."""
    version, found = json.loads(probed)
    return f"Python {version}; " + ", ".join(f"{n} {v}" for n, v in found.items())


def build_uv_environment(cache: Path, requirements: list[str]) -> Path:
    """The interpreter of a uv environment with ``requirements`` and pytest (built once per
    requirement set and Python, then reused)."""
    key_text = "\n".join([sys.version, *requirements])
    key = hashlib.sha256(key_text.encode()).hexdigest()[:16]
    target = cache / key
    python = target / "bin" / "python"
    if (target / ".complete").is_file():
        return python
    cache.mkdir(parents=True, exist_ok=True)
    building = cache / f"{key}.building-{os.getpid()}"
    shutil.rmtree(building, ignore_errors=True)
    uv = _uv()
    env = {**os.environ, "UV_CACHE_DIR": str(cache / "uv-cache")}
    steps = [
        [uv, "venv", "--quiet", "--python", sys.executable, str(building)],
        [uv, "pip", "install", "--quiet", "--python", str(building / "bin" / "python"),
         "--only-binary", ":all:", "pytest", *requirements],
    ]  # fmt: skip
    try:
        for step in steps:
            done = subprocess.run(
                step, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, env=env, check=False
            )
            if done.returncode != 0:
                raise EnvironmentProblem(
                    f"uv could not build the environment: {done.stderr.strip()[-400:]}"
                )
        (building / ".complete").write_text("\n".join(requirements) + "\n")
        # Another worker may have finished the same environment first: then that one is used.
        with contextlib.suppress(OSError):
            building.rename(target)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return python


def _in_image(table: dict[str, object], images: Path | None, cache: Path | None) -> TargetPython:
    name, python = table.get("image"), table.get("python")
    if not isinstance(name, str) or table.get("environment") is not None:
        raise EnvironmentProblem('[verify] image is a name, and excludes environment = "uv"')
    try:
        rootfs = image_root(images, name, cache)
        inside = image_python(rootfs, python if isinstance(python, str) else None)
    except ImageProblem as exc:
        raise EnvironmentProblem(str(exc)) from exc
    return TargetPython(inside, f"image {name}, {inside}", image_root=rootfs)


def target_python(root: Path, cache: Path | None, images: Path | None = None) -> TargetPython:
    """The interpreter for ``root``'s tests, as its ``[verify]`` table says (``images``: the
    container images this runner holds)."""
    table = _verify_table(root)
    python, environment = table.get("python"), table.get("environment")
    if table.get("image") is not None:
        return _in_image(table, images, cache)
    if python is not None:
        if not isinstance(python, str) or not Path(python).is_absolute():
            raise EnvironmentProblem("[verify] python must be an absolute path")
        if not (Path(python).is_file() and os.access(python, os.X_OK)):
            raise EnvironmentProblem(f"[verify] python {python} is not an executable here")
        return TargetPython(python, f"[verify] python {python}")
    if environment == "uv":
        if cache is None:
            raise EnvironmentProblem("no cache folder for built environments on this runner")
        files = table.get("requirements")
        if files is not None and not (
            isinstance(files, list) and all(isinstance(f, str) for f in files)
        ):
            raise EnvironmentProblem("[verify] requirements must be a list of file names")
        wanted = requirements_of(root, files)
        built = str(build_uv_environment(cache, wanted))
        return TargetPython(built, f"uv environment {Path(built).parents[1].name}", tuple(wanted))
    if environment is not None:
        raise EnvironmentProblem(f'[verify] environment must be "uv", got {environment!r}')
    return TargetPython(sys.executable, f"repairbot's own interpreter {sys.executable}")


def import_check_python(root: Path, cache: Path | None) -> tuple[str, str]:
    """The interpreter a fix to ``root`` is import-checked with: the one its verification runs
    (``[verify]``), so a module importing the target's own dependencies is judged where they
    are; repairbot's own, with the reason, when that environment cannot be had."""
    if _verify_table(root).get("image") is not None:
        return sys.executable, "the target's image runs only on the verification runner"
    try:
        return target_python(root, cache).python, ""
    except EnvironmentProblem as exc:
        return sys.executable, f"the target's environment: {exc}"
