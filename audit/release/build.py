"""`audit release`: build a release package from a verdict file, in named steps over one `BuildContext`.

`BUILD_STEPS` runs in order: read the inputs, select the protected rows, hash the ids, gather the protected
text, form the published rows, index every name protected text goes by, describe the release (figures,
inference test, release.json), and write it, where the leak check runs on every file before the commit.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from audit import inference
from audit.errors import AuditError, Problem
from audit.leaks import CURRENT as LEAK_CHECK
from audit.leaks import MIN_LEAK_CHARS, LeakIndex, ProtectedText, find_leaks, normalize
from audit.models import ItemRow, Provenance
from audit.packages import PackageWriter, open_package
from audit.release.models import (
    INFO_FILE,
    MAX_RELEASE_SAMPLES,
    PUBLIC_TEXT_CAP,
    PUBLIC_TEXT_FILE,
    PUBLIC_TEXT_SCHEMA,
    README_FILE,
    ROWS_FILE,
    ROWS_SCHEMA,
    ROWS_SCHEMA_V1,
    ClosedReleaseRow,
    InferenceCheck,
    LeakCheckInfo,
    LeakFound,
    LeakTransforms,
    PublicTextRow,
    ReleaseInfo,
    ReleaseRow,
    ReleaseStructure,
)
from audit.release.render import info_json, render_readme
from audit.release.salt import hash_id, release_id_key, strong_salt
from audit.summary import figures as compute_figures
from audit.verdicts import ROW_STATUSES, ComponentRef, Figure, PackageRef, VerdictFile, VerdictRead, read_verdicts


def _resolve(ref: PackageRef | None, given: str | Path | None, base: Path) -> Path | None:
    if given is not None:
        return Path(given)
    if ref is not None and ref.path:
        p = Path(ref.path)
        return p if p.is_absolute() else base / p
    return None


def gold_of(item: ItemRow, reference_field: str) -> str | None:
    """The item's reference in the field a grading read (`reference` or `extra.KEY`); None when absent."""
    if reference_field.startswith("extra."):
        value = item.extra.get(reference_field[6:])
        return value if isinstance(value, str) else None
    return item.reference


def option_letter(answer: str | None, item: ItemRow | None) -> str | None:
    """`answer` when it is one of the item's option letters (a closed vocabulary), else None."""
    n = item.option_count() if item is not None else None
    if answer is None or not n or len(answer) != 1 or not "A" <= answer < chr(65 + min(n, 26)):
        return None
    return answer


def _load_items(path: Path, ref: PackageRef | None, label: str,
                pinned: dict[str, PackageRef] | None = None) -> dict[str, ItemRow]:
    with open_package(path) as pkg:
        if not pkg.files("item_row.v1"):
            raise AuditError("holds no item rows", path=str(path))
        if ref is not None and pkg.digest != ref.digest:
            raise AuditError(f"items package digest is {pkg.digest[:12]}, the {label} names {ref.digest[:12]}",
                             path=str(path))
        if pinned is not None:
            pinned["items"] = PackageRef(package_id=pkg.manifest.package_id, digest=pkg.digest,
                                         path=pkg.manifest.benchmark)  # (path: its benchmark, for the check)
        return {it.item_id: it for it in pkg.iter_rows("item_row.v1")}


def protected_texts(items: dict[str, ItemRow], protected: set[str], responses: Path | None,
                     ref: PackageRef | None, label: str) -> list[ProtectedText]:
    """The protected strings of the leak check: question, options and reference of each protected item, and
    (from `responses`, checked against `ref` when given) their responses."""
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


