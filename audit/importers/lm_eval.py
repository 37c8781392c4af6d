"""lm-evaluation-harness `--log_samples` JSONL → responses (and items) packages.

The record shape is defined by EleutherAI/lm-evaluation-harness `lm_eval/evaluator.py`
(`evaluate`, the `example = {...}` written when `log_samples`) and
`lm_eval/loggers/evaluation_tracker.py` (`save_results_samples`, which writes
`samples_<task>_<date>.jsonl`), read at v0.4.9.2 (ad3f4d0c) and HEAD 4e7e0d47 (2026-08):

    {"doc_id": int, "doc": {...}, "target": str,
     "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": gen_kwargs}},   # one per request
     "resps": [[text, ...]],            # requests x repeats, every leaf a string
     "filtered_resps": [str | [str]],   # per request, after the filter named below
     "filter": str, "metrics": [name, ...],
     "doc_hash": sha256(json.dumps(doc, indent=2, ensure_ascii=False)),
     "prompt_hash": sha256(prompt), "target_hash": sha256(target),
     <metric>: value, ...}

One record per (document, filter): files of tasks with several filters repeat
every document, so one filter is imported (`--filter`, default the first seen).
A generate_until record has one request; its repeats become samples 0..K-1.

A multiple_choice record (mmlu, arc, hellaswag, copa...; `lm_eval/api/task.py`
`construct_requests` and `process_results`) has one loglikelihood request per option:
`arguments` gen_args_i = (context, target_delimiter + option_i), `resps` [[(ll, is_greedy)]]
per request and `filtered_resps` [(ll, is_greedy)] per request, each pair stringified by
`sanitize_list` (["-0.26", "False"]). The harness chooses `argmax(lls)` for `acc`,
`argmax(lls / len(option))` for `acc_norm` (characters of the option without the delimiter)
and `argmax(lls / len(option.encode()))` for `acc_bytes`; with `acc_mutual_info` the
requests are doubled, the second half unconditional (empty context). The gold option is
`doc_to_target`, logged as `str(target)`: an option index ("3") or the option's text.
Here the chosen option becomes the response, as its letter (A = option 0), with every
log-likelihood in `extra`; the items get the gold letter and the options. Multiple-input
tasks (winogrande: the options are in the contexts, one shared continuation) log no gold
option and are refused, as are single loglikelihood requests (nothing is chosen).

Older files (before 2024-05) have `arguments` as a list of argument lists and no hashes;
before 2024-11 they have no `filter` or `metrics`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audit.errors import AuditError
from audit.fileio import parse_object, read_document, read_regular
from audit.importers import Output, data_file, import_provenance
from audit.importers.formats import Format, Importer, recorded_hint, register_importer
from audit.importers.mapping import Expr, ExprError, coerce, parse_float, parse_int
from audit.importers.sources import (
    Record,
    SourceFile,
    check_pinned,
    format_name,
    iter_json_records,
    parquet_problem,
    source_file,
)
from audit.models import LETTERS, Provenance
from audit.pack import SourceRow, Table

ENGINE = "EleutherAI/lm-evaluation-harness"
SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".parquet")
_RESERVED = {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics",
             "doc_hash", "prompt_hash", "target_hash"}
CHOICE_RULES = ("acc", "acc_norm", "acc_bytes")
"""How the harness picks the option of a multiple_choice record, by the metric that uses it."""
_INVALID = "[invalid]"
"""What lm-eval's regex filters return when nothing matches."""


