"""The one registry: every kind loads every module that registers anything (no hand-kept list to forget)."""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path

import pytest

from audit import registry
from audit.registry import Registry, RegistryError
from tests.conftest import REPO


def unloaded_registrations(reg: Registry, folder: Path, package: str) -> list[str]:
    """Keys that appear only when every module file under `folder` is imported by hand: registrations
    the registry's own loading never sees (a private module, a module of a subfolder it skips, ...)."""
    before = set(reg.keys())
    for path in sorted(folder.rglob("*.py")):
        parts = [p for p in path.relative_to(folder).with_suffix("").parts if p != "__init__"]
        importlib.import_module(".".join([package, *parts]))
    return sorted(set(reg.keys()) - before)


@pytest.mark.parametrize("kind,folder", [("extractor", "extractors"), ("grader", "graders")])
def test_every_module_that_registers_is_loaded_by_its_registry(kind, folder):
    from audit import lock

    reg, _ = lock.registry_and_lock(kind)
    assert unloaded_registrations(reg, REPO / folder, f"audit.{folder}") == []
    # ...and everything registered comes from that folder.
    assert all(c.fn.__module__.startswith(f"audit.{folder}.") for c in reg)


def test_the_check_sees_a_module_the_registry_skips(tmp_path, monkeypatch):
    # A family in a private module is skipped by the loader: the check above must say so.
    pkg = tmp_path / "probe_families"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent('''
        from audit.registry import Registry
        REG = Registry("probe", home=__name__)
        class Probe:
            def __init__(self, name, version):
                self.name, self.version, self.key, self.fingerprint = name, version, f"{name}@{version}", "0" * 64
    '''), encoding="utf-8")
    (pkg / "public.py").write_text("from probe_families import REG, Probe\nREG.add(Probe('seen', '1'))\n",
                                   encoding="utf-8")
    (pkg / "_hidden.py").write_text("from probe_families import REG, Probe\nREG.add(Probe('hidden', '1'))\n",
                                    encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        reg = importlib.import_module("probe_families").REG
        assert reg.keys() == ["seen@1"]  # public modules load on first use
        assert unloaded_registrations(reg, pkg, "probe_families") == ["hidden@1"]
    finally:
        for name in [m for m in sys.modules if m.startswith("probe_families")]:
            del sys.modules[name]


def test_one_registry_per_kind():
    from audit import extractors, graders
    from audit import prompts

    assert registry.table("extractor") is extractors.REGISTRY
    assert registry.table("grader") is graders.REGISTRY
    assert registry.table("prompt template") is prompts.REGISTRY
    assert {"extractor", "grader", "prompt template"} <= set(registry.kinds())
    with pytest.raises(RegistryError, match="the grader registry belongs to audit.graders"):
        registry.table("grader", home="elsewhere")
