"""`audit verify-release`: check a release against the holder's own copy of the items, one named step per check.

Each step reads and extends one `VerifyContext` and reports its `Check`; `VERIFY_STEPS` runs them in the
order the CLI help lists. A step that cannot establish what the later ones need (a package that does not
open, a release.json that does not parse, ids that cannot be mapped) ends the verification with its check.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from audit import inference
from audit.errors import AuditError, Problem
from audit.fileio import MAX_DOCUMENT_BYTES, JsonError, loads_strict
from audit.leaks import LeakIndex
from audit.models import ItemRow
from audit.packages import load_package, open_package
from audit.release.build import gold_of as _gold
from audit.release.build import key_texts, leak_problems, protected_texts, release_figures, short_keys
from audit.release.kind import release_rows, rows_file_problem, rows_schema
from audit.release.models import (
    DATA_FILE,
    INFO_FILE,
    PUBLIC_TEXT_SCHEMA,
    README_FILE,
    ROWS_FILE,
    ROWS_SCHEMA,
    ClosedReleaseRow,
    PublicTextRow,
    ReleaseInfo,
    ReleaseRow,
)
from audit.release.render import render_readme
from audit.release.salt import hash_id, release_id_key, salt_check
from audit.verdicts import ROW_STATUSES


@dataclass(frozen=True)
class Check:
    """One verification step: its name, whether it passed, and what it found."""

    name: str
    ok: bool
    detail: str


@dataclass
class VerifyContext:
    """What the steps of one verification share: the arguments, then what each step read or derived."""

    release: Path
    """The release package directory."""
    dataset: Path | None
    """The Hugging Face dataset folder the release package is in (`--format hf`), when one was named."""
    items: str | Path
    """The holder's own items package."""
    salt: str | None
    """The salt the publisher shared (for salted ids)."""
    responses: str | Path | None
    """The holder's responses package, for the leak check."""
    rows: list[ReleaseRow | ClosedReleaseRow] = field(init=False)
    """The released rows (package step)."""
    schema: str = field(init=False)
    """The rows' schema: `release_row.v2` (structural) or `release_row.v1` (package step)."""
    text_rows: list[PublicTextRow] = field(init=False)
    """The public items' imported text of a `--public-text` release (package step; empty otherwise)."""
    files: dict[str, bytes] = field(init=False)
    """Every file of the release, as its manifest pins it (package step)."""
    info: ReleaseInfo = field(init=False)
    """release.json (release.json step)."""
    n_items: int = field(init=False)
    """Distinct items of the released rows (counts step)."""
    holder: dict[str, ItemRow] = field(init=False)
    """The holder's items by dataset id (ids step)."""
    holder_digest: str = field(init=False)
    """The digest of the holder's items package (ids step)."""
    to_release: dict[str, str] = field(init=False)
    """The holder's dataset id -> its id in the release's scheme (ids step)."""
    back: dict[str, str] = field(init=False)
    """A released id -> the holder's dataset id (ids step)."""
    protected: set[str] = field(init=False)
    """Dataset ids protected in the holder's copy or published as protected (ids step)."""


class _Stop(Exception):
    """Raised by a step whose check ends the verification: the later steps need what it could not establish."""

    def __init__(self, check: Check) -> None:
        super().__init__(check.detail)
        self.check = check