class RecordError(ValueError):
    """A record that cannot be imported: `field` and what is wrong."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Choice:
    """A multiple_choice record read: the options, the gold option and the option the harness chose."""

    options: list[str]
    lls: list[float]
    greedy: list[bool]
    gold: int
    chosen: int
    bad: str | None = None
    """Why the logged target names no option (then `gold` is -1), under `--on-bad-row record`."""

    @property
    def letter(self) -> str:
        return LETTERS[self.chosen]

    @property
    def gold_letter(self) -> str:
        return LETTERS[self.gold]


def _pair(value: Any, where: str) -> tuple[float, bool]:
    """One (loglikelihood, is_greedy) pair as the harness logs it (strings after `sanitize_list`)."""
    if not isinstance(value, list) or len(value) != 2:
        raise RecordError(where, f"expected a [loglikelihood, is_greedy] pair, got {value!r}")
    ll, greedy = value
    if isinstance(ll, str):
        number = parse_float(ll)  # ASCII only: float() would read "-١.0" as -1.0
        if number is None and ll.strip() == "-inf":
            number = float("-inf")  # log(0): an impossible option, as the harness logs it
    elif isinstance(ll, (int, float)) and not isinstance(ll, bool):
        number = float(ll)
    else:
        number = None
    if number is None or number != number or number == float("inf"):
        raise RecordError(where, f"expected a log-likelihood, got {ll!r}")
    if greedy not in ("True", "False", True, False):
        raise RecordError(where, f"expected is_greedy True or False, got {greedy!r}")
    return number, greedy in ("True", True)


def read_choice(obj: dict[str, Any], choice_by: str, delimiter: str, lenient_gold: bool = False) -> Choice:
    """The options, gold and chosen option of a multiple_choice record (RecordError when it is not one).

    With `lenient_gold`, a target that names no option leaves `gold` -1 and the reason in `bad`."""
    reqs = _requests(obj.get("arguments"))
    if reqs is None or not reqs or not all(len(r) >= 2 and isinstance(r[0], str) and isinstance(r[1], str)
                                           for r in reqs):
        raise RecordError("arguments", "expected one (context, continuation) pair per option")
    filtered = obj.get("filtered_resps")
    if not isinstance(filtered, list):
        filtered = [r[0] if isinstance(r, list) and r else r for r in obj["resps"]]
    if len(filtered) != len(reqs):
        raise RecordError("filtered_resps", f"{len(filtered)} entries for {len(reqs)} requests")
    pairs = [_pair(f, "filtered_resps") for f in filtered]
    n = len(reqs)
    if n % 2 == 0 and n >= 4 and all(r[0] == "" for r in reqs[n // 2:]) and all(r[0] for r in reqs[:n // 2]):
        n //= 2  # acc_mutual_info: the second half are the options' unconditional log-likelihoods
        reqs, pairs = reqs[:n], pairs[:n]
    if n < 2:
        raise RecordError("resps", "one loglikelihood request: the task scores a continuation, it chooses no option")
    if len({r[0] for r in reqs}) > 1 and len({r[1] for r in reqs}) == 1:
        raise RecordError("arguments", "the options are in the contexts (a multiple-input task such as winogrande): "
                                       "the logged target is the shared continuation, not the gold option")
    if n > len(LETTERS):
        raise RecordError("arguments", f"{n} options: more than the {len(LETTERS)} letters A-Z")
    options = []
    for r in reqs:
        if not r[1].startswith(delimiter):
            raise RecordError("arguments", f"continuation {r[1]!r} does not start with the target delimiter "
                                           f"{delimiter!r} (give --target-delimiter)")
        options.append(r[1][len(delimiter):])
    lls = [ll for ll, _ in pairs]
    if choice_by == "acc":
        scores = lls
    else:
        sizes = [len(o) if choice_by == "acc_norm" else len(o.encode("utf-8")) for o in options]
        if 0 in sizes:
            raise RecordError("arguments", f"an empty option: {choice_by} divides by its length")
        scores = [ll / size for ll, size in zip(lls, sizes, strict=True)]  # both one per option
    chosen = max(range(n), key=scores.__getitem__)  # the first of equal scores, as numpy's argmax
    try:
        gold, bad = _gold(obj.get("target"), options), None
    except RecordError as e:
        if not lenient_gold or not isinstance(obj.get("target"), str):
            raise
        gold, bad = -1, str(e)
    return Choice(options, lls, [g for _, g in pairs], gold, chosen, bad)


def _gold(target: Any, options: list[str]) -> int:
    """The gold option: `str(doc_to_target(doc))`, an option index or an option's text; or the index itself, as
    `simple_evaluate(..., log_samples=True)` keeps it (an integer `target`, unstringified)."""
    if isinstance(target, int) and not isinstance(target, bool):
        if 0 <= target < len(options):
            return target
        raise RecordError("target", f"target {target} is no option index (the record has {len(options)} options)")
    if not isinstance(target, str):
        raise RecordError("target", f"expected the logged target text, got {target!r}")
    by_text = [i for i, o in enumerate(options) if o == target]
    index = parse_int(target) if target.isascii() and target.isdigit() else None  # "٣" and "²" are not indices
    by_index = index if index is not None and index < len(options) else None
    found = set(by_text) | ({by_index} if by_index is not None else set())
    if len(found) == 1:
        return found.pop()
    if not found:
        raise RecordError("target", f"target {target!r} is neither an option index nor an option's text")
    raise RecordError("target", f"target {target!r} is ambiguous: an option index and another option's text")


DOC_OPTION_FIELDS = ("options",)
"""Fields of a generate_until doc that hold its options (MMLU-Pro's and MMLU-Pro+'s `options`, up to twelve)."""


def _doc_options(doc: Any) -> tuple[list[str], str] | None:
    """A generate_until doc's own options and the field they came from, when it holds a list of texts; else None
    (the item then records no option count, and a spec that needs one says so instead of guessing A-J)."""
    if not isinstance(doc, dict):
        return None
    for name in DOC_OPTION_FIELDS:
        opts = doc.get(name)
        if isinstance(opts, list) and 2 <= len(opts) <= len(LETTERS) and all(isinstance(o, str) for o in opts):
            return list(opts), f"doc.{name}"
    return None


def _target_text(target: Any) -> str | None:
    """The text the harness hashed as `target_hash` (`str(target)`: an integer index as its digits), or None."""
    if isinstance(target, int) and not isinstance(target, bool):
        return str(target)
    return target if isinstance(target, str) else None


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _requests(args: Any) -> list[list[Any]] | None:
    """The per-request argument lists, from either the dict (2024-05 on) or the list form."""
    if isinstance(args, dict):
        out = []
        for i in range(len(args)):
            req = args.get(f"gen_args_{i}")
            if not isinstance(req, dict):
                return None
            out.append([req.get(f"arg_{j}") for j in range(len(req))])
        return out
    if isinstance(args, list) and all(isinstance(a, list) for a in args):
        return args
    return None


@dataclass
class LmEvalImport:
    """One samples file read for one filter; remembers what it saw for the provenance."""

    src: SourceFile
    item_id: Expr
    filter: str | None = None
    verify_hashes: bool = True
    choice_by: str = "acc"
    target_delimiter: str = " "
    filters_seen: dict[str, int] = field(default_factory=dict)
    gen_kwargs: dict[str, Any] = field(default_factory=dict)
    output_types: dict[str, int] = field(default_factory=dict)
    docs: int = 0
    responses: int = 0
    embedded_task: str | None = None
    """Read the records a results file embeds under `samples.<task>` instead of a samples file's lines."""
    on_bad_row: str = "refuse"
    """`record`: a multiple-choice record whose target names no option is kept ungraded (status bad_input)."""
    bad_rows: list[dict[str, Any]] = field(default_factory=list)

    def reader(self) -> LmEvalImport:
        """Another reader of the same file (hashed once), with counts of its own; taken before this one reads."""
        return LmEvalImport(self.src, self.item_id, self.filter, self.verify_hashes, self.choice_by,
                            self.target_delimiter, embedded_task=self.embedded_task, on_bad_row=self.on_bad_row)

    @property
    def parquet(self) -> bool:
        """A samples table in Parquet (the Open LLM Leaderboard's details datasets), read through `datasets`."""
        return format_name(self.src).endswith(".parquet")

    def raw_records(self) -> Iterator[Record]:
        """Every record of the file (every filter), as read."""
        if self.embedded_task is not None:
            yield from embedded_records(self.src, self.embedded_task)
        elif self.parquet:
            yield from hf_records(self.src)
        else:
            yield from iter_json_records(self.src)

    def _records(self) -> Iterator[tuple[Any, dict[str, Any] | None, SourceRow | None]]:
        """(record, None) for each record of the chosen filter, or (None, error row)."""
        for rec in self.raw_records():
            if rec.obj is None:
                yield rec, None, SourceRow(rec.label, rec.row, None, rec.error or "unreadable record")
                continue
            name = rec.obj.get("filter")
            key = name if isinstance(name, str) else "(none)"
            self.filters_seen[key] = self.filters_seen.get(key, 0) + 1
            if self.filter is None:
                self.filter = key
            if key != self.filter:
                continue
            yield rec, rec.obj, None

    def _check(self, label: str, row: int, obj: dict[str, Any]) -> tuple[str | None, Choice | None,
                                                                          SourceRow | None]:
        """(item id, the multiple-choice reading or None for generate_until, None), or an error row."""
        if "doc_id" not in obj:
            return None, None, SourceRow(label, row, None, "missing required field", "doc_id")
        try:
            item_id = coerce(self.item_id(obj), (str,), int_to_text=True)
        except ExprError as e:
            raise AuditError(f"--item-id: {e}", path=label, row=row, field="item_id") from None
        resps = obj.get("resps")
        if not isinstance(resps, list) or not resps or not all(isinstance(r, list) for r in resps):
            return None, None, SourceRow(label, row, None, "expected a list of per-request response lists", "resps")
        choice = None
        if not (len(resps) == 1 and all(isinstance(t, str) for t in resps[0])):
            try:
                choice = read_choice(obj, self.choice_by, self.target_delimiter, self.on_bad_row == "record")
            except RecordError as e:
                hint = " (--on-bad-row record imports it ungraded)" if e.field == "target" and isinstance(
                    obj.get("target"), str) else ""
                return None, None, SourceRow(label, row, None, str(e) + hint, e.field)
        if self.verify_hashes:
            for problem in self._hash_problems(obj):
                return None, None, SourceRow(label, row, None, problem[1], problem[0])
        kind = "generate_until" if choice is None else "multiple_choice"
        self.output_types[kind] = self.output_types.get(kind, 0) + 1
        return item_id, choice, None

    def _checked(self) -> Iterator[tuple[Any, dict[str, Any], str | None, Choice | None] | SourceRow]:
        """Each record of the chosen filter as (record, object, item id, choice), or the row saying why not."""
        for rec, obj, bad in self._records():
            if bad is None:
                assert obj is not None  # _records gives an object or an error row
                item_id, choice, bad = self._check(rec.label, rec.row, obj)
            if bad is not None:
                yield bad
                continue
            assert obj is not None
            yield rec, obj, item_id, choice

    def _hash_problems(self, obj: dict[str, Any]) -> Iterator[tuple[str, str]]:
        # The harness hashes what it logged; a mismatch means the file changed after the run.
        reqs = _requests(obj.get("arguments"))
        prompt = reqs[0][0] if reqs and reqs[0] else None
        checks = [("prompt_hash", prompt if isinstance(prompt, str) else None),
                  ("target_hash", _target_text(obj.get("target")))]
        if isinstance(obj.get("doc"), dict) and not self.parquet:
            # Parquet unifies the documents' keys into one struct (order, nulls): doc_hash cannot be recomputed.
            checks.append(("doc_hash", json.dumps(obj["doc"], indent=2, ensure_ascii=False)))
        for name, text in checks:
            want = obj.get(name)
            if isinstance(want, str) and text is not None and _sha256(text) != want:
                yield name, f"{name} does not match the logged {name.removesuffix('_hash')} (altered after the run?)"

    def _scores(self, obj: dict[str, Any]) -> dict[str, Any]:
        metrics = obj.get("metrics")
        names = metrics if isinstance(metrics, list) else [k for k in obj if k not in _RESERVED]
        return {m: obj[m] for m in names if isinstance(m, str) and m in obj}

    def _each_record(self, rows_of: Callable[[Any, dict[str, Any], str | None, Choice | None],
                                             Iterator[SourceRow]]) -> Iterator[SourceRow]:
        """The rows `rows_of` makes of each record of the chosen filter, or the row saying why a record
        cannot be read."""
        for checked in self._checked():
            if isinstance(checked, SourceRow):
                yield checked
            else:
                yield from rows_of(*checked)

    def response_rows(self) -> Iterator[SourceRow]:
        return self._each_record(self._responses_of)

    def _responses_of(self, rec: Any, obj: dict[str, Any], item_id: str | None,
                      choice: Choice | None) -> Iterator[SourceRow]:
        self.docs += 1
        scores = self._scores(obj)
        if choice is not None:
            extra: dict[str, Any] = {"doc_id": obj["doc_id"], "filter": self.filter,
                                     "choice_by": self.choice_by, "chosen": choice.chosen,
                                     "loglikelihoods": choice.lls, "is_greedy": choice.greedy}
            if scores:
                extra["metrics"] = scores
            if choice.bad is not None:
                extra["bad_input"] = choice.bad
                self.bad_rows.append({"item_id": item_id, "file": Path(rec.label).name, "row": rec.row,
                                      "reason": choice.bad})
            row: dict[str, Any] = {"item_id": item_id, "sample": 0, "response": choice.letter, "extra": extra}
            if isinstance(obj.get("prompt_hash"), str):
                row["prompt_sha256"] = obj["prompt_hash"]
            self.responses += 1
            yield SourceRow(rec.label, rec.row, row)
            return
        reqs = _requests(obj.get("arguments"))
        kwargs = reqs[0][1] if reqs and len(reqs[0]) > 1 and isinstance(reqs[0][1], dict) else None
        if kwargs is not None:
            canon = json.dumps(kwargs, sort_keys=True, ensure_ascii=False)
            self.gen_kwargs.setdefault(canon, kwargs)
        max_tokens = kwargs.get("max_gen_toks") if kwargs else None
        filtered = obj.get("filtered_resps")
        filtered = filtered[0] if isinstance(filtered, list) and len(filtered) == 1 else None
        texts = obj["resps"][0]
        for sample, text in enumerate(texts):
            row = {"item_id": item_id, "sample": sample, "response": text}
            if isinstance(max_tokens, int) and not isinstance(max_tokens, bool):
                row["max_tokens"] = max_tokens
            if isinstance(obj.get("prompt_hash"), str):
                row["prompt_sha256"] = obj["prompt_hash"]
            extra = {"doc_id": obj["doc_id"], "filter": self.filter}
            if isinstance(filtered, list) and len(filtered) == len(texts):
                extra["filtered_resp"] = filtered[sample]
            elif filtered is not None:
                extra["filtered_resp"] = filtered  # one answer for all repeats (take_first, majority vote)
            if scores:
                extra["metrics"] = scores
            row["extra"] = extra
            self.responses += 1
            yield SourceRow(rec.label, rec.row, row)

    def item_rows(self) -> Iterator[SourceRow]:
        return self._each_record(self._items_of)

    def _items_of(self, rec: Any, obj: dict[str, Any], item_id: str | None,
                  choice: Choice | None) -> Iterator[SourceRow]:
        if "target" not in obj:
            yield SourceRow(rec.label, rec.row, None, "missing required field", "target")
            return
        self.docs += 1
        if choice is not None:
            extra = {"doc_id": obj["doc_id"], "target": obj["target"]}
            if choice.bad is not None:  # graded as ungraded (bad_input): the reference is never compared
                extra["bad_input"] = f"{choice.bad} ({Path(rec.label).name} row {rec.row})"
            yield SourceRow(rec.label, rec.row, {"item_id": item_id,
                                                 "reference": choice.gold_letter if choice.bad is None
                                                 else obj["target"], "choices": choice.options,
                                                 "extra": extra})
            return
        target = obj["target"]
        item: dict[str, Any] = {"item_id": item_id, "reference": str(target) if isinstance(target, int) and
                                not isinstance(target, bool) else target, "extra": {"doc_id": obj["doc_id"]}}
        options = _doc_options(obj.get("doc"))
        if options is not None:  # mmlu_pro, mmlu_pro_plus: the letters a response may name are the doc's own
            item["choices"], item["extra"]["choices_from"] = options
        yield SourceRow(rec.label, rec.row, item)

    def recorded_rows(self, metric: str | None) -> tuple[list[dict[str, Any]], str]:
        """The verdicts the harness recorded: per document, its `metric` (default: the first it logged) as
        correct (1) or incorrect (0), with the answer its filter read (or the option it chose). Returns the
        rows and the metric used."""
        rows: list[dict[str, Any]] = []
        used = metric
        for checked in self._checked():
            if isinstance(checked, SourceRow):
                raise AuditError(checked.error or "unreadable record", path=checked.path, row=checked.row,
                                 field=checked.field)
            rec, obj, item_id, choice = checked
            assert item_id is not None
            if choice is None and len(obj["resps"][0]) != 1:
                raise AuditError(f"{len(obj['resps'][0])} repeats scored as one document: the harness recorded a "
                                 f"verdict per document, not per response", path=rec.label, row=rec.row, field="resps")
            if used is None:
                logged = obj.get("metrics")
                names = logged if isinstance(logged, list) else [k for k in obj if k not in _RESERVED]
                if not names:
                    raise AuditError("no metric logged", path=rec.label, row=rec.row, field="metrics")
                # A multiple-choice verdict is the metric of the rule that chose the option.
                used = self.choice_by if choice is not None and self.choice_by in names else names[0]
            value = obj.get(used)
            answer: str | None
            reference: str | None
            status: str | None
            if isinstance(value, bool) or value not in (0, 1):
                raise AuditError(f"metric {used} is {value!r}, not 0 or 1: not a verdict", path=rec.label,
                                 row=rec.row, field=used)
            if choice is not None:
                if used not in CHOICE_RULES:
                    raise AuditError(f"metric {used} does not score a chosen option (give --metric one of "
                                     f"{', '.join(CHOICE_RULES)})", path=rec.label, row=rec.row, field=used)
                if used != self.choice_by:  # the recorded answer is the option that metric's rule chose
                    choice = read_choice(obj, used, self.target_delimiter, self.on_bad_row == "record")
                if choice.bad is not None:
                    rows.append({"item_id": item_id, "sample": 0, "answer": choice.letter, "verdict": "ungraded",
                                 "status": "bad_input", "reference": obj.get("target"),
                                 "reason": f"{choice.bad} ({Path(rec.label).name} row {rec.row})"})
                    continue
                answer, reference, status = choice.letter, choice.gold_letter, None
            else:
                filtered = obj.get("filtered_resps")
                answer = filtered[0] if isinstance(filtered, list) and len(filtered) == 1 else None
                if isinstance(answer, list):
                    answer = answer[0] if len(answer) == 1 else None
                reference = obj.get("target") if isinstance(obj.get("target"), str) else None
                status = "no_answer" if answer == _INVALID else None
                if answer == _INVALID or not isinstance(answer, str):
                    answer = None
            verdict = "correct" if value == 1 else "incorrect"
            rows.append({"item_id": item_id, "sample": 0, "answer": answer, "verdict": verdict,
                         "status": status or verdict, "reference": reference,
                         "reason": f"recorded by lm-eval: {used} = {value:g} (filter {self.filter})"})
        if not rows:
            seen = ", ".join(self.filters_seen) or "none"
            raise AuditError(f"no samples to import for filter {self.filter!r} (filters in the file: {seen})",
                             path=str(self.src.path))
        assert used is not None
        return rows, used

    def recorded_verdicts(self, metric: str | None) -> tuple[list[dict[str, Any]], str]:
        """`recorded_rows` as the rows of a verdict file (`verdicts.recorded_row`), and the metric used."""
        from audit.importers.verdicts import recorded_row

        rows, used = self.recorded_rows(metric)
        return [recorded_row(r["item_id"], 0, answer=r["answer"], verdict=r["verdict"], status=r["status"],
                             reason=r["reason"], reference=r["reference"]) for r in rows], used

    def provenance(self, base: Provenance | None, model: str | None) -> Provenance:
        if not self.docs:
            seen = ", ".join(self.filters_seen) or "none"
            raise AuditError(f"no samples to import for filter {self.filter!r} (filters in the file: {seen})",
                             path=str(self.src.path))
        config: dict[str, Any] = {
            "importer": "lm-eval", "item_id": self.item_id.text, "filter": self.filter,
            "filters_in_file": dict(self.filters_seen), "documents": self.docs, "responses": self.responses,
            "hashes_verified": (["prompt_hash", "target_hash"] if self.parquet else True) if self.verify_hashes
            else False,
        }
        if self.on_bad_row != "refuse":
            config["on_bad_row"] = self.on_bad_row
        if self.bad_rows:
            config["bad_input"] = [dict(b) for b in self.bad_rows]
        if self.output_types.get("multiple_choice"):
            # The chosen option is the response: how it was chosen decides every verdict.
            config["output_types"] = dict(sorted(self.output_types.items()))
            config["choice_by"] = self.choice_by
            config["target_delimiter"] = self.target_delimiter
        sampling = None
        if len(self.gen_kwargs) == 1:
            sampling = next(iter(self.gen_kwargs.values()))
        elif self.gen_kwargs:
            config["gen_kwargs_variants"] = len(self.gen_kwargs)
        prov = import_provenance(base, files=[self.src], importer=config, engine=ENGINE, model=model,
                                 sampling=sampling)
        if sampling is not None and not prov.notes:
            prov = prov.model_copy(update={"notes": "sampling: the generation kwargs the harness passed "
                                                    "with each request (arguments arg_1)"})
        return prov


