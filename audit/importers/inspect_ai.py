"""inspect_ai evaluation logs (`.eval` and `.json`) → a responses package holding its items, and the verdicts
the run's scorer recorded.

Read with inspect_ai's own reader (`inspect_ai.log.read_eval_log`, the `inspect` extra): the `.eval` format is
a zip of per-sample JSON whose layout changes between versions, so its reader is the robust choice. Per
sample (`EvalSample`): `id` → item_id, `epoch` → sample (epoch 1 is sample 0), `output.completion` →
response, `output.stop_reason` → finish_reason (`max_tokens` and `model_length` are `length`: cut at the
output ceiling), `output.usage` → token counts, `error` → error. Items: `target` → reference (a list of
accepted targets keeps the first, all of them in `extra.targets`), `choices` → options, a text `input` →
question. The log's model, task, dataset and generation config (`plan.config`, as sent) go to the
provenance. The recorded verdict of a sample is its `scores[<scorer>].value`: `C` correct, `I` incorrect,
`N` (no answer) incorrect, `P` (partial credit) ungraded, 1/0 and true/false as such; anything else is
refused. The scorer's logged `accuracy` is recomputed from those values (inspect's value_to_float: C 1,
P 0.5, I and N 0) and compared, as the lm-eval importer checks its results file.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audit.errors import AuditError
from audit.fileio import READ_ERRORS, copy_regular, gzip_limit, zip_expansion_problem
from audit.importers import Output, data_file, import_provenance
from audit.importers.formats import Format, Importer, register_importer
from audit.importers.sources import CHANGED, SourceFile, format_name, source_file, zip_problem
from audit.models import DatasetRef, Provenance
from audit.pack import SourceRow, Table

ENGINE = "UKGovernmentBEIS/inspect_ai"
SUFFIXES = (".eval", ".json")
FINISH = {"stop": "stop", "max_tokens": "length", "model_length": "length", "content_filter": "content_filter",
          "tool_calls": "tool_calls"}
"""inspect's stop_reason as audit's finish_reason (`unknown` stays unset)."""
_LETTER_VALUES = {"C": ("correct", 1.0), "I": ("incorrect", 0.0), "N": ("incorrect", 0.0), "P": ("ungraded", 0.5)}


MODEL_GRADED = frozenset({"model_graded_qa", "model_graded_fact"})
"""inspect_ai's scorers whose verdict is a grader model's reply (`inspect_ai/scorer/_model.py`)."""
RULE_SCORERS = frozenset({"match", "includes", "pattern", "answer", "choice", "exact", "f1"})
"""inspect_ai's scorers that compare texts by a fixed rule, calling no model."""


def scorer_kind(function: str | None, graded_by_model: bool) -> str:
    """`model-graded`, `rule` or `unknown`: what kind of grader an inspect scorer is, by its registered function
    (`results.scores[].scorer`, `inspect_ai/` prefix or not) or by its scores holding the grader's conversation
    (`metadata.grading`, as model_graded_qa writes it, for a scorer of another name)."""
    name = (function or "").removeprefix("inspect_ai/")
    if name in MODEL_GRADED or graded_by_model:
        return "model-graded"
    return "rule" if name in RULE_SCORERS else "unknown"


MAX_JSON_LOG_BYTES = 256 * 1024 * 1024
"""Largest inspect_ai `.json` log read: inspect_ai parses it whole (a 400 MB log took 971 MB); an `.eval` log
is bounded by what its members really expand to instead."""


def read_log(path: str | Path, fmt: str | None = None) -> tuple[SourceFile, Any]:
    """The log file pinned by sha256 and read by inspect_ai; one line when inspect_ai is missing or the file is
    not a log. `fmt` (eval or json): the log's format when its name does not tell it.

    inspect_ai reads a private copy of the file, made in one pass whose digest must be the pin: a log replaced
    after it was hashed is refused (CHANGED), never read under the old digest."""
    sf = source_file(path, SUFFIXES, fmt)
    zipped = format_name(sf).endswith(".eval")
    if not zipped and sf.bytes > MAX_JSON_LOG_BYTES:
        raise AuditError(f"a {sf.bytes:,}-byte JSON log, more than the {MAX_JSON_LOG_BYTES:,} read (inspect_ai "
                         "holds it whole, several times over); convert it with `inspect log convert --to eval`",
                         path=str(path))
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise AuditError("reading inspect_ai logs needs inspect_ai: pip install 'audit[inspect]'",
                         path=str(path)) from None
    with tempfile.TemporaryDirectory(prefix="audit-inspect-") as tmp:
        copy = Path(tmp) / ("log.eval" if zipped else "log.json")  # (inspect_ai tells the format by suffix)
        try:
            digest, size = copy_regular(sf.path, copy)
        except OSError as e:
            raise AuditError(f"unreadable: {e.strerror or e}", path=str(path)) from None
        if (digest, size) != (sf.sha256, sf.bytes):
            raise AuditError(CHANGED, path=str(path))
        if zipped:
            _check_zip(sf, copy)
        try:
            log = read_eval_log(str(copy))
        except Exception as e:  # inspect raises many types for a damaged or foreign file
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
            raise AuditError(f"not a readable inspect_ai log: {first}".replace(str(copy), sf.name),
                             path=str(path)) from None
    if not log.samples:
        raise AuditError("the log holds no samples (written with --no-log-samples, or the run failed before any)",
                         path=str(path))
    return sf, log