def _package(v: VerifyContext) -> Check:
    """package: the manifest, every file's sha256 and size, and every row's schema are valid."""
    pkg, problems = load_package(v.release)  # validated once, then read under the digests it checked
    if pkg is None:
        raise _Stop(Check("package", False, f"{len(problems)} problems, first: {_redacted(problems[0])}"))
    failure = None
    try:
        with pkg:
            if pkg.kind != "release":
                failure = f"is a {pkg.kind!r} package, not a release"
            elif missing := {ROWS_FILE, INFO_FILE, README_FILE} - {f.path for f in pkg.manifest.files}:
                failure = f"missing {', '.join(sorted(missing))}"
            elif big := next((f for f in pkg.manifest.files if f.path != ROWS_FILE and f.bytes > MAX_DOCUMENT_BYTES),
                             None):
                # Read whole below (release.json parsed, every file scanned for leaks): its size, which validation
                # checked against the manifest, is bounded first.
                failure = f"{big.path}: larger than the {MAX_DOCUMENT_BYTES:,}-byte limit for a release's document"
            elif problem := rows_file_problem(pkg):  # the rows are held in memory below
                failure = problem
            else:
                # Every check below reads the bytes the manifest pins: read once, hashed, refused if they changed.
                v.schema = rows_schema(pkg)
                v.rows = release_rows(pkg)
                v.text_rows = list(pkg.iter_rows(PUBLIC_TEXT_SCHEMA)) if pkg.files(PUBLIC_TEXT_SCHEMA) else []
                v.files = {f.path: pkg.read_bytes(f.path) for f in pkg.manifest.files}
                package_line = f"{pkg.manifest.package_id}: manifest, hashes and row schemas valid"
    except AuditError as e:
        raise _Stop(Check("package", False, _redacted(e.problem))) from None
    if failure is not None:
        raise _Stop(Check("package", False, failure))
    return Check("package", True, package_line)


def _release_json(v: VerifyContext) -> None:
    """release.json follows release_info.v2 (reported only when it does not: nothing else can be checked then)."""
    try:
        v.info = ReleaseInfo.model_validate(loads_strict(v.files[INFO_FILE]))
    except JsonError as e:
        raise _Stop(Check("release.json", False, f"field {e.field}: {e}" if e.field else str(e))) from None
    except Exception as e:  # pydantic.ValidationError, with every field problem
        raise _Stop(Check("release.json", False, f"does not follow release_info.v2: "
                                                 f"{_redacted_text(str(e).splitlines()[0])}")) from None


def _counts(v: VerifyContext) -> Check:
    """counts: rows, items, samples and statuses equal release.json's."""
    rows, info = v.rows, v.info
    v.n_items = n_items = len({r.item_id for r in rows})
    n_samples = len({r.sample for r in rows})
    counts_ok = (info.rows, info.items, info.samples) == (len(rows), n_items, n_samples)
    statuses = dict(sorted(Counter(r.status for r in rows).items()))
    return Check("counts", counts_ok and statuses == info.statuses,
                 f"{len(rows):,} rows, {n_items:,} items x {n_samples:,} samples"
                 + ("" if counts_ok else f"; release.json says {info.rows:,} rows, {info.items:,} items, "
                                         f"{info.samples:,} samples")
                 + ("" if statuses == info.statuses else "; statuses differ from release.json"))


def _order(v: VerifyContext) -> Check:
    """order: rows are sorted by item id then sample (an order of their own can follow the answers)."""
    keys = [(r.item_id, r.sample) for r in v.rows]
    disorder = next((n for n in range(1, len(keys)) if keys[n] <= keys[n - 1]), None)
    return Check("order", disorder is None, "rows sorted by item id then sample, as audit writes them"
                 if disorder is None else f"row {disorder + 1} is out of item id and sample order: a release's "
                                          f"rows follow their ids, never an order of their own (it can "
                                          f"follow the answers)")