def embedded_records(src: SourceFile, task: str) -> Iterator[Record]:
    """The records a results file holds under `samples.<task>` (written by harness versions and wrappers that
    keep the samples in the results document); read once, its bytes checked against the sha256 `src` pinned."""
    label = f"{src.path}:samples.{task}"
    data, err = read_document(src.path, what="an lm-eval results file")
    if err:
        yield Record(label, 0, None, err)
        return
    check_pinned(src, data or b"")
    obj, err = parse_object((data or b"").replace(b"\n", b" "))
    if err or obj is None:
        yield Record(label, 0, None, err or "not a JSON object")
        return
    samples = obj.get("samples")
    records = samples.get(task) if isinstance(samples, dict) else None
    if not isinstance(records, list):
        yield Record(label, 0, None, f"no samples.{task} list in the results file")
        return
    for i, rec in enumerate(records, 1):
        if isinstance(rec, dict):
            yield Record(label, i, rec)
        else:
            yield Record(label, i, None, f"expected a JSON object, found {type(rec).__name__}")


def hf_records(src: SourceFile) -> Iterator[Record]:
    """The rows of a Parquet samples table, read with Hugging Face `datasets` (the `hf` extra). Parquet stores
    `arguments` as one struct for all rows, so a record with fewer requests gets the others as nulls: those
    are dropped again.

    The file is read once: those bytes must be the ones `src` pinned by sha256, are checked at the bounds of
    any Parquet input, and are what `datasets` decodes (from a private copy), so a file replaced after it was
    hashed is refused, never imported under the old digest."""
    import tempfile

    label = str(src.path)
    try:
        import datasets
    except ImportError:
        yield Record(label, 0, None, "reading a Parquet details table needs datasets: pip install 'audit[hf]'")
        return
    data = read_regular(src.path, follow_links=True)
    check_pinned(src, data)
    refused = parquet_problem(data)  # bounded as any Parquet input, before datasets decodes all of it
    if refused:
        yield Record(label, 0, None, refused)
        return
    datasets.disable_progress_bars()  # audit's output is its own lines only
    with tempfile.TemporaryDirectory(prefix="audit-hf-") as cache:
        copy = Path(cache) / "table.parquet"
        copy.write_bytes(data)
        del data
        try:
            ds = datasets.Dataset.from_parquet(str(copy), cache_dir=cache, keep_in_memory=True)
        except Exception as e:  # pyarrow and datasets raise several types for a damaged file
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
            yield Record(label, 0, None, f"not a readable Parquet table: {first}")
            return
        for i, rec in enumerate(ds, 1):
            args = rec.get("arguments")
            if isinstance(args, dict):
                rec["arguments"] = {k: v for k, v in args.items() if v is not None}
            yield Record(label, i, rec)


