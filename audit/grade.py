"""Regrade a responses package into a verdict file: the library's main job.

The flow, in three streaming passes over a validated package:
1. read each row's metadata (no text) and choose the attempt to grade per
   (item, sample) under the re-sampling policy;
2. extract answers from the chosen rows only, keeping answers, not texts;
3. grade the answers and apply the truncation, no-answer and exclusion
   policies, so each row ends `correct`, `incorrect` or `ungraded` with a status.
Rows for items that have no response in a run are added as `missing`, so an
item can never vanish from the denominator unnoticed.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import os
import random
import re
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as pkg_version
from pathlib import Path
from typing import Any

import pandas as pd

from audit import extractors, graders
from audit.errors import AuditError
from audit.fileio import dumps
from audit.ids import natural_key
from audit.models import LETTERS, ItemRow
from audit.packages import Package, open_package
from audit.producer import producer
from audit.specs import GradeConfig, ResolvedConfig, lookup, resolve
from audit.summary import summarize
from audit.verdicts import (
    VERDICT_ROW_FIELDS,
    ComponentRef,
    PackageRef,
    Policies,
    VerdictFile,
    VerdictRow,
    dump_verdict_file,
    encode_rows,
    write_verdict_file,
    write_verdict_lines,
)
from audit.verdicts.models import AT_BUDGET_NOTE

INCOMPLETE_FINISH_REASONS = frozenset({"abort", "error", "content_filter"})
"""Finish reasons after which the text is partial for a reason other than the output ceiling."""
ENVIRONMENT_PACKAGES = ("sympy", "latex2sympy2_extended", "math-verify", "antlr4-python3-runtime")
"""Libraries whose versions can change a grader's judgments; recorded in every verdict file."""


_SENTENCE_END = frozenset(".!?…。！？)]}>*$`\"'”’»|")
"""Last characters after which a response reads as finished (closing marks included: `(C)`, `**B**`, `$x$`)."""


_LETTER_LINE = re.compile(r"[A-Za-z\s*:()'’-]{0,38}[A-Z]")
"""A short plain-words line ending in a capital letter: `Answer: C`, `I pick B` (not `$dU = T`, `{[A`)."""


def possibly_cut(text: str | None, finish_reason: str | None) -> bool:
    """A labelled heuristic, never a verdict: the row records no finish reason and its text stops mid-sentence
    (its last visible character ends no sentence: "… so the answer is the", "B-cells are", "65°C,").

    With a finish reason the engine said why it stopped (`length` is a cut, and policies handle it); without
    one (upstream MMLU-Pro files keep none) a cut at the output ceiling is invisible but for how the text ends.
    """
    if finish_reason is not None or not text:
        return False
    tail = text.rstrip()
    if not tail or tail[-1] in _SENTENCE_END:
        return False
    # A short last line closing on a lone letter ("Answer: C", "I pick B") is an answer, not a broken sentence
    # (a long one, "… we find $dU = T", is not).
    last_line = tail[tail.rfind("\n") + 1:]
    return not (_LETTER_LINE.fullmatch(last_line) and (len(tail) == 1 or tail[-2] in " \t\n:(*"))


class NoItems(AuditError):
    """The responses package holds no item rows and no items package was named (the CLI adds its flag)."""


class NoPath(AuditError):
    """A verdict file records no path for a package the caller did not name (the CLI adds its flag)."""

    def __init__(self, what: str):
        self.what = what
        noun = "responses" if what == "package" else what  # `what` is also the CLI's flag (--package, --items)
        super().__init__(f"the verdict file records no path for its {noun} package, and none was given")


def _ref(component: Any) -> ComponentRef | None:
    if component is None:
        return None
    return ComponentRef(name=component.name, version=component.version, fingerprint=component.fingerprint)


def environment() -> dict[str, str]:
    env = {"python": f"{sys.version_info.major}.{sys.version_info.minor}"}
    for name in ENVIRONMENT_PACKAGES:
        try:
            env[name] = pkg_version(name)
        except PackageNotFoundError:
            env[name] = "not installed"
    return env


# --------------------------------------------------------------------------- items


@dataclass(frozen=True, slots=True)
class ItemInfo:
    reference: str
    options: int | None
    subject: str | None = None
    bad_input: str | None = None
    """Why the item's own record is inconsistent (an import's `--on-bad-row record`): never graded."""


