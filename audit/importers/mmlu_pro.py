"""TIGER-AI-Lab/MMLU-Pro result files → responses (and items) packages.

Shapes, as the upstream scripts write them (mirror of github.com/TIGER-AI-Lab/MMLU-Pro):
- `evaluate_from_api.py` / `run_gpt4o.py` (e.g. commit ff991b5b, eval_results/gpt4o/<category>_result.json):
  a JSON array per category of the dataset's records plus `pred` and the model text under
  `response` (May 2024) or `model_outputs` (later API scripts, e.g. eval_results/merged at 4885ba7d);
- `evaluate_from_local.py`: a JSON array per category with the vLLM text under `model_outputs`;
- eval_results/model_outputs_<run>.zip (since 964a136e): one JSON array for all categories,
  text under `generated_text` (vLLM runs) or `model_outputs` (API runs).
Each record: question_id, question, options (the "N/A" options already removed), answer (letter),
answer_index, cot_content, category, src, pred (the upstream regex extractor's letter or null).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from audit.errors import AuditError
from audit.importers import Output, data_file, import_provenance
from audit.importers.formats import Format, Importer, recorded_hint, register_importer
from audit.importers.mapping import RecordMap
from audit.importers.sources import TABLE_SUFFIXES, Record, SourceFile, iter_table_records, source_file
from audit.models import LETTERS, DatasetRef, Provenance
from audit.pack import SourceRow, Table

ENGINE = "TIGER-AI-Lab/MMLU-Pro"
DATASET = "TIGER-Lab/MMLU-Pro"
TEXT_FIELDS = ("model_outputs", "response", "generated_text")
"""Where upstream scripts put the model's text, in the order they are looked for."""
UPSTREAM_LETTERS = LETTERS[:16]
"""The letters upstream MMLU-Pro code knows (`choices = ["A", ..., "P"]`); an answer_index past them is refused."""


def _text_field(rec: dict[str, Any]) -> str | None:
    for name in TEXT_FIELDS:
        if name in rec:
            return name
    return None


def _question_id(rec: dict[str, Any], label: str, row: int) -> tuple[str | None, SourceRow | None]:
    qid = rec.get("question_id")
    if "question_id" not in rec:
        return None, SourceRow(label, row, None, "missing required field", "question_id")
    if isinstance(qid, bool) or not isinstance(qid, (int, str)) or (isinstance(qid, str) and not qid):
        return None, SourceRow(label, row, None, f"expected an integer question id (got {qid!r})", "question_id")
    return str(qid), None


FIELDS = ("question_id", "question", "options", "answer", "answer_index", "category", "src", "pred", *TEXT_FIELDS)
"""The record fields the importer reads (`--map` fills any of them from other columns)."""


def _records(files: list[SourceFile], rmap: RecordMap | None = None
             ) -> Iterator[tuple[Any, str | None, SourceRow | None]]:
    """Every upstream record (selected and mapped by `rmap`) with its item id, or the error row that replaces it."""
    for f in files:
        for rec in iter_table_records(f):
            if rec.obj is None:
                yield rec, None, SourceRow(rec.label, rec.row, None, rec.error or "unreadable record")
                continue
            obj = rec.obj
            if rmap:
                if not rmap.selected(obj, rec.label, rec.row):
                    continue
                obj = rmap.apply(obj, rec.label, rec.row)
                rec = Record(rec.label, rec.row, obj)
            item_id, bad = _question_id(obj, rec.label, rec.row)
            yield rec, item_id, bad


def _per_record(files: list[SourceFile], rmap: RecordMap | None,
                rows_of: Callable[[Any, str | None], Iterator[SourceRow]]) -> Iterator[SourceRow]:
    """The rows `rows_of` makes of each readable record (given with its item id), and the error row of each
    unreadable one."""
    for rec, item_id, bad in _records(files, rmap):
        if bad:
            yield bad
        else:
            yield from rows_of(rec, item_id)


def response_rows(files: list[SourceFile], counts: dict[str, int] | None = None,
                  rmap: RecordMap | None = None) -> Iterator[SourceRow]:
    """One response row per upstream record: item_id = question_id, sample 0."""
    counts = counts if counts is not None else {}

    def rows_of(rec: Any, item_id: str | None) -> Iterator[SourceRow]:
        obj = rec.obj
        name = _text_field(obj)
        if name is None:
            yield SourceRow(rec.label, rec.row, None,
                            f"no model text: none of {', '.join(TEXT_FIELDS)} is present", TEXT_FIELDS[0])
            return
        text = obj[name]
        row: dict[str, Any] = {"item_id": item_id, "sample": 0, "response": text}
        if text is None:
            row["error"] = f"upstream record has null {name}"
        extra: dict[str, Any] = {"response_field": name}
        if "pred" in obj:
            extra["pred"] = obj["pred"]
        row["extra"] = extra
        counts[name] = counts.get(name, 0) + 1
        yield SourceRow(rec.label, rec.row, row)

    return _per_record(files, rmap, rows_of)


