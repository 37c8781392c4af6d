"""`audit verify claims.yaml`: recompute every claim from its pinned inputs and say which survive.

Order of work: the ledger is read and checked (bad input: exit 2); every package is
validated as `audit validate` does and its content digest compared with the ledger's,
every file's sha256 likewise; then each claim is recomputed by its recipe, claims read
by arithmetic first. A claim survives when its recomputed value is within its
tolerance of the recorded value. A retracted claim survives when the corrected value
recomputes and the published one does not (and, when it names a `published_recipe`,
that recipe gives the published value). A claim whose inputs failed their checks is
never recomputed: nothing is read from a package that fails validation.

For a claim that does not survive, the explanation says why; when the claim names
its `recorded_verdicts`, they are diffed against the recomputed grading with
`audit diff`'s machinery and every item whose verdict changed is listed.
"""

from __future__ import annotations

import contextlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from audit.claims import registry, units
from audit.claims.ledger import Claim, LoadedLedger, Tolerance, load_ledger
from audit.claims.registry import Context, RecipeFailed, Result
from audit.errors import AuditError, ValidationFailed
from audit.fileio import copy_regular
from audit.models import Record, unsafe_path_reason
from audit.schemas import register
from audit.verdicts.models import Interval
from audit.views import text_table

VERIFY_REPORT_SCHEMA_VERSION = 1
MAX_DIFF_ITEMS = 20
"""Changed items listed per claim in the text output (the JSON report holds the same lines)."""
MAX_INPUT_PROBLEMS = 5


@dataclass
class InputCheck:
    """One ledger input after its checks."""

    id: str
    kind: Literal["package", "file"]
    path: str
    sha256: str
    actual: str | None = None
    problems: list[str] = field(default_factory=list)
    files_only: bool = False
    """A package whose digest is of the old scheme: the pin covers its files, not its manifest."""

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class ClaimCheck:
    """One claim after recomputation."""

    claim: Claim
    result: Result | None = None
    """The recipe's result in the claim's unit (None when it could not run)."""
    published: Result | None = None
    """For a retracted claim with a `published_recipe`: that recipe's result."""
    reasons: list[str] = field(default_factory=list)
    """Why the claim does not survive; empty when it does."""
    diff: list[str] = field(default_factory=list)
    """The recorded verdicts diffed against the recomputed grading (when the claim names them)."""

    @property
    def survives(self) -> bool:
        return not self.reasons


@dataclass
class Verification:
    loaded: LoadedLedger
    label: str
    """The ledger's path as given."""
    inputs: list[InputCheck]
    claims: list[ClaimCheck]

    @property
    def survivors(self) -> int:
        return sum(c.survives for c in self.claims)

    @property
    def all_survive(self) -> bool:
        return self.survivors == len(self.claims)


# --------------------------------------------------------------------------- inputs


def _first_problems(problems: list[Any], root: Path) -> list[str]:
    out = [str(p).replace(str(root) + "/", "") for p in problems[:MAX_INPUT_PROBLEMS]]
    if len(problems) > MAX_INPUT_PROBLEMS:
        out.append(f"... and {len(problems) - MAX_INPUT_PROBLEMS} more problems")
    return out


def _check_package(led: LoadedLedger, entry: Any, opened: dict[str, Any]) -> InputCheck:
    from audit.packages import digest_scope, open_package

    check = InputCheck(entry.id, "package", entry.path, entry.sha256)
    try:
        path = led.resolve(entry.path)  # checked when the ledger was read; a link may have changed since
        pkg = open_package(path)
    except ValidationFailed as e:
        check.problems = ["fails validation: " + p for p in _first_problems(e.problems, led.root)]
        return check
    except AuditError as e:
        check.problems = [str(e).replace(str(led.root) + "/", "")]
        return check
    except ValueError as e:
        check.problems = [str(e)]
        return check
    check.actual = pkg.digest
    check.files_only = digest_scope(pkg.manifest) is not None
    if pkg.manifest.package_id != entry.id:
        check.problems.append(f"its manifest names package {pkg.manifest.package_id!r}, the ledger {entry.id!r}")
    if pkg.digest != entry.sha256:
        check.problems.append(f"content digest is {pkg.digest}, the ledger says {entry.sha256} "
                              f"(the package was changed or replaced)")
    if check.problems:
        pkg.close()
    else:
        opened[entry.id] = pkg
    return check


