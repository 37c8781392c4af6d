"""The house the imports draw: files of audit/, extractors/ and graders/ as nodes, every import between them
as an edge (function-level imports included; `if TYPE_CHECKING:` blocks left out, as they never run). The
graph has no cycle, and at most `MAX_UPWARD` edges run from a lower layer to a higher one.

A circle held open by a function-level import is a misplaced function: each one this test found was
fixed by moving the function (issue 27), never by hiding the import.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Lowest first. A module belongs to the layer of the longest prefix that names it.
    ("base", ("audit", "audit.errors", "audit.ids", "audit.ascii_numbers", "audit.registry", "audit.fileio")),
    # what everything rests on: errors, bounded file reads, the registry (`audit` itself: its version and
    # lazy names only)
    ("extractors", ("audit.extractors",)),
    ("graders", ("audit.graders",)),
    ("records", ("audit.models", "audit.behaviour", "audit.lock", "audit.producer", "audit.leaks",
                 "audit.verdicts.models", "audit.stats", "audit.prompts", "audit.judge.models", "audit.judge.templates",
                 "audit.judge.rules", "audit.judge.cases")),
    # typed records, lock files and versioned prompt templates (judge templates and parse rules too): data
    # shapes, no packages read
    ("packages", ("audit.packages", "audit.pack", "audit.outputs", "audit.schemas")),
    # packages: kinds, layout, validate, read, write; output paths; the schema files
    ("domain", ("audit.specs", "audit.grade", "audit.views", "audit.summary", "audit.verdicts", "audit.diff",
                "audit.release", "audit.bench", "audit.trace", "audit.floor", "audit.generate", "audit.importers",
                "audit.inference", "audit.taskruns", "audit.judge")),
    # one job each: grading, verdict files, diffs, releases, measurements, generation, importers
    ("claims", ("audit.claims",)),
    # claims recompute figures of every domain
    ("cli", ("audit.cli", "audit.demo")),
    # the command line and the demo, which drive everything
)

MAX_UPWARD = 2
"""Imports allowed from a lower layer to a higher one (issue 27). Today's, each in a function:
`audit.outputs` -> `audit.verdicts.read` (an output path may replace only a verdict file that reads as one)."""

FOLDERS = ("audit", "extractors", "graders")


def _module(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[0] != "audit":  # extractors/ and graders/ are audit.extractors and audit.graders
        parts.insert(0, "audit")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_only(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def import_graph() -> dict[str, set[str]]:
    """Each module's imports of other modules of the project, resolved to the file they load (`from audit.x
    import name` is an edge to `audit.x`, or to `audit.x.name` when that is a module)."""
    files = {_module(p): p for folder in FOLDERS for p in sorted((REPO / folder).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_only(tree)
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        edges: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for target in targets:
                if target.startswith(("extractors", "graders")):
                    target = f"audit.{target}"
                while target and target not in files:
                    target = target.rpartition(".")[0]
                if target and target != module:
                    edges.add(target)
        graph[module] = edges
    return graph


def layer_of(module: str) -> int:
    best = max(((len(prefix), i) for i, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes
                if module == prefix or module.startswith(prefix + ".")), default=None)
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best[1]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_graph_sees_function_level_and_relative_imports():
    graph = import_graph()
    assert "audit.verdicts.read" in graph["audit.outputs"]  # imported inside a function
    assert "audit.cli.app" in graph["audit.cli.grade_cmd"]
    assert "audit.packages.kinds" not in graph["audit.models"]
    assert len(graph) > 150 and sum(map(len, graph.values())) > 600
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_imports_draw_no_circle():
    assert cycles(import_graph()) == []


def test_at_most_two_imports_run_upward():
    graph = import_graph()
    upward = sorted(f"{a} ({LAYERS[layer_of(a)][0]}) -> {b} ({LAYERS[layer_of(b)][0]})"
                    for a, targets in graph.items() for b in targets if layer_of(b) > layer_of(a))
    assert len(upward) <= MAX_UPWARD, upward


def test_only_the_functions_named_in_pyproject_exceed_the_complexity_ceiling():
    import json
    import subprocess
    import sys
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    ceiling = config["tool"]["ruff"]["lint"]["mccabe"]["max-complexity"]
    excepted: dict[str, dict[str, int]] = config["tool"]["audit"]["complexity-exceptions"]
    ignored = {path for path, codes in config["tool"]["ruff"]["lint"]["per-file-ignores"].items() if "C901" in codes}
    assert ceiling == 20 and ignored == set(excepted)  # a file's C901 is ignored by ruff only when listed here
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--select", "C901", "--config",
                          f"lint.mccabe.max-complexity={ceiling}", "--output-format", "json", *sorted(excepted)],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    found = json.loads(out.stdout)
    above = {(Path(f["filename"]).relative_to(REPO).as_posix(), f["message"].split("`")[1]) for f in found}
    assert above <= {(path, name) for path, names in excepted.items() for name in names}, \
        "a function above the complexity ceiling that pyproject does not name: split it"
    assert above, "ruff found nothing: the check does not run"