def lm_eval_import(src: str | Path, *, item_id: str = "doc_id", filter_name: str | None = None,
                   verify_hashes: bool = True, choice_by: str = "acc", target_delimiter: str = " ",
                   embedded_task: str | None = None, on_bad_row: str = "refuse",
                   fmt: str | None = None) -> LmEvalImport:
    """A samples file opened for reading (its rows are read when the packages are written); with
    `embedded_task`, the results file `src` whose `samples.<task>` holds the records. `fmt`: the file's format
    when its name does not tell it (jsonl, jsonl.gz, json, parquet)."""
    if choice_by not in CHOICE_RULES:
        raise AuditError(f"--choice-by must be one of {', '.join(CHOICE_RULES)}, got {choice_by!r}")
    f = source_file(src, SUFFIXES, fmt)
    try:
        expr = Expr(item_id)
    except ValueError as e:
        raise AuditError(f"--item-id: {e}") from None
    if on_bad_row not in ("refuse", "record"):
        raise AuditError(f"--on-bad-row must be refuse or record, got {on_bad_row!r}")
    return LmEvalImport(f, expr, filter_name, verify_hashes, choice_by, target_delimiter,
                        embedded_task=embedded_task, on_bad_row=on_bad_row)


def lm_eval_outputs(imp: LmEvalImport, out: Path, *, benchmark: str | None, items_out: Path | None = None,
                    gzip: bool = False, model: str | None = None, provenance: Provenance | None = None,
                    package_id: str | None = None) -> list[Output]:
    """The packages an lm-eval samples import (from `lm_eval_import`, not yet read) writes: responses at `out`,
    holding the items too (reference = the logged target) so `audit grade OUT` needs nothing else, and the
    items as their own package at `items_out` when given."""
    rel, schema = data_file("responses", gzip)
    irel, ischema = data_file("items", gzip)
    outputs = [Output(out, "responses", [Table(rel, schema, imp.response_rows()),
                                         Table(irel, ischema, imp.reader().item_rows())],
                      lambda: imp.provenance(provenance, model), benchmark=benchmark, package_id=package_id)]
    if items_out is not None:
        items = imp.reader()
        rel, schema = data_file("items", gzip)
        outputs.append(Output(items_out, "items", [Table(rel, schema, items.item_rows())],
                              lambda: items.provenance(provenance, model), benchmark=benchmark))
    return outputs


