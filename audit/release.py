"""`audit release`: publish per-item verdicts without protected text; `audit verify-release` checks one.

A release is a package of kind `release` holding three files, each pinned in the manifest:

- `verdicts.jsonl` — one `release_row.v1` per (item, sample), sorted by item id then sample.
  Rows of protected items (GPQA, HLE: `protected` in the items package, or every item with
  `--protected`) hold only `item_id`, `sample`, `verdict`, `status` and `protected: true`: no
  question, option, reference or response text, and no extracted answer, rule, reason or
  attempt (an extracted letter beside a `correct` verdict is the key). Other rows also carry
  attempt, answer, rule, reason and reference.
- `release.json` — `release_info.v1`: the grading it comes from (verdict file sha256, responses
  and items packages by digest, extractor, grader, policies), the id scheme, counts, and the
  figures with their intervals, recomputed from the released rows.
- `README.md` — a table of the figures with their intervals, generated from `release.json`.

Item ids are the dataset's own, or with `--hash-ids --salt S` HMAC-SHA256(S, id) (first 32 hex
digits) when the ids themselves leak content. The salt is a shared secret: it is not in the
release (only `salt_check` = sha256("audit-release-salt:" + S), so a holder can confirm the
salt they were given); the publisher gives it privately to dataset holders, who can then map
their ids and run `verify-release`. Without it the ids cannot be linked to items by guessing,
as long as the salt is random (16+ characters are required).

Every release runs the leak check of `audit.leaks` on all its files before anything is
written; any finding aborts it (exit 2, one line per leak naming file, row and field, never the
text). The check indexes the question, options and reference of protected items (from the items
package) and their responses (from the responses package; required when there are protected
items, unless `--no-response-check` is given and recorded).

False positives. The check reports any shared 20-character piece, and model responses share
boilerplate ("Therefore, the correct answer is" occurs in hundreds of GPQA responses), so
what public rows publish must not be free prose. Protected rows publish no reason at all;
public rows' `reason` is one of `audit grade`'s and the graders' fixed phrases with the row's
own letters or values ("letter B, reference A", "no answer extracted (none)", "cut at the
output ceiling (max_tokens=N); never credited"). tests/test_release_real.py checks every such
phrase, and every reason, rule and answer of a real grading of the 6,336 GPQA Diamond responses,
against those responses: none matches. A public item graded with a free-form extractor
(`raw@1`, `hle.exact_answer@1`) publishes a piece of its own response as `answer`; should that
share 20+ characters with a protected response, the release fails (mark the item protected).

`audit verify-release DIR --items PRIVATE_ITEMS [--salt S] [--responses R]` lets a holder of
the dataset check a release against their own copy, in this order: package (manifest, hashes,
row schemas), counts (rows, items, samples, statuses against release.json), ids (every
released id is one of theirs, via the salt for hashed ids), items package digest
(informational), protected (items their copy marks protected are published as protected),
references (published references equal theirs), verdicts (agree with statuses, and with
answer = reference for multiple-choice letters), figures (recomputed from the rows equal
release.json's), readme (README.md is exactly what release.json generates), leaks (the leak
check with their text; it fails when `--responses` holds no response of a protected item, rather
than claim responses were checked). Exit 0 when all pass, 1 otherwise.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from audit.errors import AuditError, Problem, ValidationFailed
from audit.jsonl import dumps_pretty, sha256_file
from audit.leaks import MIN_LEAK_CHARS, LeakIndex, ProtectedText, find_leaks
from audit.models import ItemRow, Provenance, Record, ReleaseRow
from audit.packages import PackageWriter, open_package, validate_package
from audit.schemas import register
from audit.summary import figures as compute_figures
from audit.summary import pct
from audit.verdicts import ComponentRef, Figure, PackageRef, Policies, VerdictFile, read_verdict_table

RELEASE_INFO_SCHEMA_VERSION = 1
ROWS_FILE = "verdicts.jsonl"
INFO_FILE = "release.json"
README_FILE = "README.md"
MIN_SALT_CHARS = 16
HASHED_ID_HEX = 32


class LeakCheckInfo(Record):
    """What the leak check covered when the release was written."""

    min_chars: int
    """Shortest protected substring that counts as a leak."""
    protected_items: int
    """Items whose text was protected."""
    protected_texts: int
    """Protected strings indexed (questions, options, references, responses)."""
    responses_checked: bool
    """False only when the release was made with `--no-response-check` (responses were not available)."""


class ReleaseInfo(Record):
    """`release.json`: where a release comes from, how its ids are formed, and its figures."""

    schema_version: int = RELEASE_INFO_SCHEMA_VERSION
    """Version of this format."""
    kind: Literal["release_info"] = "release_info"
    """Always `release_info`."""
    benchmark: str
    """Benchmark spec of the grading."""
    verdict_file_sha256: str
    """sha256 of the verdict file released."""
    responses_package: PackageRef | None
    """The graded responses, by digest (local path dropped)."""
    items_package: PackageRef | None
    """The items graded against, by digest (local path dropped)."""
    extractor: ComponentRef | None
    """Extractor `name@version` and fingerprint."""
    grader: ComponentRef | None
    """Grader `name@version` and fingerprint."""
    reference_field: str = "reference"
    """Item field the grading read the references from (`reference`, or `extra.KEY`); `verify-release`
    compares published references with that field of the holder's items."""
    policies: Policies
    """Policies of the grading (excluded ids written in the release's id scheme)."""
    id_scheme: Literal["dataset", "hmac-sha256"]
    """`dataset`: ids as the dataset names them; `hmac-sha256`: first 32 hex digits of HMAC-SHA256(salt, id)."""
    salt_check: str | None
    """For hashed ids: sha256 of `audit-release-salt:` + salt, to confirm a privately shared salt."""
    rows: int
    """Rows in `verdicts.jsonl`."""
    items: int
    """Distinct items."""
    samples: int
    """Distinct samples (runs)."""
    protected_items: int
    """Items published with verdict and status only."""
    statuses: dict[str, int]
    """Rows per status."""
    figures: list[Figure]
    """Every figure (per run and overall, both denominators), recomputed from the released rows."""
    leak_check: LeakCheckInfo
    """What the leak check covered."""


