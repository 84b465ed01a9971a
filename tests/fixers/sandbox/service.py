"""Stands in for the service in the hostile tests: a process whose environment holds a secret.

``service.py MODE RUN_DIR CONFIG``: ``sandboxed`` runs ``hostile.py CONFIG`` through
``fixers.sandbox.run_isolated``; ``plain`` runs it with a bare ``subprocess.run`` (the control,
and what ``check_imports`` used to do); ``probe`` runs ``check_imports`` on the repository named in
CONFIG; ``sleep`` starts a sandboxed sleeper (argv carries CONFIG's ``marker``) and waits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fixers.evidence.import_check import check_imports
from fixers.sandbox import Limits, SandboxOptions, run_isolated
from fixers.sweep.outcome import FileChange

HOSTILE = Path(__file__).with_name("hostile.py")
# The service's settings, small: the hostile code's allocation must meet them on this machine.
LIMITS = Limits(timeout_s=300, max_processes=128, max_memory_bytes=512 << 20)


def main() -> None:
    """Run one mode (see the module docstring)."""
    mode, run_dir, config_path = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    config = json.loads(config_path.read_text())
    config["parent_pid"] = os.getpid()  # the process whose environment holds the secret
    config_path.write_text(json.dumps(config))
    if mode == "probe":
        repo = Path(config["repo"])
        source = HOSTILE.read_text().replace(
            'CONFIG_PATH = ""', f"CONFIG_PATH = {str(config_path)!r}"
        )
        change = FileChange(
            "pkg/__init__.py", "pkg", (repo / "pkg/__init__.py").read_text(), source, ["x"], []
        )
        hidden = tuple(Path(p) for p in config["hidden"])
        unconfined = bool(config.get("control"))  # the control: as without bubblewrap, allowed
        options = SandboxOptions(hidden=hidden, allow_unsandboxed=unconfined, ceiling=LIMITS)
        answer = check_imports(repo, [change], sandbox=options)
        (run_dir / "answer.json").write_text(json.dumps(answer))
        return
    script = run_dir / "hostile.py"  # inside the run dir: the sandbox sees nothing else of ours
    script.write_text(HOSTILE.read_text())
    if mode == "plain":
        subprocess.run([sys.executable, str(script), str(config_path)], check=False)
        return
    if mode == "sleep":
        code = "import sys, time; open(sys.argv[1], 'w').write('up'); time.sleep(600)"
        command = [sys.executable, "-c", code, str(run_dir / "up"), config["marker"]]
    else:
        command = [sys.executable, str(script), str(config_path)]
    result = run_isolated(
        command,
        cwd=run_dir,
        run_dir=run_dir,
        log_path=run_dir / "service.log",
        limits=LIMITS,
    )
    (run_dir / "isolation.txt").write_text(result.isolation)


if __name__ == "__main__":
    main()
