"""Typed records of raw packages: the manifest and the rows of its data files.

These pydantic models are the source of truth; `schemas/*.json` are generated
from them (`audit schemas --write`) and a test fails when the two drift apart.
Every model puts `schema_version` first where it is a top-level document.
Which package kind holds which rows (and so the schema id of each row model) is the
kinds' registry, `audit.packages.kinds` (`kind_names()`, `ROW_MODELS`); this module imports none of it.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

MANIFEST_SCHEMA_VERSION = 3

PROVENANCE_PINNED_SINCE = 2
"""The manifest schema_version from which a package's digest covers its whole manifest, provenance included
(`audit.packages.layout.package_digest`). Below it, provenance is never read as the package's (`Manifest`)."""

MAX_COUNT = 2**53 - 1
"""Largest count, index or size a record may hold: the largest integer every JSON reader keeps exact
(RFC 7493). Bounding integers in the schema keeps 10**30 from reaching Arrow or numpy as an OverflowError."""

Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
"""A non-negative integer at most MAX_COUNT: sizes, counts, sample and attempt indices."""

Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
"""A signed 64-bit integer (seeds)."""

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
"""Option letters in order: option i of a multiple-choice item is LETTERS[i] (at most 26 options)."""

Verdict = Literal["correct", "incorrect", "ungraded"]
"""How a row of a grading counts: graded correct, graded incorrect, or left out of the graded denominator.
(A grader returns a judgment, `audit.graders.Judgment`; the policies turn it into a verdict.)"""


KIND_NAME_PATTERN = r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$"
"""A package kind's name: lowercase words joined by `-` (`checkpoint-headers`). A manifest's `kind` must follow
it; whether it names a registered kind is checked against the registry by `audit.packages.validate` (so this
module, and the published manifest schema, need no list of kinds)."""


_SHA256 = re.compile(r"^[0-9a-f]{64}$")
SAFE_PATH_PATTERN = (r"^(?!/)(?![A-Za-z]:)(?!manifest\.json$)(?!.*[\\\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e"
                     r"\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb])"
                     r"(?!(?:.*/)?\.{1,2}(?:/|$))(?!.*//)(?!.*/$).+$")
"""`unsafe_path_reason` as a regular expression, for JSON Schema users (the model keeps its clearer messages)."""


class Record(BaseModel):
    """Base for every record: unknown fields are errors, types are strict."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        use_attribute_docstrings=True,
    )


# --------------------------------------------------------------------------- manifest


class Producer(Record):
    """The program that wrote the package."""

    tool: str = "audit"
    """Name of the producing tool."""
    version: str
    """The tool's version string."""
    git_commit: str | None = None
    """Commit of the tool's source tree, when it runs from a git checkout."""
    git_dirty: bool | None = None
    """True when that checkout had uncommitted changes (the commit alone does not pin the code)."""


class DatasetRef(Record):
    """Which dataset the items come from, pinned by revision or content hash."""

    name: str
    """Dataset name, e.g. `TIGER-Lab/MMLU-Pro`."""
    split: str | None = None
    """Split or subset, e.g. `test`."""
    revision: str | None = None
    """Dataset revision (commit, tag or date) when known."""
    sha256: str | None = None
    """sha256 of the dataset file the items were read from, when known."""


PUBLIC_MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")
"""`owner/name` as a model hub publishes it (`Qwen/Qwen3-30B-A3B-FP8`): one slash, no path."""

ENGINE_NAME = r"^[a-z][a-z0-9_.-]{0,39}$"

RUN_ID = r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$"

Weights = Literal["random", "checkpoint", "headers-only"]


class Subject(Record):
    """What the evidence measured, named so that a reader of this package alone can tell."""

    model: str = Field(pattern=PUBLIC_MODEL_NAME.pattern)
    """The model by its public name, `owner/name` as published (e.g. `Qwen/Qwen3-30B-A3B-FP8`); never a
    local path. With random weights it names the shape that was served, not trained weights."""
    model_config_sha256: str | None = Field(pattern=_SHA256.pattern)
    """sha256 of the exact config.json that was served or read: which config, when a shape was rebuilt.
    Null only with `model_config_unknown` saying why (a package rewritten from a run that kept no copy)."""
    model_config_unknown: str | None = Field(default=None, min_length=1, exclude_if=lambda v: v is None)
    """Why `model_config_sha256` is null; absent when it is known. `audit` commands always hash the config."""
    engine: str = Field(pattern=ENGINE_NAME)
    """The inference engine that ran the model, e.g. `vllm`."""
    engine_version: str = Field(min_length=1, max_length=64)
    """The engine's version, e.g. `0.26.0`."""
    hardware: str = Field(min_length=1, max_length=200)
    """The hardware measured, e.g. `1x NVIDIA H100 80GB HBM3`."""
    weights: Weights
    """`random`: full-size random weights (vLLM `--load-format dummy`), so nothing that depends on their
    values (text, scores, speculative acceptance) says anything about the model; `checkpoint`: the
    published weights; `headers-only`: no weights at all (a floor read from safetensors headers)."""
    run: str = Field(pattern=RUN_ID)
    """The run this package belongs to (the packages of one device run share it), e.g. `h100-2026-12-07`."""

    @field_validator("model")
    @classmethod
    def _not_a_path(cls, v: str) -> str:
        owner, name = v.split("/")
        if owner in (".", "..") or name in (".", ".."):
            raise ValueError("a public model name, not a path")
        return v

    @model_validator(mode="after")
    def _config_or_why_not(self) -> Subject:
        if (self.model_config_sha256 is None) == (self.model_config_unknown is None):
            raise ValueError("give model_config_sha256, or model_config_unknown saying why it is not known")
        return self