def key_texts(published: list[tuple[str, str, str]]) -> list[ProtectedText]:
    """The protected references spelled out, as protected strings: (published id, dataset id, reference) of
    each protected item in published order. In published order and in dataset-id order, as the references
    and, for letters, as 0- and 1-based digits; a public value spelling the key is then a leak (rule 1)."""
    out = []
    orders = {"published order": [r for _, _, r in published],
              "dataset order": [r for _, _, r in sorted(published, key=lambda x: x[1])]}
    for order, refs in orders.items():
        forms = {"": "".join(refs)}
        if all(len(r) == 1 and r.isalpha() and r.isupper() for r in refs):
            forms[", as 0-based digits"] = "".join(str(ord(r) - 65) for r in refs)
            forms[", as 1-based digits"] = "".join(str(ord(r) - 64) for r in refs)
        for form, text in forms.items():
            if len(normalize(text)) >= MIN_LEAK_CHARS:
                out.append(ProtectedText("", f"references of the protected items in {order}{form}", text))
    return out


def short_keys(published: list[tuple[str, str, str]]) -> list[tuple[str, str]]:
    """leakcheck@3's short keys: (what, key) for the protected references (published id, dataset id, reference in
    published order) spelled in published and in dataset order, each forwards and reversed, and for letters as 0-
    and 1-based digits too. Any length: `audit.leaks.find_keys` looks for them as words, runs of one-letter
    words, and in columns where chance could not spell them."""
    out = []
    orders = {"published order": [r for _, _, r in published],
              "dataset order": [r for _, _, r in sorted(published, key=lambda x: x[1])]}
    for order, refs in orders.items():
        forms = {"": refs}
        if all(len(r) == 1 and r.isalpha() and r.isupper() for r in refs):
            forms[", as 0-based digits"] = [str(ord(r) - 65) for r in refs]
            forms[", as 1-based digits"] = [str(ord(r) - 64) for r in refs]
        for form, symbols in forms.items():
            if all(len(x) == 1 for x in symbols):
                out.append((f"the references of the protected items in {order}{form}", "".join(symbols)))
                out.append((f"the references of the protected items in reversed {order}{form}",
                            "".join(reversed(symbols))))
    return out


SAFE_NAME = re.compile(r"[a-z0-9][a-z0-9_.:/+-]{0,63}")
"""What a document-level string (the benchmark name) must match to be published in release.json and README.md:
a short lowercase name, never text."""


@dataclass
class ReleaseResult:
    """What `build_release` wrote."""

    out: Path
    package_id: str
    info: ReleaseInfo