def inconsistency(obj: dict[str, Any]) -> str | None:
    """Why a readable record cannot be graded as it stands (its gold `answer` and `answer_index` disagree),
    or None. Under `--on-bad-row record` such a record is imported ungraded with status `bad_input`."""
    answer, index = obj.get("answer"), obj.get("answer_index")
    if isinstance(index, int) and not isinstance(index, bool) and isinstance(answer, str):
        if not (0 <= index < len(UPSTREAM_LETTERS)) or UPSTREAM_LETTERS[index] != answer:
            return f"answer {answer!r} does not match answer_index {index}"
    return None


def item_rows(files: list[SourceFile], counts: dict[str, int] | None = None, *,
              on_bad_row: str = "refuse", bad_rows: list[dict[str, Any]] | None = None,
              rmap: RecordMap | None = None) -> Iterator[SourceRow]:
    """One item row per upstream record: gold letter, options, category and question as that run stored them.

    An inconsistent record is refused (`on_bad_row="refuse"`) or kept with `extra.bad_input` = the reason
    (`"record"`: graded as ungraded, status `bad_input`), each listed in `bad_rows`.
    """
    counts = counts if counts is not None else {}

    def rows_of(rec: Any, item_id: str | None) -> Iterator[SourceRow]:
        obj = rec.obj
        if "answer" not in obj:
            yield SourceRow(rec.label, rec.row, None, "missing required field", "answer")
            return
        answer = obj["answer"]
        why = inconsistency(obj)
        if why is not None and on_bad_row != "record":
            yield SourceRow(rec.label, rec.row, None, why + " (--on-bad-row record imports it ungraded)",
                            "answer_index")
            return
        row: dict[str, Any] = {"item_id": item_id, "reference": answer}
        if "options" in obj:
            row["choices"] = obj["options"]
        if "category" in obj:
            row["subject"] = obj["category"]
        if "question" in obj:
            row["question"] = obj["question"]
        extra = {k: obj[k] for k in ("answer_index", "src") if k in obj}
        if why is not None:
            extra["bad_input"] = f"{why} ({Path(rec.label).name} row {rec.row})"
            if bad_rows is not None:
                bad_rows.append({"item_id": item_id, "file": Path(rec.label).name, "row": rec.row, "reason": why})
        if extra:
            row["extra"] = extra
        counts["items"] = counts.get("items", 0) + 1
        yield SourceRow(rec.label, rec.row, row)

    return _per_record(files, rmap, rows_of)


def recorded_rows(files: list[SourceFile], on_bad_row: str = "refuse", rmap: RecordMap | None = None
                  ) -> tuple[list[dict[str, Any]], dict[str, str | None], int]:
    """The verdicts the upstream run recorded: its `pred` against the record's gold `answer`, one row per record.

    Returns the rows (VERDICT_ROW_FIELDS dicts), each item's category, and how many records have no pred.
    A null (or empty) pred is counted wrong here. Upstream's own accuracy scores a guess for it, and at the
    commit of the public result zips (964a136) that guess is reproducible: `random.seed(12345)` right before each
    `random.randint(0, len(options) - 1)`, so every null pred of one option count gets the same index (G of ten).
    `audit grade --policy no_answer=upstream-guess@964a136` applies that rule (scripts after 996df13, Feb 2025,
    seed once per run instead, so each draw there depends on every record scored before it).
    """
    from audit.importers.verdicts import recorded_row

    rows: list[dict[str, Any]] = []
    subjects: dict[str, str | None] = {}
    seen: dict[str, str] = {}
    no_pred = 0
    for rec, item_id, bad in _records(files, rmap):
        if bad is not None:
            raise AuditError(bad.error or "unreadable record", path=bad.path, row=bad.row, field=bad.field)
        assert item_id is not None
        obj = rec.obj
        if "pred" not in obj:
            raise AuditError("no upstream pred: this record holds no recorded verdict", path=rec.label, row=rec.row,
                             field="pred")
        pred, gold = obj["pred"], obj.get("answer")
        if pred is not None and not isinstance(pred, str):
            raise AuditError(f"expected a letter or null, got {pred!r}", path=rec.label, row=rec.row, field="pred")
        if not isinstance(gold, str):
            raise AuditError("missing required field" if gold is None else f"expected a letter, got {gold!r}",
                             path=rec.label, row=rec.row, field="answer")
        if item_id in seen:
            raise AuditError(f"question_id {item_id} again (first in {seen[item_id]}): one run records one verdict "
                             f"per question", path=rec.label, row=rec.row, field="question_id")
        seen[item_id] = f"{rec.label} row {rec.row}"
        why = inconsistency(obj)
        if why is not None and on_bad_row != "record":
            raise AuditError(why + " (--on-bad-row record imports it ungraded)", path=rec.label, row=rec.row,
                             field="answer_index")
        if why is not None:
            rows.append(recorded_row(item_id, 0, answer=pred or None, verdict="ungraded", status="bad_input",
                                     reference=gold, reason=f"{why} ({Path(rec.label).name} row {rec.row})"))
        elif pred:
            ok = pred == gold
            verdict = "correct" if ok else "incorrect"
            rows.append(recorded_row(item_id, 0, answer=pred, verdict=verdict, status=verdict, reference=gold,
                                     reason=f"upstream pred {pred} {'=' if ok else '!='} gold {gold}"))
        else:
            no_pred += 1
            rows.append(recorded_row(item_id, 0, answer=None, verdict="incorrect", status="no_answer", reference=gold,
                                     reason="upstream pred is null: upstream's accuracy scores a guess for it "
                                            "(upstream-guess@964a136); counted wrong here"))
        category = obj.get("category")
        subjects[item_id] = category if isinstance(category, str) and category else None
    if not rows:
        raise AuditError("no records to import", path=str(files[0].path))
    return rows, subjects, no_pred


