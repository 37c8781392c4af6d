"""The documents of a release: its file names, `release.json` (`release_info.v1`) and the error a leak raises."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import Field, StringConstraints, model_validator

from audit.errors import ValidationFailed
from audit.models import Count, Record, Verdict
from audit.schemas import register
from audit.verdicts import ROW_STATUSES, ComponentRef, Figure, PackageRef, Policies

RELEASE_INFO_SCHEMA_VERSION = 2
"""Version 2: a release holding a protected item is structural (`structure`, rows `release_row.v2`: closed
vocabulary only, sample indices ranked in the pinned responses package). Version-1 releases still read."""
ROWS_SCHEMA_V1 = "release_row.v1"
ROWS_SCHEMA = "release_row.v2"
"""The rows of a release holding a protected item (`ClosedReleaseRow`); a release of public items only keeps
`release_row.v1`, whose answer, rule and reason are the grading's own text (nothing is protected there)."""
ROWS_FILE = "verdicts.jsonl"
PUBLIC_TEXT_FILE = "public_text.jsonl"
"""With `--public-text`: the imported answer, rule and reason of public items, capped (`release_public_text.v1`)."""
PUBLIC_TEXT_SCHEMA = "release_public_text.v1"
PUBLIC_TEXT_CAP = 200
"""Longest imported text (answer, rule or reason) of a public item a release holding protected items publishes."""
MAX_ROWS_FILE_BYTES = 1 << 30
"""Largest rows file a release is read back with (its rows are held in memory to be checked): some five million
rows, far past any benchmark's items times samples."""
INFO_FILE = "release.json"
README_FILE = "README.md"
DATA_FILE = "data/verdicts.parquet"
HF_RELEASE_DIR = "release"
"""The folder of a Hugging Face dataset folder (`audit release --format hf`) that holds the release package."""


def release_package_dir(path: Path) -> Path:
    """`path`, or the release package inside it when `path` is a Hugging Face dataset folder that `audit release
    --format hf` wrote (no manifest of its own, `release/manifest.json` and `data/verdicts.parquet` beside it):
    its dataset card's `audit validate DIR` and `audit verify-release DIR` then read the release they name."""
    if path.is_dir() and not (path / "manifest.json").exists() and (path / HF_RELEASE_DIR / "manifest.json").is_file() \
            and (path / DATA_FILE).is_file():
        return path / HF_RELEASE_DIR
    return path
"""The Parquet file of `audit release --format hf`, which its dataset card names (audit.release.hf)."""
PARQUET_COLUMNS = {
    "release_row.v1": ("item_id", "sample", "verdict", "status", "protected", "attempt", "answer", "rule", "reason",
                       "reference"),
    "release_row.v2": ("item_id", "sample", "verdict", "status", "protected", "attempt", "answer", "reference"),
}
"""The Parquet file's columns, per row schema: every field of the schema, in its order (null where a row has none)."""
PARQUET_TYPES = {"item_id": "string", "sample": "int64", "verdict": "string", "status": "string", "protected": "bool",
                 "attempt": "int64", "answer": "string", "rule": "string", "reason": "string", "reference": "string"}
"""Each column's `datasets` dtype."""
HF_CARD_FILE = "README.md"
"""The dataset card of a dataset folder (`--format hf`)."""


def parquet_metadata(schema: str) -> dict[str, object]:
    """The one schema metadata entry (`huggingface`, parsed) that `datasets` writes for a release's columns."""
    return {"info": {"features": {c: {"dtype": PARQUET_TYPES[c], "_type": "Value"} for c in PARQUET_COLUMNS[schema]}}}
LeakTransforms = Literal["leakcheck@1", "leakcheck@2", "leakcheck@3"]
"""The named lists of transformations of audit.leaks a release can record."""


class InferenceCheck(Record):
    """The statistical check that no published feature predicts the protected references (see audit.inference)."""

    test: str
    """The test's name."""
    alpha: float
    """Family-wise threshold, Bonferroni over the features tested: a feature fails below alpha / features."""
    min_lift: float
    """A failing feature's accuracy also exceeds chance by at least this much."""
    features: Count
    """Features tested (id tokens and pieces, verdicts, statuses, sample indices, row order, and under
    `no_answer=random-guess` the guess recomputed from the published seed, ids and samples)."""
    items: Count
    """Protected items whose reference was predicted."""
    passed: bool
    """True: no feature predicts the references far above chance (a release is written only then)."""


