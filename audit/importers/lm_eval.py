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
Loglikelihood / multiple-choice records hold log-probabilities, not text, and are refused.
Older files (before 2024-05) have `arguments` as a list of argument lists and no hashes;
before 2024-11 they have no `filter` or `metrics`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audit.errors import AuditError
from audit.importers import Output, data_file, import_provenance
from audit.importers.mapping import Expr, ExprError, coerce
from audit.importers.sources import SourceFile, iter_json_records, source_file
from audit.models import Provenance
from audit.pack import SourceRow, Table

ENGINE = "EleutherAI/lm-evaluation-harness"
SUFFIXES = (".jsonl", ".jsonl.gz", ".json")
_RESERVED = {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics",
             "doc_hash", "prompt_hash", "target_hash"}


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
    filters_seen: dict[str, int] = field(default_factory=dict)
    gen_kwargs: dict[str, Any] = field(default_factory=dict)
    docs: int = 0
    responses: int = 0

    def _records(self) -> Iterator[tuple[Any, dict[str, Any] | None, SourceRow | None]]:
        """(record, None) for each record of the chosen filter, or (None, error row)."""
        for rec in iter_json_records(self.src.path):
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

    def _check(self, label: str, row: int, obj: dict[str, Any]) -> tuple[str | None, SourceRow | None]:
        """The item id, or an error row for a record that is not a readable generate_until sample."""
        if "doc_id" not in obj:
            return None, SourceRow(label, row, None, "missing required field", "doc_id")
        try:
            item_id = coerce(self.item_id(obj), (str,), int_to_text=True)
        except ExprError as e:
            raise AuditError(f"--item-id: {e}", path=label, row=row, field="item_id") from None
        resps = obj.get("resps")
        if not isinstance(resps, list) or not resps or not all(isinstance(r, list) for r in resps):
            return None, SourceRow(label, row, None, "expected a list of per-request response lists", "resps")
        if len(resps) != 1 or not all(isinstance(t, str) for t in resps[0]):
            return None, SourceRow(label, row, None,
                                   f"{len(resps)} requests of log-probabilities, not generated text: only "
                                   f"generate_until samples can be imported", "resps")
        if self.verify_hashes:
            for problem in self._hash_problems(obj):
                return None, SourceRow(label, row, None, problem[1], problem[0])
        return item_id, None

    def _hash_problems(self, obj: dict[str, Any]) -> Iterator[tuple[str, str]]:
        # The harness hashes what it logged; a mismatch means the file changed after the run.
        reqs = _requests(obj.get("arguments"))
        prompt = reqs[0][0] if reqs and reqs[0] else None
        checks = [("prompt_hash", prompt if isinstance(prompt, str) else None),
                  ("target_hash", obj.get("target") if isinstance(obj.get("target"), str) else None)]
        if isinstance(obj.get("doc"), dict):
            checks.append(("doc_hash", json.dumps(obj["doc"], indent=2, ensure_ascii=False)))
        for name, text in checks:
            want = obj.get(name)
            if isinstance(want, str) and text is not None and _sha256(text) != want:
                yield name, f"{name} does not match the logged {name.removesuffix('_hash')} (altered after the run?)"

    def response_rows(self) -> Iterator[SourceRow]:
        for rec, obj, bad in self._records():
            if bad is not None:
                yield bad
                continue
            item_id, bad = self._check(rec.label, rec.row, obj)
            if bad is not None:
                yield bad
                continue
            self.docs += 1
            reqs = _requests(obj.get("arguments"))
            kwargs = reqs[0][1] if reqs and len(reqs[0]) > 1 and isinstance(reqs[0][1], dict) else None
            if kwargs is not None:
                canon = json.dumps(kwargs, sort_keys=True, ensure_ascii=False)
                self.gen_kwargs.setdefault(canon, kwargs)
            max_tokens = kwargs.get("max_gen_toks") if kwargs else None
            filtered = obj.get("filtered_resps")
            filtered = filtered[0] if isinstance(filtered, list) and len(filtered) == 1 else None
            metrics = obj.get("metrics")
            names = metrics if isinstance(metrics, list) else [k for k in obj if k not in _RESERVED]
            scores = {m: obj[m] for m in names if isinstance(m, str) and m in obj}
            texts = obj["resps"][0]
            for sample, text in enumerate(texts):
                row: dict[str, Any] = {"item_id": item_id, "sample": sample, "response": text}
                if isinstance(max_tokens, int) and not isinstance(max_tokens, bool):
                    row["max_tokens"] = max_tokens
                if isinstance(obj.get("prompt_hash"), str):
                    row["prompt_sha256"] = obj["prompt_hash"]
                extra: dict[str, Any] = {"doc_id": obj["doc_id"], "filter": self.filter}
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
        for rec, obj, bad in self._records():
            if bad is not None:
                yield bad
                continue
            item_id, bad = self._check(rec.label, rec.row, obj)
            if bad is not None:
                yield bad
                continue
            if "target" not in obj:
                yield SourceRow(rec.label, rec.row, None, "missing required field", "target")
                continue
            self.docs += 1
            yield SourceRow(rec.label, rec.row, {"item_id": item_id, "reference": obj["target"],
                                                 "extra": {"doc_id": obj["doc_id"]}})

    def provenance(self, base: Provenance | None, model: str | None) -> Provenance:
        if not self.docs:
            seen = ", ".join(self.filters_seen) or "none"
            raise AuditError(f"no samples to import for filter {self.filter!r} (filters in the file: {seen})",
                             path=str(self.src.path))
        config: dict[str, Any] = {
            "importer": "lm-eval", "item_id": self.item_id.text, "filter": self.filter,
            "filters_in_file": dict(self.filters_seen), "documents": self.docs, "responses": self.responses,
            "hashes_verified": self.verify_hashes,
        }
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


def lm_eval_outputs(src: str | Path, out: Path, *, benchmark: str, items_out: Path | None = None,
                    item_id: str = "doc_id", filter_name: str | None = None, verify_hashes: bool = True,
                    gzip: bool = False, model: str | None = None, provenance: Provenance | None = None,
                    package_id: str | None = None) -> list[Output]:
    """The packages an lm-eval samples import writes."""
    f = source_file(src, SUFFIXES)
    try:
        expr = Expr(item_id)
    except ValueError as e:
        raise AuditError(f"--item-id: {e}") from None
    imp = LmEvalImport(f, expr, filter_name, verify_hashes)
    rel, schema = data_file("responses", gzip)
    outputs = [Output(out, "responses", [Table(rel, schema, imp.response_rows())],
                      lambda: imp.provenance(provenance, model), benchmark=benchmark, package_id=package_id)]
    if items_out is not None:
        items = LmEvalImport(f, expr, filter_name, verify_hashes)
        rel, schema = data_file("items", gzip)
        outputs.append(Output(items_out, "items", [Table(rel, schema, items.item_rows())],
                              lambda: items.provenance(provenance, model), benchmark=benchmark))
    return outputs
