"""lighteval per-sample details (`details_<task>_<date>.parquet`) → a responses package holding its items, and the
verdicts lighteval recorded.

lighteval (huggingface/lighteval `logging/evaluation_tracker.py`, `save_details`) writes one Parquet table per
task with `datasets` (`Dataset.from_list([asdict(detail) ...])`, columns sorted, `id` dropped) under
`{output_dir}/details/{model}/{date}/`, and the aggregate figures to `{output_dir}/results/{model}/results_{date}.json`.
The `Detail` record (`logging/info_loggers.py`) has had three layouts, all read here:

- `text` (v0.3-v0.7): the flat fields below, every value stored as `str(value)` (Python literals, read with a
  bounded literal reader, never `eval`);
- `flat` (v0.8-v0.10): `example` (the query), `full_prompt`, `predictions`, `gold`, `choices`, `gold_index`,
  `metrics`, `specifics`, ... stored as their own types;
- `nested` (v0.11 on): `doc` (query, choices, gold_index, id, ...), `model_response` (text, logprobs, ...) and
  `metric`.

Generative samples: each generation is a response (repeats numbered as samples), the first gold text the
reference (all of them in `extra.golds`). Log-likelihood samples (one log-probability per choice): the choice
with the highest log-probability, as lighteval's `LoglikelihoodAcc` picks it (`np.argmax`: the first of equal
scores), optionally per character of the choice (`acc_norm`, `LogProbCharNorm`), becomes the response as its
letter; the items get the gold letter and the choices. A document with several gold choices has no one gold
letter: refused, or imported ungraded under `--on-bad-row record`.

The item id is the document's `id` when every row has a distinct one, else its row number (0-based: lighteval
logs the documents in the task's order); the provenance says which. With the results file (given, or found at
lighteval's own place beside the details), the import is checked against it: the examples hash lighteval
recorded (`summary_tasks.<task>.hashes.hash_examples`, xxh64 over the sorted xxh64 of every query) recomputed from
the rows, and each mean metric recomputed from the per-sample values.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audit.errors import AuditError
from audit.fileio import parse_object, read_document, sha256_bytes
from audit.importers import Output, data_file, import_provenance
from audit.importers.formats import Format, Importer, recorded_hint, register_importer
from audit.importers.lm_eval import hf_records
from audit.importers.sources import SourceFile, source_file
from audit.models import LETTERS, Provenance
from audit.pack import SourceRow, Table

ENGINE = "huggingface/lighteval"
SUFFIXES = (".parquet",)
REFERENCE_FROM = ("gold", "boxed")
"""A generative item's reference: the gold text as logged (`gold`), or what the registered extractor boxed@1
reads from it (`boxed`: the last \\boxed{...}), for tasks whose gold is a whole solution (lighteval's math_500
logs `ANSWER: <solution>`; its own metric extracts the boxed answer from it)."""
CHOICE_RULES = ("acc", "acc_norm")
"""How a log-likelihood sample's choice is picked: the highest log-probability (`acc`, lighteval's
`loglikelihood_acc`), or the highest per character of the choice (`acc_norm`, `LogProbCharNorm`)."""
DETAILS_NAME = re.compile(r"details_(.+)_(\d{4}-\d\d-\d\dT[0-9.-]+)\.parquet", re.ASCII)
MAX_LITERAL_CHARS = 16 << 20
"""The longest `str(value)` cell of the text layout read as a Python literal (a generation is far shorter)."""
_FLAT = ("example", "predictions", "metrics")
_NESTED = ("doc", "model_response", "metric")


class DetailError(ValueError):
    """A details row that cannot be imported: `field` and what is wrong."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def literal(text: str, where: str) -> Any:
    """A cell of the text layout: `str()` of lists, tuples, dicts, strings, numbers, bools and None, with the
    bare `inf`/`nan` that `str(float)` writes; anything else (a call, a name, an operator) is refused."""
    if len(text) > MAX_LITERAL_CHARS:
        raise DetailError(where, f"a cell of {len(text):,} characters (more than {MAX_LITERAL_CHARS:,})")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise DetailError(where, f"not a Python literal as lighteval writes it: {text[:60]!r}") from None
    return _value(tree.body, where)


