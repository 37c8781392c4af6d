"""What a registered version does: its outputs on the golden rows and on the real data.

A lock entry (`audit.lock`) accepts more than one fingerprint for a version only when the
code behind each one gives byte-identical outputs here. Two corpora, one case per row:

- golden: every row of `tests/golden/<kind>/*.jsonl` (a source checkout), whatever version
  the row was written for;
- real: the public data in `../shared/data` (or `$AUDIT_SHARED_DATA`), each file pinned by
  sha256, so another copy of the data is an error, never a "changed behaviour".

An extractor's output on a case is `[answer, rule, span]`, a grader's `[correct, status,
reason]`. The lock records the sha256 of the real-data outputs (`digest`); the golden rows
change as versions are added, so they are compared code against code (`GitBaseline`) when
a fingerprint is migrated, and against their expected values by the golden tests.

GPQA asks that its text not be published: outputs of its rows are shown as hashes.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit import procs
from audit.errors import AuditError
from audit.fileio import dumps, sha256_file

SOURCE_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class Case:
    """One input: where it comes from (source, row) and what the component is given."""

    source: str
    row: str
    inputs: tuple[Any, ...]
    """Extractors: (text, finish_reason). Graders: (answer, reference, num_choices)."""
    protected: bool = False
    """True for data whose text must not be shown (GPQA): outputs are printed as hashes."""


def shared_data_dir() -> Path:
    return Path(os.environ.get("AUDIT_SHARED_DATA") or SOURCE_ROOT.parent / "shared" / "data")


REAL_FILES: dict[str, tuple[str, str]] = {
    "mmlu_pro": ("mmlu_pro/mmlu_pro_responses_sample.jsonl",
                 "e96001465f41865a8f1273fdc4465ffc552f11a718744c49d1738f57c5ae2bb4"),
    "gpqa": ("gpqa_diamond_responses/gpqa_diamond_responses.jsonl.gz",
             "58b8db6b71ba628e8fe0386cb2f5cda47f58a3b5efc665f55840c84f732cfe9b"),
    "math_cot": ("qwen25_math_rm_maj_example/math_cot_100.jsonl",
                 "5b9128525733336c4b5bf5d3222f72b18655a305258dc09c301b546e9365ba5e"),
    "prm800k": ("prm800k_phase1_test_stepwise/phase1_test_final_answers_vs_math500.jsonl",
                "33e8ef5628ef45139fae7b3d33fdd1a79d8e4b05f92e9489e0e3aa9e5690beca"),
    "math500": ("math500/test.jsonl", "35dc41080a3680858b27fa7e0533d2d547825316fc5dafe5d316f4ccc5a06132"),
}
"""The real data behind every lock's digest: name -> (path under the shared data, sha256)."""


def _records(name: str) -> Iterator[tuple[int, dict[str, Any]]]:
    rel, pinned = REAL_FILES[name]
    path = shared_data_dir() / rel
    if not path.is_file():
        raise AuditError("real data missing (behaviour digests need ../shared/data or $AUDIT_SHARED_DATA)",
                         path=str(path))
    digest, _ = sha256_file(path)
    if digest != pinned:
        raise AuditError(f"sha256 is {digest}, expected {pinned}: not the data the locks were recorded on",
                         path=str(path))
    opener = gzip.open if rel.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.strip():
                yield lineno, json.loads(line)


def real_cases(kind: str) -> list[Case]:
    """Every real-data case of `kind`, in a fixed order (read once per process and data folder)."""
    return list(_real_cases(kind, shared_data_dir()))


@functools.lru_cache(maxsize=4)
def _real_cases(kind: str, where: Path) -> tuple[Case, ...]:
    cases: list[Case] = []
    if kind == "extractor":
        for n, r in _records("mmlu_pro"):
            cases.append(Case("mmlu_pro", str(n), (r["response"], None)))
        for n, r in _records("gpqa"):
            cases.append(Case("gpqa", str(n), (r["response"], None), protected=True))
        for n, r in _records("math_cot"):
            for k, text in enumerate(r["response"]):
                cases.append(Case("math_cot", f"{n}.{k}", (text, None)))
        for n, r in _records("math500"):
            cases.append(Case("math500", str(n), (r["solution"], None)))
    elif kind == "grader":
        for n, r in _records("mmlu_pro"):
            cases.append(Case("mmlu_pro", str(n), (r["source_pred"], r["gold_answer"], None)))
        for n, r in _records("gpqa"):
            cases.append(Case("gpqa", str(n), (r["source_extracted"], r["gold_letter"], 4), protected=True))
        for n, r in _records("math_cot"):
            for k, pred in enumerate(r["pred"]):
                cases.append(Case("math_cot", f"{n}.{k}", (pred, r["answer"], None)))
        for n, r in _records("prm800k"):
            cases.append(Case("prm800k", str(n), (r["model_answer"], r["gold_answer"], None)))
    elif kind in ("judge template", "judge parse rule"):
        from audit.judge.cases import RULE_REPLIES, TEMPLATE_INPUTS

        inputs: tuple[Any, ...] = TEMPLATE_INPUTS if kind == "judge template" else RULE_REPLIES
        cases.extend(Case("judge", str(n), tuple(x)) for n, x in enumerate(inputs))
    else:
        raise ValueError(f"unknown kind {kind!r}")
    return tuple(cases)