def _check_zip(sf: SourceFile, copy: Path) -> None:
    """Refuse an .eval zip (its private `copy`) at the bounds of any zip input (see zip_problem) before inspect_ai
    reads it: its reader loads every sample, and would expand a bomb member without end."""
    import zipfile

    try:
        with zipfile.ZipFile(copy) as zf:
            refused = zip_problem(zf, sf.bytes, methods=False)  # (inspect_ai writes zstd members)
            if refused is None:  # what the members really produce, counted: their sizes are only declared
                with open(copy, "rb") as fh:
                    refused = zip_expansion_problem(fh, zf.infolist(), gzip_limit(sf.bytes))
    except (zipfile.BadZipFile, OSError):
        return  # left to inspect_ai, which names what is damaged
    if refused:
        raise AuditError(refused, path=str(sf.path))


def no_scores(log_path: str) -> str:
    """Why a log without scores has no recorded verdicts, and the two ways on: grade the package, or score the log
    with inspect first (the task named no scorer, so `inspect score` needs one)."""
    return ("the log holds no scores (its task ran without a scorer, or with --no-score), so there are no recorded "
            "verdicts to write: import it without --recorded and grade the package (`audit grade OUT --benchmark "
            f"NAME`), or score it first (`inspect score {log_path} --scorer NAME --output-file SCORED.json`) and "
            "import SCORED.json with --recorded")


def _text(v: Any) -> str | None:
    return v if isinstance(v, str) else None


