"""The extractor registry: lookup, immutability (duplicates, lock file) and the fingerprint mechanism."""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import textwrap

import pytest

from audit import extractors
from audit.extractors import Extraction, Extractor, RegistryError
from audit.registry import Registry, code_fingerprint


def test_get_pinned_and_latest():
    pinned = extractors.get("mmlu_pro.official@f418b11")
    assert pinned.key == "mmlu_pro.official@f418b11"
    assert extractors.get("mmlu_pro.official") is pinned
    got = pinned.extract("... so the answer is (C).")
    assert got == Extraction("C", "L1", (11, 24))


def test_unknown_names_raise_and_list_the_known_ones():
    with pytest.raises(RegistryError, match=r"unknown extractor 'mmlu_pro.official@0000000' \(known: .*boxed@1"):
        extractors.get("mmlu_pro.official@0000000")
    with pytest.raises(RegistryError, match="unknown extractor 'nope'"):
        extractors.get("nope")


def test_registering_a_duplicate_version_raises():
    ex = extractors.get("boxed@1")
    with pytest.raises(RegistryError, match="boxed@1 is already registered"):
        extractors.REGISTRY.add(Extractor(ex.name, ex.version, "again", "audit", ex.fn))
    with pytest.raises(RegistryError, match="already registered"):
        extractors.register("boxed", "1", description="again", rules=("none",))(lambda text, *, finish_reason=None: None)


def test_latest_is_the_version_registered_last():
    reg: Registry[Extractor] = Registry("extractor")

    def fn(text, *, finish_reason=None):
        return Extraction(None, "none")

    reg.add(Extractor("x", "1", "", "audit", fn))
    reg.add(Extractor("x", "2", "", "audit", fn))
    assert reg.get("x").version == "2"
    assert reg.get("x@1").version == "1"
    with pytest.raises(RegistryError, match="bad extractor name"):
        reg.add(Extractor("x@y", "3", "", "audit", fn))


def test_every_family_module_documents_its_source_and_traps():
    modules = sorted({e.fn.__module__ for e in extractors.all_extractors()})
    assert len(modules) >= 6
    for mod in modules:
        doc = importlib.import_module(mod).__doc__ or ""
        assert "Source:" in doc, mod
        assert "traps" in doc.lower(), mod


# --------------------------------------------------------------------------- the fingerprint mechanism

MODULE = '''
import re

from audit.extractors import Extraction

_PATTERN = re.compile(r"answer is ([A-D])")
LIMIT = 10


def _helper(text):
    return _PATTERN.search(text[:LIMIT * 100])


def extract(text, *, finish_reason=None):
    m = _helper(text)
    return Extraction(m.group(1) if m else None, "x" if m else "none")
'''


def _load(tmp_path, name, source):
    """Load `source` as module audit.extractors.<name> (fingerprints read the source of project modules only)."""
    path = tmp_path / str(len(list(tmp_path.iterdir()))) / f"{name}.py"
    path.parent.mkdir()
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"audit.extractors.{name}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def fingerprint_of(tmp_path):
    loaded = []

    def fp(source, config=None):
        # The same module name every time: a fingerprint names the module of each function.
        name = "_fp_probe"
        loaded.append(name)
        return code_fingerprint(_load(tmp_path, name, source).extract, config=config)

    yield fp
    for name in loaded:
        sys.modules.pop(f"audit.extractors.{name}", None)


def test_identical_copies_have_the_same_fingerprint(fingerprint_of):
    assert fingerprint_of(MODULE) == fingerprint_of(MODULE)


@pytest.mark.parametrize("old,new", [
    ('"x" if m else "none"', '"y" if m else "none"'),          # the function itself
    ("return _PATTERN.search", "return _PATTERN.match"),       # a helper it calls
    ('r"answer is ([A-D])"', 'r"answer is ([A-E])"'),          # a compiled pattern it reaches
    ("LIMIT = 10", "LIMIT = 11"),                              # a constant
])
def test_a_modified_copy_has_another_fingerprint(fingerprint_of, old, new):
    assert old in MODULE
    assert fingerprint_of(MODULE) != fingerprint_of(MODULE.replace(old, new))


