"""Lock files: every registered version is locked, its behaviour digest holds, and the lock resists an
attacker: a hand-edited entry is caught, and a changed behaviour is never migrated as the same version."""

from __future__ import annotations

import hashlib
import inspect
import json
import shutil
import subprocess
import sys

import pytest

from audit import extractors
from audit import graders
from audit import behaviour, lock
from audit.errors import AuditError
from audit.registry import Registry
from tests.builders import load_source
from tests.conftest import REPO, shared_path

KINDS = {"extractor": extractors, "grader": graders}


# --------------------------------------------------------------------------- the committed locks


@pytest.mark.parametrize("kind", KINDS)
def test_every_registered_version_is_locked_under_an_accepted_fingerprint(kind):
    registry, path = lock.registry_and_lock(kind)
    assert lock.check(registry, path) == []
    assert set(lock.read_lock(path).entries) == set(registry.keys())


def _locked_keys(kind):
    return sorted(json.loads((REPO / f"{kind}s" / "lock.json").read_text(encoding="utf-8")))


def _digest_now(request, kind: str, component) -> str:
    """The component's real-data digest, computed now, or remembered in pytest's cache from an earlier run
    of the same code (its fingerprint), the same data, the same digest code and the same libraries."""
    from importlib.metadata import version

    from audit.grade import ENVIRONMENT_PACKAGES

    ident = hashlib.sha256(json.dumps([
        kind, component.key, component.fingerprint, behaviour.REAL_FILES, inspect.getsource(behaviour),
        [version(p) for p in ENVIRONMENT_PACKAGES]]).encode()).hexdigest()
    cache = getattr(request.config, "cache", None)  # absent under -p no:cacheprovider
    name = f"audit/behaviour/{ident}"
    if cache is not None and cache.get(name, None):
        return cache.get(name, None)
    cases = behaviour.real_cases(kind)
    got = behaviour.digest(cases, behaviour.run(kind, component, cases))
    if cache is not None:
        cache.set(name, got)
    return got


@pytest.mark.shared_data
@pytest.mark.parametrize("kind,key", [(k, key) for k in KINDS for key in _locked_keys(k)])
def test_the_registered_code_reproduces_the_locked_behaviour_digest(request, kind, key):
    # A fingerprint added by hand for code that behaves differently, or an edited digest, fails here.
    shared_path(behaviour.REAL_FILES["mmlu_pro"][0])
    registry, path = lock.registry_and_lock(kind)
    assert _digest_now(request, kind, registry.get(key)) == lock.read_lock(path).entries[key].behaviour


# --------------------------------------------------------------------------- an attacker's lock

RAW = '''
from audit.extractors import Extraction


def raw(text, *, finish_reason=None):
    stripped = text.strip()
    if not stripped:
        return Extraction(None, "empty")
    start = len(text) - len(text.lstrip())
    return Extraction(stripped, "whole_response", (start, start + len(stripped)))
'''
CHANGED = RAW.replace("stripped = text.strip()", "stripped = text.rstrip()")
"""Leading whitespace kept: a behaviour change on some rows only."""


def _raw_variant(tmp_path, module: str, source: str) -> extractors.Extractor:
    """raw@1 with `source` loaded as module `module` (fingerprints name the module and read its source)."""
    return extractors.Extractor("raw", "1", "variant", "test", load_source(tmp_path, module, source).raw)


@pytest.fixture
def variants(tmp_path):
    made = []

    def make(module: str, source: str) -> extractors.Extractor:
        made.append(module)
        return _raw_variant(tmp_path, module, source)

    yield make
    for module in made:
        sys.modules.pop(module, None)


CASES = [behaviour.Case("probe", str(i), (text, None)) for i, text in enumerate(
    ["B", "  B", "\n\nThe answer is C\n", "   ", "x\ty ", "\u00a0D", " E F "])]
"""A small real-data stand-in: rows 1, 2 and 5 have leading whitespace."""


def _locked(tmp_path, component, cases=CASES):
    """A lock file holding `component` as raw@1 with its fingerprint and behaviour digest."""
    path = tmp_path / "lock.json"
    digest = behaviour.digest(cases, behaviour.run("extractor", component, cases))
    path.write_text(json.dumps({"raw@1": {"fingerprints": [component.fingerprint], "behaviour": digest}},
                               indent=2) + "\n", encoding="utf-8")
    return path