@dataclass
class InspectImport:
    """One log read: its samples as rows, and what the provenance records."""

    src: SourceFile
    log: Any
    scorer: str | None = None
    checks: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        names = self.scorer_names()
        if self.scorer is None:
            self.scorer = names[0] if len(names) == 1 else None
        elif not names:
            raise AuditError(f"--scorer {self.scorer}: {no_scores(self.label)}", path=self.label)
        elif self.scorer not in names:
            raise AuditError(f"--scorer {self.scorer}: the log's scorers are {', '.join(names) or 'none'}",
                             path=str(self.src.path))

    @property
    def label(self) -> str:
        return str(self.src.path)

    def scorer_names(self) -> list[str]:
        """The scorers whose scores the samples hold, by name."""
        return sorted({k for s in self.log.samples for k in (s.scores or {})})

    def scorer_function(self) -> str | None:
        """The registered function of the chosen scorer, as the log's results name it (None: not named)."""
        results = self.log.results
        return next((sc.scorer for sc in (results.scores if results is not None else []) or []
                     if sc.name == self.scorer and isinstance(sc.scorer, str)), None)

    def scorer_kind(self) -> str | None:
        """What grader the chosen scorer is (see `scorer_kind`); None without one."""
        if self.scorer is None:
            return None
        return scorer_kind(self.scorer_function(), self._graded_by_model())

    def _graded_by_model(self) -> bool:
        """Whether a score of the chosen scorer holds a grader model's conversation (`metadata.grading`)."""
        for s in self.log.samples:
            score = (s.scores or {}).get(self.scorer) if self.scorer is not None else None
            meta = score.metadata if score is not None else None
            if isinstance(meta, dict) and "grading" in meta:
                return True
        return False

    def recorded_by(self) -> dict[str, str]:
        """What a verdict file of the scorer's values records of it (its `environment`): the scorer, its function and
        its kind, so that `audit diff` can say a model-graded scorer's verdicts are not a rule's."""
        out = {"recorded_scorer": str(self.scorer), "recorded_scorer_kind": self.scorer_kind() or "unknown"}
        function = self.scorer_function()
        if function is not None:
            out["recorded_scorer_function"] = function
        return out

    def _id(self, s: Any, row: int) -> str:
        if isinstance(s.id, bool) or not isinstance(s.id, (int, str)) or s.id == "":
            raise AuditError(f"expected a sample id, got {s.id!r}", path=self.label, row=row, field="id")
        return str(s.id)

    def response_rows(self) -> Iterator[SourceRow]:
        max_tokens = self.sampling().get("max_tokens")
        for row, s in enumerate(self.log.samples, 1):
            out = s.output
            has = out is not None and bool(out.choices)
            r: dict[str, Any] = {"item_id": self._id(s, row), "sample": int(s.epoch) - 1,
                                 "response": out.completion if has else None}
            stop = FINISH.get(out.stop_reason) if has else None
            if stop is not None:
                r["finish_reason"] = stop
            usage = out.usage if out is not None else None
            if usage is not None:
                r["prompt_tokens"], r["completion_tokens"] = usage.input_tokens, usage.output_tokens
            if isinstance(max_tokens, int):
                r["max_tokens"] = max_tokens
            if s.error is not None:
                r["error"] = (str(s.error.message).splitlines() or ["error"])[0][:500]
            elif not has:
                r["error"] = "the sample has no model output"
            r["extra"] = {"epoch": s.epoch, "scores": {k: {"value": v.value, "answer": v.answer}
                                                       for k, v in sorted((s.scores or {}).items())}}
            yield SourceRow(self.label, row, r)

    def item_rows(self) -> Iterator[SourceRow]:
        seen: dict[str, tuple[Any, Any]] = {}
        for row, s in enumerate(self.log.samples, 1):
            item_id = self._id(s, row)
            key = (s.target, s.choices)
            if item_id in seen:
                if seen[item_id] != key:
                    yield SourceRow(self.label, row, None, f"sample {item_id!r} has another target or choices in "
                                                           f"another epoch", "target")
                continue
            seen[item_id] = key
            targets = s.target if isinstance(s.target, list) else [s.target]
            if not targets or not all(isinstance(t, str) for t in targets):
                yield SourceRow(self.label, row, None, f"expected a target text, got {s.target!r}", "target")
                continue
            item: dict[str, Any] = {"item_id": item_id, "reference": targets[0]}
            if s.choices:
                item["choices"] = list(s.choices)
            if _text(s.input) is not None:
                item["question"] = s.input
            extra: dict[str, Any] = {}
            if len(targets) > 1:
                extra["targets"] = targets
            if s.metadata:
                extra["metadata"] = s.metadata
            if extra:
                item["extra"] = extra
            yield SourceRow(self.label, row, item)

    def recorded_rows(self) -> list[dict[str, Any]]:
        """The scorer's verdict of each sample (VERDICT_ROW_FIELDS dicts)."""
        from audit.importers.verdicts import recorded_row

        if self.scorer is None:
            names = self.scorer_names()
            if not names:
                raise AuditError(no_scores(self.label), path=self.label)
            raise AuditError(f"the log has {len(names)} scorers ({', '.join(names) or 'none'}): give --scorer",
                             path=self.label)
        rows = []
        for row, s in enumerate(self.log.samples, 1):
            score = (s.scores or {}).get(self.scorer)
            where = f"scores.{self.scorer}"
            if score is None:
                raise AuditError("the sample was not scored", path=self.label, row=row, field=where)
            verdict, status, _ = _verdict(score.value, self.label, row, where)
            target = s.target if isinstance(s.target, str) else (s.target[0] if s.target else None)
            rows.append(recorded_row(self._id(s, row), int(s.epoch) - 1, answer=_text(score.answer),
                                     verdict=verdict, status=status, reference=target,
                                     reason=f"recorded by inspect_ai: {self.scorer} = {score.value!r}"))
        return rows

    def cross_check(self) -> list[dict[str, Any]]:
        """The log's own figures against its samples: sample count, and the scorer's accuracy recomputed."""
        checks: list[dict[str, Any]] = []
        results = self.log.results
        n = len(self.log.samples)
        total = getattr(results, "total_samples", None) if results is not None else None
        checks.append({"what": "samples", "logged": total, "recomputed": n,
                       "ok": None if total is None else total == n})
        logged = None
        for sc in (results.scores if results is not None else []) or []:
            if sc.name == self.scorer and "accuracy" in sc.metrics:
                logged = sc.metrics["accuracy"].value
        if self.scorer is not None and isinstance(logged, (int, float)):
            values = [_verdict((s.scores or {})[self.scorer].value, self.label, i, "scores")[2]
                      for i, s in enumerate(self.log.samples, 1) if self.scorer in (s.scores or {})]
            mean = math.fsum(values) / len(values) if values else float("nan")
            checks.append({"what": f"{self.scorer} accuracy", "logged": float(logged), "recomputed": mean,
                           "n": len(values), "source": "the log", "ok": abs(mean - float(logged)) <= 1e-9})
        self.checks = checks
        return checks

    def sampling(self) -> dict[str, Any]:
        """The generation config as the run sent it (the plan's, over the model's defaults), unset keys left out."""
        out: dict[str, Any] = {}
        for cfg in (getattr(self.log.eval, "model_generate_config", None), getattr(self.log.plan, "config", None)):
            if cfg is not None:
                out.update(cfg.model_dump(exclude_none=True, mode="json"))
        return out

    def provenance(self, base: Provenance | None, model: str | None) -> Provenance:
        ev = self.log.eval
        config: dict[str, Any] = {"importer": "inspect", "task": ev.task, "scorer": self.scorer,
                                  "scorer_function": self.scorer_function(), "scorer_kind": self.scorer_kind(),
                                  "status": self.log.status, "samples": len(self.log.samples),
                                  "inspect_version": (getattr(ev, "packages", None) or {}).get("inspect_ai"),
                                  "cross_check": self.checks}
        ds = ev.dataset
        dataset = DatasetRef(name=ds.name) if ds is not None and isinstance(ds.name, str) and ds.name else None
        return import_provenance(base, files=[self.src], importer=config, engine=ENGINE,
                                 model=model or ev.model, dataset=dataset, sampling=self.sampling() or None)


