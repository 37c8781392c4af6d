"""Registry, fingerprints and the lock file for graders."""

from __future__ import annotations

import sys

import pytest
from tests.builders import load_source

from audit import graders
from audit.lock import read_lock


def test_every_family_registers():
    keys = {g.key for g in graders.all_graders()}
    assert keys >= {"math.equiv@1", "math.equiv@2", "math.equiv@3", "math.hendrycks@985bdc1", "math.mathverify@0.9.0", "exact.hle@1",
                    "choice@1"}


def test_each_family_module_names_its_sources():
    for g in graders.all_graders():
        doc = sys.modules[g.fn.__module__].__doc__ or ""
        assert "Source" in doc, g.key
        assert g.description and g.source


def test_get_by_name_and_version():
    assert graders.get("math.equiv") is graders.get("math.equiv@3")  # the latest version
    assert graders.get("math.equiv@1").key == "math.equiv@1"
    with pytest.raises(graders.RegistryError, match="unknown grader 'math.equiv@9'"):
        graders.get("math.equiv@9")


def test_math_versions_are_small_subclasses_of_one_engine():
    # Each math.equiv version is a subclass of MathEngine (or of the version it revises) plus a frozen config;
    # its registered functions call through an instance, and each version's fingerprint is its own locked one.
    import dataclasses

    from audit.graders.math.engine import MathEngine
    from audit.graders.math.v1 import MathEquiv1
    from audit.graders.math.v2 import MathEquiv2
    from audit.graders.math.v3 import MathEquiv3

    assert MathEquiv1.__bases__ == (MathEngine,) and MathEquiv2.__bases__ == (MathEngine,)
    assert MathEquiv3.__bases__ == (MathEquiv2,)
    lock = read_lock(graders.LOCK_FILE).entries
    fingerprints = {}
    for n, cls in ((1, MathEquiv1), (2, MathEquiv2), (3, MathEquiv3)):
        g = graders.get(f"math.equiv@{n}")
        assert g.fn.__module__ == cls.__module__ == f"audit.graders.math.v{n}"
        assert dataclasses.is_dataclass(g.config) and g.config.__dataclass_params__.frozen
        assert cls().config == g.config
        assert g.fingerprint in lock[f"math.equiv@{n}"].fingerprints
        fingerprints[n] = set(lock[f"math.equiv@{n}"].fingerprints)
    assert not fingerprints[1] & fingerprints[2] and not fingerprints[2] & fingerprints[3]
    assert not hasattr(graders.get("math.equiv@2").config, "rel_tol")


def test_no_function_of_the_math_package_is_a_copy_of_another():
    # One engine: a step lives in one place. Two functions or methods with the same body (beyond a line
    # or two) in graders/math/ would be a copy that can drift from its original.
    import ast

    from tests.conftest import REPO

    bodies: dict[str, str] = {}
    for path in sorted((REPO / "graders" / "math").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = node.body[1:] if ast.get_docstring(node) else node.body
                if sum(1 for _ in ast.walk(ast.Module(body=body, type_ignores=[]))) < 40:
                    continue  # one-liners may coincide
                key = ast.dump(ast.Module(body=body, type_ignores=[]))
                where = f"{path.name}:{node.name}"
                assert key not in bodies, f"{where} repeats {bodies[key]}"
                bodies[key] = where
    assert len(bodies) > 50


def test_a_fingerprint_covers_the_engine_class_a_version_calls_through(tmp_path):
    # A registered function that calls through an instance of an engine class: the class's methods and
    # the helpers they name are part of the fingerprint, so editing any of them moves it.
    src = """
from dataclasses import dataclass
from audit.graders import Judgment

def helper(s):
    return s.strip()

@dataclass(frozen=True)
class Cfg:
    budget_s: float = 5.0

class Engine:
    def __init__(self, config):
        self.config = config
    def grade(self, a, r):
        return self.same(helper(a), r)
    def same(self, a, r):
        return Judgment(True, "correct", "x") if a == r else Judgment(False, "incorrect", "x")

def fn(answer, reference, *, num_choices=None, config=Cfg()):
    return Engine(config).grade(answer, reference)
"""
    base = _fingerprint(tmp_path / "a", src)
    assert _fingerprint(tmp_path / "a2", src) == base
    for k, (old, new) in enumerate((("if a == r", "if a != r"), ("s.strip()", "s.lower()"))):
        assert _fingerprint(tmp_path / f"b{k}", src.replace(old, new)) != base, old


def test_a_subclass_fingerprint_covers_its_base_classes(tmp_path):
    # A version that is a small subclass of a shared engine runs the engine's methods: editing one
    # of them (or a helper only the base names) must move the subclass's fingerprint.
    src = """
from audit.graders import Judgment

def helper(s):
    return s.strip()

class Engine:
    def grade(self, a, r):
        return self.same(helper(a), r)
    def same(self, a, r):
        return Judgment(True, "correct", "x") if a == r else Judgment(False, "incorrect", "x")

class Middle(Engine):
    pass

class Version(Middle):
    def __init__(self, config):
        self.config = config

def fn(answer, reference, *, num_choices=None, config=None):
    return Version(config).grade(answer, reference)
"""
    base = _fingerprint(tmp_path / "a", src)
    assert _fingerprint(tmp_path / "a2", src) == base  # same code under the same module name: same fingerprint
    for k, (old, new) in enumerate((("if a == r", "if a != r"), ("s.strip()", "s.lower()"))):
        assert _fingerprint(tmp_path / f"b{k}", src.replace(old, new)) != base, old


def test_verdict_refuses_inconsistent_status():
    with pytest.raises(ValueError):
        graders.Judgment(False, "timeout", "x")
    with pytest.raises(ValueError):
        graders.Judgment(None, "maybe", "x")


def _fingerprint(folder, source: str) -> str:
    """The fingerprint of `fn` in `source`, loaded as the module `audit.graders._fp_probe` from `folder`
    (always the same module name: the name is part of a fingerprint, so it must not be what differs)."""
    from audit.registry import code_fingerprint

    folder.mkdir()
    return code_fingerprint(load_source(folder, "audit.graders._fp_probe", source).fn, config=None)


GRADER_SRC = '''
from dataclasses import dataclass
from audit.graders import Judgment

TOLERANCE = {tol}

@dataclass(frozen=True)
class Cfg:
    budget_s: float = 5.0

def helper(a, b):
    return abs(float(a) - float(b)) <= TOLERANCE

def fast(answer, reference, *, num_choices=None, config=None):
    return None

def fn(answer, reference, *, num_choices=None, config=None):
    ok = helper(answer, reference)
    return Judgment(ok, "correct" if ok else "incorrect", "")
'''


def test_fingerprint_covers_helpers_constants_fast_path_and_config(tmp_path):
    a = load_source(tmp_path, "audit.graders._fp_a", GRADER_SRC.format(tol="0.5"))
    b = load_source(tmp_path, "audit.graders._fp_b", GRADER_SRC.format(tol="0.25"))

    def make(mod, cfg, fast=True):
        return graders.Grader("t", "1", "", "", mod.fn, cfg, mod.fast if fast else None, True)

    base = make(a, a.Cfg())
    assert base.fingerprint == make(a, a.Cfg()).fingerprint
    assert base.fingerprint != make(b, b.Cfg()).fingerprint  # a constant reached through a helper
    assert base.fingerprint != make(a, a.Cfg(budget_s=1.0)).fingerprint  # the config
    assert base.fingerprint != make(a, a.Cfg(), fast=False).fingerprint  # the fast path
    assert base.budget_s == 5.0