def _reference(item: ItemRow, field_name: str, where: str) -> str:
    if field_name == "reference":
        return item.reference
    if field_name.startswith("extra."):
        key = field_name[6:]
        value = item.extra.get(key)
        if isinstance(value, str):
            return value
        raise AuditError(f"item {item.item_id!r} has no string extra.{key}", path=where, field=field_name)
    raise AuditError(f"reference field must be `reference` or `extra.KEY`, got {field_name!r}")


def load_items(pkg: Package, reference_field: str) -> dict[str, ItemInfo]:
    items: dict[str, ItemInfo] = {}
    for item in pkg.iter_rows("item_row.v1"):
        if item.item_id in items:
            # Unique within each file is checked on validation; across the files of one package, here.
            raise AuditError(f"item {item.item_id!r} appears in more than one items file", path=str(pkg.source),
                             field="item_id")
        bad = item.extra.get("bad_input")
        items[item.item_id] = ItemInfo(_reference(item, reference_field, str(pkg.source)), item.option_count(),
                                       item.subject, bad if isinstance(bad, str) else None)
    return items


# --------------------------------------------------------------------------- attempts


@dataclass(slots=True)
class AttemptMeta:
    """One response row as grading needs it: no text, only what was read from it."""

    attempt: int
    finish_reason: str | None
    length: int
    has_text: bool
    excluded: str | None
    error: str | None
    max_tokens: int | None
    extraction: extractors.Extraction | None = None
    digest: str | None = None
    tokens: int | None = None
    """completion_tokens as the row reports it (None when it does not)."""
    chars: int | None = None
    """Characters of the response text (None when not read: then `length` is compared)."""
    at_budget: bool = False
    """The reply used exactly max_tokens and said `stop` (recorded or read from those fields)."""
    cut: bool = False
    """`possibly_cut`: no finish reason and the text stops mid-sentence (a heuristic for reports only)."""


def choose_attempt(attempts: list[AttemptMeta], policy: str) -> tuple[AttemptMeta, dict[str, Any]]:
    """The attempt to grade for one (item, sample), and what was considered.

    `original`: attempt 0 (the lowest present). `longer-only`: among re-runs longer than the
    original's cut, the first that finished (finish_reason not `length`), else the longest of
    them; when no re-run is longer than the original, the original.
    """
    attempts = sorted(attempts, key=lambda a: a.attempt)
    original = attempts[0]
    # Lengths in one unit: `length` is completion_tokens where a row reports it, else characters;
    # when only some attempts report tokens, compare all of them by characters.
    mixed = len({a.tokens is None for a in attempts}) > 1 and all(a.chars is not None for a in attempts)
    size = (lambda a: a.chars) if mixed else (lambda a: a.length)
    detail: dict[str, Any] = {}
    if len(attempts) > 1:
        detail["attempts"] = [a.attempt for a in attempts]
    if policy == "original" or len(attempts) == 1:
        return original, detail
    longer = [a for a in attempts[1:] if size(a) > size(original)]
    if not longer:
        return original, detail
    finished = [a for a in longer if a.finish_reason != "length"]
    chosen = finished[0] if finished else max(longer, key=lambda a: (size(a), -a.attempt))
    return chosen, detail


# --------------------------------------------------------------------------- grading


UPSTREAM_GUESS = "upstream-guess@964a136"
"""TIGER-AI-Lab/MMLU-Pro evaluate_from_local.py @ 964a136e98ff17f81b0cd11c15c70784f6ee4378 (the commit of the public
result zips; until 996df13, Feb 2025, "Set random seed once per execution"): for a null pred,
`random.seed(12345); x = random.randint(0, len(each["options"]) - 1)`, credited when x == answer_index."""
GUESS_POLICIES = ("random-guess", UPSTREAM_GUESS)


def _guess(policies: Policies, item_id: str, sample: int, options: int) -> tuple[str, dict[str, Any]]:
    if policies.no_answer == UPSTREAM_GUESS:
        # upstream at 964a136: random.seed(12345) right before each draw, so each option count has one letter
        draw = random.Random(policies.guess_seed).randint(0, options - 1)
        return LETTERS[draw], {"guess": LETTERS[draw], "draw": draw, "seed": policies.guess_seed, "options": options,
                               "rule": UPSTREAM_GUESS}
    # Seeded per (item, sample), so the draw does not depend on processing order.
    rng = random.Random(f"{policies.guess_seed}:{item_id}:{sample}")
    draw = rng.randrange(options)
    return LETTERS[draw], {"guess": LETTERS[draw], "draw": draw, "seed": policies.guess_seed, "options": options}


