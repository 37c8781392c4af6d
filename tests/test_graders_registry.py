"""Registry, fingerprints and the lock file for graders."""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import pytest

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


def test_math_equiv2_reuses_v1_helpers_without_moving_v1s_fingerprint():
    # @2 imports @1's unchanged string helpers: their code is in both fingerprints, and @1's is the locked one
    import audit.graders.math as v1
    import audit.graders.math_v2 as v2

    assert v2._split_top is v1._split_top and v2._unwrap_outer is v1._unwrap_outer
    lock = read_lock(graders.LOCK_FILE).entries
    assert graders.get("math.equiv@1").fingerprint in lock["math.equiv@1"].fingerprints
    assert graders.get("math.equiv@2").fingerprint in lock["math.equiv@2"].fingerprints
    assert not set(lock["math.equiv@1"].fingerprints) & set(lock["math.equiv@2"].fingerprints)
    assert graders.get("math.equiv@1").config != graders.get("math.equiv@2").config
    assert not hasattr(graders.get("math.equiv@2").config, "rel_tol")


def test_math_equiv3_fingerprint_covers_its_engine_class_and_the_helpers_it_imports(tmp_path):
    # @3's registered function calls through an instance of its engine class: the class's methods and
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
    import audit.graders.math as v1
    import audit.graders.math_v3 as v3

    assert v3._split_top is v1._split_top  # imported, not copied
    lock = read_lock(graders.LOCK_FILE).entries
    assert graders.get("math.equiv@3").fingerprint in lock["math.equiv@3"].fingerprints
    assert not set(lock["math.equiv@3"].fingerprints) & (set(lock["math.equiv@1"].fingerprints)
                                                         | set(lock["math.equiv@2"].fingerprints))


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
    return code_fingerprint(_load(folder, "audit.graders._fp_probe", source).fn, config=None)


def _load(tmp_path, name: str, source: str):
    path = tmp_path / f"{name.replace('.', '_')}.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


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
    a = _load(tmp_path, "audit.graders._fp_a", GRADER_SRC.format(tol="0.5"))
    b = _load(tmp_path, "audit.graders._fp_b", GRADER_SRC.format(tol="0.25"))

    def make(mod, cfg, fast=True):
        return graders.Grader("t", "1", "", "", mod.fn, cfg, mod.fast if fast else None, True)

    base = make(a, a.Cfg())
    assert base.fingerprint == make(a, a.Cfg()).fingerprint
    assert base.fingerprint != make(b, b.Cfg()).fingerprint  # a constant reached through a helper
    assert base.fingerprint != make(a, a.Cfg(budget_s=1.0)).fingerprint  # the config
    assert base.fingerprint != make(a, a.Cfg(), fast=False).fingerprint  # the fast path
    assert base.budget_s == 5.0
