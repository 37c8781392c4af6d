"""Who wrote an artifact: the audit version and, from a git checkout, its commit and dirty flag."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

from audit import __version__, procs
from audit.models import Producer

SOURCE_ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def _git(*args: str) -> str | None:
    try:
        out = procs.run(["git", "-C", str(SOURCE_ROOT), *args], capture_output=True, text=True,
                             timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


@functools.cache
def producer() -> Producer:
    """The running audit: version, and the source checkout's commit and dirty flag when there is one."""
    if not (SOURCE_ROOT / ".git").exists():
        return Producer(version=__version__)
    commit = _git("rev-parse", "HEAD")
    # Only the code's own directories count: data written under packages/ or
    # elsewhere in the tree does not make the code "dirty".
    status = _git("status", "--porcelain", "--untracked-files=no", "--", "audit", "extractors",
                  "graders", "pyproject.toml")
    return Producer(version=__version__, git_commit=commit, git_dirty=None if status is None else bool(status))
