"""Verdicts from recorded judge calls: `audit grade RESPONSES --items ITEMS --benchmark hle --judge-calls CALLS`.

No judge is called. The responses are graded by the benchmark's spec first (exact match): that decides which
attempt counts and which rows never reach a judge (truncated, excluded, missing, errors). Each other row takes
the verdict that the parse rule reads from its recorded call (the rule recorded in the calls, or another
version given), re-reading the raw reply; a call that failed, a reply that does not parse and a response with no
call are `judge_error`, counted by the recorded policy (`wrong`, as HLE counts them, or `exclude`).

The verdict file (schema version 4) names the calls package by digest and the rule and template in its `judge`
section, and its `extractor` / `grader` are the rule and template, so `audit diff` between gradings under two
rule versions lists every item whose verdict changed with the cause. `reproduce_judged` re-derives it from the
recorded replies, with no server.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from audit.errors import AuditError
from audit.judge import rules
from audit.judge.models import JUDGE_CALL_SCHEMA, JudgeCallRow
from audit.judge.rules import ParseRule, Reply
from audit.summary import summarize
from audit.verdicts import ComponentRef, JudgeGrading, PackageRef, VerdictFile

KEEP_STATUSES = frozenset({"truncated", "excluded", "missing", "error", "bad_input"})
"""Rows the judge never decides: chosen or refused before any answer is read (a cut response is never credited)."""


def _cref(c: Any) -> ComponentRef | None:
    return None if c is None else ComponentRef(name=c.name, version=c.version, fingerprint=c.fingerprint)


@dataclass
class JudgedGrading:
    """A judged grading: the verdict file's header and its rows as columns (like `audit.grade.Grading`)."""

    header: VerdictFile
    columns: dict[str, list[Any]]
    exact_columns: dict[str, list[Any]]
    calls: dict[tuple[str, int, int], JudgeCallRow]

    def grading(self) -> Any:
        from audit.grade import Grading

        return Grading(self.header, self.columns)


def _calls(path: Path, responses_digest: str, items_digest: str | None, repeat: int, out_dir: Path
           ) -> tuple[PackageRef, dict[tuple[str, int, int], JudgeCallRow], str | None]:
    """The calls package's ref and its calls of `repeat` by (item, sample, attempt), after checking that they judged
    the graded responses and items (one line otherwise)."""
    from audit.grade.passes import _package_ref
    from audit.packages import open_package

    with open_package(path, kind="judge-calls") as pkg:
        extra = pkg.manifest.provenance.extra
        rp = extra.get("responses_package") or {}
        if rp.get("digest") != responses_digest:
            got = str(rp.get("digest") or "none")[:12]
            raise AuditError(f"these calls judged the responses package with digest {got}, not the graded one "
                             f"({responses_digest[:12]})", path=str(path))
        ip = extra.get("items_package") or {}
        if items_digest is not None and ip.get("digest") not in (None, items_digest):
            raise AuditError(f"these calls read the items package with digest {str(ip.get('digest'))[:12]}, not the "
                             f"graded one ({items_digest[:12]})", path=str(path))
        calls: dict[tuple[str, int, int], JudgeCallRow] = {}
        template = extra.get("template")
        for row in pkg.iter_rows(JUDGE_CALL_SCHEMA):
            if row.repeat == repeat and row.position == 0:
                calls[(row.item_id, row.sample, row.attempt)] = row
        ref = _package_ref(pkg, out_dir)
    return ref, calls, template if isinstance(template, str) else None


def _decide(row: JudgeCallRow | None, rule: ParseRule, raw_policy: str, where: str, n: int
            ) -> tuple[str, str | None, str, dict[str, Any]]:
    """(status, answer, reason, detail) the rule reads from one recorded call."""
    if row is None:
        return "judge_error", None, "no judge call recorded for this response", {}
    detail: dict[str, Any] = {"judge_call": {"repeat": row.repeat, "raw_sha256": row.raw_sha256}}
    if row.error is not None:
        return "judge_error", None, "the judge call failed", detail
    if not row.raw_recorded:
        if raw_policy == "required":
            raise AuditError(f"call for item {row.item_id!r} has no raw response recorded, which --judge-raw "
                             f"required needs (give --judge-raw recorded-parse to count the parsed fields the "
                             f"source kept)", path=where, row=n, field="raw")
        status = row.status
        answer = (row.parsed or {}).get("extracted_final_answer")
        return status, answer if isinstance(answer, str) else None, f"recorded parse: {row.reason}", detail
    p = rule.parse(Reply(row.raw, row.logprobs, row.swapped))
    if p.status not in ("correct", "incorrect", "judge_error"):
        raise AuditError(f"{rule.key} reads a preference, not a verdict: a pairwise judge cannot grade answers",
                         path=where, row=n)
    parsed = p.parsed or {}
    answer = parsed.get("extracted_final_answer", parsed.get("grade"))
    return p.status, answer if isinstance(answer, str) else None, f"{rule.key}: {p.reason}", detail


