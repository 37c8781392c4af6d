"""Class 1 (issue 28): every path audit builds from a name passes one gate.

The gate is `audit.fileio.safe_part` / `join_inside` for one input-derived component (a task, a folder);
a relative path written in a package or ledger passes `audit.models.unsafe_path_reason` when its record is
validated. This test lists every `a / b` in audit/ whose left side is a path and whose right side is not a
constant, and asserts each is the gate or has a reason here: a new join from an input fails until it is routed
through the gate (or explained)."""

from __future__ import annotations

import ast
import re

import pytest

from audit.errors import AuditError
from audit.fileio import join_inside, safe_part, unsafe_name_reason
from tests.conftest import REPO

_PATHY = re.compile(r"(out|dest|root|dir|folder|path|tmp|stage|base|here|tree|work|parent|^p$|^d$|^f$|model|"
                    r"packages|directory|target|full|trash|side|final|REPO|ROOT|HERE|Path\()", re.I)

AUDIT_NAME = "audit-derived: a constant, a counter or a uuid beside a name the user gave"
VALIDATED = "a package or ledger path, refused by models.unsafe_path_reason when its record is read"
RECORDED_PACKAGE = "a package location recorded in a verdict or release file: opened as a package and " \
                   "checked against the digest pinned beside it (read, never written)"
WALK = "a name found by walking a folder the user named (it exists there; read, never written)"
ARITHMETIC = "a number, not a path"

JOINS = {
    ("audit/__init__.py", "find_spec", "name"): "a module name Python's import system asked for",
    ("audit/behaviour.py", "_records", "rel"): "a golden file of the checkout, by a relative name it lists",
    ("audit/behaviour.py", "golden_cases", 'f"{kind}s"'): AUDIT_NAME,
    ("audit/bench/figures.py", "anchor_figures", "completed"): ARITHMETIC,
    ("audit/bench/figures.py", "summarize", "span"): ARITHMETIC,
    ("audit/bench/figures.py", "window_figures", "w.end - w.start"): ARITHMETIC,
    ("audit/bench/report.py", "timeline_png", 'f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"'): AUDIT_NAME,
    ("audit/claims/ledger.py", "resolve_inside", "rel"): "the ledger's own inside-the-folder resolution",
    ("audit/claims/page.py", "write_page", "name"): "plot-<claim id>.png; a claim id matches ^[A-Za-z][A-Za-z0-9_]*$",
    ("audit/claims/verify.py", "_check_file", "path.name"): AUDIT_NAME,
    ("audit/claims/verify.py", "_check_file", "side.path"): VALIDATED,
    ("audit/cli/release_cmd.py", "_new_salt_file", 'f".{path.name}.tmp-{uuid.uuid4().hex[:8]}"'): AUDIT_NAME,
    ("audit/demo.py", "run_demo", "bench"): AUDIT_NAME,
    ("audit/demo.py", "run_demo", 'f"release-{RELEASED}"'): AUDIT_NAME,
    ("audit/demo.py", "run_demo", 'f"{RELEASED}.json"'): AUDIT_NAME,
    ("audit/demo.py", "run_demo", 'f"{bench}.diff.json"'): AUDIT_NAME,
    ("audit/demo.py", "run_demo", 'f"{bench}.diff.md"'): AUDIT_NAME,
    ("audit/demo.py", "run_demo", 'f"{bench}.json"'): AUDIT_NAME,
    ("audit/demo.py", "run_demo", 'f"{bench}.jsonl"'): AUDIT_NAME,
    ("audit/demo.py", "run_demo", 'f"{bench}.recorded.json"'): AUDIT_NAME,
    ("audit/diff/compare.py", "_responses", "recorded_path"): RECORDED_PACKAGE,
    ("audit/fileio.py", "atomic_text", 'f".{p.name}.tmp-{uuid.uuid4().hex[:8]}"'): AUDIT_NAME,
    ("audit/fileio.py", "join_inside", "safe_part(part, what=what, path=path)"): "the gate",
    ("audit/floor/safetensors.py", "_index_shards", "shard"): "a shard name, refused by unsafe_path_reason there",
    ("audit/floor/safetensors.py", "read_checkpoint", "f"): "the shards _index_shards checked",
    ("audit/floor/synth.py", "write_header_only", "fname"): AUDIT_NAME,
    ("audit/generate/model_info.py", "model_files", "name"): "HASHED_MODEL_FILES, a constant list",
    ("audit/generate/package.py", "write_package", "rel"): AUDIT_NAME,
    ("audit/generate/servers.py", "_launch", "log_rel"): AUDIT_NAME,
    ("audit/generate/state.py", "work_dir", 'f"{out.name}.work"'): AUDIT_NAME,
    ("audit/grade/reproduction.py", "_resolve", "recorded.path"): RECORDED_PACKAGE,
    ("audit/judge/run.py", "judge_responses", 'out.name + ".work"'): AUDIT_NAME,
    ("audit/judge/templates.py", "_read_prompt", "file"): "a prompt file named in the registered template table (source)",
    ("audit/judge/figures.py", "wilson", "den"): "a number divided, not a path joined",
    ("audit/judge/figures.py", "wilson", "n"): "a number divided, not a path joined",
    ("audit/importers/__init__.py", "write_outputs", 'f".{o.out.name}.import-{uuid.uuid4().hex[:8]}"'): AUDIT_NAME,
    ("audit/importers/inspect_ai.py", "read_log", '"log.eval" if zipped else "log.json"'): AUDIT_NAME,
    ("audit/importers/lm_eval_dir.py", "_walk", "name"): WALK,
    ("audit/outputs.py", "clean_stale_stages", "name"): "a name listed in the output's own folder",
    ("audit/outputs.py", "staging_dir", 'f".{o.name}.{tag}-{os.getpid()}-{uuid.uuid4().hex[:8]}"'): AUDIT_NAME,
    ("audit/outputs.py", "publish", 'f".old-{uuid.uuid4().hex[:8]}-{out.name}"'): AUDIT_NAME,
    ("audit/outputs.py", "write_text", 'f".{p.name}.tmp-{uuid.uuid4().hex[:8]}"'): AUDIT_NAME,
    ("audit/packages/layout.py", "__init__", "entry.path"): VALIDATED,
    ("audit/packages/read.py", "read_bytes", "path"): VALIDATED,
    ("audit/packages/validate.py", "_check_tree", "name"): WALK,
    ("audit/packages/validate.py", "_unpack", "name"): "a tar member name, refused by unsafe_path_reason first",
    ("audit/packages/validate.py", "_unpack", 'prefix.rstrip("/")'): "the checked members' common folder",
    ("audit/packages/validate.py", "validate_tree", "entry.path"): VALIDATED,
    ("audit/packages/write.py", "bundle", 'f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"'): AUDIT_NAME,
    ("audit/packages/write.py", "commit", "rel"): VALIDATED,
    ("audit/packages/write.py", "path", "rel"): VALIDATED,
    ("audit/release/build.py", "_resolve", "p"): RECORDED_PACKAGE,
    ("audit/release/build.py", "_write", "rel"): AUDIT_NAME,
    ("audit/schemas.py", "check", "name"): "a committed schema's name (registered ids)",
    ("audit/schemas.py", "write", "name"): "a committed schema's name (registered ids)",
    ("audit/stats.py", "binomial_2se", "n"): ARITHMETIC,
    ("audit/stats.py", "wilson", "1 + z * z / n"): ARITHMETIC,
    ("audit/stats.py", "wilson", "n"): ARITHMETIC,
    ("audit/trace/package.py", "read_checked", "s.source.included"): VALIDATED,
    ("audit/verdicts/read.py", "_read_sidecar", "ref.path"): "a sidecar name: one component, unsafe_path_reason "
                                                             "(verdicts/models.py)",
    ("audit/verdicts/write.py", "_publish", "side_name"): AUDIT_NAME,
    ("audit/verdicts/write.py", "_temp_name", 'f".{name}.tmp-{uuid.uuid4().hex}"'): AUDIT_NAME,
}


