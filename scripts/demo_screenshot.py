"""Take the README's dashboard screenshots from the demo's own fix PR.

Runs what ``scripts/run.sh`` runs (``repairbot serve`` on the embedded default, then
``repairbot demo``) on a fresh data directory under ``build/``, then photographs the fix PR list
and the fix's page with Debian's Chromium (Playwright, a dev dependency) into ``docs/``. Nothing
seeded: every row on the pictures is the demo's real repair.

    .venv/bin/python scripts/demo_screenshot.py
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import httpx
from playwright import sync_api
from playwright.sync_api import ViewportSize

ROOT = Path(__file__).resolve().parents[1]
WORKDIR = ROOT / "build" / "demo-screenshot"
DOCS = ROOT / "docs"
CHROMIUM = Path("/usr/bin/chromium")
VIEWPORT: ViewportSize = {"width": 1360, "height": 860}
READY_TIMEOUT_S = 60.0


def free_port() -> int:
    """A port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_ready(base: str) -> None:
    """Until ``/readyz`` answers 200 (an error after a minute)."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"the service did not become ready at {base}")


def photograph(base: str, fix_id: int) -> list[Path]:
    """The fix PR list and the fix's page, as the README shows them."""
    shots = [(f"{base}/", DOCS / "dashboard.png"), (f"{base}/fixes/{fix_id}", DOCS / "fix.png")]
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport=VIEWPORT)
        for url, path in shots:
            page.goto(url, wait_until="networkidle")
            page.screenshot(path=str(path))
        browser.close()
    return [path for _, path in shots]


def main() -> None:
    """Serve, run the demo, photograph its fix PR, stop."""
    if not CHROMIUM.exists():
        raise SystemExit("Debian's chromium is missing: run scripts/install_system_deps.sh bench")
    shutil.rmtree(WORKDIR, ignore_errors=True)
    WORKDIR.mkdir(parents=True)
    env = {**os.environ, "REPAIRBOT_DATA_DIR": str(WORKDIR / "data")}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    repairbot = str(ROOT / ".venv" / "bin" / "repairbot")
    server = subprocess.Popen([repairbot, "serve", "--port", str(port)], env=env, cwd=WORKDIR)
    try:
        wait_ready(base)
        subprocess.run([repairbot, "demo", "--url", base], env=env, cwd=WORKDIR, check=True)
        fixes = httpx.get(f"{base}/api/v1/fixes", timeout=10).json()
        if not fixes:
            raise SystemExit("the demo opened no fix PR: nothing to photograph")
        for path in photograph(base, int(fixes[0]["id"])):
            print(f"wrote {path.relative_to(ROOT)}")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