def _decide(meta: AttemptMeta | None, ex: extractors.Extraction | None, judgment: graders.Judgment | None,
            item: ItemInfo, item_id: str, sample: int, policies: Policies,
            excluded_ids: frozenset[str], short_alphabet: str | None = None) -> tuple[str, str, str, dict[str, Any]]:
    """(verdict, status, reason, detail) for one row: the grader's judgment under the run's policies.

    `short_alphabet` is set (the reason) when the item has more options than the extractor reads letters:
    such a row is never graded (a K it cannot read, a J read from "D and J are correct")."""
    if item_id in excluded_ids:
        # (a row text that verdict files record: rewording it would stop every such file reproducing)
        return "ungraded", "excluded", "excluded by policy (--policy exclude=...)", {}
    if item.bad_input is not None:
        return "ungraded", "bad_input", f"the item's source record is inconsistent: {item.bad_input}", {}
    if meta is None:
        return "ungraded", "missing", f"no response for this item in sample {sample}", {}
    if meta.excluded is not None:
        return "ungraded", "excluded", f"not sent: {meta.excluded}", {}
    if short_alphabet:
        return "ungraded", "error", short_alphabet, {}
    if not meta.has_text:
        return "ungraded", "error", f"no response text: {meta.error or 'response is null'}", {}
    if meta.error is not None:
        return "ungraded", "error", f"the response carries an error: {meta.error}", {}
    if meta.finish_reason in INCOMPLETE_FINISH_REASONS:
        return ("ungraded", "error", f"generation ended with finish_reason {meta.finish_reason!r}: the text is partial",
                {})
    if meta.finish_reason == "length" or (meta.at_budget and policies.at_budget == "truncated"):
        cut = f"cut at the output ceiling (max_tokens={meta.max_tokens})" if meta.max_tokens else \
            "cut at the output ceiling"
        if meta.finish_reason != "length":
            cut = f"used all max_tokens={meta.max_tokens} and said stop; taken as cut (--policy at_budget=truncated)"
        more = {"at_budget": True} if meta.at_budget else {}
        if policies.truncation == "exclude":
            return "ungraded", "truncated", f"{cut}; excluded by policy", more
        return "incorrect", "truncated", f"{cut}; never credited", more
    decided = _decide_graded(meta, ex, judgment, item, item_id, sample, policies)
    if meta.at_budget:
        verdict, status, reason, detail = decided
        return verdict, status, reason + AT_BUDGET_NOTE.format(meta.max_tokens), {**detail, "at_budget": True}
    return decided


def _decide_graded(meta: AttemptMeta, ex: extractors.Extraction | None, judgment: graders.Judgment | None,
                   item: ItemInfo, item_id: str, sample: int,
                   policies: Policies) -> tuple[str, str, str, dict[str, Any]]:
    assert ex is not None
    if ex.answer is None and ex.rule == extractors.RULE_NO_OPTIONS:
        return ("ungraded", "error", "the item records no option count, and the extractor reads only the item's own "
                "letters: not graded (import the items with their options)", {})
    if ex.answer is None:
        if policies.no_answer in GUESS_POLICIES and item.options:
            guess, detail = _guess(policies, item_id, sample, item.options)
            ok = guess == item.reference
            return ("correct" if ok else "incorrect"), "random_guess", \
                f"no answer extracted ({ex.rule}); seeded guess {guess} {'=' if ok else '!='} {item.reference}", detail
        if policies.no_answer in GUESS_POLICIES:
            return "incorrect", "no_answer", (f"no answer extracted ({ex.rule}); the random-guess policy needs the "
                                              f"item's option count, which is unknown: counted wrong"), {}
        return "incorrect", "no_answer", f"no answer extracted ({ex.rule})", {}
    assert judgment is not None
    if judgment.status == "correct":
        return "correct", "correct", judgment.reason, {}
    if judgment.status in ("incorrect", "parse_error_answer", "no_answer"):
        return "incorrect", judgment.status, judgment.reason, {}
    return "ungraded", judgment.status, judgment.reason, {}