def golden_cases(kind: str, root: Path | None = None) -> list[Case]:
    """Every row of the golden tables of `kind` (`tests/golden/extractors` or `.../graders`).

    A grader table's row with neither `answer` nor `reference` is no case: it adjudicates a case
    held elsewhere by digest (`mathverify_suite_adjudicated.jsonl`); a row with one but not the
    other is an error."""
    folder = (root or SOURCE_ROOT) / "tests" / "golden" / f"{kind}s"
    if not folder.is_dir():
        raise AuditError("golden rows missing: migrating a lock needs a source checkout", path=str(folder))
    cases: list[Case] = []
    for path in sorted(folder.glob("*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            if not line.strip():
                continue
            r = json.loads(line)
            if kind == "grader" and "answer" not in r and "reference" not in r:
                continue
            try:
                inputs = ((r["text"], r.get("finish_reason")) if kind == "extractor"
                          else (r["answer"], r["reference"], r.get("num_choices")))
            except KeyError as e:
                raise AuditError(f"golden row has no {e.args[0]!r}", path=str(path), row=n) from None
            cases.append(Case(f"golden/{path.name}", str(n), inputs))
    return cases


# --------------------------------------------------------------------------- running


def run(kind: str, component: Any, cases: Sequence[Case]) -> list[list[Any]]:
    """The component's output on every case, as JSON values (see the module docstring)."""
    return _RUN[kind](component, [c.inputs for c in cases])


def _run_extractor(ex: Any, inputs: Sequence[tuple[Any, ...]]) -> list[list[Any]]:
    out = []
    for text, finish in inputs:
        e = ex.extract(text, finish_reason=finish)
        out.append([e.answer, e.rule, None if e.span is None else list(e.span)])
    return out


def _run_grader(g: Any, inputs: Sequence[tuple[Any, ...]]) -> list[list[Any]]:
    from audit.graders import grade_many

    tasks = [tuple(t) for t in inputs]
    unique = list(dict.fromkeys(tasks))  # a registered version is a pure function: each task once
    by_task = dict(zip(unique, grade_many(g, unique), strict=True))
    return [[by_task[t].correct, by_task[t].status, by_task[t].reason] for t in tasks]


def _run_judge_template(t: Any, inputs: Sequence[tuple[Any, ...]]) -> list[list[Any]]:
    from audit.judge.templates import JudgeInput

    return [[t.render(JudgeInput(*x)), t.body([], "m", {})] for x in inputs]


def _run_parse_rule(rule: Any, inputs: Sequence[tuple[Any, ...]]) -> list[list[Any]]:
    from audit.judge.rules import Reply

    out = []
    for raw, logprobs, swapped in inputs:
        p = rule.parse(Reply(raw, logprobs, swapped))
        out.append([p.status, p.reason, p.parsed, p.preference])
    return out


_RUN: dict[str, Callable[[Any, Sequence[tuple[Any, ...]]], list[list[Any]]]] = {
    "extractor": _run_extractor, "grader": _run_grader, "judge template": _run_judge_template,
    "judge parse rule": _run_parse_rule}


def digest(cases: Sequence[Case], outputs: Sequence[Any]) -> str:
    """sha256 over one canonical JSON line `[source, row, output]` per case."""
    h = hashlib.sha256()
    for case, out in zip(cases, outputs, strict=True):
        h.update(dumps([case.source, case.row, out]).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def _shown(case: Case, output: Any) -> str:
    if not case.protected:
        return dumps(output)
    # Never print protected text: strings become their length and a hash prefix.
    masked = [f"<{len(v)} chars, sha256 {hashlib.sha256(v.encode()).hexdigest()[:12]}>"
              if isinstance(v, str) and len(v) > 12 else v for v in output]
    return dumps(masked)


def first_difference(cases: Sequence[Case], old: Sequence[Any], new: Sequence[Any]) -> str | None:
    """`source row N: locked code gives X, this code gives Y` for the first case whose outputs
    differ (compared as canonical JSON bytes), or None when all are identical."""
    for case, a, b in zip(cases, old, new, strict=True):
        if dumps(a) != dumps(b):
            return f"{case.source} row {case.row}: the locked code gives {_shown(case, a)}, this code gives " \
                   f"{_shown(case, b)}"
    return None


# --------------------------------------------------------------------------- the code as it was


_BASELINE_SCRIPT = r'''
import importlib, json, os, sys
tree, kind, key, cases_path, out_path = sys.argv[1:]
# Only the exported tree may answer: drop the finder an editable install adds for the current one.
sys.meta_path[:] = [f for f in sys.meta_path if getattr(f, "__name__", type(f).__name__) != "_EditableFinder"]
root = os.path.realpath(tree) + os.sep
pkg = None
for name in (("audit.extractors", "extractors") if kind == "extractor" else ("audit.graders", "graders")):
    try:
        mod = importlib.import_module(name)
    except ImportError:
        continue
    if os.path.realpath(mod.__file__).startswith(root):
        pkg = mod
        break
if pkg is None:
    sys.exit(f"the exported tree has no {kind}s package")
comp = pkg.get(key)
with open(cases_path, encoding="utf-8") as f:
    inputs = [tuple(c) for c in json.load(f)]
outputs = []
if kind == "extractor":
    for text, finish in inputs:
        e = comp.extract(text, finish_reason=finish)
        outputs.append([e.answer, e.rule, None if e.span is None else list(e.span)])
else:
    unique = list(dict.fromkeys(inputs))
    by_task = dict(zip(unique, pkg.grade_many(comp, unique)))
    outputs = [[by_task[t].correct, by_task[t].status, by_task[t].reason] for t in inputs]
with open(out_path, "w", encoding="utf-8") as f:
    json.dump({"fingerprint": comp.fingerprint, "outputs": outputs}, f)
'''


@dataclass
class Baseline:
    """The locked code to compare with: `run(kind, key, cases) -> (fingerprint, outputs)`."""

    label: str
    runner: Callable[[str, str, Sequence[Case]], tuple[str, list[Any]]]

    def run(self, kind: str, key: str, cases: Sequence[Case]) -> tuple[str, list[Any]]:
        return self.runner(kind, key, cases)


def in_process_baseline(label: str, component: Any) -> Baseline:
    """A baseline that is a component object of this process (tests)."""

    def runner(kind: str, key: str, cases: Sequence[Case]) -> tuple[str, list[Any]]:
        return component.fingerprint, run(kind, component, cases)

    return Baseline(label, runner)


def git_baseline(ref: str, repo: Path | None = None) -> Baseline:
    """The code of `ref` in the source checkout's git history, run in a fresh interpreter.

    The tree of `ref` (its `audit/`, `extractors/` and `graders/`) is exported to a temporary
    directory, so the working tree is never touched; the component is imported from there
    under whichever name that tree uses (`audit.extractors` or the earlier `extractors`).
    """
    repo = repo or SOURCE_ROOT
    commit = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if not commit:
        raise AuditError(f"--baseline {ref!r} is not a commit of the git checkout at {repo}")

    def runner(kind: str, key: str, cases: Sequence[Case]) -> tuple[str, list[Any]]:
        with tempfile.TemporaryDirectory(prefix="audit-baseline-") as tmp:
            tree = Path(tmp) / "tree"
            tree.mkdir()
            present = [p for p in ("audit", "extractors", "graders") if _git(repo, "ls-tree", commit, p)]
            archive = procs.run(["git", "-C", str(repo), "archive", "--format=tar", commit, "--", *present],
                                     capture_output=True, check=False)
            if archive.returncode:
                raise AuditError(f"git archive {commit[:12]} failed: {archive.stderr.decode(errors='replace')[:200]}")
            with tarfile.open(fileobj=io.BytesIO(archive.stdout), mode="r:") as tf:
                tf.extractall(tree, filter="data")
            cases_path, out_path = Path(tmp) / "cases.json", Path(tmp) / "out.json"
            cases_path.write_text(json.dumps([list(c.inputs) for c in cases]), encoding="utf-8")
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join([str(tree)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
            proc = procs.run([sys.executable, "-c", _BASELINE_SCRIPT, str(tree), kind, key, str(cases_path),
                                   str(out_path)], cwd=tree, env=env, capture_output=True, text=True, check=False)
            if proc.returncode:
                tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
                raise AuditError(f"running {key} as of {ref} ({commit[:12]}) failed: {tail}")
            got = json.loads(out_path.read_text(encoding="utf-8"))
            return got["fingerprint"], got["outputs"]

    return Baseline(f"{ref} ({commit[:12]})", runner)


def _git(repo: Path, *args: str) -> str:
    try:
        out = procs.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False,
                             timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""