class Provenance(Record):
    """What produced the data in the package: model, engine, hardware, dataset, sampling."""

    model: str | None = None
    """Model name or path as served."""
    engine: str | None = None
    """Inference engine, e.g. `vllm`, or the upstream tool that wrote imported files."""
    engine_version: str | None = None
    """The engine's version."""
    hardware: str | None = None
    """Hardware the responses or measurements came from, e.g. `1x NVIDIA H200`."""
    dataset: DatasetRef | None = None
    """The items' dataset."""
    sampling: dict[str, Any] | None = None
    """Sampling parameters as actually sent to the engine (not as intended)."""
    source: str | None = None
    """Where imported data came from: repository, path and commit, or a file's sha256."""
    notes: str | None = None
    """Free text: anything a reader must know to interpret the data."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Further provenance that has no field of its own."""
    subject: Subject | None = Field(default=None, exclude_if=lambda v: v is None)
    """What GPU evidence measured (model by public name and config digest, engine, hardware, weights,
    run): `audit trace`, `audit bench throughput` and `audit floor` record it. Absent (not null) when
    not recorded, so the digests of packages written before it stay what they were."""


class FileEntry(Record):
    """One data file of the package, pinned by hash, size and row count."""

    path: str = Field(json_schema_extra={"pattern": SAFE_PATH_PATTERN})
    """Path relative to the package root, with `/` separators; never absolute, never `..`."""
    sha256: str = Field(json_schema_extra={"pattern": _SHA256.pattern})
    """sha256 of the file's bytes, lowercase hex."""
    bytes: Count
    """Size of the file in bytes."""
    rows: Count | None = None
    """Number of rows for tabular files; null for other files."""
    uncompressed_bytes: Count | None = None
    """For a gzip'd data file (`*.jsonl.gz`): the size of its JSONL once decompressed. Readers stop
    decompressing past it, so a small file cannot expand without bound; null for other files."""
    schema_: str = Field(alias="schema")
    """The schema every row follows, e.g. `response_row.v1`; `text` for files without rows."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    @field_validator("sha256")
    @classmethod
    def _hex(cls, v: str) -> str:
        if not _SHA256.match(v):
            raise ValueError("must be 64 lowercase hex digits")
        return v

    @field_validator("path")
    @classmethod
    def _safe(cls, v: str) -> str:
        problem = unsafe_path_reason(v)
        if problem:
            raise ValueError(problem)
        return v


class Manifest(Record):
    """`manifest.json`: what a package holds and where it came from."""

    schema_version: int = Field(default=MANIFEST_SCHEMA_VERSION, ge=1, le=MAX_COUNT)
    """Version of this manifest format; readers refuse versions they do not know. From 2 the package's digest
    covers this whole manifest but `created`; a version 1 package's covers its files' paths and hashes only. 3 added
    `provenance.subject`."""
    # (The published text above never changes in place. A version 1 manifest's provenance is not read, see
    # `unpinned_provenance`; a version older than its producer writes is refused, `audit.producer.downgrade_problem`.)
    package_id: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
    """Identifier of the package: letters, digits and `._+-`."""
    kind: str = Field(min_length=1, max_length=64, pattern=KIND_NAME_PATTERN)
    """What the package holds: the name of a registered package kind (`audit.packages.kinds`)."""
    benchmark: str | None = None
    """Benchmark name, e.g. `mmlu_pro`, for packages of responses, items or verdicts."""
    created: str
    """Creation time, ISO 8601 UTC. Not part of the content digest."""
    producer: Producer
    """The program that wrote the package."""
    provenance: Provenance = Field(default_factory=Provenance)
    """Model, engine, hardware, dataset and sampling behind the data."""
    files: list[FileEntry]
    """Every file of the package but this manifest; a file not listed here is an error."""

    _unpinned: Provenance | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _old_scheme_provenance_set_aside(self) -> Manifest:
        # A schema 1 digest covers files only: its provenance could be anything under the same pin, so no reader
        # gets it as the package's (generate copied an items package's dataset into the package it pinned; a
        # telemetry link, a profile's trace record). It is kept aside, for `audit show` to print as unverified.
        if self.schema_version < PROVENANCE_PINNED_SINCE and self.provenance != Provenance():
            self._unpinned = self.provenance
            object.__setattr__(self, "provenance", Provenance())  # (frozen: set once, while validating)
        return self

    @property
    def unpinned_provenance(self) -> Provenance | None:
        """The provenance a schema_version 1 manifest states, which its digest does not cover: shown as unverified,
        never read as the package's (`provenance` is then empty). None from schema_version 2 (or if it states none).
        """
        return self._unpinned


# --------------------------------------------------------------------------- rows


class ResponseRow(Record):
    """One model response: a row of a `responses` package."""

    item_id: str = Field(min_length=1)
    """Identifier of the item answered, as the dataset names it."""
    sample: Count = 0
    """Index of the repeated run (K repetitions of the same item get 0..K-1)."""
    attempt: Count = 0
    """Index of the attempt for this (item, sample): 0 is the original, re-samples count up."""
    response: str | None
    """The response text; null when no response exists (see `excluded` and `error`)."""
    finish_reason: str | None = None
    """Why generation stopped as the engine reported it: `stop`, `length` (cut at the output ceiling), ..."""
    prompt_tokens: Count | None = None
    """Prompt length in tokens, from the engine's usage report."""
    completion_tokens: Count | None = None
    """Response length in tokens, from the engine's usage report."""
    max_tokens: Count | None = None
    """The output ceiling sent with the request."""
    seed: Int64 | None = None
    """Sampling seed sent with the request."""
    prompt_sha256: str | None = None
    """sha256 of the exact prompt text (or chat messages as canonical JSON) that was sent."""
    started_at: float | None = None
    """Request start, seconds since the Unix epoch."""
    first_token_s: float | None = Field(default=None, ge=0)
    """Time to first token: seconds from request start to the first streamed token."""
    finished_at: float | None = None
    """Request end, seconds since the Unix epoch."""
    excluded: str | None = None
    """Reason this item was not sent (e.g. the prompt did not fit the context); `response` is then null."""
    error: str | None = None
    """Error that left this row without a usable response (server error, malformed reply)."""
    at_budget: bool | None = None
    """True when the reply used exactly `max_tokens` and still said `stop`: the engine may have stopped
    for its budget or at a real end (vLLM can report either way), so policies and reports see it. Absent
    otherwise; when present it must agree with finish_reason, completion_tokens and max_tokens."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Importer- or engine-specific fields with no place above (e.g. an upstream extractor's letter)."""

    @model_validator(mode="after")
    def _at_budget_is_the_fact(self) -> ResponseRow:
        if self.at_budget is None:
            return self
        fact = self.finish_reason == "stop" and self.max_tokens is not None and \
            self.completion_tokens == self.max_tokens
        if self.at_budget != fact:
            raise ValueError(f"at_budget is {str(self.at_budget).lower()} but finish_reason is "
                             f"{self.finish_reason!r}, completion_tokens {self.completion_tokens}, max_tokens "
                             f"{self.max_tokens}")
        return self