def _registry(component) -> Registry:
    reg: Registry = Registry("extractor")
    reg.add(component)
    return reg


def test_a_fingerprint_added_by_hand_for_changed_code_is_caught(tmp_path, variants, monkeypatch):
    locked = variants("audit.extractors._lock_probe_a", RAW)
    changed = variants("audit.extractors._lock_probe_b", CHANGED)
    path = _locked(tmp_path, locked)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["raw@1"]["fingerprints"].append(changed.fingerprint)  # the hand edit
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    reg = _registry(changed)
    assert lock.check(reg, path) == []  # the fingerprint alone looks fine...
    monkeypatch.setattr(behaviour, "real_cases", lambda kind: CASES)
    problems = lock.check_behaviour(reg, path)  # ...its behaviour does not
    assert len(problems) == 1 and problems[0].startswith("raw@1: the registered code's behaviour digest is ")


def test_an_edited_digest_is_caught(tmp_path, variants, monkeypatch):
    locked = variants("audit.extractors._lock_probe_a", RAW)
    path = _locked(tmp_path, locked)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["raw@1"]["behaviour"] = "0" * 64
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    monkeypatch.setattr(behaviour, "real_cases", lambda kind: CASES)
    assert lock.check_behaviour(_registry(locked), path) == [
        f"raw@1: the registered code's behaviour digest is {behaviour.digest(CASES, behaviour.run('extractor', locked, CASES))[:12]}, "
        "the lock records 000000000000: the code behaves differently from the locked version (or the lock was "
        "edited by hand)"]


@pytest.mark.parametrize("edit,problem", [
    (lambda d: d.pop("raw@1"), "raw@1: not in lock.json (new version: run `audit lock --update`)"),
    (lambda d: d.update({"gone@1": {"fingerprints": ["a" * 64], "behaviour": "b" * 64}}),
     "gone@1: locked but no longer registered; registered versions must not be removed"),
    (lambda d: d["raw@1"].update({"fingerprints": ["c" * 64]}),
     "raw@1: code changed under an unchanged version"),
    (lambda d: d["raw@1"].pop("behaviour"), "raw@1: no behaviour digest recorded (run `audit lock --update`)"),
])
def test_hand_edits_of_entries_are_caught(tmp_path, variants, edit, problem):
    locked = variants("audit.extractors._lock_probe_a", RAW)
    path = _locked(tmp_path, locked)
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    problems = lock.check(_registry(locked), path)
    assert problems and problems[0].startswith(problem)


def test_a_lock_not_in_canonical_form_is_caught(tmp_path, variants):
    locked = variants("audit.extractors._lock_probe_a", RAW)
    path = _locked(tmp_path, locked)
    path.write_text(path.read_text(encoding="utf-8").replace("  ", "    "), encoding="utf-8")
    assert lock.check(_registry(locked), path) == [
        "lock.json is not in the form `audit lock` writes (edited by hand?)"]


@pytest.mark.parametrize("entry", [
    {"fingerprints": ["A" * 64]}, {"fingerprints": []}, {"fingerprints": ["a" * 64, "a" * 64]},
    {"fingerprints": ["a" * 64], "behaviour": "xyz"}, {"fingerprints": ["a" * 64], "note": "trust me"}, ["a" * 64],
])
def test_malformed_entries_are_refused_naming_the_key(tmp_path, entry):
    path = tmp_path / "lock.json"
    path.write_text(json.dumps({"raw@1": entry}), encoding="utf-8")
    with pytest.raises(AuditError, match=r"lock.json: field raw@1: expected"):
        lock.read_lock(path)


def test_the_first_lock_format_is_read_as_one_fingerprint(tmp_path):
    path = tmp_path / "lock.json"
    path.write_text(json.dumps({"raw@1": "a" * 64}), encoding="utf-8")
    entry = lock.read_lock(path).entries["raw@1"]
    assert entry.fingerprints == ["a" * 64] and entry.behaviour is None