register("release_info.v1", ReleaseInfo)


class LeakFound(ValidationFailed):
    """The release would publish protected text: nothing was written. Exit code 2."""

    exit_code = 2


# --------------------------------------------------------------------------- ids


def hash_id(item_id: str, salt: str) -> str:
    """The salted id of an item: HMAC-SHA256(salt, item_id), first 32 hex digits."""
    return hmac.new(salt.encode("utf-8"), item_id.encode("utf-8"), hashlib.sha256).hexdigest()[:HASHED_ID_HEX]


def salt_check(salt: str) -> str:
    """What `release.json` records about the salt: enough to confirm it, not to recover it."""
    return hashlib.sha256(("audit-release-salt:" + salt).encode("utf-8")).hexdigest()


def _check_salt(salt: str | None) -> str:
    if salt is None:
        raise AuditError("--hash-ids needs --salt S or --salt-file FILE")
    if len(salt) < MIN_SALT_CHARS:
        raise AuditError(f"the salt must have at least {MIN_SALT_CHARS} characters (use a random one, e.g. "
                         f"`python -c 'import secrets; print(secrets.token_hex(16))'`)")
    return salt


# --------------------------------------------------------------------------- inputs


def _resolve(ref: PackageRef | None, given: str | Path | None, base: Path) -> Path | None:
    if given is not None:
        return Path(given)
    if ref is not None and ref.path:
        p = Path(ref.path)
        return p if p.is_absolute() else base / p
    return None


