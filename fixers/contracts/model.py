"""Contracts as data: the built-in SpecWorkerBase contract and a repository's ``.repairbot.toml``.

A contract says: subclasses of ``base`` must not define ``forbidden``; they implement ``hook``
instead, and the base calls ``restore_hook(*metadata_params)`` after every call, failed or not.
Contracts inferred from source live in ``fixers.contracts.inference``.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fixers.classify.failures import Finding
from fixers.learned.policy import LearnedConfig, parse_learned
from fixers.repo.config_schema import validate_data, validate_text, without_invalid
from fixers.repo.paths import DEFAULT_MAX_FILE_BYTES, FileRefused, read_repo_file

CONFIG_FILE = ".repairbot.toml"
# Every file at a repository's top that the sweep reads its rules from.
CONFIG_FILES = frozenset({CONFIG_FILE, "pyproject.toml"})
DEFAULT_TEST_DIRS: tuple[str, ...] = ("tests", "test", "testing")
LOG_SOURCE = "CI log"  # a contract read off a failure's message: no restore hook in it


@dataclass(frozen=True)
class Contract:
    """One base-class contract. ``source`` says where it came from (builtin, file, inferred).

    Nothing defaults to the built-in contract's names: a contract declared for another base
    says its own forbidden method and hook, and has a restore hook only when it names one.
    """

    name: str
    base: str
    forbidden: str = ""
    hook: str = ""
    restore_hook: str | None = None
    metadata_params: tuple[str, ...] = ()
    base_module: str | None = None
    source: str = "builtin"

    def describe(self) -> str:
        """One line for reports: ``SpecWorkerBase: forward -> _forward_impl``."""
        return f"{self.base}: {self.forbidden} -> {self.hook} ({self.source})"


SPEC_WORKER_CONTRACT = Contract(
    name="spec-worker",
    base="SpecWorkerBase",
    forbidden="forward",
    hook="_forward_impl",
    restore_hook="_ensure_spec_dec_state_restored",
    metadata_params=("attn_metadata", "spec_metadata"),
)
BUILTIN_CONTRACTS: tuple[Contract, ...] = (SPEC_WORKER_CONTRACT,)


@dataclass(frozen=True)
class RepoConfig:
    """What a target repository tells the sweep; ``errors`` are reported, not raised."""

    contracts: tuple[Contract, ...] = ()
    test_dirs: tuple[str, ...] = DEFAULT_TEST_DIRS
    exclude: tuple[str, ...] = ()
    python: tuple[int, int] | None = None
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    errors: tuple[str, ...] = field(default_factory=tuple)
    # [fan_out] rerun_command: posted on affected PRs once the base-branch fix merged (None: never)
    rerun_command: str | None = None
    # [learned]: rules never learned, rules pinned (fixers.learned.policy)
    learned: LearnedConfig = field(default_factory=LearnedConfig)


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_CONTRACT_KEYS = {
    "name",
    "base",
    "base_module",
    "forbidden",
    "hook",
    "restore_hook",
    "metadata_params",
}


def _ident(table: dict[str, Any], key: str, default: str | None, where: str) -> str | None:
    value = table.get(key, default)
    if value is None:
        return None
    if not isinstance(value, str) or not _IDENT.match(value):
        raise ValueError(f"{where}: {key!r} must be a Python identifier, got {value!r}")
    return value


def contract_from_table(table: dict[str, Any], where: str) -> Contract:
    """Build a contract from one ``[[contract]]`` table; raises ``ValueError`` with the reason.

    ``forbidden`` and ``hook`` are required, except for the built-in base (``SpecWorkerBase``),
    whose missing keys keep the built-in contract's values."""
    unknown = sorted(set(table) - _CONTRACT_KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown}; allowed: {sorted(_CONTRACT_KEYS)}")
    base = _ident(table, "base", None, where)
    if base is None:
        raise ValueError(f"{where}: 'base' (the base class name) is required")
    builtin = SPEC_WORKER_CONTRACT if base == SPEC_WORKER_CONTRACT.base else None
    missing = [key for key in ("forbidden", "hook") if key not in table]
    if missing and builtin is None:
        raise ValueError(
            f"{where}: {' and '.join(repr(k) for k in missing)} required for {base} (only "
            f'{SPEC_WORKER_CONTRACT.base} has built-in names), e.g. forbidden = "run", '
            'hook = "_run_impl"'
        )
    base_module = table.get("base_module")
    if base_module is not None and (
        not isinstance(base_module, str) or not _DOTTED.match(base_module)
    ):
        raise ValueError(f"{where}: 'base_module' must be a dotted module name")
    params = table.get("metadata_params", list(builtin.metadata_params if builtin else ()))
    if not isinstance(params, list) or not all(
        isinstance(p, str) and _IDENT.match(p) for p in params
    ):
        raise ValueError(f"{where}: 'metadata_params' must be a list of identifiers")
    forbidden = _ident(table, "forbidden", builtin.forbidden if builtin else None, where) or ""
    hook = _ident(table, "hook", builtin.hook if builtin else None, where) or ""
    if forbidden == hook:
        raise ValueError(f"{where}: 'forbidden' and 'hook' must differ")
    name = table.get("name", base)
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where}: 'name' must be a non-empty string")
    return Contract(
        name=name,
        base=base,
        base_module=base_module,
        forbidden=forbidden,
        hook=hook,
        restore_hook=_ident(
            table, "restore_hook", builtin.restore_hook if builtin else None, where
        ),
        metadata_params=tuple(params),
        source=CONFIG_FILE,
    )