def judge_columns(exact: dict[str, list[Any]], calls: dict[tuple[str, int, int], JudgeCallRow], rule: ParseRule,
                  raw_policy: str, error_policy: str, where: str) -> dict[str, list[Any]]:
    """The exact grading's columns with every row the judge decides replaced by the recorded call's reading."""
    cols: dict[str, list[Any]] = {k: list(v) for k, v in exact.items()}
    order = sorted(calls)
    index = {k: i + 1 for i, k in enumerate(order)}
    for i, status in enumerate(exact["status"]):
        if status in KEEP_STATUSES:
            continue
        key = (exact["item_id"][i], exact["sample"][i], exact["attempt"][i])
        call = calls.get(key)
        st, answer, reason, detail = _decide(call, rule, raw_policy, where, index.get(key, 0))
        old = exact["detail"][i] or {}
        cols["answer"][i] = answer
        cols["rule"][i] = rule.key if call is not None else None
        cols["span"][i] = None
        cols["status"][i] = st
        cols["verdict"][i] = st if st != "judge_error" else ("incorrect" if error_policy == "wrong" else "ungraded")
        cols["reason"][i] = (f"judge: {reason}" if st != "judge_error" else
                             f"judge_error ({'counted wrong' if error_policy == 'wrong' else 'left out'}): {reason}")
        cols["detail"][i] = {**old, **detail, "exact_match": exact["status"][i]}
    return cols


def _exact_figure(header: VerdictFile) -> Any:
    return next((f for f in header.summary.figures if f.sample is None and f.denominator == "all"), None)


def grade_judged(responses: str | os.PathLike[str], config: Any, calls_path: str | os.PathLike[str], *,
                 items: str | os.PathLike[str] | None = None, rule: str | None = None,
                 raw_policy: str = "required", repeat: int = 0, out: str | os.PathLike[str] | None = None,
                 base_dir: str | os.PathLike[str] | None = None, overwrite: bool = True) -> JudgedGrading:
    """Grade `responses` from the judge calls of `calls_path` (no judge called); write `out` when given."""
    from audit.grade import Grading, grade_package
    from audit.judge import templates

    exact = grade_package(responses, config, items=items, base_dir=base_dir or (Path(out).resolve().parent
                                                                                if out else None))
    eh = exact.header
    assert eh.responses_package is not None
    items_digest = eh.items_package.digest if eh.items_package else eh.responses_package.digest
    out_dir = Path(base_dir).resolve() if base_dir else (Path(out).resolve().parent if out else Path.cwd())
    calls_ref, calls, template_key = _calls(Path(calls_path), eh.responses_package.digest, items_digest, repeat,
                                            out_dir)
    recorded_rules = {f"{r.rule.name}@{r.rule.version}" for r in calls.values() if r.rule is not None}
    if rule is None:
        if len(recorded_rules) != 1:
            raise AuditError(f"the calls record {len(recorded_rules)} parse rules: give --judge-rule NAME@VERSION",
                             path=str(calls_path))
        rule = next(iter(recorded_rules))
    pr = rules.get(rule)
    template = templates.get(template_key) if template_key and template_key in templates.REGISTRY else None
    error_policy = config.policies.judge_error if hasattr(config, "policies") else config.config.policies.judge_error
    cols = judge_columns(exact.columns, calls, pr, raw_policy, error_policy, str(calls_path))
    df = pd.DataFrame({k: cols[k] for k in ("item_id", "sample", "verdict", "status", "reason")})
    subjects = {s.subject: s.items for s in (eh.summary.subjects or [])}
    by_item = {i: subj for subj, ids in subjects.items() for i in ids}
    judge = JudgeGrading(calls_package=calls_ref, template=_cref(template), rule=_cref(pr), raw=raw_policy,  # type: ignore[arg-type]
                         repeat=repeat, exact_extractor=eh.extractor, exact_grader=eh.grader,
                         exact_mc_extractor=eh.mc_extractor, exact_mc_grader=eh.mc_grader,
                         exact_match=_exact_figure(eh))
    header = eh.model_copy(update={
        "schema_version": 4, "judge": judge, "extractor": _cref(pr), "grader": _cref(template),
        "mc_extractor": None, "mc_grader": None, "summary": summarize(df, by_item), "items": []})
    header = VerdictFile.model_validate(header.model_dump(mode="json", by_alias=True))
    graded = JudgedGrading(header, cols, exact.columns, calls)
    if out is not None:
        graded.header = Grading(header, cols).write(out, overwrite=overwrite)
    return graded