def _load_items(path: Path, ref: PackageRef | None, label: str) -> dict[str, ItemRow]:
    with open_package(path) as pkg:
        if not pkg.files("item_row.v1"):
            raise AuditError("holds no item rows", path=str(path))
        if ref is not None and pkg.digest != ref.digest:
            raise AuditError(f"items package digest is {pkg.digest[:12]}, the {label} names {ref.digest[:12]}",
                             path=str(path))
        return {it.item_id: it for it in pkg.iter_rows("item_row.v1")}


def _protected_texts(items: dict[str, ItemRow], protected: set[str], responses: Path | None,
                     ref: PackageRef | None, label: str) -> list[ProtectedText]:
    texts = []
    for item_id in sorted(protected):
        it = items.get(item_id)
        if it is None:
            continue
        if it.question:
            texts.append(ProtectedText(item_id, "question", it.question))
        for i, choice in enumerate(it.choices or []):
            texts.append(ProtectedText(item_id, f"option {chr(65 + i)}", choice))
        texts.append(ProtectedText(item_id, "reference", it.reference))
    if responses is not None:
        with open_package(responses, kind="responses") as pkg:
            if ref is not None and pkg.digest != ref.digest:
                raise AuditError(f"responses package digest is {pkg.digest[:12]}, the {label} names "
                                 f"{ref.digest[:12]}", path=str(responses))
            for r in pkg.iter_rows("response_row.v1"):
                if r.item_id in protected and r.response:
                    texts.append(ProtectedText(r.item_id, f"response (sample {r.sample}, attempt {r.attempt})",
                                               r.response))
    return texts


# --------------------------------------------------------------------------- building


@dataclass
class ReleaseResult:
    """What `build_release` wrote."""

    out: Path
    package_id: str
    info: ReleaseInfo