def _leftmost(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.BinOp):
        node = node.left
    return node


def path_joins() -> set[tuple[str, str, str]]:
    found = set()
    for path in sorted((REPO / "audit").rglob("*.py")):
        src = path.read_text(encoding="utf-8")
        for fn in ast.walk(ast.parse(src)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for n in ast.walk(fn):
                if not (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)) or isinstance(n.right, ast.Constant):
                    continue
                r = n.right
                if (isinstance(r, ast.Name) and r.id.isupper()) or (isinstance(r, ast.Attribute) and r.attr.isupper()):
                    continue  # a module constant
                if _PATHY.search(ast.get_source_segment(src, _leftmost(n.left)) or ""):
                    found.add((path.relative_to(REPO).as_posix(), fn.name, ast.get_source_segment(src, r) or ""))
    return found


def test_every_path_join_in_audit_is_the_gate_or_explained():
    found = path_joins()
    new = sorted(found - set(JOINS))
    assert not new, "route these through audit.fileio.join_inside/safe_part (or explain them in JOINS):\n" + \
        "\n".join(map(str, new))
    assert not set(JOINS) - found, f"stale entries: {sorted(set(JOINS) - found)}"


def test_the_lm_eval_folder_import_goes_through_the_gate():
    src = (REPO / "audit" / "importers" / "lm_eval_dir.py").read_text(encoding="utf-8")
    assert "join_inside(" in src and "out / run.folder" not in src


@pytest.mark.parametrize("name", ["", ".", "..", "../x", "a/b", "a\\b", "/abs", "a\x00b", "a\nb", "a\u200bb",
                                  "a\u202eb", ".hidden", " pad", "pad ", "x" * 256, "é" * 128, 3, None])
def test_safe_part_refuses(name):
    assert unsafe_name_reason(name)
    with pytest.raises(AuditError) as e:
        safe_part(name, what="task name", path="results.json")
    line = str(e.value)
    assert "\n" not in line and "\x00" not in line and "task name" in line


@pytest.mark.parametrize("name", ["gsm8k", "mmlu_pro_biology", "leaderboard|bbh", "arc-challenge_2025-04-30T18-24-41",
                                  "x" * 255, "数学"])
def test_safe_part_keeps_real_task_names(name, tmp_path):
    assert safe_part(name, what="task name") == name
    assert join_inside(tmp_path, name, what="task name").parent == tmp_path