def _samples_beside(results: Path) -> list[Path]:
    """The samples files lm-eval wrote in the same run as `results_<date>.json` (same folder, same date)."""
    date = results.name.removeprefix("results_").removesuffix(".json")
    if date == results.name:
        return []
    return sorted(results.parent.glob(f"samples_*_{date}.jsonl"))


_RESULTS_KEYS = {"config", "configs", "versions", "n-shot", "lm_eval_version", "n-samples"}

register_importer(Importer(
    "lm-eval", "audit.cli.imports.lm_eval",
    (Format("lm-eval-samples", "an lm-evaluation-harness --log_samples file (doc_id, doc, resps)",
            "audit import lm-eval FILE --benchmark NAME -o OUT [--recorded RECORDED.json]", "lm-eval", order=10,
            record=lambda keys: "doc_id" in keys and bool(keys & {"resps", "filtered_resps"}),
            verdicts_hint=recorded_hint("audit import lm-eval FILE --benchmark NAME -o PACKAGE --recorded OUT.json")),
     Format("lm-eval-results-samples", "an lm-evaluation-harness results file holding its samples (simple_evaluate "
            "with log_samples)", "audit import lm-eval FILE -o OUT", "lm-eval", order=49,
            document=lambda obj: isinstance(obj.get("results"), dict) and bool(obj.keys() & _RESULTS_KEYS)
            and isinstance(obj.get("samples"), dict) and bool(obj["samples"])),
     Format("lm-eval-results", "an lm-evaluation-harness results file (aggregate scores only, no per-item rows)",
            "audit import lm-eval samples_<task>_<date>.jsonl --benchmark NAME -o OUT",
            after=" on the samples file --log_samples writes beside it", order=50,
            document=lambda obj: isinstance(obj.get("results"), dict) and bool(obj.keys() & _RESULTS_KEYS),
            verdicts_hint="; per-item verdicts are in its --log_samples files: `audit import lm-eval "
                          "samples_<task>_<date>.jsonl --benchmark NAME -o PACKAGE --recorded OUT.json`",
            beside=_samples_beside, instead="samples_<task>_<date>.jsonl", beside_what="--log_samples file")),
    fields=frozenset({"doc_id", "doc", "resps", "filtered_resps", "arguments", "target"})), __name__)