def test_pattern_flags_and_config_are_part_of_the_fingerprint(fingerprint_of):
    flagged = MODULE.replace('re.compile(r"answer is ([A-D])")', 're.compile(r"answer is ([A-D])", re.I)')
    assert fingerprint_of(MODULE) != fingerprint_of(flagged)
    assert fingerprint_of(MODULE, config={"letters": "ABCD"}) != fingerprint_of(MODULE, config={"letters": "ABC"})


def test_registered_fingerprints_cover_helpers_in_other_modules():
    # mmlu_pro.official reaches audit.extractors._scan.last_match through a global name.
    from audit.extractors import _scan, mmlu_pro

    assert re.search(r"def last_match", "".join(_scan.__dict__.get("__doc__") or "") + "def last_match")
    before = code_fingerprint(mmlu_pro.official)
    original = _scan._FIRST_WINDOW
    try:
        _scan._FIRST_WINDOW = original + 1
        assert code_fingerprint(mmlu_pro.official) != before
    finally:
        _scan._FIRST_WINDOW = original
    assert code_fingerprint(mmlu_pro.official) == before


@pytest.mark.parametrize("key", [e.key for e in extractors.all_extractors()])
def test_every_declared_rule_is_explained_in_words(key):
    # `audit grade` and `audit diff` print what a rule label means; the words sit beside the extractor's code
    # (RULE_WORDS), keyed by the rules it declares at registration, so a new rule without words fails here.
    e = extractors.get(key)
    missing = [r for r in (*e.rules, "no_response") if not e.explain(r)]
    assert missing == []
    assert e.explain("no_such_rule") is None


def test_rule_words_are_no_part_of_the_fingerprint():
    # Rewording a rule changes no version: the words are documentation, not behaviour.
    from audit.extractors import mmlu_pro

    e = extractors.get("mmlu_pro.official@f418b11")
    before = e.fingerprint
    assert e.explain("L3") == "fallback: the last standalone capital A-J anywhere in the text"
    saved = mmlu_pro.RULE_WORDS
    try:
        mmlu_pro.RULE_WORDS = {"mmlu_pro.official": {"L3": "reworded"}}
        assert e.explain("L3") == "reworded"
        assert code_fingerprint(e.fn) == before
    finally:
        mmlu_pro.RULE_WORDS = saved


def test_every_rule_strength_is_declared_for_a_rule_the_extractor_reports():
    """Issue 20: each answer rule declares how strong a read it is, in a table beside the code (outside the
    fingerprint, like the rule words); every answer rule the golden rows reach has one."""
    import json
    import sys
    from pathlib import Path

    from audit.extractors import STRENGTHS

    answered: dict[str, set[str]] = {}
    for path in (Path(__file__).parent / "golden" / "extractors").glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").split("\n"):
            if line.strip():
                row = json.loads(line)
                if row["answer"] is not None:
                    answered.setdefault(row["extractor"], set()).add(row["rule"])
    # One table per name serves every version of it: each rule it rates is one some version reports.
    rules_of_name: dict[str, set[str]] = {}
    for ex in extractors.all_extractors():
        rules_of_name.setdefault(ex.name, set()).update(ex.rules)
    for ex in extractors.all_extractors():
        table = getattr(sys.modules[ex.fn.__module__], "RULE_STRENGTH")[ex.name]
        assert set(table) <= rules_of_name[ex.name], ex.key
        assert set(table.values()) <= set(STRENGTHS), ex.key
        assert answered.get(ex.key, set()) <= set(table), (ex.key, answered.get(ex.key, set()) - set(table))
        assert ex.strength(None) is None and ex.strength("none") is None
    assert extractors.get("mmlu_pro.official@f418b11").strength("L3") == "fallback"
    assert extractors.get("mmlu_pro.statements@1").strength("L1") == "statement"