def _check_file(led: LoadedLedger, entry: Any, found: dict[str, Path], snapshots: Path,
                labels: dict[str, str]) -> InputCheck:
    """Check one file against the ledger's sha256 from a private copy made in the same pass as the hash: the
    recipes read the copy, so what they read is what was checked (the file on disk may change after)."""
    from audit.verdicts.read import read_verdicts

    check = InputCheck(entry.id, "file", entry.path, entry.sha256)
    try:
        path = led.resolve(entry.path)  # checked when the ledger was read; a link may have changed since
    except ValueError as e:
        check.problems.append(str(e))
        return check
    if not path.is_file():
        check.problems.append("missing or not a regular file")
        return check
    folder = snapshots / str(len(labels))
    folder.mkdir()
    copy = folder / path.name
    labels[str(copy)] = entry.path
    try:
        check.actual, _ = copy_regular(path, copy)
    except OSError as e:
        check.problems.append(f"unreadable: {e.strerror or e}")
        return check
    if check.actual != entry.sha256:
        check.problems.append(f"sha256 is {check.actual}, the ledger says {entry.sha256} (the file was changed "
                              f"or replaced)")
        return check
    if entry.format == "verdicts":
        try:
            header = read_verdicts(copy, rows=None).header
        except AuditError as e:
            check.problems.append(str(e).replace(str(copy), entry.path))
            return check
        side = header.rows_file
        if side is not None:
            reason = unsafe_path_reason(side.path)
            if reason or not (path.parent / side.path).resolve().is_relative_to(led.root.resolve()):
                check.problems.append(f"its rows_file {side.path!r} is outside the ledger's folder")
                return check
            # The sidecar beside the copy; the verdict readers check it against the pin in the header.
            with contextlib.suppress(OSError):  # a missing sidecar is reported by the reader that needs it
                copy_regular(path.parent / side.path, folder / side.path)
    found[entry.id] = copy
    return check


# --------------------------------------------------------------------------- claims


def _verdict_word(n: int) -> str:
    return f"{n:,} verdict{'s' if n != 1 else ''}"


def explain_diff(ctx: Context, claim: Claim, result: Result) -> list[str]:
    """The recorded verdicts diffed against the recomputed grading, as short lines."""
    from audit.claims.recipes_grade import recomputed_rows, verdict_source
    from audit.diff import diff_files

    assert claim.recorded_verdicts is not None
    recorded = verdict_source(ctx, claim.recorded_verdicts)
    d = diff_files(recorded, recomputed_rows(ctx, claim.id, result.grading), allow_different_responses=True)
    causes = ", ".join(f"{c.cause} {c.rows}" for c in d.causes)
    n = d.changed.num_rows
    lines = [f"audit diff {claim.recorded_verdicts} (recorded) → recomputed grading: {_verdict_word(n)} changed"
             + (f" ({causes})" if causes else "")
             + (f", {d.only_old.num_rows} row(s) only in the recorded verdicts" if d.only_old.num_rows else "")
             + (f", {d.only_new.num_rows} row(s) only in the recomputed grading" if d.only_new.num_rows else "")]
    lines += [f"note: {note}" for note in d.notes]
    for row in d.changed_rows(limit=MAX_DIFF_ITEMS):
        o, nw = row["old"], row["new"]
        lines.append(f"{row['item_id']} sample {row['sample']}: answer {_cell(o['answer'])} → {_cell(nw['answer'])}; "
                     f"{o['verdict']} → {nw['verdict']} ({row['cause']}): {_cell(nw['reason'], 70)}")
    if n > MAX_DIFF_ITEMS:
        lines.append(f"… {n - MAX_DIFF_ITEMS:,} more changed items (audit diff lists every one)")
    for which, label in (("old", "only in the recorded verdicts"), ("new", "only in the recomputed grading")):
        rows = d.one_sided_rows(which, limit=MAX_DIFF_ITEMS)
        for r in rows:
            lines.append(f"{r['item_id']} sample {r['sample']}: {label} ({r['verdict']}, {r['status']})")
    if not n and not d.only_old.num_rows and not d.only_new.num_rows:
        lines.append("no verdict changed: the recorded value does not come from these verdicts")
    return lines


def _cell(v: Any, width: int = 24) -> str:
    if v is None:
        return "—"
    s = " ".join(str(v).split())
    return s if len(s) <= width else s[: width - 1] + "…"