@dataclass
class BuildContext:
    """What the steps of one release share: the arguments of `build_release`, then what each step derived."""

    verdicts: Path
    """The verdict file released."""
    out: str | Path
    """The release package directory to write."""
    items: str | Path | None
    """The items package given (default: the one the verdict file names)."""
    responses: str | Path | None
    """The responses package given (default: the one the verdict file names)."""
    all_protected: bool
    """Every item is protected."""
    public: bool
    """Every item is public."""
    hash_ids: bool
    """Publish salted ids."""
    salt: str | None
    """The salt given for salted ids."""
    no_response_check: bool
    """Release protected items without their responses (recorded)."""
    package_id: str | None
    """The package id given (published)."""
    overwrite: bool
    """Replace `out` if it exists."""
    public_text: bool
    """Publish public items' imported text, capped, in `public_text.jsonl` (releases holding protected items)."""
    vt: VerdictRead = field(init=False)
    """The verdict file, read once: the rows published and the sha256 named come from the same bytes."""
    sha256: str = field(init=False)
    """The sha256 of the verdict file's bytes that `vt` came from."""
    rows: list[dict[str, Any]] = field(init=False)
    """The verdict rows, in the file's order."""
    item_rows: dict[str, ItemRow] = field(init=False)
    """The items package's rows by id (empty when none is read)."""
    item_ids: list[str] = field(init=False)
    """The graded item ids, sorted."""
    id_salt: str | None = field(init=False)
    """The checked salt, with salted ids."""
    protected: set[str] = field(init=False)
    """Dataset ids of the protected items."""
    ids: dict[str, str] = field(init=False)
    """Dataset id -> published id."""
    id_key: str | None = field(init=False)
    """The release's own id key, with salted ids."""
    texts: list[ProtectedText] = field(init=False)
    """The protected strings the leak check indexes."""
    n_texts: int = field(init=False)
    """The items' and responses' protected strings (what release.json counts)."""
    references: dict[str, set[str]] = field(init=False)
    """Every reference a protected item goes by (the rows' and the items package's)."""
    aliases: dict[str, str] = field(init=False)
    """Every id a protected item goes by -> its dataset id."""
    structural: bool = field(init=False)
    """The release holds a protected item: its rows are `release_row.v2` (closed vocabulary only)."""
    ranks: dict[tuple[str, int], int] = field(init=False)
    """(dataset id, sample) -> the sample's rank among the item's samples (structural releases)."""
    sample_source: str = field(init=False)
    """Where the ranks come from: `responses package` or `verdict file`."""
    pinned: dict[str, PackageRef] = field(init=False)
    """`items` and `responses`: the packages read, by their own manifest's id and digest (what a structural
    release publishes, never the verdict file's names for them)."""
    attempt_ranks: dict[tuple[str, int, int], int] = field(init=False)
    """(dataset id, sample, attempt) -> the attempt's rank among the responses package's attempts of that sample
    (structural releases with the responses package; without it no attempt is published)."""
    withheld: Counter[str] = field(init=False)
    """Public rows whose answer, rule or reason was not published, by field (structural releases)."""
    release_rows: list[ReleaseRow | ClosedReleaseRow] = field(init=False)
    """The rows as published, sorted by published id then sample."""
    text_rows: list[PublicTextRow] = field(init=False)
    """With `public_text`: the public rows' imported text, in the rows' order."""
    index: LeakIndex = field(init=False)
    """The leak index over the protected text."""
    inferred: inference.Result = field(init=False)
    """The answer-inference test over the published protected rows."""
    info: ReleaseInfo = field(init=False)
    """release.json."""
    result: ReleaseResult = field(init=False)
    """What was written."""


def _read_inputs(b: BuildContext) -> None:
    """Read the verdict file, check the options, and read the items package that says which items are protected."""
    # one read: the rows published and the sha256 named come from the same bytes
    b.vt = read_verdicts(b.verdicts, sha256=True)
    assert b.vt.sha256 is not None  # asked for
    b.sha256 = b.vt.sha256
    header = b.vt.header
    if b.all_protected and b.public:
        raise AuditError("--protected and --public contradict each other")
    b.id_salt = strong_salt(b.salt) if b.hash_ids else None
    b.rows = rows = b.vt.rows.to_pylist()
    base = b.verdicts.parent
    items_path = _resolve(header.items_package, b.items, base)
    items_ref = header.items_package
    if items_path is None and header.items_package is None and not (b.all_protected or b.public):
        # Graded with the responses package's own item rows: read them from there.
        own = _resolve(header.responses_package, b.responses, base)
        if own is not None and own.exists():
            items_path, items_ref = own, header.responses_package if b.responses is None else None
    b.item_rows, b.pinned = {}, {}
    if items_path is not None:
        b.item_rows = _load_items(items_path, items_ref, "verdict file", b.pinned)
        missing = {r["item_id"] for r in rows} - b.item_rows.keys()
        if missing:  # named by row, not by id: an id may be text that must not be printed
            first = next(n for n, r in enumerate(rows, 1) if r["item_id"] in missing)
            raise AuditError(f"{len(missing)} graded items are not in the items package (the first at row {first} "
                             f"of the verdict file)", path=str(items_path))
    elif not (b.all_protected or b.public):
        raise AuditError("cannot tell which items are protected: give --items ITEMS_PACKAGE (or name it in the "
                         "verdict file), --protected to treat every item as protected, or --public",
                         path=str(b.verdicts))
    b.item_ids = sorted({r["item_id"] for r in rows})