def _ids(v: VerifyContext) -> Check:
    """ids: every item id of the release is one of the holder's (salted ids: under the salt given)."""
    rows, info, n_items = v.rows, v.info, v.n_items
    # Map the holder's items into the release's id scheme.
    # An items package, or a responses package that keeps its items (what every importer writes).
    with open_package(v.items) as ipkg:
        if not ipkg.files("item_row.v1"):
            raise AuditError(f"is a {ipkg.kind!r} package holding no item rows: give the items (an items package, "
                             f"or an imported responses package, which keeps them)", path=str(v.items))
        v.holder = holder = {it.item_id: it for it in ipkg.iter_rows("item_row.v1")}
        v.holder_digest = ipkg.digest
    legacy = ""
    if info.id_scheme != "dataset":
        if v.salt is None:
            raise _Stop(Check("ids", False, "the release uses salted ids: give --salt-file (ask the publisher)"))
        if info.salt_check is not None:
            if salt_check(v.salt) != info.salt_check:
                raise _Stop(Check("ids", False, "the salt does not match release.json's salt_check"))
            legacy = ("; warning: release.json publishes salt_check, an unsalted hash of the salt that lets anyone "
                      "test salt guesses offline (written before audit refused weak salts): publish a new release")
        if info.id_scheme == "hmac-sha256/release":
            if info.id_context is None:
                raise _Stop(Check("ids", False, "release.json names the id scheme hmac-sha256/release but no "
                                                "id_context"))
            key = release_id_key(v.salt, info.id_context)
        else:
            key = v.salt
        v.to_release = {i: hash_id(i, key) for i in holder}
    else:
        v.to_release = {i: i for i in holder}
    v.back = back = {r: i for i, r in v.to_release.items()}
    v.protected = {i for i in holder if holder[i].protected} | {back[r.item_id] for r in rows
                                                                if r.protected and r.item_id in back}
    released = {r.item_id for r in rows}
    unknown = released - back.keys()
    where = ""
    if unknown:  # by row: an unknown id may be text that must not be printed
        first = next(n for n, r in enumerate(rows, 1) if r.item_id in unknown)
        where = (f"; {len(unknown):,} unknown, the first at row {first}"
                 + (" (none is yours under this salt: wrong salt?)" if len(unknown) == n_items and n_items
                    and info.id_scheme != "dataset" else ""))
    return Check("ids", not unknown, f"{n_items - len(unknown):,} of the release's {n_items:,} items are in your copy "
                                     f"({len(holder):,} items){where}{legacy}")


def _items_package(v: VerifyContext) -> Check:
    """items package: whether the holder's copy has the digest the release names (informational)."""
    same = v.info.items_package is not None and v.info.items_package.digest == v.holder_digest
    return Check("items package", True, "your copy has the digest the release names" if same else
                 "your copy's digest differs from the one the release names (other packaging or version); "
                 "the checks below compare content")


def _protected(v: VerifyContext) -> Check:
    """protected: every item the holder's copy marks protected is published as protected (holding nothing but
    verdict and status: the row schema enforces that)."""
    rows, holder, back = v.rows, v.holder, v.back
    wrong = [r for r in rows if r.item_id in back and holder[back[r.item_id]].protected and not r.protected]
    n_prot = len({r.item_id for r in rows if r.protected})
    return Check("protected", not wrong and n_prot == v.info.protected_items,
                 f"{n_prot:,} items published as protected (release.json: {v.info.protected_items:,})"
                 + (f"; {len(wrong)} rows of items your copy marks protected are not, first "
                    f"{wrong[0].item_id!r} sample {wrong[0].sample}" if wrong else ""))