class LeakCheckInfo(Record):
    """What the leak check covered when the release was written."""

    min_chars: Count
    """Shortest protected substring that counts as a leak."""
    protected_items: Count
    """Items whose text was protected."""
    protected_texts: Count
    """Protected strings indexed (questions, options, references, responses)."""
    responses_checked: bool
    """False only when the release was made with `--no-response-check` (responses were not available)."""
    inference: InferenceCheck | None = None
    """The answer-inference test and its threshold (absent in releases written before it existed)."""
    transforms: LeakTransforms = "leakcheck@1"
    """The named list of transformations protected text was compared under (audit.leaks.TRANSFORMS); absent in
    releases written before leakcheck@2, which compared the values as they are. Verified under the same."""


class ReleaseStructure(Record):
    """How a release holding a protected item is built so that no published value can carry text (version 2)."""

    rows: Literal["release_row.v2"] = "release_row.v2"
    """The row schema: item id, rank of the sample, verdict, status (ROW_STATUSES), and for public items the
    attempt, an option letter and the pinned items package's reference; no field holds free text."""
    samples: Literal["responses package", "verdict file"]
    """Where the published sample indices come from: each row's sample is its rank among the item's samples in
    the pinned responses package (or, with `--no-response-check`, in the verdict file), never the verdict file's
    own number (indices chosen to follow the answers carry nothing)."""
    public_text: Literal["withheld", "capped"] = "withheld"
    """`withheld`: imported free text (a reason, a rule, an answer that is not an option letter) is not published.
    `capped` (`--public-text`): public items' answer, rule and reason are published in `public_text.jsonl`, each
    at most `text_cap` characters, through the leak check (a second layer only: a list of encodings can be
    outrun); protected items' never."""
    text_cap: Count | None = None
    """With `capped`: the most characters of one published text."""
    withheld: dict[Literal["answer", "attempt", "components", "rule", "reason"], Count]
    """Public rows whose answer, rule or reason was not published in the rows (free text), or whose attempt was not
    (without the responses package no attempt number is published: it would be the verdict file's own); and
    `components`: the extractor and grader the verdict file names that audit does not register under that
    fingerprint (published as not recorded: their names would be the verdict file's text)."""


class ReleaseInfo(Record):
    """`release.json`: where a release comes from, how its ids are formed, and its figures."""

    schema_version: int = Field(default=RELEASE_INFO_SCHEMA_VERSION, ge=1, le=RELEASE_INFO_SCHEMA_VERSION)
    """Version of this format (readers refuse others)."""
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
    id_scheme: Literal["dataset", "hmac-sha256", "hmac-sha256/release"]
    """`dataset`: ids as the dataset names them; `hmac-sha256/release`: first 32 hex digits of HMAC-SHA256(K, id)
    with the release's own key K = HMAC-SHA256(salt, `audit-release-ids:` + id_context), so one salt reused for
    two gradings gives unrelated ids; `hmac-sha256` (releases before it): HMAC-SHA256(salt, id), the same ids in
    every release made with one salt."""
    id_context: str | None = None
    """For `hmac-sha256/release`: what the id key is derived from with the salt (the sha256 of the verdict file
    released); nothing derived from the salt alone is published."""
    salt_check: str | None = None
    """Written by releases before audit 0.1 hardening only: sha256 of `audit-release-salt:` + salt. It let
    anyone test salt guesses offline; no longer written (the holder's ids confirm the salt)."""
    rows: Count
    """Rows in `verdicts.jsonl`."""
    items: Count
    """Distinct items."""
    samples: Count
    """Distinct samples (runs)."""
    protected_items: Count
    """Items published with verdict and status only."""
    statuses: dict[str, Count]
    """Rows per status."""
    figures: list[Figure]
    """Every figure (per run and overall, both denominators), recomputed from the released rows."""
    leak_check: LeakCheckInfo
    """What the leak check covered."""
    structure: ReleaseStructure | None = None
    """Version 2, for a release holding a protected item: what makes it structural (absent in a release of
    public items only, and in version-1 releases, which `verify-release` flags)."""

    @model_validator(mode="after")
    def _structure_by_version(self) -> ReleaseInfo:
        if self.structure is not None and self.schema_version < 2:
            raise ValueError("structure: a version-1 release.json has no structure (written before version 2)")
        if self.schema_version >= 2 and self.protected_items and self.structure is None:
            raise ValueError("structure: a version-2 release holding protected items must be structural")
        return self


register("release_info.v2", ReleaseInfo)


class LeakFound(ValidationFailed):
    """The release would publish protected text: nothing was written. Exit code 2."""

    exit_code = 2


