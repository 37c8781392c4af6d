"""The public API (`import audit`), the import names `audit.extractors` / `audit.graders`, and the
direction of imports: extractors <- graders <- the rest of audit."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import tomllib

import pytest

import audit
from tests.conftest import REPO

API = {
    "grade_package": "audit.grade.passes", "resolve_config": "audit.specs", "reproduce": "audit.grade.reproduction",
    "diff_files": "audit.diff.compare", "build_release": "audit.release.build",
    "verify_release": "audit.release.verify",
    "open_package": "audit.packages.read", "load_verdict_file": "audit.verdicts.read",
}


def _python(code: str, cwd=REPO, **env: str) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120)


@pytest.mark.parametrize("name", sorted(API))
def test_import_audit_exposes_the_api(name):
    obj = getattr(audit, name)
    assert obj.__module__ == API[name] and callable(obj)
    assert name in audit.__all__ and name in dir(audit)


def test_extractors_and_graders_are_attributes_of_audit():
    import audit.extractors
    import audit.graders

    assert audit.extractors.get("boxed@1").key == "boxed@1"
    assert audit.graders.get("choice@1").grade("B", "B").correct is True
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        audit.nope  # noqa: B018


MODULES = "import sys, json; print(json.dumps(sorted(m for m in sys.modules if m.startswith(('audit', 'pandas', " \
          "'pydantic', 'sympy', 'pyarrow')))))"


def test_importing_audit_loads_nothing_else():
    out = _python("import audit; " + MODULES)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == ["audit"]


def test_importing_the_extractors_does_not_drag_in_the_library():
    out = _python("import audit.extractors as e; e.get('mmlu_pro.official@f418b11'); " + MODULES)
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stdout)
    assert {m.split(".")[1] for m in loaded if m.startswith("audit.")} == {"extractors", "registry"}
    assert not [m for m in loaded if not m.startswith("audit")]


def test_importing_the_graders_loads_only_the_graders_and_their_libraries():
    out = _python("import audit.graders as g; g.get('choice@1'); " + MODULES)
    assert out.returncode == 0, out.stderr
    assert {m.split(".")[1] for m in json.loads(out.stdout) if m.startswith("audit.")} == {"graders", "registry"}


def test_every_kind_module_imports_without_pandas_or_scipy():
    # Any package check may import every kind module (a schema id is looked up kind by kind): `audit trace
    # --force` over its own earlier package paid 0.9 s for the release builder's pandas and scipy before.
    out = _python("import audit.packages.kinds as k, sys; k.KINDS.load(); "
                  "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pandas', 'scipy')))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_audit_release_gives_every_name_it_lists():
    import audit.release as release

    for name in release.__all__:
        assert getattr(release, name) is not None
    assert set(release.__all__) <= set(dir(release))


def _project_imports(path) -> set[str]:
    """Every module of this project a file imports, at any depth (deferred imports included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        found |= {n for n in names if n.split(".")[0] in ("audit", "extractors", "graders")}
    return found


@pytest.mark.parametrize("folder,allowed", [
    ("extractors", ("audit.extractors", "audit.registry")),
    ("graders", ("audit.graders", "audit.extractors", "audit.registry")),
])
def test_imports_run_one_way(folder, allowed):
    paths = sorted((REPO / folder).rglob("*.py"))  # subfolders too (graders/math/)
    for path in paths:
        for name in _project_imports(path):
            assert name == "audit" or name.startswith(allowed), f"{path.relative_to(REPO)} imports {name}"


def test_the_registry_imports_nothing_of_the_project():
    assert _project_imports(REPO / "audit" / "registry.py") == set()


@pytest.mark.parametrize("name", ["extractors", "graders", "graders._worker", "extractors.boxed"])
def test_the_bare_folder_names_cannot_be_imported_by_accident(name, tmp_path):
    # From the repository root the folders are on the path: importing them there is refused.
    out = _python(f"import {name}")
    top = name.split(".")[0]
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1] == (
        f"ImportError: import the {top} as `audit.{top}`, not `{top}`")
    # Anywhere else they do not exist.
    out = _python(f"import {name}", cwd=tmp_path)
    assert out.stderr.strip().splitlines()[-1] == f"ModuleNotFoundError: No module named '{top}'"


def test_pyproject_packages_every_package_and_maps_the_top_level_folders():
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    mapped = {"audit.extractors": "extractors", "audit.graders": "graders"}
    assert config["package-dir"] == mapped
    on_disk = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "audit").rglob("__init__.py")}
    for package, folder in mapped.items():  # subpackages of the mapped folders, e.g. audit.graders.math
        on_disk |= {".".join((package, *p.parent.relative_to(REPO / folder).parts))
                    for p in (REPO / folder).rglob("__init__.py")}
    assert set(config["packages"]) == on_disk
    assert config["package-data"] == {"audit": ["py.typed"], "audit.extractors": ["lock.json"],
                                      "audit.graders": ["lock.json"], "audit.judge": ["*.lock.json", "prompts/*.txt"],
                                      "audit.trace": ["_scan.pyi"]}
    assert (REPO / "audit" / "py.typed").is_file()
    # the one compiled module: its source is there, and its stub names what scan.py imports
    assert [(m["name"], m["sources"]) for m in config["ext-modules"]] == [("audit.trace._scan", ["audit/trace/_scan.c"])]
    assert (REPO / "audit" / "trace" / "_scan.c").is_file() and (REPO / "audit" / "trace" / "_scan.pyi").is_file()


@pytest.mark.slow
def test_the_wheel_layout_imports_and_grades(tmp_path):
    # What a non-editable install holds (pyproject's package-dir): extractors/ and graders/ inside audit/.
    site = tmp_path / "site"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "audit", site / "audit", ignore=ignore)
    shutil.copytree(REPO / "extractors", site / "audit" / "extractors", ignore=ignore)
    shutil.copytree(REPO / "graders", site / "audit" / "graders", ignore=ignore)
    code = ("import audit, audit.extractors as e, audit.graders as g, audit.lock as lock; "
            "print(e.__file__); print(g.__file__); "
            "print(e.get('boxed@1').extract('so \\\\boxed{4}').answer); "
            "print(g.get('math.equiv@2').grade('x^2+2x+1', '(x+1)^2').status); "  # through a worker process
            "print(lock.check(*lock.registry_and_lock('grader')))")
    out = _python(code, cwd=tmp_path, PYTHONPATH=str(site))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == str(site / "audit" / "extractors" / "__init__.py")
    assert lines[1] == str(site / "audit" / "graders" / "__init__.py")
    assert lines[2:] == ["4", "correct", "[]"]