_NAMES = {"inf": math.inf, "nan": math.nan, "True": True, "False": False, "None": None}


def _value(node: ast.AST, where: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
        return node.value
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _value(node.operand, where)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_value(e, where) for e in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            key = _value(k, where) if k is not None else []  # `**x` has no key
            if not isinstance(key, (str, int, float, bool, type(None))):
                raise DetailError(where, f"not a Python literal as lighteval writes it (a {type(key).__name__} "
                                         f"as a dict key)")
            if key in out:  # str(dict) never repeats a key: a repeated one is written by something else
                raise DetailError(where, f"the key {key!r} appears twice")
            out[key] = _value(v, where)
        return out
    raise DetailError(where, f"not a Python literal as lighteval writes it ({type(node).__name__})")


@dataclass(frozen=True)
class Detail:
    """One details row in the shape the three layouts share."""

    query: str | None
    doc_id: str | None
    choices: list[str]
    gold_index: list[int]
    golds: list[str]
    texts: list[str]
    logprobs: list[float]
    metrics: dict[str, Any]


def layout_of(columns: list[str] | set[str]) -> str | None:
    """`nested`, `flat` (the text layout is told apart by its values), or None."""
    cols = set(columns)
    if set(_NESTED) <= cols:
        return "nested"
    if set(_FLAT) <= cols:
        return "flat"
    return None


def _list(v: Any, where: str, kind: type) -> list[Any]:
    if v is None:
        return []
    if not isinstance(v, list) or any(not isinstance(x, kind) or isinstance(x, bool) for x in v):
        raise DetailError(where, f"expected a list of {kind.__name__}, got {v!r:.80}")
    return v


def _number(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v == math.inf:
        raise DetailError(where, f"expected a log-probability, got {v!r}")
    return float(v)


def _flat_predictions(preds: Any) -> tuple[list[str], list[float]]:
    """(generations, log-probabilities) of the flat layouts' `predictions`: strings for a generative sample,
    else one (logprob, is_greedy) pair or one logprob per choice."""
    if not isinstance(preds, list):
        raise DetailError("predictions", f"expected a list, got {type(preds).__name__}")
    if all(isinstance(p, str) for p in preds):
        return preds, []
    if len(preds) == 1 and isinstance(preds[0], list) and all(isinstance(p, str) for p in preds[0]):
        return preds[0], []
    lls = [_number(p[0] if isinstance(p, list) and p else p, "predictions") for p in preds]
    return [], lls


def read_detail(row: dict[str, Any], layout: str) -> Detail:
    """The shared shape of one row (DetailError naming the field when it is not one)."""
    if layout == "nested":
        doc, resp, metric = row.get("doc"), row.get("model_response"), row.get("metric")
        if not isinstance(doc, dict) or not isinstance(resp, dict):
            raise DetailError("doc", "expected the doc and model_response records")
        gold = doc.get("gold_index")
        doc_id = doc.get("id")
        choices = _list(doc.get("choices"), "doc.choices", str)
        gold_index = _list(gold if isinstance(gold, list) or gold is None else [gold], "doc.gold_index", int)
        # Doc.get_golds(): a generative task's gold texts are its choices at gold_index
        golds = [choices[i] for i in gold_index if 0 <= i < len(choices)]
        return Detail(query=doc.get("query") if isinstance(doc.get("query"), str) else None,
                      doc_id=doc_id if isinstance(doc_id, str) and doc_id else None,
                      choices=choices, gold_index=gold_index,
                      golds=golds, texts=_list(resp.get("text"), "model_response.text", str),
                      logprobs=[_number(x, "model_response.logprobs") for x in resp.get("logprobs") or []],
                      metrics=metric if isinstance(metric, dict) else {})
    values = dict(row)
    if layout == "text":
        for k in ("predictions", "gold", "choices", "gold_index", "metrics"):
            if isinstance(values.get(k), str):
                values[k] = literal(values[k], k)
    texts, lls = _flat_predictions(values.get("predictions"))
    metrics = values.get("metrics")
    return Detail(query=values.get("example") if isinstance(values.get("example"), str) else None, doc_id=None,
                  choices=_list(values.get("choices"), "choices", str),
                  gold_index=_list(values.get("gold_index"), "gold_index", int),
                  golds=_list(values.get("gold"), "gold", str), texts=texts, logprobs=lls,
                  metrics=metrics if isinstance(metrics, dict) else {})


def chosen_choice(d: Detail, choice_by: str) -> int:
    """The choice lighteval's LoglikelihoodAcc picks: argmax (first of equals) of the first len(choices)
    log-probabilities (a PMI task logs the unconditioned ones after them), per character for acc_norm."""
    n = len(d.choices)
    if n < 2 or len(d.logprobs) not in (n, 2 * n):
        raise DetailError("predictions", f"{len(d.logprobs)} log-probabilities for {n} choices")
    if n > len(LETTERS):
        raise DetailError("choices", f"{n} choices: more than the {len(LETTERS)} letters A-Z")
    scores = d.logprobs[:n]
    if choice_by == "acc_norm":
        if any(not c for c in d.choices):
            raise DetailError("choices", "an empty choice: acc_norm divides by its length")
        scores = [s / len(c) for s, c in zip(scores, d.choices, strict=True)]
    return max(range(n), key=scores.__getitem__)


@dataclass(frozen=True)
class _Reading:
    """What read() decided for one row, once: its item id, its reference, why it is ungraded (or None), and
    the choice lighteval's accuracy picked (log-likelihood rows)."""

    item_id: str
    reference: str | None
    bad: str | None
    chosen: int | None


@dataclass
class LightevalImport:
    """One details file read; remembers what the provenance and the cross-check need."""

    src: SourceFile
    choice_by: str = "acc"
    on_bad_row: str = "refuse"
    reference_from: str = "gold"
    task: str | None = None
    layout: str | None = None
    id_by: str = "row"
    rows: list[tuple[int, Detail]] = field(default_factory=list)
    readings: list[_Reading] = field(default_factory=list)
    bad_rows: list[dict[str, Any]] = field(default_factory=list)
    results_file: SourceFile | None = None
    """The results file `cross_check` read, pinned by the sha256 of the bytes it checked."""

    @property
    def label(self) -> str:
        return str(self.src.path)

    def read(self) -> LightevalImport:
        """Read every row once (a details table is one task's documents: small beside its model's run)."""
        m = DETAILS_NAME.fullmatch(self.src.name)
        self.task = m.group(1) if m else None
        for rec in hf_records(self.src):
            if rec.obj is None:
                raise AuditError(rec.error or "unreadable row", path=self.label, row=rec.row or None)
            if self.layout is None:
                self.layout = layout_of(list(rec.obj))
                if self.layout is None:
                    raise AuditError(f"not a lighteval details table: columns {', '.join(sorted(rec.obj))} "
                                     f"(expected {', '.join(_NESTED)} or {', '.join(_FLAT)})", path=self.label)
                if self.layout == "flat" and isinstance(rec.obj.get("predictions"), str):
                    self.layout = "text"
            try:
                self.rows.append((rec.row, read_detail(rec.obj, self.layout)))
            except DetailError as e:
                raise AuditError(str(e), path=self.label, row=rec.row, field=e.field) from None
        if not self.rows:
            raise AuditError("the details table holds no rows", path=self.label)
        ids = [d.doc_id for _, d in self.rows]
        if all(ids) and len(set(ids)) == len(ids):
            self.id_by = "doc.id"
        # Decided once per row, here: a bad row is refused before anything is written, or recorded as bad input.
        self.readings = [self._reading(index, row, d) for index, (row, d) in enumerate(self.rows)]
        return self

    def _reading(self, index: int, row: int, d: Detail) -> _Reading:
        item_id = d.doc_id if self.id_by == "doc.id" and d.doc_id else str(index)
        if d.logprobs:
            try:
                chosen = chosen_choice(d, self.choice_by)
            except DetailError as e:
                raise AuditError(str(e), path=self.label, row=row, field=e.field) from None
            if len(d.gold_index) == 1 and 0 <= d.gold_index[0] < len(d.choices):
                return _Reading(item_id, LETTERS[d.gold_index[0]], None, chosen)
            why = (f"{len(d.gold_index)} gold choices {d.gold_index}: no one gold letter" if len(d.gold_index) != 1
                   else f"gold_index {d.gold_index[0]} is not one of the {len(d.choices)} choices")
            return _Reading(item_id, str(d.gold_index), self._bad(row, item_id, why, "gold_index"), chosen)
        if not d.golds or self.reference_from == "gold":
            return _Reading(item_id, d.golds[0] if d.golds else None, None, None)
        from audit import extractors

        got = extractors.get("boxed@1").extract(d.golds[0])
        if got.answer is not None:
            return _Reading(item_id, got.answer, None, None)
        why = f"no \\boxed{{...}} answer in the gold text ({got.rule})"
        return _Reading(item_id, d.golds[0], self._bad(row, item_id, why, "gold"), None)

    def _bad(self, row: int, item_id: str, why: str, field: str) -> str:
        """`why` a row is ungraded, recorded under `--on-bad-row record`; refused (AuditError) otherwise."""
        if self.on_bad_row != "record":
            raise AuditError(why + " (--on-bad-row record imports it ungraded)", path=self.label, row=row,
                             field=field)
        self.bad_rows.append({"item_id": item_id, "file": self.src.name, "row": row, "reason": why})
        return why

    def response_rows(self) -> Iterator[SourceRow]:
        for index, ((row, d), r) in enumerate(zip(self.rows, self.readings, strict=True)):
            item_id = r.item_id
            extra: dict[str, Any] = {"row": index}
            if d.metrics:
                extra["metrics"] = d.metrics
            if r.chosen is not None:
                yield SourceRow(self.label, row, {"item_id": item_id, "sample": 0, "response": LETTERS[r.chosen],
                                                  "extra": {**extra, "choice_by": self.choice_by, "chosen": r.chosen,
                                                            "logprobs": d.logprobs}})
                continue
            if not d.texts:
                yield SourceRow(self.label, row, None, "neither generations nor log-probabilities", "predictions")
            for sample, text in enumerate(d.texts):
                yield SourceRow(self.label, row, {"item_id": item_id, "sample": sample, "response": text,
                                                  "extra": extra})

    def item_rows(self) -> Iterator[SourceRow]:
        for index, ((row, d), r) in enumerate(zip(self.rows, self.readings, strict=True)):
            if r.reference is None:
                yield SourceRow(self.label, row, None, "no gold answer logged", "gold")
                continue
            item: dict[str, Any] = {"item_id": r.item_id, "reference": r.reference}
            if d.query is not None:
                item["question"] = d.query
            if r.chosen is not None:
                item["choices"] = d.choices
                item["extra"] = {"row": index, "gold_index": d.gold_index}
            else:
                item["extra"] = {"row": index, **({"golds": d.golds} if len(d.golds) > 1 or r.reference != d.golds[0]
                                                  else {})}
            if r.bad is not None:  # graded as ungraded (bad_input): the reference is never compared
                item["extra"]["bad_input"] = f"{r.bad} ({self.src.name} row {row})"
            yield SourceRow(self.label, row, item)

    def recorded_rows(self, metric: str | None) -> tuple[list[dict[str, Any]], str]:
        """lighteval's own verdicts: per sample, its `metric` (default: the only 0/1 metric logged) as correct (1)
        or incorrect (0)."""
        from audit.importers.verdicts import recorded_row

        used = metric or self._verdict_metric()
        out = []
        for (row, d), r in zip(self.rows, self.readings, strict=True):
            value = d.metrics.get(used)
            if isinstance(value, bool) or value not in (0, 1):
                raise AuditError(f"metric {used} is {value!r}, not 0 or 1: not a verdict", path=self.label, row=row,
                                 field=f"metrics.{used}")
            if r.chosen is None and len(d.texts) != 1:
                raise AuditError(f"{len(d.texts)} generations scored as one document: lighteval recorded a "
                                 f"verdict per document, not per response", path=self.label, row=row,
                                 field="predictions")
            answer = LETTERS[r.chosen] if r.chosen is not None else None
            if r.bad is not None and r.chosen is not None:  # no one gold letter: the row is kept ungraded
                out.append(recorded_row(r.item_id, 0, answer=answer, verdict="ungraded", status="bad_input",
                                        reference=r.reference, reason=f"{r.bad} ({self.src.name} row {row})"))
                continue
            verdict = "correct" if value == 1 else "incorrect"
            out.append(recorded_row(r.item_id, 0, answer=answer, verdict=verdict, status=verdict,
                                    reference=r.reference, reason=f"recorded by lighteval: {used} = {value:g}"))
        return out, used

    def _verdict_metric(self) -> str:
        names = sorted({k for _, d in self.rows for k, v in d.metrics.items()
                        if not isinstance(v, bool) and v in (0, 1)})
        if len(names) != 1:
            raise AuditError(f"{len(names)} metrics with 0/1 values ({', '.join(names) or 'none'}): give --metric",
                             path=self.label)
        return names[0]

    def cross_check(self, results: Path | None) -> list[dict[str, Any]]:
        """The results file's figures for this task against the rows: the examples hash and each mean metric."""
        if results is None:
            return [{"what": "results", "logged": None, "recomputed": None, "ok": None,
                     "why": "no results file given or found beside the details"}]
        obj, self.results_file = results_document(results)
        task = self.task
        figures = (obj.get("results") or {}).get(task) if task else None
        if task is None or not isinstance(figures, dict):
            return [{"what": "results", "logged": None, "recomputed": None, "ok": None,
                     "why": f"the results file has no task {task!r}"}]
        checks = [self._hash_check(obj, task)]
        for name, logged in sorted(figures.items()):
            if name.endswith("_stderr") or isinstance(logged, bool) or not isinstance(logged, (int, float)):
                continue
            values = [v for _, d in self.rows if isinstance(v := d.metrics.get(name), (int, float))
                      and not isinstance(v, bool)]
            if len(values) != len(self.rows):
                continue  # a corpus-level metric (bleu, f1 over the corpus): no per-sample mean to compare
            mean = math.fsum(values) / len(values)
            checks.append({"what": name, "logged": float(logged), "recomputed": mean, "n": len(values),
                           "source": results.name, "ok": abs(mean - float(logged)) <= 1e-9})
        return checks

    def _hash_check(self, obj: dict[str, Any], task: str) -> dict[str, Any]:
        summary = (obj.get("summary_tasks") or {}).get(task)
        logged = ((summary or {}).get("hashes") or {}).get("hash_examples") if isinstance(summary, dict) else None
        if not isinstance(logged, str) or any(d.query is None for _, d in self.rows):
            return {"what": "examples hash", "logged": None, "recomputed": None, "ok": None,
                    "why": "no hash_examples for the task, or a row without its query"}
        import xxhash  # installed with datasets, which reads the details

        # lighteval hashes the str (xxhash of its day encoded it as UTF-8; today's wants the bytes)
        got = xxhash.xxh64("".join(sorted(xxhash.xxh64(d.query.encode()).hexdigest() for _, d in self.rows
                                          if d.query is not None)).encode()).hexdigest()
        return {"what": "examples hash", "logged": logged, "recomputed": got, "n": len(self.rows), "ok": got == logged}

    def provenance(self, base: Provenance | None, model: str | None, checks: list[dict[str, Any]]) -> Provenance:
        config: dict[str, Any] = {"importer": "lighteval", "task": self.task, "layout": self.layout,
                                  "item_id": self.id_by, "documents": len(self.rows), "cross_check": checks}
        if any(d.logprobs for _, d in self.rows):
            config["choice_by"] = self.choice_by
        if self.reference_from != "gold":
            from audit import extractors

            ex = extractors.get("boxed@1")
            config["reference_from"] = {"extractor": ex.key, "fingerprint": ex.fingerprint}
        if self.on_bad_row != "refuse":
            config["on_bad_row"] = self.on_bad_row
        if self.bad_rows:
            config["bad_input"] = [dict(b) for b in self.bad_rows]
        files = [self.src] if self.results_file is None else [self.src, self.results_file]
        return import_provenance(base, files=files, importer=config, engine=ENGINE, model=model)


def results_document(path: Path) -> tuple[dict[str, Any], SourceFile]:
    """A results file read once: its JSON object, and the file pinned by the sha256 of those same bytes."""
    data, err = read_document(path, what="a lighteval results file")
    obj, err = parse_object(data or b"") if not err else (None, err)
    if err or not isinstance(obj, dict) or data is None:
        raise AuditError(err or "not a JSON object", path=str(path))
    return obj, SourceFile(path, sha256_bytes(data), len(data))


def find_results(details: Path) -> Path | None:
    """lighteval's own place for the results of a details file: details/<model>/<date>/details_<task>_<date>.parquet
    → results/<model>/results_<date>.json, when it exists."""
    m = DETAILS_NAME.fullmatch(details.name)
    if not m or details.parent.name != m.group(2):
        return None
    model_dir = details.parent.parent
    parts = []
    p = model_dir
    while p.name and p.name != "details":
        parts.append(p.name)
        p = p.parent
    if p.name != "details":
        return None
    found = p.parent.joinpath("results", *reversed(parts), f"results_{m.group(2)}.json")
    return found if found.is_file() else None


def lighteval_import(src: str | Path, *, choice_by: str = "acc", on_bad_row: str = "refuse",
                     reference_from: str = "gold", fmt: str | None = None) -> LightevalImport:
    """A details file (Parquet, `fmt` when its name does not say), read."""
    if reference_from not in REFERENCE_FROM:
        raise AuditError(f"reference_from must be one of {', '.join(REFERENCE_FROM)}, got {reference_from!r}")
    if choice_by not in CHOICE_RULES:
        raise AuditError(f"choice_by must be one of {', '.join(CHOICE_RULES)}, got {choice_by!r}")
    if on_bad_row not in ("refuse", "record"):
        raise AuditError(f"on_bad_row must be refuse or record, got {on_bad_row!r}")
    return LightevalImport(source_file(src, SUFFIXES, fmt), choice_by, on_bad_row, reference_from).read()


def lighteval_outputs(imp: LightevalImport, out: Path, *, benchmark: str | None, checks: list[dict[str, Any]],
                      gzip: bool = False, model: str | None = None,
                      provenance: Provenance | None = None, package_id: str | None = None) -> list[Output]:
    """The responses package of a details file, its items inside."""
    rel, schema = data_file("responses", gzip)
    irel, ischema = data_file("items", gzip)
    return [Output(out, "responses", [Table(rel, schema, imp.response_rows()), Table(irel, ischema, imp.item_rows())],
                   lambda: imp.provenance(provenance, model, checks), benchmark=benchmark,
                   package_id=package_id)]


register_importer(Importer(
    "lighteval", "audit.cli.imports.lighteval",
    (Format("lighteval-details", "lighteval per-sample details (doc, model_response, metric; or example, "
            "predictions, metrics)", "audit import lighteval FILE --benchmark NAME -o OUT [--recorded RECORDED.json]",
            "lighteval", order=20, record=lambda keys: set(_NESTED) <= keys or set(_FLAT) <= keys,
            verdicts_hint=recorded_hint("audit import lighteval FILE --benchmark NAME -o PACKAGE --recorded "
                                        "OUT.json")),
     Format("lighteval-results", "a lighteval results file (aggregate scores only, no per-item rows)",
            "audit import lighteval details_<task>_<date>.parquet --benchmark NAME -o OUT",
            after=" on the details file --save-details writes under details/<model>/<date>/", order=40,
            document=lambda obj: isinstance(obj.get("results"), dict) and isinstance(obj.get("config_general"),
                                                                                     dict)))), __name__)