def build_release(verdicts: str | Path, out: str | Path, *, items: str | Path | None = None,
                  responses: str | Path | None = None, all_protected: bool = False, public: bool = False,
                  hash_ids: bool = False, salt: str | None = None, no_response_check: bool = False,
                  package_id: str | None = None, overwrite: bool = False) -> ReleaseResult:
    """Write a release package of the verdict file `verdicts` to `out`; raise LeakFound (writing nothing) on a leak."""
    vpath = Path(verdicts)
    header, table, _ = read_verdict_table(vpath)
    if all_protected and public:
        raise AuditError("--protected and --public contradict each other")
    if hash_ids:
        salt = _check_salt(salt)
    rows = table.to_pylist()
    base = vpath.parent

    # Which items are protected, and their reference texts.
    items_path = _resolve(header.items_package, items, base)
    items_ref = header.items_package
    if items_path is None and header.items_package is None and not (all_protected or public):
        # Graded with the responses package's own item rows: read them from there.
        own = _resolve(header.responses_package, responses, base)
        if own is not None and own.exists():
            items_path, items_ref = own, header.responses_package if responses is None else None
    item_rows: dict[str, ItemRow] = {}
    if items_path is not None:
        item_rows = _load_items(items_path, items_ref, "verdict file")
        missing = sorted({r["item_id"] for r in rows} - item_rows.keys())
        if missing:
            raise AuditError(f"{len(missing)} graded items are not in the items package (first: {missing[0]!r})",
                             path=str(items_path))
    elif not (all_protected or public):
        raise AuditError("cannot tell which items are protected: give --items ITEMS_PACKAGE (or name it in the "
                         "verdict file), --protected to treat every item as protected, or --public", path=str(vpath))
    item_ids = sorted({r["item_id"] for r in rows})
    if all_protected:
        protected = set(item_ids)
    elif public:
        protected = set()
    else:
        protected = {i for i in item_ids if item_rows[i].protected}

    # The leak index: protected texts, references, and every id a protected item goes by.
    ids = {i: hash_id(i, salt) if hash_ids else i for i in item_ids}  # type: ignore[arg-type]
    if hash_ids and len(set(ids.values())) != len(ids):
        raise AuditError("two item ids hash to the same salted id: use another salt")
    responses_path = _resolve(header.responses_package, responses, base)
    if protected and responses_path is None and not no_response_check:
        raise AuditError("the leak check needs the responses of the protected items: give --responses "
                         "RESPONSES_PACKAGE (or --no-response-check, recorded in release.json)", path=str(vpath))
    texts = _protected_texts(item_rows, protected, None if no_response_check else responses_path,
                             header.responses_package, "verdict file")
    references = {}
    for r in rows:  # rows carry the reference they were graded against, items the current one
        if r["item_id"] in protected and r["reference"]:
            references.setdefault(r["item_id"], set()).add(r["reference"])
    for i in protected:
        if i in item_rows:
            references.setdefault(i, set()).add(item_rows[i].reference)
    aliases = {}
    for i in protected:
        aliases[i] = i
        aliases[ids[i]] = i
    index = LeakIndex(texts, references=references, aliases=aliases)

    # Rows, figures, info, README.
    release_rows = [_release_row(r, ids[r["item_id"]], r["item_id"] in protected)
                    for r in sorted(rows, key=lambda r: (ids[r["item_id"]], r["sample"]))]
    figs = release_figures(release_rows)
    _check_summary(header, figs, vpath)
    # Every excluded id in the release's scheme, those without a row too (a raw id is published otherwise).
    policies = header.policies.model_copy(update={"exclude": sorted(
        hash_id(i, salt) if hash_ids else i for i in header.policies.exclude)})  # type: ignore[arg-type]
    info = ReleaseInfo(
        benchmark=header.benchmark, verdict_file_sha256=sha256_file(vpath)[0],
        responses_package=_unpathed(header.responses_package), items_package=_unpathed(header.items_package),
        extractor=header.extractor, grader=header.grader, reference_field=header.reference_field, policies=policies,
        id_scheme="hmac-sha256" if hash_ids else "dataset", salt_check=salt_check(salt) if hash_ids else None,  # type: ignore[arg-type]
        rows=len(release_rows), items=len(item_ids), samples=len({r.sample for r in release_rows}),
        protected_items=len(protected), statuses=dict(sorted(Counter(r.status for r in release_rows).items())),
        figures=figs,
        leak_check=LeakCheckInfo(min_chars=MIN_LEAK_CHARS, protected_items=len(protected), protected_texts=len(texts),
                                 responses_checked=not no_response_check or not protected))

    writer = PackageWriter(out, kind="release", benchmark=header.benchmark, package_id=package_id,
                           overwrite=overwrite,
                           provenance=Provenance(source=f"verdict file sha256 {info.verdict_file_sha256}",
                                                 notes="Per-item verdicts; see README.md and release.json."))
    try:
        with writer.rows(ROWS_FILE, "release_row.v1") as sink:
            for row in release_rows:
                sink.write(row)
        writer.add_text(INFO_FILE, dumps_pretty(info.model_dump(mode="json")))
        writer.add_text(README_FILE, render_readme(info))
        files = {rel: (writer.tmp / rel).read_bytes() for rel in (ROWS_FILE, INFO_FILE, README_FILE)}
        if package_id:
            files["manifest.json"] = package_id.encode("utf-8")
        leaks = leak_problems(files, index)
        if leaks:
            raise LeakFound(str(out), leaks)
        manifest = writer.commit()
    except BaseException:
        writer.abort()
        raise
    return ReleaseResult(Path(out), manifest.package_id, info)


def _release_row(r: dict, release_id: str, protected: bool) -> ReleaseRow:
    """A verdict row as published: verdict and status only for a protected item."""
    if protected:
        return ReleaseRow(item_id=release_id, sample=r["sample"], verdict=r["verdict"], status=r["status"],
                          protected=True)
    return ReleaseRow(item_id=release_id, sample=r["sample"], verdict=r["verdict"], status=r["status"],
                      attempt=r["attempt"], answer=r["answer"], rule=r["rule"], reason=r["reason"],
                      reference=r["reference"])


