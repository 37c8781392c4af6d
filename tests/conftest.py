"""Shared test fixtures: the real data in ../shared/data and an in-process CLI runner."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("AUDIT_SHARED_DATA", REPO.parent / "shared" / "data"))


def shared_path(rel: str) -> Path:
    """A file of the real public data; fails under CI when missing, skips elsewhere."""
    p = SHARED_DATA / rel
    if not p.exists():
        msg = f"real data missing: {p} (see ../shared/data/README.md)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return p


@pytest.fixture
def shared():
    return shared_path


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A fresh folder, made the working directory for the test (relative CLI paths land in it)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys):
    """Run `audit ARGS...` in-process; returns exit code, stdout and stderr."""
    from audit.cli import main

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        code = main([str(a) for a in args])
        cap = capsys.readouterr()
        return CliResult(code, cap.out, cap.err)

    return run


# The attack registry's summary line ("attacks: N tried, M held"); see tests/attacks.py.
from tests.attacks import pytest_collection_modifyitems, pytest_runtest_logreport, pytest_terminal_summary  # noqa: E402,F401