def _structure(v: VerifyContext) -> Check:
    """structure: a release holding protected items publishes only closed vocabulary (`release_row.v2`, samples
    ranked 0..k-1 per item, public answers option letters of the holder's items); a version-1 release is read and
    flagged: its public rows' free text was checked by the leak check alone, and a protected row's status that is
    not one of audit's (free text) fails."""
    rows, info = v.rows, v.info
    protected_rows = [r for r in rows if r.protected]
    if not protected_rows and not info.protected_items:
        return Check("structure", True, "nothing protected: every row is public")
    free_status = sum(1 for r in protected_rows if r.status not in ROW_STATUSES)
    if v.schema != ROWS_SCHEMA:
        if info.schema_version >= 2:
            return Check("structure", False, f"release.json is version {info.schema_version} but its rows are "
                                             f"{v.schema}, whose fields hold free text: not a release audit writes")
        if free_status:
            return Check("structure", False, f"{free_status} protected rows publish a status that is not one of "
                                             f"audit's (free text beside a protected item)")
        texts = sum(1 for r in rows if not r.protected and isinstance(r, ReleaseRow)
                    and (r.reason is not None or r.rule is not None))
        return Check("structure", True, f"warning: a version-1 release ({v.schema}): {texts:,} public rows publish "
                                        f"free text beside {len({r.item_id for r in protected_rows}):,} protected "
                                        f"items, checked by the leak check alone; publish a new release")
    per_item: dict[str, list[int]] = {}
    for r in rows:
        per_item.setdefault(r.item_id, []).append(r.sample)
    unranked = sum(1 for samples in per_item.values() if sorted(samples) != list(range(len(samples))))
    letters = sum(1 for r in rows if not r.protected and r.answer is not None and r.item_id in v.back
                  and not ((n := v.holder[v.back[r.item_id]].option_count()) and ord(r.answer) - 65 < n))
    assert info.structure is not None  # release_info.v2 requires it beside protected items
    capped = info.structure.public_text == "capped"
    public = {(r.item_id, r.sample) for r in rows if not r.protected
              and not (r.item_id in v.back and v.back[r.item_id] in v.protected)}
    strays = sum(1 for t in v.text_rows if (t.item_id, t.sample) not in public)
    problems = ([f"{unranked:,} items' sample indices are not ranks 0..k-1"] if unranked else []) + \
        ([f"{letters:,} public answers are not option letters of your items"] if letters else []) + \
        ([f"{strays:,} rows of imported text are not of a public row"] if strays else []) + \
        (["release.json says public text is withheld, yet the release holds some"] if v.text_rows and not capped
         else [])
    text = (f"{len(v.text_rows):,} public rows' imported text, at most {info.structure.text_cap} characters each, "
            f"through the leak check" if capped else "public free text withheld")
    return Check("structure", not problems, "; ".join(problems) if problems else
                 f"closed vocabulary only ({ROWS_SCHEMA}; samples ranked in the {info.structure.samples}; {text})")


def _references(v: VerifyContext) -> Check:
    """references: the public rows were graded against the holder's gold."""
    holder, back = v.holder, v.back
    diff_ref = [r for r in v.rows if not r.protected and r.reference is not None and r.item_id in back
                and r.reference != _gold(holder[back[r.item_id]], v.info.reference_field)]
    return Check("references", not diff_ref,
                 "every published reference equals your copy's" if not diff_ref else
                 f"{len(diff_ref)} rows graded against another reference, first {diff_ref[0].item_id!r} "
                 f"(gold changed between versions?)")


def _verdicts(v: VerifyContext) -> Check:
    """verdicts: consistent with status, and with the letter for multiple-choice rows."""
    holder, back = v.holder, v.back
    bad = []
    for r in v.rows:
        if (r.status == "correct") != (r.verdict == "correct") and r.status != "random_guess":
            bad.append((r, "status and verdict disagree"))
        elif (not r.protected and r.status in ("correct", "incorrect") and r.answer is not None
              and r.reference is not None and r.item_id in back and holder[back[r.item_id]].option_count()
              and len(r.answer) == 1 and len(r.reference) == 1
              and (r.answer == r.reference) != (r.verdict == "correct")):
            bad.append((r, f"answer {r.answer} vs reference {r.reference} contradicts the verdict"))
    return Check("verdicts", not bad, "verdicts agree with statuses and multiple-choice letters" if not bad else
                 f"{len(bad)} rows inconsistent, first {bad[0][0].item_id!r} sample {bad[0][0].sample}: "
                 f"{bad[0][1]}")