def _verdict(value: Any, label: str, row: int, where: str) -> tuple[str, str, float]:
    """(verdict, status, value as a float) of a score value."""
    if isinstance(value, str) and value in _LETTER_VALUES:
        verdict, number = _LETTER_VALUES[value]
        status = {"C": "correct", "I": "incorrect", "N": "no_answer", "P": "excluded"}[value]
        return verdict, status, number
    if isinstance(value, bool):
        return ("correct", "correct", 1.0) if value else ("incorrect", "incorrect", 0.0)
    if isinstance(value, (int, float)) and value in (0, 1):
        return ("correct", "correct", 1.0) if value == 1 else ("incorrect", "incorrect", 0.0)
    raise AuditError(f"score value {value!r} is not a verdict (C, I, N, P, 0 or 1)", path=label, row=row, field=where)


def inspect_outputs(imp: InspectImport, out: Path, *, benchmark: str | None, gzip: bool = False,
                    model: str | None = None, provenance: Provenance | None = None,
                    package_id: str | None = None) -> list[Output]:
    """The responses package of a log (its items inside)."""
    from audit.specs import spec_named

    rel, schema = data_file("responses", gzip)
    irel, ischema = data_file("items", gzip)
    return [Output(out, "responses", [Table(rel, schema, imp.response_rows()), Table(irel, ischema, imp.item_rows())],
                   lambda: imp.provenance(provenance, model), benchmark=benchmark or spec_named(imp.log.eval.task),
                   package_id=package_id)]


def _is_eval_zip(path: Path) -> bool:
    """inspect_ai's .eval: a zip with header.json (or _journal/start.json, while it is written)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
    except (zipfile.BadZipFile, *READ_ERRORS):
        return False
    return bool(names & {"header.json", "_journal/start.json"})


_MAX_HEADER_BYTES = 16 << 20


def _is_log(obj: dict[str, Any]) -> bool:
    return isinstance(obj.get("eval"), dict) and "status" in obj and "version" in obj


def _unscored(obj: dict[str, Any]) -> bool:
    """A log (its top level, or an .eval's header.json) whose results hold no scores: a run without a scorer."""
    results = obj.get("results")
    return obj.get("status") == "success" and (not isinstance(results, dict) or not results.get("scores"))


def _is_unscored_eval(path: Path) -> bool:
    """An .eval zip whose header.json says the run logged no scores (the header read only when it says it is small)."""
    import json
    import zipfile

    try:
        with zipfile.ZipFile(path) as zf:
            info = zf.getinfo("header.json")
            if info.file_size > _MAX_HEADER_BYTES:
                return False
            obj = json.loads(zf.read(info))
    except (KeyError, ValueError, RecursionError, NotImplementedError, zipfile.BadZipFile, *READ_ERRORS):
        return False
    return isinstance(obj, dict) and _unscored(obj)


register_importer(Importer(
    "inspect", "audit.cli.imports.inspect_ai",
    (Format("inspect-log-unscored", "an inspect_ai evaluation log without scores (samples, model)",
            "audit import inspect FILE -o OUT", "inspect", order=29,
            document=lambda obj: _is_log(obj) and _unscored(obj), suffixes=(".eval",), file_test=_is_unscored_eval,
            tabular=False, verdicts_hint="; it holds no scores, so no recorded verdicts: `audit import inspect FILE -o "
                                         "OUT` and grade the package, or `inspect score FILE --scorer NAME "
                                         "--output-file SCORED.json` first"),
     Format("inspect-log", "an inspect_ai evaluation log (samples, scores, model)",
            "audit import inspect FILE -o OUT [--recorded RECORDED.json]", "inspect", order=30,
            document=_is_log, suffixes=(".eval",), file_test=_is_eval_zip, tabular=False))), __name__)