def _select_protected(b: BuildContext) -> None:
    """Check the names the release publishes, and select the protected items, whose rows keep verdict and status."""
    header = b.vt.header
    if not SAFE_NAME.fullmatch(header.benchmark):  # copied into release.json and README.md: never free text
        raise AuditError(f"a release publishes the benchmark name, which must match {SAFE_NAME.pattern} (lowercase "
                         f"letters, digits and ._:/+-, at most 64 characters); this one does not (rename it in the "
                         f"verdict file)", path=str(b.verdicts), field="benchmark")
    if b.package_id is not None and not SAFE_NAME.fullmatch(b.package_id):
        raise AuditError(f"--id: a release's package id is published: it must match {SAFE_NAME.pattern}; this one "
                         f"does not")
    if b.all_protected:
        b.protected = set(b.item_ids)
    elif b.public:
        b.protected = set()
    else:
        b.protected = {i for i in b.item_ids if b.item_rows[i].protected}
    b.structural = bool(b.protected)
    if b.structural and not REFERENCE_FIELD.fullmatch(header.reference_field):
        raise AuditError(f"a release holding protected items publishes the reference field, which must match "
                         f"{REFERENCE_FIELD.pattern}; this one does not", path=str(b.verdicts), field="reference_field")
    for n, r in enumerate(b.rows, 1):
        if r["status"] not in ROW_STATUSES and (r["item_id"] in b.protected or b.structural):
            # Free text (an imported status) would be published beside a protected item's id, or beside public
            # rows of a release every value of which is closed vocabulary.
            whose = "a protected row's" if r["item_id"] in b.protected else "in a release holding protected items, " \
                                                                            "every row's"
            raise AuditError(f"{whose} status must be one of audit's statuses ({', '.join(ROW_STATUSES)}); "
                             f"this one is not (imported?)", path=str(b.verdicts), row=n, field="status")


def _hash_ids(b: BuildContext) -> None:
    """The published id of every item: the dataset's, or salted under the release's own key."""
    b.id_key = release_id_key(b.id_salt, b.sha256) if b.id_salt is not None else None
    b.ids = {i: hash_id(i, b.id_key) if b.id_key else i for i in b.item_ids}
    if b.hash_ids and len(set(b.ids.values())) != len(b.ids):
        raise AuditError("two item ids hash to the same salted id: use another salt")


def _gather_protected_text(b: BuildContext) -> None:
    """The leak check's protected strings (items' and responses' text), references, and every id a protected item
    goes by."""
    header, protected = b.vt.header, b.protected
    responses_path = _resolve(header.responses_package, b.responses, b.verdicts.parent)
    if protected and responses_path is None and not b.no_response_check:
        raise AuditError("the leak check needs the responses of the protected items: give --responses "
                         "RESPONSES_PACKAGE (or --no-response-check, recorded in release.json)", path=str(b.verdicts))
    b.texts = protected_texts(b.item_rows, protected, None if b.no_response_check else responses_path,
                              header.responses_package, "verdict file")
    b.n_texts = len(b.texts)  # what release.json counts: the items' and responses' strings
    judge = getattr(header, "judge", None)
    if judge is not None and protected:  # graded from judge calls: their replies are protected text too
        from audit.judge.grading import judge_texts

        b.texts += judge_texts(_resolve(judge.calls_package, None, b.verdicts.parent), judge.calls_package,
                               protected)
    b.references = {}
    for r in b.rows:  # rows carry the reference they were graded against, items the current one
        if r["item_id"] in protected and r["reference"]:
            b.references.setdefault(r["item_id"], set()).add(r["reference"])
    for i in protected:
        if i in b.item_rows:
            b.references.setdefault(i, set()).add(b.item_rows[i].reference)
    b.aliases = {}
    for i in protected:
        b.aliases[i] = i
        b.aliases[b.ids[i]] = i