def _figures(v: VerifyContext) -> Check:
    """figures: recomputed from the rows, equal to release.json's."""
    figs = release_figures(v.rows)
    fig_ok = [(f.name, f.correct, f.total) for f in figs] == [(f.name, f.correct, f.total)
                                                              for f in v.info.figures] and all(
        math.isclose(a.value, b.value, abs_tol=1e-12) for a, b in zip(figs, v.info.figures, strict=True))
    return Check("figures", fig_ok, f"{len(figs)} figures recomputed from the rows match release.json"
                 if fig_ok else "figures recomputed from the rows differ from release.json")


def _readme(v: VerifyContext) -> Check:
    """readme: README.md is exactly what release.json generates."""
    readme_ok = v.files[README_FILE].decode("utf-8", errors="replace") == render_readme(v.info)
    return Check("readme", readme_ok, "README.md is what release.json generates" if readme_ok else
                 "README.md differs from what release.json generates (edited after release?)")


def _leaks(v: VerifyContext) -> Check:
    """leaks: the leak check with the holder's questions, options, references (and responses)."""
    holder, back, info, protected = v.holder, v.back, v.info, v.protected
    texts = protected_texts(holder, protected, Path(v.responses) if v.responses else None, None, "release")
    n_texts = len(texts)
    order = list(dict.fromkeys(r.item_id for r in v.rows if r.protected and r.item_id in back))
    published = [(p, back[p], g) for p in order if (g := _gold(holder[back[p]], info.reference_field))]
    if info.leak_check.transforms != "leakcheck@1":
        texts += key_texts(published)
    aliases = {}
    for i in protected:
        aliases[i] = i
        aliases[v.to_release[i]] = i
    references = {i: {g for g in (holder[i].reference, _gold(holder[i], info.reference_field)) if g is not None}
                  for i in protected}
    index = LeakIndex(texts, references=references, aliases=aliases, keys=short_keys(published))
    leaks = leak_problems(v.files, index, info.leak_check.transforms)
    n_responses = sum(1 for t in texts if t.what.startswith("response"))
    if leaks:
        return Check("leaks", False, f"{len(leaks)} leaks, first: {leaks[0]}")
    if v.responses and protected and not n_responses:
        # Saying "responses included" would be false assurance: the package given is not the one graded.
        return Check("leaks", False, f"{v.responses} holds no response of the release's protected items "
                     f"(another package?); no protected text from your items in any file")
    return Check("leaks", True, f"no protected text from your copy ({n_texts:,} strings"
                 f"{', responses included' if v.responses else ''}) in any file "
                 f"({info.leak_check.transforms}, as release.json records)")


def _inference(v: VerifyContext) -> Check:
    """inference: no published feature predicts the holder's references far above chance (audit.inference)."""
    holder, info, protected, to_release = v.holder, v.info, v.protected, v.to_release
    gold = {to_release[i]: g for i in protected if (g := _gold(holder[i], info.reference_field)) is not None}
    guess = None
    if info.policies.no_answer != "wrong":
        guess = inference.Guess(info.policies.guess_seed, {
            to_release[i]: n for i in protected if (n := holder[i].option_count())}, info.policies.no_answer)
    inferred = inference.check(inference.features(
        [(r.item_id, r.sample, r.verdict, r.status) for r in v.rows if r.protected], guess,
        inference.published_items([(r.item_id, r.sample, r.verdict, r.status, r.answer) for r in v.rows])), gold)
    if inferred.failed:
        return Check("inference", False, inference.message(inferred.failed[0]))
    return Check("inference", True, f"no published feature predicts your references far above chance "
                                    f"({inferred.features} features of {inferred.items:,} protected "
                                    f"items; {inference.TEST}, alpha {inference.ALPHA:g})")