def _check_claim(ctx: Context, inputs: dict[str, InputCheck], claim: Claim) -> ClaimCheck:
    check = ClaimCheck(claim)
    bad = [inputs[s] for s in claim.sources if not inputs[s].ok]
    if bad:
        check.reasons = [f"input {b.id} failed its checks: {b.problems[0]}" for b in bad]
        return check
    try:
        check.result = registry.run_call(claim.recipe, ctx).converted(claim.unit)
    except RecipeFailed as e:
        check.reasons = [f"cannot recompute: {e}"]
        return check
    value = check.result.value
    ctx.values[claim.id] = value
    tol, unit = claim.tolerance, claim.unit
    if claim.retraction is None:
        if not tol.allows(claim.value, value):
            check.reasons.append(f"recomputed {units.fmt(value, unit)}, recorded {units.fmt(claim.value, unit)} "
                                 f"(tolerance {tol.text(unit)})")
    else:
        r = claim.retraction
        if not tol.allows(r.corrected, value):
            check.reasons.append(f"recomputed {units.fmt(value, unit)}, the correction says "
                                 f"{units.fmt(r.corrected, unit)} (tolerance {tol.text(unit)})")
        if tol.allows(claim.value, value):
            check.reasons.append(f"the published value {units.fmt(claim.value, unit)} recomputes: the retraction "
                                 f"is unfounded")
        if r.published_recipe is not None:
            try:
                check.published = registry.run_call(r.published_recipe, ctx).converted(unit)
            except RecipeFailed as e:
                check.reasons.append(f"published_recipe cannot recompute: {e}")
            else:
                if not tol.allows(claim.value, check.published.value):
                    check.reasons.append(f"published_recipe gives {units.fmt(check.published.value, unit)}, not "
                                         f"the published {units.fmt(claim.value, unit)}")
    wants_diff = claim.retraction is not None or not check.survives
    if wants_diff and claim.recorded_verdicts is not None and check.result.grading is not None:
        try:
            check.diff = explain_diff(ctx, claim, check.result)
        except AuditError as e:
            check.diff = [f"audit diff could not compare them: {ctx.words(str(e))}"]
    return check


def verify(path: str | Path) -> Verification:
    """Check every input, recompute every claim. Raises LedgerError (exit 2) on a bad ledger."""
    loaded = load_ledger(path)
    opened: dict[str, Any] = {}
    found: dict[str, Path] = {}
    labels: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="audit-claims-inputs-") as snapshots:
        inputs = [_check_package(loaded, p, opened) for p in loaded.ledger.packages]
        inputs += [_check_file(loaded, f, found, Path(snapshots), labels) for f in loaded.ledger.files]
        by_id = {i.id: i for i in inputs}
        ctx = Context(loaded, opened, found, labels)
        try:
            done = {c.id: _check_claim(ctx, by_id, c) for c in registry.claim_order(loaded)}
        finally:
            ctx.close()
    return Verification(loaded, str(path), inputs, [done[c.id] for c in loaded.ledger.claims])


# --------------------------------------------------------------------------- text


def recorded_text(c: ClaimCheck) -> str:
    claim = c.claim
    shown = units.fmt(claim.value, claim.unit)
    if claim.retraction is not None:
        return f"{shown} → {units.fmt(claim.retraction.corrected, claim.unit)}"
    return shown


def recomputed_text(c: ClaimCheck) -> str:
    return "—" if c.result is None else units.fmt(c.result.value, c.claim.unit)


def render_text(v: Verification) -> str:
    """The human report: inputs, the claims table, and an explanation per claim that does not survive."""
    led = v.loaded.ledger
    lines = [f"audit verify {v.label}: {led.title}", "", "inputs:"]
    rows = [["kind", "id", "path", "check"]]
    for i in v.inputs:
        if i.ok:
            what = ("sha256 matches" if i.kind != "package" else
                    "valid, digest matches" + (" (files only)" if i.files_only else ""))
        else:
            what = "FAILED"
        rows.append([i.kind, i.id, i.path, what])
    lines += text_table(rows, indent="  ")
    if any(i.files_only and i.ok for i in v.inputs):
        lines.append("  (files only): a package digest of the old scheme (manifest schema_version 1) pins file paths "
                     "and hashes, not the manifest's provenance or producer")
    for i in v.inputs:
        for p in i.problems:
            lines.append(f"  {i.id}: {p}")
    lines += ["", "claims:"]
    rows = [["id", "status", "recorded", "recomputed", "survives"]]
    for c in v.claims:
        rows.append([c.claim.id, c.claim.status, recorded_text(c), recomputed_text(c), "yes" if c.survives else "NO"])
    lines += text_table(rows, indent="  ")
    failing = [c for c in v.claims if not c.survives]
    for c in failing:
        lines += ["", f"{c.claim.id} does not survive: {c.claim.text}", f"  recipe: {c.claim.recipe.call()}"]
        lines += [f"  {r}" for r in c.reasons]
        lines += [f"  {d}" if i == 0 else f"    {d}" for i, d in enumerate(c.diff)]
    n, k = len(v.claims), v.survivors
    lines += ["", f"{k} of {n} claims survive." if k != n else f"All {n} claims survive."]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- JSON