def _rank_samples(b: BuildContext) -> None:
    """Structural releases: each row's published sample is the rank of its sample among the item's samples in the
    pinned responses package (with `--no-response-check`, in the verdict file), so indices the verdict file chose
    (one per gold letter, or a multiple of 4 plus the letter's index) carry nothing. A row whose (item, sample)
    the responses package lacks is refused: it graded no response of it."""
    b.ranks, b.sample_source, b.attempt_ranks = {}, "verdict file", {}
    if not b.structural:
        return
    graded = {(r["item_id"], r["sample"]) for r in b.rows}
    pairs = graded
    attempts: dict[tuple[str, int], set[int]] = {}
    header = b.vt.header
    responses = None if b.no_response_check else _resolve(header.responses_package, b.responses, b.verdicts.parent)
    if responses is not None:
        with open_package(responses, kind="responses") as pkg:
            if header.responses_package is not None and pkg.digest != header.responses_package.digest:
                raise AuditError(f"responses package digest is {pkg.digest[:12]}, the verdict file names "
                                 f"{header.responses_package.digest[:12]}", path=str(responses))
            items = {i for i, _ in graded}
            b.pinned["responses"] = PackageRef(package_id=pkg.manifest.package_id, digest=pkg.digest,
                                               path=pkg.manifest.benchmark)
            for resp in pkg.iter_rows("response_row.v1"):
                if resp.item_id in items:
                    attempts.setdefault((resp.item_id, resp.sample), set()).add(resp.attempt)
            pairs = set(attempts)
        b.sample_source = "responses package"
        missing = graded - pairs
        if missing:  # named by row: an id may be text that must not be printed
            first = next(n for n, r in enumerate(b.rows, 1) if (r["item_id"], r["sample"]) in missing)
            raise AuditError(f"{len(missing)} graded rows have no response in the responses package (this is the "
                             f"first): a release's samples are the responses package's", path=str(b.verdicts),
                             row=first, field="sample")
        for n, r in enumerate(b.rows, 1):  # an attempt number is published too: the responses package's only
            if r["attempt"] is not None and r["attempt"] not in attempts[(r["item_id"], r["sample"])]:
                raise AuditError("the responses package holds no such attempt of this row's sample: a release's "
                                 "attempts are the responses package's", path=str(b.verdicts), row=n, field="attempt")
        for (item_id, sample), numbers in attempts.items():
            for rank, attempt in enumerate(sorted(numbers)):
                b.attempt_ranks[(item_id, sample, attempt)] = rank
    per_item: dict[str, list[int]] = {}
    for item_id, sample in sorted(pairs):
        per_item.setdefault(item_id, []).append(sample)
    for item_id, samples in per_item.items():
        if len(samples) > MAX_RELEASE_SAMPLES:
            raise AuditError(f"an item has {len(samples):,} samples, more than a release holds "
                             f"({MAX_RELEASE_SAMPLES:,})", path=str(b.verdicts))
        for rank, sample in enumerate(samples):
            b.ranks[(item_id, sample)] = rank