def leak_problems(files: dict[str, bytes], index: LeakIndex) -> list[Problem]:
    """Findings of both leak rules, sorted by file, row and field."""
    return find_leaks(files, index)


def _unpathed(ref: PackageRef | None) -> PackageRef | None:
    return None if ref is None else PackageRef(package_id=ref.package_id, digest=ref.digest)


def release_figures(rows: list[ReleaseRow]) -> list[Figure]:
    """The figures of released rows (the same computation as `audit grade`'s summary)."""
    import pandas as pd

    df = pd.DataFrame({"item_id": [r.item_id for r in rows], "sample": [r.sample for r in rows],
                       "verdict": [r.verdict for r in rows]})
    return compute_figures(df)


def _check_summary(header: VerdictFile, figs: list[Figure], vpath: Path) -> None:
    """A release must agree with the summary it comes from: refuse a verdict file whose summary its rows contradict."""
    recorded = {f.name: f for f in header.summary.figures}
    for f in figs:
        r = recorded.get(f.name)
        if r is None:
            continue
        if (r.correct, r.total) != (f.correct, f.total) or not math.isclose(r.value, f.value, abs_tol=1e-12):
            raise AuditError(f"the summary records {f.name} = {r.correct}/{r.total} ({r.value:.4f}) but the rows give "
                             f"{f.correct}/{f.total} ({f.value:.4f}): regrade before releasing",
                             path=str(vpath), field="summary")


# --------------------------------------------------------------------------- README


def _component(c: ComponentRef | None) -> str:
    return "not recorded (imported)" if c is None else f"`{c.name}@{c.version}` (fingerprint {c.fingerprint[:12]})"


def _package(p: PackageRef | None) -> str:
    return "not recorded" if p is None else f"`{p.package_id}` (digest {p.digest[:12]})"