def alphabet_too_short(extractor: Any, info: ItemInfo) -> str | None:
    """Why `extractor` cannot grade `info` (it reads fewer letters than the item has options), else None."""
    letters = getattr(extractor, "letters", None)
    if not letters:
        return None
    if not info.options or info.options <= len(letters):
        from audit.graders.choice import read_letter

        ref = read_letter(info.reference)
        if ref is None or ref in letters:
            return None
        return (f"the reference {ref} is outside the letters {extractor.key} reads ({letters[0]}–{letters[-1]}): "
                f"not graded (it could never be credited); use an extractor that reads the item's options "
                f"(mmlu_pro.options@1)")
    last = LETTERS[info.options - 1] if info.options <= len(LETTERS) else f"option {info.options}"
    return (f"the item has {info.options} options (A–{last}); {extractor.key} reads only {letters[0]}–{letters[-1]}: "
            f"not graded (a letter it cannot read, or a wrong one read instead); use an extractor that reads the "
            f"item's options (mmlu_pro.options@1)")


def _grade_all(grader: Any, tasks: list[tuple[str, str, int | None]],
               workers: int | None = None) -> list[graders.Judgment]:
    """Grade (answer, reference, options) tasks in input order: cheap cases in-process, symbolic
    ones in the graders' worker pool under each item's time budget. Each distinct task is graded
    once (a registered grader version is a pure function of its inputs): K samples giving the
    same answer, or a million letters against ten references, cost one grading each."""
    unique = list(dict.fromkeys(tasks))
    if isinstance(grader, graders.Grader):
        judgments = graders.grade_many(grader, unique, workers=workers)
    else:
        judgments = [grader.grade(a, r, num_choices=n) for a, r, n in unique]
    if len(unique) == len(tasks):
        return judgments
    by_task = dict(zip(unique, judgments, strict=True))
    return [by_task[t] for t in tasks]


_ROW_ORDER = ("item_id", "sample", "attempt", "response_sha256", "answer", "rule", "span", "verdict", "status",
              "reason", "reference", "detail")
assert VERDICT_ROW_FIELDS == _ROW_ORDER, "grade_package appends row values in this order"

PARQUET_MIN_ROWS = 100_000
"""Gradings with at least this many rows also write their rows as Parquet beside the JSON."""


@dataclass
class Grading:
    """A finished grading: the verdict file's header (empty `items`) and its rows as columns.

    Rows are kept column-wise (lists in VERDICT_ROW_FIELDS order, sorted by item_id then
    sample) so a million rows stay small: values are shared where rows repeat them, `span`
    is a tuple and an empty `detail` is None. `iter_rows()` gives the rows as the model
    dumps them; `to_verdict_file()` builds the full model.
    """

    header: VerdictFile
    columns: dict[str, list[Any]]
    possibly_cut: dict[str | None, int] = dataclasses.field(default_factory=dict)
    """Graded rows whose response has no finish reason and stops mid-sentence, by the rule that read them: a
    labelled heuristic for reports (`audit grade` prints it), never part of a verdict or of the file."""

    @property
    def summary(self) -> Any:
        return self.header.summary

    def __len__(self) -> int:
        return len(self.columns["item_id"])

    def iter_rows(self) -> Iterable[dict[str, Any]]:
        """Each row as `VerdictRow.model_dump(mode="json")` gives it."""
        cols = [self.columns[k] for k in VERDICT_ROW_FIELDS]
        for values in zip(*cols, strict=True):
            row = dict(zip(VERDICT_ROW_FIELDS, values, strict=True))
            if row["span"] is not None:
                row["span"] = list(row["span"])
            if row["detail"] is None:
                row["detail"] = {}
            yield row

    @property
    def items(self) -> list[VerdictRow]:
        return [VerdictRow.model_validate(r) for r in self.iter_rows()]

    def to_verdict_file(self) -> VerdictFile:
        return self.header.model_copy(update={"items": self.items})

    def _sidecar_columns(self) -> dict[str, list[Any]]:
        data = {k: self.columns[k] for k in VERDICT_ROW_FIELDS}
        data["detail"] = ["{}" if not v else dumps(v) for v in data["detail"]]  # canonical JSON text
        return data

    def frame(self) -> pd.DataFrame:
        """The rows as a DataFrame (`span` as tuples, `detail` as canonical JSON text)."""
        return pd.DataFrame(self._sidecar_columns())

    def write(self, out: str | os.PathLike[str], *, parquet: bool | None = None,
              overwrite: bool = True) -> VerdictFile:
        """Write the verdict file (and, for large sets or when asked, its Parquet rows beside it, named
        after their digest); the two appear together or not at all (see `write_verdict_lines`, which
        says what `overwrite` replaces)."""
        side = parquet or (parquet is None and len(self) >= PARQUET_MIN_ROWS)
        return write_verdict_lines(Path(out), self.header, lambda: encode_rows(self.columns),
                                   sidecar=self._sidecar_columns() if side else None, overwrite=overwrite)


