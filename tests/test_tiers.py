"""The two test tiers: `make test` (the gate and the fast tier) leaves out every `slow` test, and CI runs both,
so a test moved to the slow tier is still run, never skipped."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _recipe(target: str) -> str:
    """The recipe lines of one Makefile target (its tab-indented lines)."""
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    m = re.search(rf"^{re.escape(target)}:[^\n]*\n((?:\t[^\n]*\n)+)", text, re.M)
    assert m, f"Makefile has no target {target}"
    return m.group(0)


def test_make_test_is_the_gate_and_the_fast_tier():
    recipe = _recipe("test")
    assert recipe.startswith("test: lint")
    assert '-m "not slow"' in recipe


def test_the_slow_tier_runs_exactly_the_slow_tests():
    assert "-m slow" in _recipe("test-slow")


def test_ci_runs_both_tiers():
    lines = [ln.strip() for ln in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    commands = [ln for ln in lines if ln and not ln.startswith("#")]
    assert "make test" in commands
    assert "exec make test-slow" in commands or "make test-slow" in commands


def test_the_slow_tier_is_a_marker_pytest_checks():
    """`-m "not slow"` and `-m slow` split the suite in two only if a misspelt marker fails: --strict-markers."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert "--strict-markers" in text
    assert '"slow: ' in text
    marked = [p.name for p in sorted((REPO / "tests").glob("test_*.py")) if "pytest.mark.slow" in p.read_text("utf-8")]
    assert len(marked) >= 10, marked