def _form_rows(b: BuildContext) -> None:
    """The rows as published, sorted by published id then sample: verdict and status only for protected items;
    in a structural release, closed vocabulary only for public items too (rank of the sample, option letter, the
    pinned reference; no rule or reason)."""
    b.withheld, b.text_rows = Counter(), []
    if b.public_text and not b.structural:
        raise AuditError("--public-text is for a release holding protected items (a release of public items only "
                         "publishes their text as it is)")
    if not b.structural:
        b.release_rows = [_release_row(r, b.ids[r["item_id"]], r["item_id"] in b.protected)
                          for r in sorted(b.rows, key=lambda r: (b.ids[r["item_id"]], r["sample"]))]
        return
    field_name = b.vt.header.reference_field
    out: list[ClosedReleaseRow] = []
    for n, r in enumerate(b.rows, 1):
        item_id = r["item_id"]
        item = b.item_rows.get(item_id)
        attempt = b.attempt_ranks.get((item_id, r["sample"], r["attempt"]))  # None without the responses
        if attempt is None and r["attempt"] is not None and item_id not in b.protected:
            b.withheld["attempt"] += 1
        row = _closed_row({**r, "attempt": attempt}, b.ids[item_id], b.ranks[(item_id, r["sample"])],
                          item_id in b.protected, item, field_name)
        out.append(row)
        if row.protected:
            continue
        if r["reference"] is not None and row.reference is not None and r["reference"] != row.reference:
            raise AuditError("a public row was graded against another reference than the items package's: a "
                             "release publishes the pinned reference (regrade against it)", path=str(b.verdicts),
                             row=n, field="reference")
        answer, rank = row.answer, row.sample
        texts = {"answer": r["answer"] if answer is None else None, "rule": r["rule"], "reason": r["reason"]}
        if b.public_text:
            for name, value in texts.items():
                if value is not None and len(value) > PUBLIC_TEXT_CAP:
                    raise AuditError(f"longer than {PUBLIC_TEXT_CAP} characters: a release holding protected items "
                                     f"publishes a public item's imported text only up to that (--public-text)",
                                     path=str(b.verdicts), row=n, field=name)
            if any(v is not None for v in texts.values()):
                b.text_rows.append(PublicTextRow(item_id=b.ids[item_id], sample=rank, **texts))
        else:
            b.withheld.update(name for name, value in texts.items() if value is not None)
    b.release_rows = sorted(out, key=lambda x: (x.item_id, x.sample))
    b.text_rows.sort(key=lambda x: (x.item_id, x.sample))


def _index_leaks(b: BuildContext) -> None:
    """The leak index: the protected strings, and the protected references spelled out in published order."""
    back = {v: k for k, v in b.ids.items()}
    order = list(dict.fromkeys(r.item_id for r in b.release_rows if r.protected))
    published = [(p, back[p], b.item_rows[back[p]].reference if back[p] in b.item_rows
                  else min(b.references.get(back[p], {""}))) for p in order]
    b.texts += key_texts(published)
    b.index = LeakIndex(b.texts, references=b.references, aliases=b.aliases, keys=short_keys(published))


def _describe(b: BuildContext) -> None:
    """release.json: the figures (agreeing with the verdict file's summary), the inference test, ids and counts."""
    header, protected, ids, item_rows = b.vt.header, b.protected, b.ids, b.item_rows
    figs = release_figures(b.release_rows)
    # Samples renumbered as ranks (the verdict file's own indices were not 0..k-1 in the responses package): its
    # per-sample figures name other samples, so only the figures over all samples are compared.
    renumbered = any(rank != sample for (_, sample), rank in b.ranks.items())
    _check_summary(header, [f for f in figs if not (renumbered and "[sample=" in f.name)], b.verdicts)
    gold = {ids[i]: item_rows[i].reference if i in item_rows else min(b.references.get(i, {""}))
            for i in protected}
    guess = None
    if header.policies.no_answer != "wrong":  # a guess policy makes each guess derivable: model it
        guess = inference.Guess(header.policies.guess_seed, {
            ids[i]: n for i in protected if i in item_rows and (n := item_rows[i].option_count())},
            header.policies.no_answer)
    b.inferred = inferred = inference.check(inference.features(
        [(r.item_id, r.sample, r.verdict, r.status) for r in b.release_rows if r.protected], guess,
        inference.published_items([(r.item_id, r.sample, r.verdict, r.status, r.answer) for r in b.release_rows])),
        gold)
    # Every excluded id in the release's scheme, those without a row too (a raw id is published otherwise).
    id_key = b.id_key
    policies = header.policies.model_copy(update={"exclude": sorted(
        hash_id(i, id_key) if id_key else i for i in header.policies.exclude)})
    responses_ref, items_ref = _unpathed(header.responses_package), _unpathed(header.items_package)
    extractor, grader = header.extractor, header.grader
    if b.structural:  # the pinned packages' own names, and components only as audit registers them
        _check_benchmark(b)
        responses_ref = _unpathed(b.pinned.get("responses")) if responses_ref is not None else None
        items_ref = _unpathed(b.pinned.get("items")) if items_ref is not None else None
        extractor, grader = _registered("extractor", extractor, b), _registered("grader", grader, b)
    b.info = ReleaseInfo(
        benchmark=header.benchmark, verdict_file_sha256=b.sha256,
        responses_package=responses_ref, items_package=items_ref,
        extractor=extractor, grader=grader, reference_field=header.reference_field, policies=policies,
        id_scheme="hmac-sha256/release" if b.hash_ids else "dataset", id_context=b.sha256 if b.hash_ids else None,
        rows=len(b.release_rows), items=len(b.item_ids), samples=len({r.sample for r in b.release_rows}),
        protected_items=len(protected), statuses=dict(sorted(Counter(r.status for r in b.release_rows).items())),
        figures=figs,
        structure=ReleaseStructure.model_validate({
            "samples": b.sample_source, "withheld": dict(sorted(b.withheld.items())),
            **({"public_text": "capped", "text_cap": PUBLIC_TEXT_CAP} if b.public_text else {})})
        if b.structural else None,
        leak_check=LeakCheckInfo(min_chars=MIN_LEAK_CHARS, protected_items=len(protected), protected_texts=b.n_texts,
                                 responses_checked=not b.no_response_check or not protected,
                                 transforms=cast(LeakTransforms, LEAK_CHECK),  # a name of audit.leaks; validated
                                 inference=InferenceCheck(test=inference.TEST, alpha=inference.ALPHA,
                                                          min_lift=inference.MIN_LIFT, features=inferred.features,
                                                          items=inferred.items, passed=not inferred.failed)))