def test_update_adds_new_versions_and_missing_digests_only(tmp_path, variants, monkeypatch):
    monkeypatch.setattr(behaviour, "real_cases", lambda kind: CASES)
    old = variants("audit.extractors._lock_probe_a", RAW)
    changed = variants("audit.extractors._lock_probe_b", CHANGED)
    path = tmp_path / "lock.json"
    path.write_text(json.dumps({"raw@1": "0" * 64}), encoding="utf-8")  # first format, another fingerprint
    reg = _registry(changed)
    reg.add(extractors.Extractor("raw", "2", "new", "test", old.fn))
    assert lock.update(reg, path) == ["locked raw@2"]  # raw@1's code is not the locked one: left alone
    entries = lock.read_lock(path).entries
    assert entries["raw@1"].fingerprints == ["0" * 64] and entries["raw@1"].behaviour is None
    assert entries["raw@2"].behaviour == behaviour.digest(CASES, behaviour.run("extractor", old, CASES))
    assert path.read_text(encoding="utf-8") == lock.read_lock(path).dumps()
    assert lock.update(reg, path) == []


# --------------------------------------------------------------------------- migrate


def _first_changed_row(cases, a, b) -> str:
    """Independently of audit.behaviour: the first case whose extraction differs."""
    for c in cases:
        x, y = a.extract(*c.inputs[:1]), b.extract(*c.inputs[:1])
        if (x.answer, x.rule, x.span) != (y.answer, y.rule, y.span):
            return f"{c.source} row {c.row}"
    raise AssertionError("no row differs")


def test_moved_code_is_migrated_and_keeps_its_digest(tmp_path, variants):
    old = variants("audit.extractors._lock_probe_a", RAW)
    moved = variants("audit.extractors._lock_probe_moved", RAW)  # the same code under another module path
    assert moved.fingerprint != old.fingerprint
    path = _locked(tmp_path, old, CASES[3:])
    before = lock.read_lock(path).entries["raw@1"].behaviour
    msg = lock.migrate(_registry(moved), path, "raw@1", behaviour.in_process_baseline("old", old),
                       golden=CASES[:3], real=CASES[3:])
    assert msg == (f"raw@1: accepted fingerprint {moved.fingerprint[:12]} (identical to old on 3 golden rows and "
                   f"4 real-data rows)")
    entry = lock.read_lock(path).entries["raw@1"]
    assert entry.fingerprints == [old.fingerprint, moved.fingerprint]
    assert entry.behaviour == before
    assert lock.check(_registry(moved), path) == []


def test_changed_behaviour_is_refused_naming_the_first_differing_row(tmp_path, variants):
    old = variants("audit.extractors._lock_probe_a", RAW)
    changed = variants("audit.extractors._lock_probe_b", CHANGED)
    path = _locked(tmp_path, old)
    before = path.read_bytes()
    row = _first_changed_row(CASES, old, changed)
    with pytest.raises(AuditError) as e:
        lock.migrate(_registry(changed), path, "raw@1", behaviour.in_process_baseline("old", old),
                     golden=[], real=CASES)
    assert f"refusing to migrate raw@1: its behaviour changed (first difference: {row}: the locked code gives " \
           '["B","whole_response",[2,3]], this code gives ["  B","whole_response",[2,5]])' in str(e.value)
    assert path.read_bytes() == before  # nothing written


def test_a_baseline_that_is_not_the_locked_code_is_refused(tmp_path, variants):
    old = variants("audit.extractors._lock_probe_a", RAW)
    changed = variants("audit.extractors._lock_probe_b", CHANGED)
    moved = variants("audit.extractors._lock_probe_moved", CHANGED)
    path = _locked(tmp_path, old)
    # The attacker compares the changed code with itself: the baseline must be the locked code.
    with pytest.raises(AuditError, match=r"raw@1 as of self has fingerprint .*, which the lock does not accept"):
        lock.migrate(_registry(moved), path, "raw@1", behaviour.in_process_baseline("self", changed),
                     golden=[], real=CASES)


def test_a_digest_edited_to_match_is_refused(tmp_path, variants):
    old = variants("audit.extractors._lock_probe_a", RAW)
    moved = variants("audit.extractors._lock_probe_moved", RAW)
    path = _locked(tmp_path, old)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["raw@1"]["behaviour"] = "f" * 64
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    with pytest.raises(AuditError, match="the lock records ffffffffffff"):
        lock.migrate(_registry(moved), path, "raw@1", behaviour.in_process_baseline("old", old),
                     golden=[], real=CASES)


