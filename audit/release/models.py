"""The documents of a release: its file names, `release.json` (`release_info.v1`) and the error a leak raises."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from audit.errors import ValidationFailed
from audit.models import Count, Record, Verdict
from audit.schemas import register
from audit.verdicts import ComponentRef, Figure, PackageRef, Policies

RELEASE_INFO_SCHEMA_VERSION = 1
ROWS_FILE = "verdicts.jsonl"
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
LeakTransforms = Literal["leakcheck@1", "leakcheck@2"]
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


register("release_info.v1", ReleaseInfo)


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