class ItemRow(Record):
    """One benchmark item: a row of an `items` package."""

    item_id: str = Field(min_length=1)
    """The dataset's own identifier for the item."""
    reference: str
    """The gold answer: a letter for multiple choice, an answer string otherwise."""
    choices: list[str] | None = Field(default=None, max_length=len(LETTERS))
    """Option texts in order (A, B, ...) for multiple-choice items; at most 26."""
    num_choices: int | None = Field(default=None, ge=1, le=len(LETTERS))
    """Number of options, for multiple-choice items whose option texts are not stored."""
    subject: str | None = None
    """Category or subject, e.g. `physics`."""
    question: str | None = None
    """The question text, when it may be stored."""
    protected: bool = False
    """True for datasets that must not be published in plain text (GPQA, HLE): releases omit all its text."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Dataset-specific fields with no place above."""

    def option_count(self) -> int | None:
        """How many options the item has, from `choices` or `num_choices`."""
        if self.choices is not None:
            return len(self.choices)
        return self.num_choices


TEXT_SCHEMA = "text"
"""Schema id of files without rows (README, logs): only hash and size are checked."""


_INVISIBLE = frozenset(("Cc", "Cf", "Cs", "Co", "Zl", "Zp"))
"""Unicode categories of characters that print as nothing or break a line: controls, format
characters (zero-width, bidirectional overrides), surrogates, private use, line and paragraph separators."""


def unsafe_path_reason(path: str) -> str | None:
    """Why `path` may not name a file inside a package, or None when it is safe."""
    if not path:
        return "empty path"
    if "\\" in path or "\x00" in path:
        return "path has a backslash or NUL character"
    for ch in path:
        if unicodedata.category(ch) in _INVISIBLE:
            # A newline would forge output lines; an invisible character makes two names look alike.
            return f"path has a control character (U+{ord(ch):04X})"
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        return "absolute path"
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "path has an empty, '.' or '..' component"
    if path == "manifest.json":
        return "manifest.json cannot list itself"
    return None


def path_key(path: str) -> str:
    """The form under which two paths name the same file on some file system (macOS and Windows fold
    case; macOS also Unicode normalization; Windows drops a name's trailing dots and spaces): NFKC,
    case-folded, each component without trailing dots and spaces."""
    return "/".join(p.rstrip(". ") for p in unicodedata.normalize("NFKC", path).casefold().split("/"))
