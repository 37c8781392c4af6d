"""Lock files: each registered `name@version`, the code fingerprints accepted for it, and the
digest of its behaviour on the real data.

    {
      "boxed@1": {
        "fingerprints": ["91b8de7f…", "3c0e5a12…"],
        "behaviour": "5d1f07aa…"
      }
    }

A registered version never changes behaviour. Its first fingerprint is the code it was
registered with; a later one is accepted only by `migrate`, which runs the golden rows and
the real data (`audit.behaviour`) through the locked code, taken from git, and through the
code as it is now, and adds the new fingerprint only when every output is byte-identical.
So a version's code may move (a module renamed, a function split) but never change what
it does; `audit reproduce` treats every accepted fingerprint as the same version.

`check` reads fingerprints only (fast); `check_behaviour` also recomputes every digest, so a
fingerprint added by hand for code that behaves differently, or an edited digest, fails it.
An entry written as a bare string (`"key": "fingerprint"`, the first lock format) is read as
one fingerprint with no digest yet.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from audit import behaviour
from audit.errors import AuditError
from audit.fileio import write_atomic
from audit.registry import Component, Registry

C = TypeVar("C", bound=Component)

PACKAGES = {"extractor": "audit.extractors", "grader": "audit.graders", "judge template": "audit.judge.templates",
            "judge parse rule": "audit.judge.rules"}
"""The package of each locked kind: its `REGISTRY` and `LOCK_FILE`."""


@dataclass
class LockEntry:
    """One locked version: accepted fingerprints (the first is the code it was registered with)."""

    fingerprints: list[str]
    behaviour: str | None = None
    """sha256 of its outputs on the real data (`audit.behaviour.digest`); None until recorded."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"fingerprints": list(self.fingerprints)}
        if self.behaviour is not None:
            out["behaviour"] = self.behaviour
        return out


@dataclass
class Lock:
    """A lock file's entries by `name@version`."""

    path: Path
    entries: dict[str, LockEntry] = field(default_factory=dict)

    def accepts(self, key: str, fingerprint: str) -> bool:
        entry = self.entries.get(key)
        return entry is not None and fingerprint in entry.fingerprints

    def dumps(self) -> str:
        """The canonical text: keys sorted, two-space indent, one fingerprint per line."""
        return json.dumps({k: self.entries[k].to_json() for k in sorted(self.entries)}, indent=2) + "\n"

    def write(self) -> None:
        write_atomic(self.path, self.dumps())