def render_readme(info: ReleaseInfo) -> str:
    """README.md of a release: provenance and the figures with their intervals (deterministic)."""
    pol = info.policies
    policies = (f"truncation={pol.truncation}, resampling={pol.resampling}, no_answer={pol.no_answer}"
                + (f" (seed {pol.guess_seed})" if pol.no_answer == "random-guess" else "")
                + (f", {len(pol.exclude)} ids excluded" if pol.exclude else ""))
    ids = ("dataset ids" if info.id_scheme == "dataset" else
           "salted: HMAC-SHA256(salt, id), 32 hex digits; the salt is shared privately")
    lines = [
        f"# Release: {info.benchmark} verdicts", "",
        "Per-item verdicts of one grading. Items marked protected are published with verdict and status only.",
        "Check the files with `audit validate DIR`; with your own copy of the items, run",
        "`audit verify-release DIR --items ITEMS` (see `audit verify-release --help`).", "",
        "| | |", "| --- | --- |",
        f"| benchmark | {info.benchmark} |",
        f"| verdict file | sha256 {info.verdict_file_sha256[:16]} |",
        f"| responses | {_package(info.responses_package)} |",
        f"| items | {_package(info.items_package)} |",
        f"| extractor | {_component(info.extractor)} |",
        f"| grader | {_component(info.grader)} |",
        f"| policies | {policies} |",
        f"| rows | {info.rows:,} ({info.items:,} items, {info.samples:,} samples) |",
        f"| protected items | {info.protected_items:,} |",
        f"| item ids | {ids} |",
        "", "## Figures", "",
        "| figure | value | correct / total | intervals |", "| --- | ---: | ---: | --- |",
    ]
    for f in info.figures:
        ivs = "; ".join(f"{iv.method} [{pct(iv.low)}, {pct(iv.high)}]" for iv in f.intervals) or "none"
        lines.append(f"| {f.name} | {pct(f.value)} | {f.correct:,} / {f.total:,} | {ivs} |")
    lines += ["", "Interval formulas are named in release.json (`figures[].intervals[].formula`).", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- verification


def _gold(item: ItemRow, reference_field: str) -> str | None:
    """The item's reference in the field a grading read (`reference` or `extra.KEY`); None when absent."""
    if reference_field.startswith("extra."):
        value = item.extra.get(reference_field[6:])
        return value if isinstance(value, str) else None
    return item.reference


@dataclass(frozen=True)
class Check:
    """One verification step: its name, whether it passed, and what it found."""

    name: str
    ok: bool
    detail: str


def verify_release(release: str | Path, items: str | Path, *, salt: str | None = None,
                   responses: str | Path | None = None) -> list[Check]:
    """Check a release against the holder's own copy of the items (see VERIFY_STEPS)."""
    rel = Path(release)
    checks: list[Check] = []
    problems = validate_package(rel)
    if problems:
        return [Check("package", False, f"{len(problems)} problems, first: {problems[0]}")]
    with open_package(rel) as pkg:
        if pkg.kind != "release":
            return [Check("package", False, f"is a {pkg.kind!r} package, not a release")]
        names = {f.path for f in pkg.manifest.files}
        need = {ROWS_FILE, INFO_FILE, README_FILE}
        if not need <= names:
            return [Check("package", False, f"missing {', '.join(sorted(need - names))}")]
        checks.append(Check("package", True, f"{pkg.manifest.package_id}: manifest, hashes and row schemas valid"))
        rows: list[ReleaseRow] = list(pkg.iter_rows("release_row.v1"))
        info_text = (pkg.root / INFO_FILE).read_text(encoding="utf-8")
        readme = (pkg.root / README_FILE).read_text(encoding="utf-8")
        files = {f.path: (pkg.root / f.path).read_bytes() for f in pkg.manifest.files}
    try:
        info = ReleaseInfo.model_validate_json(info_text)
    except Exception as e:  # pydantic.ValidationError, with every field problem
        return checks + [Check("release.json", False, f"does not follow release_info.v1: {str(e).splitlines()[0]}")]
    n_items = len({r.item_id for r in rows})
    n_samples = len({r.sample for r in rows})
    counts_ok = (info.rows, info.items, info.samples) == (len(rows), n_items, n_samples)
    statuses = dict(sorted(Counter(r.status for r in rows).items()))
    checks.append(Check("counts", counts_ok and statuses == info.statuses,
                        f"{len(rows):,} rows, {n_items:,} items x {n_samples:,} samples"
                        + ("" if counts_ok else f"; release.json says {info.rows:,} rows, {info.items:,} items, "
                                                f"{info.samples:,} samples")
                        + ("" if statuses == info.statuses else "; statuses differ from release.json")))

    # Ids: map the holder's items into the release's id scheme.
    holder: dict[str, ItemRow]
    with open_package(items, kind="items") as ipkg:
        holder = {it.item_id: it for it in ipkg.iter_rows("item_row.v1")}
        holder_digest = ipkg.digest
    if info.id_scheme == "hmac-sha256":
        if salt is None:
            return checks + [Check("ids", False, "the release uses salted ids: give --salt (ask the publisher)")]
        if salt_check(salt) != info.salt_check:
            return checks + [Check("ids", False, "the salt does not match release.json's salt_check")]
        to_release = {i: hash_id(i, salt) for i in holder}
    else:
        to_release = {i: i for i in holder}
    back = {v: k for k, v in to_release.items()}
    unknown = sorted({r.item_id for r in rows} - back.keys())
    checks.append(Check("ids", not unknown,
                        f"{n_items - len(unknown):,} of the release's {n_items:,} items are in your copy "
                        f"({len(holder):,} items)" + (f"; unknown: {unknown[0]!r} and {len(unknown) - 1} more"
                                                     if unknown else "")))
    same = info.items_package is not None and info.items_package.digest == holder_digest
    checks.append(Check("items package", True, "your copy has the digest the release names" if same else
                        "your copy's digest differs from the one the release names (other packaging or version); "
                        "the checks below compare content"))

    # Protected items: marked, and holding nothing but verdict and status (the row schema enforces the latter).
    wrong = [r for r in rows if r.item_id in back and holder[back[r.item_id]].protected and not r.protected]
    n_prot = len({r.item_id for r in rows if r.protected})
    checks.append(Check("protected", not wrong and n_prot == info.protected_items,
                        f"{n_prot:,} items published as protected (release.json: {info.protected_items:,})"
                        + (f"; {len(wrong)} rows of items your copy marks protected are not, first "
                           f"{wrong[0].item_id!r} sample {wrong[0].sample}" if wrong else "")))

    # References: the public rows were graded against your copy's gold.
    diff_ref = [r for r in rows if not r.protected and r.reference is not None and r.item_id in back
                and r.reference != _gold(holder[back[r.item_id]], info.reference_field)]
    checks.append(Check("references", not diff_ref,
                        "every published reference equals your copy's" if not diff_ref else
                        f"{len(diff_ref)} rows graded against another reference, first {diff_ref[0].item_id!r} "
                        f"(gold changed between versions?)"))

    # Verdicts consistent with status, and with the letter for multiple-choice rows.
    bad = []
    for r in rows:
        if (r.status == "correct") != (r.verdict == "correct") and r.status != "random_guess":
            bad.append((r, "status and verdict disagree"))
        elif (not r.protected and r.status in ("correct", "incorrect") and r.answer is not None
              and r.reference is not None and r.item_id in back and holder[back[r.item_id]].option_count()
              and len(r.answer) == 1 and len(r.reference) == 1 and (r.answer == r.reference) != (r.verdict == "correct")):
            bad.append((r, f"answer {r.answer} vs reference {r.reference} contradicts the verdict"))
    checks.append(Check("verdicts", not bad, "verdicts agree with statuses and multiple-choice letters" if not bad else
                        f"{len(bad)} rows inconsistent, first {bad[0][0].item_id!r} sample {bad[0][0].sample}: "
                        f"{bad[0][1]}"))

    # Figures: recomputed from the rows, equal to release.json's and to the README.
    figs = release_figures(rows)
    fig_ok = [(f.name, f.correct, f.total) for f in figs] == [(f.name, f.correct, f.total) for f in info.figures] and all(
        math.isclose(a.value, b.value, abs_tol=1e-12) for a, b in zip(figs, info.figures))
    checks.append(Check("figures", fig_ok, f"{len(figs)} figures recomputed from the rows match release.json"
                        if fig_ok else "figures recomputed from the rows differ from release.json"))
    readme_ok = readme == render_readme(info)
    checks.append(Check("readme", readme_ok, "README.md is what release.json generates" if readme_ok else
                        "README.md differs from what release.json generates (edited after release?)"))

    # Leak check with the holder's own text.
    protected = {i for i in holder if holder[i].protected} | {back[r.item_id] for r in rows
                                                               if r.protected and r.item_id in back}
    texts = _protected_texts(holder, protected, Path(responses) if responses else None, None, "release")
    aliases = {}
    for i in protected:
        aliases[i] = i
        aliases[to_release[i]] = i
    index = LeakIndex(texts, references={i: {holder[i].reference, _gold(holder[i], info.reference_field)} - {None}
                                        for i in protected}, aliases=aliases)
    leaks = leak_problems(files, index)
    n_responses = sum(1 for t in texts if t.what.startswith("response"))
    if leaks:
        checks.append(Check("leaks", False, f"{len(leaks)} leaks, first: {leaks[0]}"))
    elif responses and protected and not n_responses:
        # Saying "responses included" would be false assurance: the package given is not the one graded.
        checks.append(Check("leaks", False, f"{responses} holds no response of the release's protected items "
                            f"(another package?); no protected text from your items in any file"))
    else:
        checks.append(Check("leaks", True, f"no protected text from your copy ({len(texts):,} strings"
                            f"{', responses included' if responses else ''}) in any file"))
    return checks