def mmlu_pro_files(srcs: list[str | Path], fmt: str | None = None) -> list[SourceFile]:
    """The result files checked and hashed, once: the packages and the recorded verdicts read the same ones;
    `fmt`: their format when the names do not tell it."""
    if not srcs:
        raise AuditError("give at least one MMLU-Pro result file")
    files = [source_file(s, TABLE_SUFFIXES, fmt) for s in srcs]
    seen: dict[str, str] = {}
    for f in files:
        if f.sha256 in seen:
            raise AuditError(f"same content as {seen[f.sha256]}: given twice", path=str(f.path))
        seen[f.sha256] = str(f.path)
    return files


ON_BAD_ROW = ("refuse", "record")
"""What an import does with a readable but inconsistent record: stop the import, or keep it ungraded (bad_input)."""


def mmlu_pro_outputs(files: list[SourceFile], out: Path, *, items_out: Path | None = None, gzip: bool = False,
                     benchmark: str = "mmlu_pro", model: str | None = None,
                     provenance: Provenance | None = None, package_id: str | None = None,
                     on_bad_row: str = "refuse", bad_rows: list[dict[str, Any]] | None = None,
                     rmap: RecordMap | None = None) -> list[Output]:
    """The packages an MMLU-Pro import of `files` (from `mmlu_pro_files`) writes: responses at `out`, holding
    the items the records carry (gold letter, options, category) so `audit grade OUT` needs nothing else, and
    the items again as their own package at `items_out` when given. `bad_rows` collects the records kept as
    `bad_input` under `on_bad_row="record"`."""
    if on_bad_row not in ON_BAD_ROW:
        raise AuditError(f"--on-bad-row must be one of {', '.join(ON_BAD_ROW)}, got {on_bad_row!r}")
    found: list[dict[str, Any]] = bad_rows if bad_rows is not None else []

    def prov(counts: dict[str, int]) -> Provenance:
        if not counts:
            raise AuditError("no records to import", path=str(files[0].path))
        # Which upstream field held the text, counted: scripts of different dates used different ones.
        config: dict[str, Any] = {"importer": "mmlu-pro", "records": dict(sorted(counts.items()))}
        if on_bad_row != "refuse":
            config["on_bad_row"] = on_bad_row
        if rmap:
            config.update(rmap.as_json())
        if found:
            config["bad_input"] = [dict(b) for b in found]
        base = provenance
        if found and not (provenance and provenance.notes):
            base = (provenance or Provenance()).model_copy(update={"notes": (
                f"{len(found)} record(s) imported as ungraded (status bad_input), each with its reason in "
                f"extra.import.bad_input and in its item row's extra.bad_input")})
        return import_provenance(base, files=files, importer=config, engine=ENGINE, model=model,
                                 dataset=DatasetRef(name=DATASET, split="test"))

    resp_counts: dict[str, int] = {}
    rel, schema = data_file("responses", gzip)
    irel, ischema = data_file("items", gzip)
    outputs = [Output(out, "responses", [Table(rel, schema, response_rows(files, resp_counts, rmap)),
                                         Table(irel, ischema, item_rows(files, on_bad_row=on_bad_row,
                                                                        bad_rows=found, rmap=rmap))],
                      lambda: prov(resp_counts), benchmark=benchmark, package_id=package_id)]
    if items_out is not None:
        item_counts: dict[str, int] = {}
        outputs.append(Output(items_out, "items", [Table(irel, ischema, item_rows(files, item_counts,
                                                                                  on_bad_row=on_bad_row,
                                                                                  rmap=rmap))],
                              lambda: prov(item_counts), benchmark=benchmark))
    return outputs


def _is_result_record(keys: set[str]) -> bool:
    return {"question_id", "options"} <= keys and bool(keys & {"pred", *TEXT_FIELDS})


register_importer(Importer(
    "mmlu-pro", "audit.cli.imports.mmlu_pro",
    (Format("mmlu-pro", "a TIGER-AI-Lab/MMLU-Pro result file (question_id, options, pred and the model's text)",
            "audit import mmlu-pro FILE -o OUT [--recorded RECORDED.json]", "mmlu-pro", order=30,
            record=_is_result_record,
            verdicts_hint=recorded_hint("audit import mmlu-pro FILE -o PACKAGE --recorded OUT.json")),),
    fields=frozenset({"question_id", "options", "pred", "answer", *TEXT_FIELDS})), __name__)