class _GcPause:
    """Pause the cyclic garbage collector while grading.

    Grading keeps millions of small acyclic objects alive (one per response row), and every
    full collection walks all of them: about a fifth of the time on a million rows. Reference
    counting still frees everything as usual; only cycles wait. Graders, whose libraries may
    make cycles, run with the collector as the caller had it (`resumed()`).
    """

    def __enter__(self) -> _GcPause:
        self.enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            gc.enable()

    @contextmanager
    def resumed(self) -> Iterator[None]:
        if self.enabled:
            gc.enable()
        try:
            yield
        finally:
            gc.disable()


PackageSource = str | os.PathLike[str] | Package
"""A package by path (opened and fully validated here), or one the caller already opened (and validated), read
as it is and left open."""


def grade_package(responses: PackageSource, config: ResolvedConfig | GradeConfig, *,
                  items: PackageSource | None = None,
                  out: str | os.PathLike[str] | None = None,
                  base_dir: str | os.PathLike[str] | None = None,
                  parquet: bool | None = None, workers: int | None = None, overwrite: bool = True) -> Grading:
    """Grade a responses package; write the verdict file to `out` (atomically) when given (an existing
    one replaced only with `overwrite`, and only when it is a verdict file).

    `responses` and `items` are paths, or packages already open (`open_package`): those are read as they
    are, not reopened, and left open. `config` is a `ResolvedConfig` (`audit.specs.resolve_config`:
    settings and the components they name), or a `GradeConfig` whose components are looked up in the
    registry.

    One streaming pass over the validated package reads each row's metadata and extracts
    its answer (texts are dropped as soon as they are read); the attempt to grade per
    (item, sample) is chosen afterwards. Package paths are recorded relative to `out`'s
    directory (or `base_dir`).
    """
    with _GcPause() as pause:
        return _grade_package(responses, config, pause, items=items, out=out, base_dir=base_dir,
                              parquet=parquet, workers=workers, overwrite=overwrite)


@contextmanager
def _opened(source: PackageSource) -> Iterator[tuple[Package, str]]:
    """The package, and how errors name it (as the caller gave it); one already open is left open."""
    if isinstance(source, Package):
        yield source, str(source.source)
        return
    with open_package(source) as pkg:
        yield pkg, str(source)


@dataclass(frozen=True, slots=True)
class _Plan:
    """One item as grading needs it: its record and the pair of components that grades it."""

    item_id: str
    """The items package's own string, kept once for every row of the item."""
    info: ItemInfo
    extractor: Any
    grader: Any


def _plans(item_info: dict[str, ItemInfo], resolved: ResolvedConfig) -> dict[str, _Plan]:
    main = (resolved.extractor, resolved.grader)
    mc = (resolved.mc_extractor, resolved.mc_grader)
    plans = {}
    for item_id, info in item_info.items():
        # Mixed benchmarks (HLE) grade items that have options with the multiple-choice pair.
        extractor, grader = (mc[0] or main[0], mc[1] or main[1]) if info.options and (mc[0] or mc[1]) else main
        plans[item_id] = _Plan(item_id, info, extractor, grader)
    return plans


def _read_items(rp: Package, label: str, items: PackageSource | None, reference_field: str,
                out_dir: Path) -> tuple[dict[str, ItemInfo], PackageRef | None]:
    """The items to grade against, and the items package's ref (None when the responses package holds them)."""
    if items is not None:
        with _opened(items) as (ip, items_label):
            if not ip.files("item_row.v1"):
                raise AuditError("holds no item rows", path=items_label)
            return load_items(ip, reference_field), _package_ref(ip, out_dir)
    if rp.files("item_row.v1"):
        return load_items(rp, reference_field), None
    raise NoItems("holds no item rows, and no items package was given", path=label)


