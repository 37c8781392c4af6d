"""audit: regrade, diff and release LLM evaluation results as verifiable artifacts.

    import audit

    grading = audit.grade_package("responses/", audit.resolve_config("mmlu_pro"), out="results.json")
    audit.reproduce("results.json").identical
    audit.diff_files("recorded.json", "results.json").has_changes
    audit.extractors.get("mmlu_pro.official@f418b11").extract(text)
    audit.graders.get("math.equiv@2").grade("x = 4", "4")

Names are imported on first use, so `import audit.extractors` loads the extractors and
nothing else: imports run one way, extractors <- graders <- the rest of audit.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version
from pathlib import Path
from typing import Any


def _checkout_version() -> str | None:
    """The version a source checkout's pyproject.toml states, beside this package: an editable install's metadata
    keeps the version it was installed at, and packages record this version as their producer's, by which a
    manifest of an older scheme than its producer writes is refused (`audit.producer`). None outside a checkout."""
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if not pyproject.is_file():
        return None
    import tomllib

    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    version = project.get("version") if project.get("name") == "audit" else None
    return version if isinstance(version, str) else None


try:
    __version__ = _checkout_version() or _version("audit")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

_FOLDERS = ("extractors", "graders")
"""Subpackages that live at the top of the repository (`extractors/`, `graders/`), by design."""


class _TopLevelFolders(importlib.abc.MetaPathFinder):
    """`audit.extractors` and `audit.graders` from the folders beside this package.

    A wheel holds them inside the package (pyproject's package-dir), where the normal
    import finds them; in a source checkout or an editable install they are the folders
    `extractors/` and `graders/` next to `audit/`. Resolving them from the `audit` actually
    imported keeps one tree per process, whatever else is on the path.
    """

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        parent, _, name = fullname.rpartition(".")
        if parent != __name__ or name not in _FOLDERS:
            return None
        here = Path(__file__).resolve().parent
        if (here / name).is_dir():
            return None  # an installed wheel: the ordinary finder reads audit/<name>/
        folder = here.parent / name
        init = folder / "__init__.py"
        if not init.is_file():
            return None
        return importlib.util.spec_from_file_location(fullname, init, submodule_search_locations=[str(folder)])


if not any(isinstance(f, _TopLevelFolders) for f in sys.meta_path):
    sys.meta_path.insert(0, _TopLevelFolders())

_API = {
    "grade_package": "audit.grade",
    "resolve_config": "audit.specs",
    "reproduce": "audit.grade",
    "diff_files": "audit.diff",
    "build_release": "audit.release",
    "verify_release": "audit.release",
    "open_package": "audit.packages",
    "load_verdict_file": "audit.verdicts",
}
"""The public API: name -> the module that defines it (imported on first use)."""

__all__ = ["__version__", "extractors", "graders", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:
        value = getattr(importlib.import_module(_API[name]), name)
        globals()[name] = value
        return value
    if name in _FOLDERS:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