def judged_lines(g: JudgedGrading) -> list[str]:
    """The figures `audit grade --judge-calls` prints beside the spec's: both judge_error policies whenever any
    row is a judge error, HLE's figures, and the exact-match figure of the same rows."""
    from audit.judge import figures

    cols = g.columns
    n = len(cols["status"])
    errors = sum(s == "judge_error" for s in cols["status"])
    correct = sum(v == "correct" for v in cols["verdict"])
    lines = []
    if errors:
        kept = n - errors
        lines.append(f"judge_error {errors:,} rows: counted wrong {100 * correct / n:.2f}% ({correct:,}/{n:,}); "
                     + (f"left out {100 * correct / kept:.2f}% ({correct:,}/{kept:,})" if kept else
                        "left out: none judged"))
    if g.header.benchmark == "hle":
        judged = []
        for i, status in enumerate(cols["status"]):
            key = (cols["item_id"][i], cols["sample"][i], cols["attempt"][i])
            call = g.calls.get(key)
            conf = (call.parsed or {}).get("confidence") if call is not None and call.parsed else None
            judged.append((None if status == "judge_error" else status == "correct", conf
                           if isinstance(conf, int) else None))
        ex = g.header.judge.exact_match if g.header.judge else None
        lines += figures.hle_lines(figures.hle_figures(judged, n, exact_match=100 * ex.value if ex else None))
    return lines


def reproduce_judged(vf: VerdictFile, vpath: Path, *, package: str | os.PathLike[str] | None,
                     items: str | os.PathLike[str] | None) -> Any:
    """Re-derive a judged verdict file from its recorded packages and calls (no server) and compare."""
    from audit.grade.reproduction import Reproduction, _content_differs, _resolve
    from audit.specs import GradeConfig
    from audit.verdicts.write import dump_verdict_file, write_verdict_file

    j = vf.judge
    assert j is not None and vf.responses_package is not None
    base = vpath.resolve().parent
    resp_path = _resolve(vf.responses_package, package, base, "package")
    items_path = _resolve(vf.items_package, items, base, "items")
    calls_path = _resolve(j.calls_package, None, base, "judge calls")
    assert resp_path is not None and calls_path is not None
    exact_vf = vf.model_copy(update={"extractor": j.exact_extractor, "grader": j.exact_grader,
                                     "mc_extractor": j.exact_mc_extractor, "mc_grader": j.exact_mc_grader})
    config = GradeConfig.recorded_in(exact_vf)
    new = grade_judged(resp_path, config, calls_path, items=items_path if vf.items_package else None,
                       rule=j.rule.key, raw_policy=j.raw, repeat=j.repeat, base_dir=base)
    got = new.header.judge
    assert got is not None
    if got.calls_package.digest != j.calls_package.digest:
        raise _content_differs(got.calls_package.digest, j.calls_package.digest, calls_path)
    notes = []
    if got.rule.fingerprint != j.rule.fingerprint:
        notes.append(f"parse rule {j.rule.key}: code fingerprint differs from the recorded one")
    same = {"producer": vf.producer, "environment": vf.environment, "rows_file": None,
            "responses_package": vf.responses_package, "items_package": vf.items_package,
            "judge": new.header.judge.model_copy(update={"calls_package": j.calls_package})
            if new.header.judge else None}
    with tempfile.TemporaryDirectory(prefix="audit-reproduce-") as tmp:
        again = Path(tmp) / "again.json"
        write_verdict_file(again, new.header.model_copy(update=same), new.grading().iter_rows())
        if again.read_text(encoding="utf-8") == dump_verdict_file(vf.model_copy(update={"rows_file": None})):
            return Reproduction(True, [], notes, not_rederived=[
                f"judge calls {j.calls_package.package_id}: replies re-read with {j.rule.key}; no judge called"])
    diffs = []
    old = {(r.item_id, r.sample): r for r in vf.items}
    for r in new.grading().items:
        o = old.get((r.item_id, r.sample))
        if o != r:
            diffs.append(f"{r.item_id} sample {r.sample}: recorded "
                         f"{(o.verdict, o.status, o.answer) if o else 'absent'}, now {(r.verdict, r.status, r.answer)}")
    return Reproduction(False, diffs or ["rows are identical; the header or summary differs"], notes)


def judge_texts(calls: Path | None, ref: PackageRef, protected: set[str]) -> list[Any]:
    """The leak check's protected strings from the judge calls of protected items: each reply, and each string
    field the rule read from it (the judge's extracted answer, its reasoning); the calls package must be the one
    the verdict file names."""
    from audit.leaks import ProtectedText
    from audit.packages import open_package

    if calls is None:
        raise AuditError("the leak check needs the judge calls the verdict file names (its judge section has no "
                         "path)")
    out = []
    with open_package(calls, kind="judge-calls") as pkg:
        if pkg.digest != ref.digest:
            raise AuditError(f"judge calls package digest is {pkg.digest[:12]}, the verdict file names "
                             f"{ref.digest[:12]}", path=str(calls))
        for row in pkg.iter_rows(JUDGE_CALL_SCHEMA):
            if row.item_id not in protected:
                continue
            what = f"judge reply (sample {row.sample}, repeat {row.repeat})"
            if row.raw:
                out.append(ProtectedText(row.item_id, what, row.raw))
            for k, v in sorted((row.parsed or {}).items()):
                if isinstance(v, str) and v and k not in ("correct", "grade"):  # (closed vocabulary)
                    out.append(ProtectedText(row.item_id, f"{what}: {k}", v))
    return out