def _read_attempt(obj: dict[str, Any], plan: _Plan) -> AttemptMeta:
    """One response row as grading keeps it: its metadata and extracted answer (the text is dropped)."""
    get = obj.get
    response, finish = get("response"), get("finish_reason")
    text = response if isinstance(response, str) else None  # null in a validated row, when not a string
    has_text = text is not None
    chars = len(text) if text is not None else 0
    tokens = get("completion_tokens")
    reported = tokens if isinstance(tokens, int) else None
    extractor = plan.extractor
    if getattr(extractor, "takes_options", False):
        extraction = extractor.extract(text, finish_reason=finish, options=plan.info.options)
    else:
        extraction = extractor.extract(text, finish_reason=finish)
    return AttemptMeta(
        attempt=get("attempt", 0), finish_reason=finish, length=chars if reported is None else reported,
        has_text=has_text, excluded=get("excluded"), error=get("error"), max_tokens=get("max_tokens"),
        extraction=extraction, tokens=reported, chars=chars,
        digest=hashlib.sha256(text.encode("utf-8")).hexdigest() if text is not None else None,
        at_budget=finish == "stop" and reported is not None and reported == get("max_tokens"),
        cut=finish is None and has_text and possibly_cut(text, finish))


_Key = tuple[str, int]
"""(item_id, sample)."""


@dataclass
class _Attempts:
    """The response rows as read, by (item_id, sample), and the attempt chosen to grade for each."""

    reads: dict[_Key, AttemptMeta | list[AttemptMeta]] = dataclasses.field(default_factory=dict)
    """One attempt, or, for a re-sampled (item, sample), every attempt read (a list only then: a million
    single attempts stay a million objects)."""
    chosen: dict[_Key, tuple[AttemptMeta, dict[str, Any]]] = dataclasses.field(default_factory=dict)
    """For each re-sampled key: the attempt to grade and what was considered (`choose_attempt`)."""

    def add(self, key: _Key, meta: AttemptMeta) -> bool:
        """Keep `meta`; False (and nothing kept) when the key already holds its attempt number."""
        prev = self.reads.setdefault(key, meta)
        if prev is meta:
            return True
        if isinstance(prev, AttemptMeta):
            prev = self.reads[key] = [prev]
        if any(m.attempt == meta.attempt for m in prev):
            return False
        prev.append(meta)
        return True

    def choose(self, policy: str) -> None:
        """Choose the attempt to grade for every re-sampled key under the re-sampling `policy`."""
        self.chosen = {key: choose_attempt(metas, policy) for key, metas in self.reads.items()
                       if isinstance(metas, list)}

    def pick(self, key: _Key) -> tuple[AttemptMeta | None, dict[str, Any] | None]:
        """The attempt graded for `key` (None when the run has no response for it), and what was considered."""
        got = self.reads.get(key)
        if got is None or isinstance(got, AttemptMeta):
            return got, None
        return self.chosen[key]

    def graded(self) -> Iterator[tuple[_Key, AttemptMeta]]:
        """Each key with the attempt graded for it."""
        for key, got in self.reads.items():
            yield key, got if isinstance(got, AttemptMeta) else self.chosen[key][0]


def _read_responses(rp: Package, plans: dict[str, _Plan]) -> _Attempts:
    """Every response row of the package, its answer extracted; refuses rows of unknown items and repeats."""
    attempts = _Attempts()
    for entry, rowno, obj in rp.iter_objects("response_row.v1"):
        plan = plans.get(obj["item_id"])
        if plan is None:
            raise AuditError(f"item {obj['item_id']!r} is not in the items package",
                             path=f"{rp.source}/{entry.path}", row=rowno, field="item_id")
        meta = _read_attempt(obj, plan)
        key = (plan.item_id, obj.get("sample", 0))
        if not attempts.add(key, meta):
            raise AuditError(f"duplicate (item_id={plan.item_id!r}, sample={key[1]}, attempt={meta.attempt}): "
                             f"the package holds this response twice", path=f"{rp.source}/{entry.path}",
                             row=rowno, field="attempt")
    return attempts


_Task = tuple[str, str, int | None]
"""(answer, reference, options): what a grader judges."""


def _grade_answers(attempts: _Attempts, plans: dict[str, _Plan], excluded_ids: frozenset[str], pause: _GcPause,
                   workers: int | None) -> dict[str, dict[_Task, graders.Judgment]]:
    """The judgments of the answers that count, per grader key: each distinct task graded once."""
    tasks: dict[str, tuple[Any, dict[_Task, None]]] = {}
    for key, meta in attempts.graded():
        assert meta.extraction is not None
        answer = meta.extraction.answer
        if answer is None or meta.finish_reason == "length" or key[0] in excluded_ids:
            continue
        plan = plans[key[0]]
        tasks.setdefault(plan.grader.key, (plan.grader, {}))[1][(answer, plan.info.reference, plan.info.options)] = None
    judgments: dict[str, dict[_Task, graders.Judgment]] = {}
    with pause.resumed():
        for grader_key, (grader, distinct) in tasks.items():
            todo = list(distinct)
            judgments[grader_key] = dict(zip(todo, _grade_all(grader, todo, workers), strict=True))
    return judgments


