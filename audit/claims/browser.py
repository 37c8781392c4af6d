"""Headless Chromium for the measurements page: its DOM as rendered, and a screenshot.

Debian's `chromium` package (`apt-get install chromium`; `make test-slow` installs it when
it runs as root). Each run gets a new empty profile and no network: the page must
need none, and Chromium's own background connections are turned off.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from audit import procs
from audit.errors import AuditError

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--hide-scrollbars", "--force-device-scale-factor=1",
    "--host-resolver-rules=MAP * ~NOTFOUND",  # the page loads nothing from the network
)
TIMEOUT_S = 60


def find_chromium() -> str | None:
    """The Chromium executable on PATH, or None."""
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(args: list[str], page: Path) -> subprocess.CompletedProcess[bytes]:
    exe = find_chromium()
    if exe is None:
        raise AuditError("chromium is not installed (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="audit-chromium-") as profile:
        cmd = [exe, *FLAGS, f"--user-data-dir={profile}", *args, page.resolve().as_uri()]
        try:
            proc = procs.run(cmd, capture_output=True, timeout=TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise AuditError(f"chromium did not finish within {TIMEOUT_S} s", path=str(page)) from None
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        raise AuditError(f"chromium exited with {proc.returncode}: {tail[0]}", path=str(page))
    return proc


def dump_dom(page: Path) -> str:
    """The page's DOM after loading, serialised as HTML."""
    return _run(["--dump-dom"], page).stdout.decode("utf-8")


def screenshot(page: Path, out: Path, width: int = 1100, height: int = 1600) -> Path:
    """A PNG of the page's first `width`×`height` pixels."""
    _run([f"--screenshot={out.resolve()}", f"--window-size={width},{height}"], page)
    if not out.is_file():
        raise AuditError("chromium wrote no screenshot", path=str(out))
    return out