def _parquet(v: VerifyContext) -> Check | None:
    """parquet: a dataset folder's Parquet file (what `datasets` loads) holds exactly the release's rows, columns
    and the metadata `datasets` writes, and its card is what release.json and the release's README give; nothing
    else is in the folder. Only for a dataset folder (`--format hf`)."""
    if v.dataset is None:
        return None
    from audit.fileio import read_regular
    from audit.packages.parquet import ParquetBound, open_parquet, parquet_batches, parquet_unaccounted
    from audit.release.hf import parquet_rows
    from audit.release.kind import MAX_ROWS_FILE_BYTES
    from audit.release.models import HF_CARD_FILE, HF_RELEASE_DIR, PARQUET_COLUMNS, parquet_metadata
    from audit.release.render import render_card

    columns = PARQUET_COLUMNS[v.schema]
    expected = {DATA_FILE, HF_CARD_FILE}
    extra = sorted(p.relative_to(v.dataset).as_posix() for p in v.dataset.rglob("*")
                   if (p.is_file() or p.is_symlink()) and p.relative_to(v.dataset).parts[0] != HF_RELEASE_DIR
                   and p.relative_to(v.dataset).as_posix() not in expected)
    if extra:
        return Check("parquet", False, f"the dataset folder holds {len(extra)} files the release does not name")
    try:
        data = read_regular(v.dataset / DATA_FILE, limit=MAX_ROWS_FILE_BYTES + 1)
        if len(data) > MAX_ROWS_FILE_BYTES:
            return Check("parquet", False, f"{DATA_FILE}: larger than the {MAX_ROWS_FILE_BYTES:,}-byte limit")
        pf = open_parquet(data)
        schema = pf.schema_arrow
        batches = list(parquet_batches(pf, len(data)))
        got = [row for batch in batches for row in batch.to_pylist()]
        hidden = parquet_unaccounted(pf.metadata, memoryview(data)) or _parquet_hidden_values(pf, batches, got)
    except (AuditError, OSError, ParquetBound, ValueError) as e:
        return Check("parquet", False, f"{DATA_FILE} does not read: {_redacted_text(str(e).splitlines()[0])}")
    except Exception:  # pyarrow's own errors for a damaged file (several types)
        return Check("parquet", False, f"{DATA_FILE} does not read as Parquet")
    if hidden:
        return Check("parquet", False, f"{DATA_FILE} {hidden}")
    meta = {k: val for k, val in (schema.metadata or {}).items()}
    try:
        hf_meta = loads_strict(meta.pop(b"huggingface", b"null"))
    except JsonError:
        hf_meta = None
    problems = []
    if tuple(schema.names) != columns:
        problems.append(f"its columns are not {v.schema}'s")
    if meta or hf_meta != parquet_metadata(v.schema) or any(f.metadata for f in schema):
        problems.append("its metadata is not what datasets writes for the release's columns")
    rows_text = v.files[ROWS_FILE].decode("utf-8").splitlines()
    if not problems and got != parquet_rows(rows_text, columns):
        problems.append(f"its {len(got):,} rows differ from {ROWS_FILE}'s {len(rows_text):,}")
    import pyarrow as pa

    from audit.release.hf import parquet_bytes

    same_writer = pf.metadata.created_by == f"parquet-cpp-arrow version {pa.__version__}"
    if not problems and same_writer and data != parquet_bytes(got, v.schema):
        problems.append("its bytes are not what the release's rows give (pyarrow writes them byte for byte)")
    card = read_regular(v.dataset / HF_CARD_FILE, limit=MAX_DOCUMENT_BYTES + 1)
    info = loads_strict(v.files[INFO_FILE])
    if card.decode("utf-8", errors="replace") != render_card(info, v.files[README_FILE].decode("utf-8")):
        problems.append(f"the dataset card {HF_CARD_FILE} is not what release.json and the release's README give")
    how = "byte for byte" if same_writer else (f"by content (written by {pf.metadata.created_by}, not this "
                                               f"pyarrow {pa.__version__}: every byte a page or the footer)")
    return Check("parquet", not problems, f"{DATA_FILE}: " + "; ".join(problems) if problems else
                 f"{DATA_FILE} holds the release's {len(got):,} rows and nothing else ({how}); the card is the "
                 f"release's")


