"""Reproduce a verdict file: re-grade from the packages it references, with the recorded versions and
policies, and compare byte for byte (`audit reproduce`)."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit.errors import AuditError
from audit.grade.passes import _ref, environment, grade_package
from audit.ids import natural_key
from audit.specs import GradeConfig, lookup
from audit.verdicts import VERDICT_ROW_FIELDS, PackageRef, VerdictRow, dump_verdict_file, write_verdict_file


class NoPath(AuditError):
    """A verdict file records no path for a package the caller did not name (the CLI adds its flag)."""

    def __init__(self, what: str):
        self.what = what
        noun = "responses" if what == "package" else what  # `what` is also the CLI's flag (--package, --items)
        super().__init__(f"the verdict file records no path for its {noun} package, and none was given")


@dataclass
class Reproduction:
    """Outcome of re-grading a verdict file from its referenced packages."""

    identical: bool
    differences: list[str]
    notes: list[str]
    environment_dependent: list[str] = dataclasses.field(default_factory=list)
    """Rows that differ only because a grading hit its time budget in one run and not in the other
    (`timeout` on one side): they depend on the machine, not on the code or the inputs."""
    not_rederived: list[str] = dataclasses.field(default_factory=list)
    """What the comparison took from the file as it records it, in words: its producer (who graded; the
    environment is compared and a difference noted) and any package whose digest, of the old scheme,
    covers only its files (its manifest's provenance is not pinned)."""


def _resolve(recorded: PackageRef | None, override: str | os.PathLike[str] | None, base: Path,
             what: str) -> Path | None:
    if override is not None:
        return Path(override)
    if recorded is None:
        return None
    if not recorded.path:
        raise NoPath(what)
    return base / recorded.path


def _content_differs(digest: str, recorded: str, path: Any) -> AuditError:
    return AuditError(f"package content differs from the one graded (digest {digest[:16]}…, recorded "
                      f"{recorded[:16]}…); refusing to compare", path=str(path))


def reproduce(verdict_path: str | os.PathLike[str], *, package: str | os.PathLike[str] | None = None,
              items: str | os.PathLike[str] | None = None) -> Reproduction:
    """Re-grade from the referenced packages with the recorded versions and policies; compare.

    Refuses (AuditError) when a package's content digest differs from the recorded one, checked on
    the packages the regrading actually read; and when the verdict file's Parquet copy and JSON
    rows disagree (see `load_verdict_file`), so no reader of either copy is left unchecked.
    """
    from audit import lock
    from audit.packages import digest_scope, load_manifest, package_digest, unpacked
    from audit.verdicts import load_verdict_file

    vpath = Path(verdict_path)
    vf = load_verdict_file(vpath)
    if vf.responses_package is None:
        raise AuditError("records no responses package (imported verdicts cannot be re-graded)", path=str(vpath))
    if vf.judge is not None:  # (audit.judge.grading imports this module: the CLI dispatches there)
        raise AuditError("was graded from judge calls: reproduce it with audit.judge.grading.reproduce_judged "
                         "(`audit reproduce` does)", path=str(vpath))
    base = vpath.resolve().parent
    resp_path = _resolve(vf.responses_package, package, base, "package")
    items_path = _resolve(vf.items_package, items, base, "items")
    prod = vf.producer
    unchecked = [f"producer {prod.tool} {prod.version}"
                 + (f" {prod.git_commit[:12]}{' (dirty)' if prod.git_dirty else ''}" if prod.git_commit else "")
                 + ": who graded, as the file records it (this run's own producer is not compared)"]
    for what, ref, path in (("responses", vf.responses_package, resp_path), ("items", vf.items_package, items_path)):
        if ref is None or path is None:
            continue
        with unpacked(path) as (root, problems):
            manifest, more = load_manifest(root, "") if not problems else (None, problems)
        if manifest is None:
            raise AuditError(str((problems or more)[0]), path=str(path))
        digest = package_digest(manifest)
        if digest != ref.digest:
            raise _content_differs(digest, ref.digest, path)
        scope = digest_scope(manifest)
        if scope is not None and (what == "responses" or ref != vf.responses_package):
            unchecked.append(f"{what} package {ref.package_id}: {scope}")
    notes = []
    # Who graded, in which environment, and where the packages were found do not decide the result;
    # nor does where a version's code lives: a fingerprint its lock accepts is the same version.
    same_refs: dict[str, Any] = {"producer": vf.producer, "environment": vf.environment, "rows_file": None,
                                 "responses_package": vf.responses_package, "items_package": vf.items_package}
    for label, field in (("extractor", "extractor"), ("grader", "grader"), ("extractor", "mc_extractor"),
                         ("grader", "mc_grader")):
        ref = getattr(vf, field)
        if ref is None:
            continue
        comp = lookup(label, ref.key)
        if comp.fingerprint == ref.fingerprint:
            continue
        if lock.same_version(label, ref, _ref(comp)):
            same_refs[field] = ref
        else:
            notes.append(f"{label} {ref.key}: code fingerprint differs from the recorded one")
    try:
        config = GradeConfig.recorded_in(vf)
    except AuditError as e:
        raise AuditError(e.problem.message, path=str(vpath)) from None
    assert resp_path is not None  # the file names its responses package (checked above)
    new = grade_package(resp_path, config, items=items_path if vf.items_package else None, base_dir=base)
    # The check that counts: the packages this grading read (validated, each file read under its
    # pinned digest), not the ones looked at above (they may have been swapped since).
    for ref, got, path in ((vf.responses_package, new.header.responses_package, resp_path),
                           (vf.items_package, new.header.items_package, items_path)):
        if ref is not None and got is not None and got.digest != ref.digest:
            raise _content_differs(got.digest, ref.digest, path)
    env_now = environment()
    if env_now != vf.environment:
        notes.append("environment differs: " + ", ".join(
            f"{k} {vf.environment.get(k)} -> {v}" for k, v in env_now.items() if vf.environment.get(k) != v))
    # The grading is written in the recorded file's format version (a version-1 file has no subjects).
    same_refs["schema_version"] = vf.schema_version
    with tempfile.TemporaryDirectory(prefix="audit-reproduce-") as tmp:
        again = Path(tmp) / "again.json"
        write_verdict_file(again, new.header.model_copy(update=same_refs), new.iter_rows())
        if again.read_text(encoding="utf-8") == dump_verdict_file(vf.model_copy(update={"rows_file": None})):
            return Reproduction(True, [], notes, not_rederived=unchecked)
    diffs: list[str] = []
    timeouts: list[str] = []
    old_rows = {(r.item_id, r.sample): r for r in vf.items}
    for r in sorted(new.items, key=lambda r: (natural_key(r.item_id), r.sample)):  # listed as people read ids
        o = old_rows.pop((r.item_id, r.sample), None)
        if o == r:
            continue
        line = (f"{r.item_id} sample {r.sample}: recorded "
                f"{(o.verdict, o.status, o.answer) if o else 'absent'}, now {(r.verdict, r.status, r.answer)}")
        (timeouts if o is not None and _only_timeout_differs(o, r) else diffs).append(line)
    diffs += [f"{k[0]} sample {k[1]}: recorded but not produced now"
              for k in sorted(old_rows, key=lambda k: (natural_key(k[0]), k[1]))]
    if not diffs and not timeouts:
        diffs.append("rows are identical; the header or summary differs")
    return Reproduction(False, diffs, notes, timeouts, unchecked)


def _only_timeout_differs(old: VerdictRow, new: VerdictRow) -> bool:
    """The same row but for its verdict, on one side a grading `timeout`: the machine's doing."""
    if "timeout" not in (old.status, new.status):
        return False
    keep = set(VERDICT_ROW_FIELDS) - {"verdict", "status", "reason"}
    return old.model_dump(include=keep) == new.model_dump(include=keep)