class ReleaseRow(Record):
    """One published verdict: a row of a `release` package (see `audit.release`)."""

    item_id: str = Field(min_length=1)
    """The dataset's id, or its salted hash when the release says `id_scheme: hmac-sha256`."""
    sample: Count
    """Run index (0..K-1)."""
    verdict: Verdict
    """How the row counts: graded correct, graded incorrect, or left out of the graded denominator."""
    status: str
    """Why: `correct`, `incorrect`, `no_answer`, `truncated`, `excluded`, ... (see audit.verdicts.ROW_STATUSES)."""
    protected: bool = False
    """True for items whose content must not be published: then only the fields above are present."""
    attempt: Count | None = None
    """Attempt graded (0 = original); absent for protected items."""
    answer: str | None = None
    """Extracted answer; absent for protected items (beside a verdict it would reveal the key)."""
    rule: str | None = None
    """Extractor step that fired; absent for protected items."""
    reason: str | None = None
    """One-line explanation of the verdict; absent for protected items."""
    reference: str | None = None
    """Gold answer graded against; absent for protected items."""

    @model_validator(mode="after")
    def _protected_rows_hold_only_the_verdict(self) -> ReleaseRow:
        if self.protected:
            present = [k for k in ("attempt", "answer", "rule", "reason", "reference") if getattr(self, k) is not None]
            if present:
                raise ValueError(f"a protected row may hold only item_id, sample, verdict and status, "
                                 f"not {', '.join(present)}")
        return self


class PublicTextRow(Record):
    """The imported text of one public row (`release_public_text.v1`, `--public-text` only): capped, leak-checked,
    never of a protected item."""

    item_id: str = Field(min_length=1)
    """The row's published item id (a public item)."""
    sample: int = Field(ge=0)
    """The row's published sample rank."""
    answer: str | None = Field(default=None, max_length=PUBLIC_TEXT_CAP)
    """The extracted answer, as the verdict file has it."""
    rule: str | None = Field(default=None, max_length=PUBLIC_TEXT_CAP)
    """The extractor step that fired, as the verdict file has it."""
    reason: str | None = Field(default=None, max_length=PUBLIC_TEXT_CAP)
    """The one-line explanation, as the verdict file has it."""


RowStatus = Literal["correct", "incorrect", "no_answer", "truncated", "random_guess", "parse_error_answer",
                    "parse_error_reference", "timeout", "error", "excluded", "missing", "bad_input", "judge_error"]
"""audit's row statuses (audit.verdicts.ROW_STATUSES), as a closed vocabulary in the row schema."""
assert get_args(RowStatus) == ROW_STATUSES, "RowStatus follows audit.verdicts.ROW_STATUSES"

OptionLetter = Annotated[str, StringConstraints(pattern=r"^[A-Z]$")]
"""One option letter, A to Z."""
MAX_RELEASE_SAMPLES = 100_000
"""Largest sample rank a release row holds (ranks count an item's samples from 0)."""
MAX_RELEASE_ATTEMPTS = 1_000
"""Largest attempt a release row holds."""
MAX_ITEM_ID_CHARS = 256
"""Longest item id a release row holds (a salted id is 32 hex digits; a dataset id is the items package's)."""


class ClosedReleaseRow(Record):
    """One published verdict of a release holding a protected item (`release_row.v2`): every field is a closed
    vocabulary or a bounded integer, except the item id (salted, or the pinned items package's) and a public
    item's reference (the pinned items package's, compared with the holder's by verify-release). There is no
    field for free text, so no encoding of protected text has anywhere to go."""

    item_id: str = Field(min_length=1, max_length=MAX_ITEM_ID_CHARS)
    """The dataset's id (as the pinned items package has it), or its salted hash under `id_scheme` hmac-sha256."""
    sample: int = Field(ge=0, lt=MAX_RELEASE_SAMPLES)
    """The rank of the row's sample among the item's samples (0..k-1), from `structure.samples`."""
    verdict: Verdict
    """How the row counts: graded correct, graded incorrect, or left out of the graded denominator."""
    status: RowStatus
    """Why: one of audit's statuses."""
    protected: bool = False
    """True for items whose content must not be published: then only the fields above are present."""
    attempt: int | None = Field(default=None, ge=0, le=MAX_RELEASE_ATTEMPTS)
    """The rank of the attempt graded among the sample's attempts in the pinned responses package (0 = the
    original); absent for protected items, and without the responses package."""
    answer: OptionLetter | None = None
    """The extracted option letter of a public multiple-choice item (within its options); absent otherwise."""
    reference: str | None = None
    """A public item's reference as the pinned items package has it; absent for protected items."""

    @model_validator(mode="after")
    def _protected_rows_hold_only_the_verdict(self) -> ClosedReleaseRow:
        if self.protected:
            present = [k for k in ("attempt", "answer", "reference") if getattr(self, k) is not None]
            if present:
                raise ValueError(f"a protected row may hold only item_id, sample, verdict and status, "
                                 f"not {', '.join(present)}")
        return self