_CREATED_BY = re.compile(r"parquet-cpp-arrow version [0-9]+\.[0-9]+\.[0-9]+")
_FILE_KEYS = {b"ARROW:schema", b"huggingface"}


def _parquet_hidden_values(pf: object, batches: list[object], rows: list[dict[str, object]]) -> str | None:
    """Why a Parquet file holds a value no row shows, or None: a dictionary entry no row uses, statistics naming
    a value no row of the column has, a footer key other than the Arrow schema and `datasets`' features, or a
    `created_by` that is not the Arrow writer's own (each could carry text past a reader)."""
    import pyarrow as pa

    md = pf.metadata  # type: ignore[attr-defined]
    if not _CREATED_BY.fullmatch(md.created_by or ""):
        return "names a writer (created_by) that is not pyarrow's"
    if set(md.metadata or {}) - _FILE_KEYS:
        return "holds footer metadata beyond the Arrow schema and datasets' features"
    for batch in batches:
        for name, col in zip(batch.schema.names, batch.columns, strict=True):  # type: ignore[attr-defined]
            if pa.types.is_dictionary(col.type):
                used = set(col.indices.drop_null().to_pylist())
                if len(used) != len(col.dictionary):
                    return f"column {name}: its dictionary holds {len(col.dictionary) - len(used):,} values no row uses"
    values: dict[str, set[object]] = {}
    for row in rows:
        for k, val in row.items():
            values.setdefault(k, set()).add(val)
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for c in range(rg.num_columns):
            col = rg.column(c)
            stats = col.statistics
            if stats is not None and stats.has_min_max and not {stats.min, stats.max} <= values.get(
                    col.path_in_schema, set()):
                return f"column {col.path_in_schema}: its statistics name a value no row has"
    return None


@dataclass(frozen=True)
class VerifyStep:
    """One step of `verify_release`: the check it reports, and the function that runs it over the context
    (returning its Check, or None for a step reported only when it fails)."""

    name: str
    run: Callable[[VerifyContext], Check | None]


VERIFY_STEPS: tuple[VerifyStep, ...] = (
    VerifyStep("package", _package),
    VerifyStep("release.json", _release_json),
    VerifyStep("counts", _counts),
    VerifyStep("order", _order),
    VerifyStep("ids", _ids),
    VerifyStep("items package", _items_package),
    VerifyStep("protected", _protected),
    VerifyStep("structure", _structure),
    VerifyStep("references", _references),
    VerifyStep("verdicts", _verdicts),
    VerifyStep("figures", _figures),
    VerifyStep("readme", _readme),
    VerifyStep("parquet", _parquet),
    VerifyStep("leaks", _leaks),
    VerifyStep("inference", _inference),
)
"""The checks of `verify_release`, in the order they run and are reported (`audit verify-release --help`):
package, counts, order, ids, items package, protected, structure, references, verdicts, figures, readme,
parquet (a dataset folder only), leaks, inference; release.json is reported only when it does not follow
release_info.v2."""


def verify_release(release: str | Path, items: str | Path, *, salt: str | None = None,
                   responses: str | Path | None = None) -> list[Check]:
    """Check a release against the holder's own copy of the items (see VERIFY_STEPS)."""
    from audit.release.models import release_package_dir

    inner = release_package_dir(Path(release))
    context = VerifyContext(inner, Path(release) if inner != Path(release) else None, items, salt, responses)
    checks: list[Check] = []
    for step in VERIFY_STEPS:
        try:
            check = step.run(context)
        except _Stop as stop:
            return checks + [stop.check]
        if check is not None:
            checks.append(check)
    return checks


_GOT = re.compile(r" \(got .*\)$|, input_value=.*$")


def _redacted_text(text: str) -> str:
    """A finding without the input it quotes (a row's values may be protected text)."""
    return _GOT.sub("", text)


def _redacted(p: Problem) -> str:
    return str(Problem(p.path, _redacted_text(p.message), p.row, p.field))