def _is_hex64(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def read_lock(path: Path) -> Lock:
    """Read a lock file (either format); AuditError naming the key for anything malformed."""
    lock = Lock(Path(path))
    if not lock.path.exists():
        return lock
    try:
        data = json.loads(lock.path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise AuditError(f"not JSON: {e}", path=str(path)) from None
    if not isinstance(data, dict):
        raise AuditError("expected an object of name@version entries", path=str(path))
    for key, value in data.items():
        if isinstance(value, str):  # the first format: one fingerprint
            value = {"fingerprints": [value]}
        fps = value.get("fingerprints") if isinstance(value, dict) else None
        digest = value.get("behaviour") if isinstance(value, dict) else None
        extra = set(value) - {"fingerprints", "behaviour"} if isinstance(value, dict) else set()
        if (not isinstance(fps, list) or not fps or not all(_is_hex64(f) for f in fps) or len(set(fps)) != len(fps)
                or (digest is not None and not _is_hex64(digest)) or extra):
            raise AuditError("expected {\"fingerprints\": [sha256, ...], \"behaviour\": sha256}", path=str(path),
                             field=key)
        lock.entries[key] = LockEntry(list(fps), digest)
    return lock


def registry_and_lock(kind: str) -> tuple[Registry[Any], Path]:
    """The registry and lock file of `kind` (`extractor` or `grader`)."""
    mod = importlib.import_module(PACKAGES[kind])
    return mod.REGISTRY, mod.LOCK_FILE


def accepted(kind: str, key: str, fingerprint: str) -> bool:
    """True when `fingerprint` is one of the fingerprints locked for `kind` `key`."""
    _, path = registry_and_lock(kind)
    return read_lock(path).accepts(key, fingerprint)


def same_version(kind: str, a: Any, b: Any) -> bool:
    """True when two recorded components (`ComponentRef`s or None) are one version: equal, or the same
    `name@version` under two fingerprints its lock accepts (the code moved, proven identical)."""
    if a == b:
        return True
    if a is None or b is None or (a.name, a.version) != (b.name, b.version):
        return False
    key = f"{a.name}@{a.version}"
    return accepted(kind, key, a.fingerprint) and accepted(kind, key, b.fingerprint)


def check(registry: Registry[C], path: Path) -> list[str]:
    """Differences between the registered code and the lock file (fingerprints and format)."""
    lock = read_lock(path)
    problems = []
    for entry in registry:
        key = entry.key
        locked = lock.entries.get(key)
        if locked is None:
            problems.append(f"{key}: not in {path.name} (new version: run `audit lock --update`)")
        elif entry.fingerprint not in locked.fingerprints:
            problems.append(f"{key}: code changed under an unchanged version (fingerprint {entry.fingerprint[:12]}, "
                            f"locked {', '.join(f[:12] for f in locked.fingerprints)}); register a new version, "
                            f"or if only its place changed run `audit lock --migrate {key}`")
        elif locked.behaviour is None:
            problems.append(f"{key}: no behaviour digest recorded (run `audit lock --update`)")
    registered = set(registry.keys())
    for key in lock.entries:
        if key not in registered:
            problems.append(f"{key}: locked but no longer registered; registered versions must not be removed")
    if path.exists() and path.read_text(encoding="utf-8") != lock.dumps():
        problems.append(f"{path.name} is not in the form `audit lock` writes (edited by hand?)")
    return problems


def check_behaviour(registry: Registry[C], path: Path) -> list[str]:
    """Recompute each locked version's real-data digest with the registered code; list mismatches.

    Catches a fingerprint added by hand for code that behaves differently, and an edited digest.
    """
    lock = read_lock(path)
    kind = registry.kind
    cases = behaviour.real_cases(kind)
    problems = []
    for key in sorted(lock.entries):
        entry = lock.entries[key]
        if entry.behaviour is None or key not in registry:
            continue
        got = behaviour.digest(cases, behaviour.run(kind, registry.get(key), cases))
        if got != entry.behaviour:
            problems.append(f"{key}: the registered code's behaviour digest is {got[:12]}, the lock records "
                            f"{entry.behaviour[:12]}: the code behaves differently from the locked version "
                            f"(or the lock was edited by hand)")
    return problems


def update(registry: Registry[C], path: Path) -> list[str]:
    """Lock versions not yet locked, and record the behaviour digest of entries that have none and
    whose registered code is an accepted fingerprint. Never rewrites a fingerprint or a digest.
    Returns a line per change."""
    lock = read_lock(path)
    kind = registry.kind
    todo = []
    for comp in registry:
        entry = lock.entries.get(comp.key)
        if entry is None:
            lock.entries[comp.key] = LockEntry([comp.fingerprint])
            todo.append((comp, f"locked {comp.key}"))
        elif entry.behaviour is None and comp.fingerprint in entry.fingerprints:
            todo.append((comp, f"recorded the behaviour of {comp.key}"))
    changes = []
    if todo:
        cases = behaviour.real_cases(kind)
        for comp, what in todo:
            lock.entries[comp.key].behaviour = behaviour.digest(cases, behaviour.run(kind, comp, cases))
            changes.append(what)
    if changes or not path.exists() or path.read_text(encoding="utf-8") != lock.dumps():
        lock.write()
    return changes


def migrate(registry: Registry[C], path: Path, key: str, baseline: behaviour.Baseline, *,
            golden: list[behaviour.Case] | None = None, real: list[behaviour.Case] | None = None) -> str:
    """Accept the registered code's fingerprint for `key` when it behaves byte-identically to the
    locked code (`baseline`) on the golden rows and the real data; raise AuditError otherwise.

    The baseline's own fingerprint must be one the lock accepts (so it is the locked code), and
    the real-data digest must equal the recorded one, when there is one.
    """
    lock = read_lock(path)
    kind = registry.kind
    entry = lock.entries.get(key)
    if entry is None:
        raise AuditError(f"{key} is not locked: a new version is locked with `audit lock --update`", path=str(path))
    comp = registry.get(key)
    if comp.fingerprint in entry.fingerprints:
        return f"{key}: fingerprint {comp.fingerprint[:12]} is already accepted"
    golden = behaviour.golden_cases(kind) if golden is None else golden
    real = behaviour.real_cases(kind) if real is None else real
    cases = golden + real
    base_fp, base_out = baseline.run(kind, key, cases)
    if base_fp not in entry.fingerprints:
        raise AuditError(f"{key} as of {baseline.label} has fingerprint {base_fp[:12]}, which the lock does not "
                         f"accept ({', '.join(f[:12] for f in entry.fingerprints)}): choose a baseline where "
                         f"{key} is the locked code", path=str(path))
    now = behaviour.run(kind, comp, cases)
    diff = behaviour.first_difference(cases, base_out, now)
    if diff is not None:
        raise AuditError(f"refusing to migrate {key}: its behaviour changed (first difference: {diff}); a changed "
                         f"behaviour is a new version", path=str(path))
    recorded = behaviour.digest(real, now[len(golden):])
    if entry.behaviour is not None and recorded != entry.behaviour:
        raise AuditError(f"refusing to migrate {key}: the locked code's real-data digest is {recorded[:12]}, the "
                         f"lock records {entry.behaviour[:12]} (the lock was edited, or the data differs)",
                         path=str(path))
    entry.fingerprints.append(comp.fingerprint)
    entry.behaviour = recorded
    lock.write()
    return (f"{key}: accepted fingerprint {comp.fingerprint[:12]} (identical to {baseline.label} on "
            f"{len(golden):,} golden rows and {len(real):,} real-data rows)")