def test_protected_rows_are_shown_as_hashes():
    case = behaviour.Case("gpqa", "7", ("text", None), protected=True)
    shown = behaviour.first_difference([case], [["A secret passage", "x", [0, 16]]], [["B", "x", [0, 1]]])
    assert "secret" not in shown
    assert shown.startswith('gpqa row 7: the locked code gives ["<16 chars, sha256 ')


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("edit,accepted", [
    ("    stripped = text.strip()\n", True),  # a comment changes the code's text, not its behaviour
    ("    stripped = text.rstrip()\n", False),
])
def test_migrate_against_the_code_in_git(tmp_path, edit, accepted):
    """The baseline is the tree of a git commit, run in a fresh interpreter."""
    repo = tmp_path / "repo"
    for folder in ("audit", "extractors", "graders"):
        shutil.copytree(REPO / folder, repo / folder, ignore=shutil.ignore_patterns("__pycache__"))
    raw_py = repo / "extractors" / "raw.py"
    src = raw_py.read_text(encoding="utf-8")
    assert "    stripped = text.strip()\n" in src
    raw_py.write_text(src.replace("    stripped = text.strip()\n", "    # the locked code\n" + edit), encoding="utf-8")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "locked"]):
        subprocess.run(git + args, check=True, capture_output=True)
    base = behaviour.git_baseline("HEAD", repo)
    cases = [c for c in CASES]
    base_fp, base_out = base.run("extractor", "raw@1", cases)
    current = extractors.get("raw@1")
    assert base_fp != current.fingerprint
    path = tmp_path / "lock.json"
    path.write_text(json.dumps({"raw@1": {"fingerprints": [base_fp]}}) + "\n", encoding="utf-8")
    if accepted:
        msg = lock.migrate(_registry(current), path, "raw@1", base, golden=cases[:2], real=cases[2:])
        assert msg.startswith(f"raw@1: accepted fingerprint {current.fingerprint[:12]} (identical to HEAD (")
        assert lock.read_lock(path).entries["raw@1"].fingerprints == [base_fp, current.fingerprint]
    else:
        with pytest.raises(AuditError, match=r"its behaviour changed \(first difference: probe row 1: "):
            lock.migrate(_registry(current), path, "raw@1", base, golden=[], real=cases)


def test_golden_cases_are_every_input_row_and_skip_only_adjudications_by_digest(tmp_path):
    folder = tmp_path / "tests" / "golden" / "graders"
    folder.mkdir(parents=True)
    (folder / "a.jsonl").write_text('{"answer": "1", "reference": "1"}\n\n{"answer": null, "reference": "2", '
                                    '"num_choices": 4}\n', encoding="utf-8")
    # An adjudication of a case held elsewhere (Math-Verify's suite, by digest) has no inputs of its own.
    (folder / "b.jsonl").write_text('{"case": "t[0]", "digest": "ab", "truth": "incorrect"}\n', encoding="utf-8")
    cases = behaviour.golden_cases("grader", tmp_path)
    assert [(c.source, c.row, c.inputs) for c in cases] == [
        ("golden/a.jsonl", "1", ("1", "1", None)), ("golden/a.jsonl", "3", (None, "2", 4))]
    (folder / "b.jsonl").write_text('{"answer": "1", "note": "no reference"}\n', encoding="utf-8")
    with pytest.raises(AuditError, match=r"b\.jsonl.*golden row has no 'reference'"):
        behaviour.golden_cases("grader", tmp_path)
    # The committed tables: the Math-Verify adjudications are the only rows left out.
    rows = sum(1 for p in (REPO / "tests" / "golden" / "graders").glob("*.jsonl")
               for line in p.read_text(encoding="utf-8").splitlines() if line.strip())
    adjudications = REPO / "tests" / "golden" / "graders" / "mathverify_suite_adjudicated.jsonl"
    skipped = sum(1 for line in adjudications.read_text(encoding="utf-8").splitlines() if line.strip())
    assert len(behaviour.golden_cases("grader")) == rows - skipped > 0