def _verdict_columns(item_ids: list[str], samples: list[int], plans: dict[str, _Plan], attempts: _Attempts,
                     judgments: dict[str, dict[_Task, graders.Judgment]], policies: Policies,
                     excluded_ids: frozenset[str]) -> tuple[dict[str, list[Any]], dict[str | None, int]]:
    """The verdict rows as columns (see Grading), one per (item, sample), and the possibly-cut counts by rule."""
    cols: dict[str, list[Any]] = {k: [] for k in VERDICT_ROW_FIELDS}
    cut: dict[str | None, int] = {}
    (add_item, add_sample, add_attempt, add_sha, add_answer, add_rule, add_span, add_verdict, add_status,
     add_reason, add_reference, add_detail) = [cols[k].append for k in _ROW_ORDER]
    for item_id in item_ids:
        plan = plans[item_id]
        info = plan.info
        graded = judgments.get(plan.grader.key, {})
        short = alphabet_too_short(plan.extractor, info)
        reference = info.reference
        for sample in samples:
            meta, detail = attempts.pick((item_id, sample))
            if meta is None:
                ex = judgment = None
                add_attempt(None)
                add_sha(None)
                add_answer(None)
                add_rule(None)
                add_span(None)
            else:
                ex = meta.extraction
                assert ex is not None
                judgment = graded.get((ex.answer, reference, info.options))
                if meta.cut:
                    cut[ex.rule] = cut.get(ex.rule, 0) + 1
                add_attempt(meta.attempt)
                add_sha(meta.digest)
                add_answer(ex.answer)
                add_rule(ex.rule)
                add_span(ex.span or None)  # a tuple (see Grading)
            decided, status, reason, more = _decide(meta, ex, judgment, info, item_id, sample, policies,
                                                    excluded_ids, short)
            if more:
                detail = {**detail, **more} if detail else more
            add_item(item_id)
            add_sample(sample)
            add_verdict(decided)
            add_status(status)
            add_reason(reason)
            add_reference(reference)
            add_detail(detail or None)  # None when empty (see Grading)
    return cols, cut


def _header(resolved: ResolvedConfig, responses_ref: PackageRef, items_ref: PackageRef | None,
            cols: dict[str, list[Any]], item_info: dict[str, ItemInfo]) -> VerdictFile:
    """The verdict file's header (empty `items`): what graded, with which policies, and the summary of `cols`."""
    config = resolved.config
    df = pd.DataFrame({k: cols[k] for k in ("item_id", "sample", "verdict", "status", "reason", "answer")})
    return VerdictFile(
        benchmark=config.benchmark, responses_package=responses_ref, items_package=items_ref,
        extractor=_ref(resolved.extractor), grader=_ref(resolved.grader), mc_extractor=_ref(resolved.mc_extractor),
        mc_grader=_ref(resolved.mc_grader), reference_field=config.reference_field, producer=producer(),
        environment=environment(), policies=config.policies,
        summary=summarize(df, {i: info.subject for i, info in item_info.items()}), items=[])


def _grade_package(responses: PackageSource, resolved: ResolvedConfig | GradeConfig, pause: _GcPause, *,
                   items: PackageSource | None = None,
                   out: str | os.PathLike[str] | None = None,
                   base_dir: str | os.PathLike[str] | None = None,
                   parquet: bool | None = None, workers: int | None = None, overwrite: bool = True) -> Grading:
    if isinstance(resolved, GradeConfig):
        resolved = resolve(resolved)
    policies = resolved.config.policies
    if base_dir is not None:
        out_dir = Path(base_dir).resolve()
    else:
        out_dir = Path(out).resolve().parent if out is not None else Path.cwd()

    with _opened(responses) as (rp, label):
        if rp.kind != "responses":
            raise AuditError(f"is a {rp.kind!r} package; `audit grade` needs a responses package", path=label)
        item_info, items_ref = _read_items(rp, label, items, resolved.config.reference_field, out_dir)
        responses_ref = _package_ref(rp, out_dir)
        plans = _plans(item_info, resolved)
        attempts = _read_responses(rp, plans)

    excluded_ids = frozenset(policies.exclude)
    unknown = sorted(excluded_ids - item_info.keys())
    if unknown:
        raise AuditError(f"the exclude policy names {len(unknown)} id(s) that are not items (first: {unknown[0]!r})")
    item_ids = sorted(item_info) if policies.scope == "items" else sorted({k[0] for k in attempts.reads})
    samples = sorted({k[1] for k in attempts.reads}) or [0]
    attempts.choose(policies.resampling)
    judgments = _grade_answers(attempts, plans, excluded_ids, pause, workers)
    cols, cut = _verdict_columns(item_ids, samples, plans, attempts, judgments, policies, excluded_ids)
    del attempts, judgments  # before the summary: a million rows' metadata is no longer needed

    grading = Grading(_header(resolved, responses_ref, items_ref, cols, item_info), cols, cut)
    if out is not None:
        grading.header = grading.write(out, parquet=parquet, overwrite=overwrite)
    return grading