def _write(b: BuildContext) -> None:
    """Write the files to a staging folder, run the leak check on every one, refuse an inference finding, and only
    then commit the package (nothing is written on a finding)."""
    writer = PackageWriter(b.out, kind="release", benchmark=b.vt.header.benchmark, package_id=b.package_id,
                           overwrite=b.overwrite,
                           provenance=Provenance(source=f"verdict file sha256 {b.info.verdict_file_sha256}",
                                                 notes="Per-item verdicts; see README.md and release.json."))
    try:
        with writer.rows(ROWS_FILE, ROWS_SCHEMA if b.structural else ROWS_SCHEMA_V1) as sink:
            for row in b.release_rows:
                sink.write(row)
        written = [ROWS_FILE, INFO_FILE, README_FILE]
        if b.public_text:
            with writer.rows(PUBLIC_TEXT_FILE, PUBLIC_TEXT_SCHEMA) as sink:
                for text_row in b.text_rows:
                    sink.write(text_row)
            written.append(PUBLIC_TEXT_FILE)
        writer.add_text(INFO_FILE, info_json(b.info))
        writer.add_text(README_FILE, render_readme(b.info))
        files = {rel: (writer.tmp / rel).read_bytes() for rel in written}
        if b.package_id:
            files["manifest.json"] = b.package_id.encode("utf-8")
        leaks = leak_problems(files, b.index, LEAK_CHECK)
        if leaks:
            raise LeakFound(str(b.out), leaks)
        if b.inferred.failed:  # after the text checks, whose findings are the more specific
            raise LeakFound(str(b.out), [Problem(ROWS_FILE, inference.message(f), field=f.field)
                                         for f in b.inferred.failed[:5]])
        manifest = writer.commit()
    except BaseException:
        writer.abort()
        raise
    b.result = ReleaseResult(Path(b.out), manifest.package_id, b.info)


BUILD_STEPS: tuple[Callable[[BuildContext], None], ...] = (
    _read_inputs, _select_protected, _hash_ids, _gather_protected_text, _rank_samples, _form_rows, _index_leaks,
    _describe, _write)
"""The steps of `build_release`, in order; each raises AuditError (LeakFound for a leak) to stop, writing nothing."""