class InputReport(Record):
    """One input of the ledger and what its checks found."""

    id: str
    """Ledger id (a package's `package_id`)."""
    kind: Literal["package", "file"]
    """A package (checked by validation and content digest) or a file (by sha256)."""
    path: str
    """As the ledger gives it, relative to the ledger's folder."""
    sha256: str
    """What the ledger pins."""
    actual_sha256: str | None
    """What the input has now (null when it could not be read)."""
    ok: bool
    """True when every check passed."""
    problems: list[str]
    """What failed, one line each."""
    digest_covers: Literal["manifest", "files"] | None = None
    """For a package: what its digest pins. `files` (old scheme, manifest schema_version 1): file paths and
    hashes only, not the manifest's provenance or producer; `manifest`: the whole manifest but its time."""


class ClaimReport(Record):
    """One claim, recomputed."""

    id: str
    """The claim's id."""
    text: str
    """The claim in words."""
    status: str
    """Its status tag."""
    unit: str
    """Unit of every value below."""
    recorded: float
    """The value as recorded (for a retracted claim: as published)."""
    corrected: float | None
    """For a retracted claim: the corrected value."""
    recomputed: float | None
    """What the recipe gives now; null when it could not run."""
    interval: Interval | None
    """The recomputed value's interval, naming its formula."""
    n: int | None
    """What the interval is over."""
    n_label: str
    """Rows, tasks, runs, questions."""
    published_recomputed: float | None
    """For a retracted claim with a published_recipe: what that recipe gives."""
    recipe: str
    """The recipe call."""
    basis: str
    """What the value was computed from."""
    inputs: list[str]
    """Ledger ids the recipe read."""
    tolerance: Tolerance
    """The claim's tolerance."""
    survives: bool
    """Whether the claim survives."""
    reasons: list[str]
    """Why not, one line each."""
    diff: list[str]
    """The recorded verdicts diffed against the recomputed grading, one line each."""


class VerifyReport(Record):
    """`audit verify --format json`: every input's checks and every claim recomputed."""

    schema_version: int = VERIFY_REPORT_SCHEMA_VERSION
    """Version of this format."""
    kind: Literal["verify_report"] = "verify_report"
    """Always `verify_report`."""
    ledger: str
    """The ledger's path as given."""
    ledger_sha256: str
    """sha256 of the ledger file's bytes."""
    title: str
    """The ledger's title."""
    inputs: list[InputReport]
    """Every input, in ledger order."""
    claims: list[ClaimReport]
    """Every claim, in ledger order."""
    survivors: int = Field(ge=0)
    """Claims that survive."""


register("verify_report.v1", VerifyReport)


def to_report(v: Verification) -> VerifyReport:
    sha = v.loaded.sha256
    claims = []
    for c in v.claims:
        r = c.result
        claims.append(ClaimReport(
            id=c.claim.id, text=c.claim.text, status=c.claim.status, unit=c.claim.unit, recorded=c.claim.value,
            corrected=c.claim.retraction.corrected if c.claim.retraction else None,
            recomputed=r.value if r else None, interval=r.interval if r else None, n=r.n if r else None,
            n_label=r.n_label if r else "", published_recomputed=c.published.value if c.published else None,
            recipe=c.claim.recipe.call(), basis=r.basis if r else "", inputs=list(r.inputs) if r else [],
            tolerance=c.claim.tolerance, survives=c.survives, reasons=c.reasons, diff=c.diff))
    inputs = [InputReport(id=i.id, kind=i.kind, path=i.path, sha256=i.sha256, actual_sha256=i.actual, ok=i.ok,
                          problems=i.problems,
                          digest_covers=None if i.kind != "package" or i.actual is None else
                          "files" if i.files_only else "manifest") for i in v.inputs]
    return VerifyReport(ledger=v.label, ledger_sha256=sha, title=v.loaded.ledger.title, inputs=inputs,
                        claims=claims, survivors=v.survivors)


def render_json(v: Verification) -> str:
    from audit.fileio import dumps_pretty

    return dumps_pretty(to_report(v).model_dump(mode="json"))