def _package_ref(pkg: Package, out_dir: Path) -> PackageRef:
    try:
        rel = os.path.relpath(pkg.source.resolve(), out_dir)
    except ValueError:  # another drive
        rel = str(pkg.source.resolve())
    return PackageRef(package_id=pkg.manifest.package_id, digest=pkg.digest, path=Path(rel).as_posix())


# --------------------------------------------------------------------------- does the spec fit the responses?

FIT_THRESHOLD = 0.5
"""`fit_check` speaks when more than this share of the rows with a response read no answer."""
FIT_SAMPLE = 1000
"""At most this many no-answer responses are re-read with the other registered extractors."""


@dataclass(frozen=True)
class FitCheck:
    """Most rows read no answer: the spec's extractor does not fit these responses' format."""

    no_answer: int
    """Rows with a response from which the extractor read no answer."""
    read: int
    """Rows with a response it read (with or without an answer)."""
    extractor: str
    """The extractor `name@version` used, and"""
    expects: str
    """the format it expects, in its own words."""
    sampled: int
    """No-answer responses re-read with the other extractors."""
    better: list[tuple[str, int]]
    """Registered extractors (latest versions; letter readers only when the spec's extractor reads letters)
    that read an answer statement or format match in some of them, with how many, most first (at most 3)."""


def fit_check(grading: Grading, responses: str | os.PathLike[str], config: ResolvedConfig | GradeConfig,
              *, threshold: float = FIT_THRESHOLD, sample: int = FIT_SAMPLE) -> FitCheck | None:
    """None when the spec's extractor reads an answer in most rows; else how many rows read none, and which
    registered extractors read more of them (re-reading at most `sample` of those responses)."""
    if isinstance(config, GradeConfig):
        config = resolve(config)
    statuses = grading.header.summary.statuses
    no_answer = statuses.get("no_answer", 0) + statuses.get("random_guess", 0)
    read = sum(v for k, v in statuses.items() if k not in ("missing", "excluded", "error", "truncated"))
    if not read or no_answer / read <= threshold:
        return None
    cols = grading.columns
    keys = {(i, sm, a) for i, sm, a, ans, st in zip(cols["item_id"], cols["sample"], cols["attempt"], cols["answer"],
                                                      cols["status"], strict=True)
            if ans is None and st in ("no_answer", "random_guess")}
    used = {c.key for c in (config.extractor, config.mc_extractor) if c is not None and hasattr(c, "key")}
    names = dict.fromkeys(e.name for e in extractors.all_extractors())
    others = [extractors.get(n) for n in names if n != "raw"]
    # A letter-reading spec is offered letter readers only (its grader compares letters).
    letters = getattr(config.extractor, "letters", None)
    others = [e for e in others if e.key not in used and (not letters or e.letters)]
    counts = dict.fromkeys((e.key for e in others), 0)
    seen = 0
    with open_package(responses) as rp:
        for _, _, obj in rp.iter_objects("response_row.v1"):
            text = obj.get("response")
            if seen >= sample or not isinstance(text, str):
                continue
            if (obj["item_id"], obj.get("sample", 0), obj.get("attempt", 0)) not in keys:
                continue
            seen += 1
            for e in others:
                got = e.extract(text, finish_reason=obj.get("finish_reason"))
                if got.answer is not None and e.strength(got.rule) in ("statement", "format"):
                    counts[e.key] += 1
    better = sorted(((k, v) for k, v in counts.items() if v), key=lambda kv: (-kv[1], kv[0]))
    main = config.extractor
    return FitCheck(no_answer=no_answer, read=read, extractor=main.key, expects=main.description, sampled=seen,
                    better=better[:3])


# --------------------------------------------------------------------------- reproduce


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