def build_release(verdicts: str | Path, out: str | Path, *, items: str | Path | None = None,
                  responses: str | Path | None = None, all_protected: bool = False, public: bool = False,
                  hash_ids: bool = False, salt: str | None = None, no_response_check: bool = False,
                  package_id: str | None = None, overwrite: bool = False, public_text: bool = False) -> ReleaseResult:
    """Write a release package of the verdict file `verdicts` to `out`; raise LeakFound (writing nothing) on a leak."""
    context = BuildContext(Path(verdicts), out, items, responses, all_protected, public, hash_ids, salt,
                           no_response_check, package_id, overwrite, public_text)
    for step in BUILD_STEPS:
        step(context)
    return context.result


def _release_row(r: dict[str, Any], release_id: str, protected: bool) -> ReleaseRow:
    """A verdict row as published: verdict and status only for a protected item."""
    if protected:
        return ReleaseRow(item_id=release_id, sample=r["sample"], verdict=r["verdict"], status=r["status"],
                          protected=True)
    return ReleaseRow(item_id=release_id, sample=r["sample"], verdict=r["verdict"], status=r["status"],
                      attempt=r["attempt"], answer=r["answer"], rule=r["rule"], reason=r["reason"],
                      reference=r["reference"])


REFERENCE_FIELD = re.compile(r"reference|extra\.[a-z0-9_]{1,32}")
"""What a structural release publishes as the item field its references come from: never text."""


def _check_benchmark(b: BuildContext) -> None:
    """A structural release publishes the benchmark name only when it is a registered benchmark spec or the
    benchmark a pinned package's manifest names: a safe name chosen by the verdict file could spell text."""
    from audit.specs import SPECS

    name = b.vt.header.benchmark
    pinned = {ref.path for ref in b.pinned.values() if ref.path}
    if name not in SPECS and name not in pinned:
        raise AuditError("a release holding protected items publishes the benchmark name only when it is a "
                         "registered benchmark spec or the one the items or responses package names; this one is "
                         "neither (rename it in the verdict file)", path=str(b.verdicts), field="benchmark")


def _registered(kind: str, ref: ComponentRef | None, b: BuildContext) -> ComponentRef | None:
    """`ref` when audit registers that `name@version` under its fingerprint (or one its lock accepts): then every
    string of it is a registered component's. Otherwise None (published as not recorded), counted as withheld."""
    if ref is None:
        return None
    from audit import lock
    from audit.specs import lookup

    try:
        comp = lookup(kind, ref.key)
    except AuditError:
        comp = None
    if comp is not None:
        mine = ComponentRef(name=comp.name, version=comp.version, fingerprint=comp.fingerprint)
        if lock.same_version(kind, ref, mine):
            return ref
    b.withheld["components"] += 1
    return None


def _closed_row(r: dict[str, Any], release_id: str, rank: int, protected: bool, item: ItemRow | None,
                reference_field: str) -> ClosedReleaseRow:
    """A verdict row as a structural release publishes it: verdict and status (and the sample's rank) only for a
    protected item; for a public one also the attempt, the answer when it is one of the item's option letters, and
    the pinned items package's reference. Nothing of the verdict file's free text."""
    if protected:
        return ClosedReleaseRow(item_id=release_id, sample=rank, verdict=r["verdict"], status=r["status"],
                                protected=True)
    return ClosedReleaseRow(item_id=release_id, sample=rank, verdict=r["verdict"], status=r["status"],
                            attempt=r["attempt"], answer=option_letter(r["answer"], item),
                            reference=gold_of(item, reference_field) if item is not None else None)


def leak_problems(files: dict[str, bytes], index: LeakIndex, transforms: str = LEAK_CHECK) -> list[Problem]:
    """Findings of both leak rules under the named transformations, sorted by file, row and field."""
    return find_leaks(files, index, transforms)


def _unpathed(ref: PackageRef | None) -> PackageRef | None:
    return None if ref is None else PackageRef(package_id=ref.package_id, digest=ref.digest)


def release_figures(rows: list[ReleaseRow] | list[ClosedReleaseRow] | list[ReleaseRow | ClosedReleaseRow]
                    ) -> list[Figure]:
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
