"""Who wrote an artifact: the audit version and, from a git checkout, its commit and dirty flag; and which
manifest schema_version each audit writes, so that a manifest of an older scheme than its producer's is refused."""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

from audit import __version__, procs
from audit.models import Manifest, Producer

SOURCE_ROOT = Path(__file__).resolve().parent.parent

WRITES_SINCE_VERSION: tuple[tuple[tuple[int, int, int], int], ...] = (((0, 2, 0), 3),)
"""(audit version, the oldest manifest schema_version it and every later version writes). audit 0.1.0 wrote 1,
then 2 (from commit 13314b6), then 3 (from 4c3a04d), so its version tells nothing; 0.2.0, the version that came
with this table, writes 3. A change of scheme comes with a new version and a new row here."""

WRITES_SINCE_COMMIT: tuple[tuple[str, int], ...] = (
    ("4c3a04da97c868b5dc5d2342dc817dfb673723fa", 3),
    ("13314b6d9e4933323750ab0cf93abfd9d08cbe4b", 2),
)
"""(commit of audit's history, the manifest schema_version a checkout at it or at any descendant writes): how an
audit 0.1.0 package names the scheme it was written in. Newest first."""

SCHEMA_1_KINDS = frozenset({"responses", "items", "verdicts", "release", "throughput", "telemetry", "profile",
                            "checkpoint-headers"})
"""The package kinds of schema 1's day, as the published `manifest.v1.json` enumerates them: a schema 1 manifest
of a later kind (task-runs, judge-calls) was never written by any audit."""

_COMMIT = re.compile(r"^[0-9a-f]{40}$")


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


def _release(version: str) -> tuple[int, int, int] | None:
    m = re.match(r"^(\d+)\.(\d+)\.(\d+)(?![.\d])", version)
    if m is None or "+unknown" in version:  # (a source tree never installed says 0.0.0+unknown: any era)
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


@functools.cache
def _descends(ancestor: str, commit: str) -> bool | None:
    """Whether `commit` is `ancestor` or a descendant of it in this audit's own checkout; None when that cannot
    be told (no checkout, no git, a commit it does not hold)."""
    if not (SOURCE_ROOT / ".git").exists():
        return None
    try:
        out = procs.run(["git", "-C", str(SOURCE_ROOT), "merge-base", "--is-ancestor", ancestor, commit],
                        capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return {0: True, 1: False}.get(out.returncode)


def downgrade_problem(manifest: Manifest) -> str | None:
    """Why `manifest` cannot be genuine, or None: its schema_version is older than what its producer writes (by
    the producer's version, `WRITES_SINCE_VERSION`, or by its commit, `WRITES_SINCE_COMMIT`), or than its kind
    (`SCHEMA_1_KINDS`). Editing a manifest
    to schema_version 1 would take its provenance out of its digest; where the producer cannot tell (audit 0.1.0
    without a commit this checkout knows), schema 1 provenance is not read at all (`Manifest.unpinned_provenance`).
    The producer is not covered by a schema 1 digest either: this refuses the edit that forgets it, and the
    unread provenance is what holds against the edit that does not."""
    prod, version = manifest.producer, manifest.schema_version
    edited = "(the manifest was edited to an older scheme)"
    release = _release(prod.version) if prod.tool == "audit" else None
    writes = max((w for since, w in WRITES_SINCE_VERSION if release is not None and release >= since), default=None)
    if writes is not None and version < writes:
        return (f"schema_version {version} cannot be genuine: audit {prod.version} writes schema_version {writes} "
                f"{edited}")
    commit = prod.git_commit if prod.tool == "audit" and prod.git_commit and _COMMIT.match(prod.git_commit) else ""
    for first, writes in WRITES_SINCE_COMMIT if commit else ():
        if version < writes and _descends(first, commit):
            return (f"schema_version {version} cannot be genuine: its producer, audit {prod.version} at commit "
                    f"{commit[:12]}, descends from commit {first[:12]}, which began writing schema_version {writes} "
                    f"{edited}")
    if version == 1 and manifest.kind not in SCHEMA_1_KINDS:
        return (f"schema_version 1 cannot be genuine: kind {manifest.kind!r} came after it (schema 1 was written "
                f"for {', '.join(sorted(SCHEMA_1_KINDS))}) {edited}")
    return None