def parse_python_floor(spec: str) -> tuple[int, int] | None:
    """The lowest ``3.N`` a ``requires-python``-style string allows (``">=3.10,<4"`` -> (3, 10))."""
    best: tuple[int, int] | None = None
    for match in re.finditer(r"(>=|~=|==|>)?\s*(\d+)\.(\d+)", spec):
        op, major, minor = match.group(1), int(match.group(2)), int(match.group(3))
        if op in (None, ">=", "~=", "==", ">"):
            version = (major, minor + 1) if op == ">" else (major, minor)
            best = version if best is None or version < best else best
    return best


def _string_list(value: object, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{CONFIG_FILE}: {key!r} must be a list of strings")
    return tuple(value)


def read_repo_toml(root: Path, name: str) -> dict[str, Any] | None:
    """A TOML file at the repository's top (``pyproject.toml``), or None when it is not usable.

    Read like every repository file: never through a symlink out of the tree, within the cap.
    """
    try:
        return tomllib.loads(read_repo_file(root, name).decode("utf-8"))
    except (OSError, FileRefused, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return None


def _positive_int(value: object, key: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{CONFIG_FILE}: {key!r} must be a positive integer (bytes)")
    return value


def _pyproject_floor(root: Path) -> tuple[int, int] | None:
    data = read_repo_toml(root, "pyproject.toml")
    if data is None:
        return None
    project = data.get("project")
    spec = project.get("requires-python") if isinstance(project, dict) else None
    return parse_python_floor(spec) if isinstance(spec, str) else None


def parse_config(text: str, root: Path) -> RepoConfig:
    """Parse ``.repairbot.toml`` text. Every problem becomes an entry in ``errors``."""
    errors: list[str] = []
    python = _pyproject_floor(root)
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):  # RecursionError: nesting a few
        # thousand arrays deep (a hostile file) exhausts tomllib's recursive parser
        problems = validate_text(text)
        return RepoConfig(python=python, errors=tuple(p.render(CONFIG_FILE) for p in problems))
    # The schema first: every key checked, and what it rejects is left out of what the
    # readers below see (each problem reported once).
    invalid = validate_data(data, text)
    data = without_invalid(data, invalid)
    errors.extend(p.render(CONFIG_FILE) for p in invalid)
    contracts: list[Contract] = []
    tables = data.get("contract", [])
    if not isinstance(tables, list):
        errors.append(f"{CONFIG_FILE}: 'contract' must be an array of tables ([[contract]])")
        tables = []
    for number, table in enumerate(tables, start=1):
        where = f"{CONFIG_FILE} contract #{number}"
        try:
            if not isinstance(table, dict):
                raise ValueError(f"{where}: must be a table")
            contracts.append(contract_from_table(table, where))
        except ValueError as exc:
            errors.append(str(exc))
    test_dirs: tuple[str, ...] = DEFAULT_TEST_DIRS
    exclude: tuple[str, ...] = ()
    max_file_bytes = DEFAULT_MAX_FILE_BYTES
    try:
        if "max_file_bytes" in data:
            max_file_bytes = _positive_int(data["max_file_bytes"], "max_file_bytes")
        if "test_dirs" in data:
            test_dirs = _string_list(data["test_dirs"], "test_dirs")
        if "exclude" in data:
            exclude = _string_list(data["exclude"], "exclude")
        if "python" in data:
            floor = parse_python_floor(str(data["python"]))
            if floor is None:
                raise ValueError(f"{CONFIG_FILE}: 'python' must look like \"3.10\"")
            python = floor
    except ValueError as exc:
        errors.append(str(exc))
    rerun_command, problem = _rerun_command(data.get("fan_out"))
    if problem:
        errors.append(problem)
    learned, learned_problems = parse_learned(data.get("learned", {}), CONFIG_FILE)
    errors.extend(learned_problems)
    return RepoConfig(
        contracts=tuple(contracts),
        test_dirs=test_dirs,
        exclude=exclude,
        python=python,
        max_file_bytes=max_file_bytes,
        errors=tuple(errors),
        rerun_command=rerun_command,
        learned=learned,
    )


RERUN_COMMAND_MAX = 200


def _rerun_command(table: object) -> tuple[str | None, str | None]:
    """``[fan_out] rerun_command``: one line the bot may post (a CI bot's command), or a problem."""
    if table is None:
        return None, None
    where = f"{CONFIG_FILE} [fan_out]"
    if not isinstance(table, dict):
        return None, f"{where}: must be a table"
    command = table.get("rerun_command")
    if command is None:
        return None, None
    if not isinstance(command, str) or not command.strip():
        return None, f"{where}: 'rerun_command' must be a non-empty string"
    if "\n" in command or "\r" in command or len(command) > RERUN_COMMAND_MAX:
        return None, f"{where}: 'rerun_command' must be one line, {RERUN_COMMAND_MAX} chars at most"
    return command.strip(), None


def load_config(root: Path) -> RepoConfig:
    """Read ``root/.repairbot.toml`` if present (unreadable or invalid files give ``errors``)."""
    path = root / CONFIG_FILE
    if not path.is_file() and not path.is_symlink():
        return RepoConfig(python=_pyproject_floor(root))
    try:
        text = read_repo_file(root, CONFIG_FILE).decode("utf-8")
    except (OSError, FileRefused, UnicodeDecodeError) as exc:
        return RepoConfig(
            python=_pyproject_floor(root), errors=(f"{CONFIG_FILE}: unreadable: {exc}",)
        )
    return parse_config(text, root)


def contract_from_option(option: str) -> Contract:
    """Parse ``--contract``: ``Base:forbidden:hook[:restore_hook]``, or ``builtin``
    (``SpecWorkerBase`` alone means the built-in contract too)."""
    if option in ("builtin", SPEC_WORKER_CONTRACT.name, SPEC_WORKER_CONTRACT.base):
        return SPEC_WORKER_CONTRACT
    parts = option.split(":")
    if not 1 <= len(parts) <= 4 or not all(_IDENT.match(p) for p in parts):
        raise ValueError(
            f"--contract {option!r}: expected Base:forbidden:hook[:restore_hook] "
            "(e.g. Shape:area:_area_impl) or builtin"
        )
    if len(parts) < 3:
        missing = " and ".join(("forbidden", "hook")[len(parts) - 1 :])
        raise ValueError(
            f"--contract {option!r}: {missing} missing; expected "
            f"{parts[0]}:forbidden:hook[:restore_hook] (e.g. Shape:area:_area_impl)"
        )
    table: dict[str, Any] = {"base": parts[0]}
    for key, value in zip(("forbidden", "hook", "restore_hook"), parts[1:], strict=False):
        table[key] = value
    return Contract(**{**contract_from_table(table, "--contract").__dict__, "source": "--contract"})


def contracts_from_findings(
    findings: list[Finding], known: tuple[Contract, ...] = BUILTIN_CONTRACTS
) -> list[Contract]:
    """The contracts a classified CI log points at.

    ``contract-forward-override`` names base, method and hook (a known contract with that base
    and method is preferred, since it also knows the restore hook); ``abstract-method-missing``
    picks every known contract whose hook is among the missing methods.
    """
    picked: list[Contract] = []
    for finding in findings:
        if finding.signature == "contract-forward-override":
            base = finding.captures.get("base", "")
            method = finding.captures.get("method", "forward")
            hook = finding.captures.get("hook", "_forward_impl")
            match = [c for c in known if c.base == base and c.forbidden == method]
            if match:
                picked.extend(match)
            elif (
                _IDENT.match(base)
                and _IDENT.match(method)
                and _IDENT.match(hook)
                and method != hook
            ):
                picked.append(
                    Contract(
                        name=f"{base}.{method}",
                        base=base,
                        forbidden=method,
                        hook=hook,
                        source=LOG_SOURCE,
                    )
                )
        elif finding.signature == "abstract-method-missing":
            missing = set(finding.missing_methods)
            picked.extend(c for c in known if c.hook in missing)
    return list(dict.fromkeys(picked))
