"""Package kinds as registered components (`audit.packages.kinds`): every list of kinds, row models,
row keys and document schemas derives from the catalog, a kind's typed `extra` is checked on read, and
`audit show` reads a package through its kind, which recomputes and refuses a mismatch."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pydantic
import pytest

from audit import models, registry
from audit.errors import AuditError
from audit.packages import PackageWriter, kinds, layout
from audit.packages.kinds import Kind, get_kind, kind_names, register_kind
from audit.packages.validate import load_manifest, unknown_kind
from tests.attack_tools import sha256
from tests.claims_helpers import PACKAGES

BENCH = PACKAGES / "evidence-h200-bench"

NAMES = ("responses", "items", "verdicts", "release", "throughput", "telemetry", "profile", "checkpoint-headers",
         "task-runs", "judge-calls")


def test_every_kind_is_registered_once_and_the_lists_derive_from_the_catalog():
    assert kind_names() == NAMES
    # The manifest's schema names no kind (a new kind leaves the published file as it is): a safe name only.
    kind = models.Manifest.model_json_schema()["properties"]["kind"]
    assert "enum" not in kind and all(re.fullmatch(kind["pattern"], n) for n in NAMES)
    rows = {s: m for k in kinds.KINDS.values() for s, m in k.rows.items()}
    assert dict(kinds.ROW_MODELS) == rows and len(rows) == 15  # release_row.v2 and release_public_text.v1 (issue 28)
    assert dict(layout.ROW_KEYS)["response_row.v1"] == ("item_id", "sample", "attempt")
    assert set(layout.DOCUMENT_SCHEMAS) == {"trace_summary.v1"}


def test_a_kind_or_a_schema_registered_twice_is_refused():
    with pytest.raises(registry.DuplicateError, match="package kind 'responses' is already registered"):
        register_kind(Kind("responses", "again"), __name__)
    with pytest.raises(registry.DuplicateError, match="row or document schema 'item_row.v1' is already registered"):
        register_kind(Kind("items-again", "again", rows={"item_row.v1": models.ItemRow}), __name__)
    assert "items-again" not in kinds.KINDS


def test_an_unknown_kind_names_the_known_ones():
    with pytest.raises(registry.UnknownError) as e:
        get_kind("nope")
    assert str(e.value) == f"unknown package kind 'nope' (known: {', '.join(sorted(NAMES))})"
    manifest = {"schema_version": 2, "package_id": "x", "kind": "nope", "created": "t",
                "producer": {"version": "1"}, "files": []}
    models.Manifest.model_validate(manifest)  # a safe name: the model leaves the registry to validate
    assert unknown_kind("nope") == str(e.value) and unknown_kind("responses") is None
    for bad in ("Nope", "../x", "a b", "", "-x", "x" * 65):
        with pytest.raises(pydantic.ValidationError):
            models.Manifest.model_validate({**manifest, "kind": bad})


def test_validate_refuses_a_manifest_whose_kind_is_not_registered(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({
        "schema_version": 2, "package_id": "x", "kind": "weights", "created": "t", "producer": {"version": "1"},
        "files": []}))
    manifest, problems = load_manifest(tmp_path, "pkg")
    assert manifest is None
    assert [str(p) for p in problems] == [
        f"pkg/manifest.json: field kind: unknown package kind 'weights' (known: {', '.join(sorted(NAMES))})"]
    with pytest.raises(AuditError, match="^unknown package kind 'weights'"):
        PackageWriter(tmp_path / "out", kind="weights")
    assert not list(tmp_path.glob(".out.partial-*"))


def test_a_catalog_imports_its_homes_only_until_a_name_is_found():
    cat = registry.Catalog("test thing", homes=("json", "audit.packages.kinds"))
    cat.add("b", 2, home="audit.packages.kinds")
    cat.add("a", 1, home="json")
    assert cat.find("b") == 2 and cat._imported == 0  # found: nothing imported
    assert list(cat) == ["a", "b"]  # in the order of the homes that registered them
    assert cat.get("zzz") is None and "zzz" not in cat
    with pytest.raises(registry.DuplicateError):
        cat.add("a", 3)
    cat.add("a", 1)  # the same entry again (a module imported twice) is accepted


def test_a_schema_lookup_imports_no_kind_module_past_the_one_that_registers_the_id():
    # trace_summary.v1 is the profile kind's document: asking whether it is a row schema must not import the
    # kind modules listed after it (it imported all of them, 0.35 s, on every `audit trace --force`).
    code = ("import sys; import audit.trace.package; from audit.packages.kinds import ROW_MODELS, ROW_KEYS, "
            "DOCUMENT_SCHEMAS; print('trace_summary.v1' in ROW_MODELS, ROW_KEYS.get('trace_summary.v1'), "
            "'trace_summary.v1' in DOCUMENT_SCHEMAS, 'profile_step.v1' in DOCUMENT_SCHEMAS, 3 in ROW_MODELS); "
            "print(sorted(m for m in sys.modules if m.endswith(('.kind', '.store')) or m == 'audit.floor.package'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["False None True False False", "[]"]
    assert "nope.v1" not in kinds.ROW_MODELS  # an unknown id still looks through every kind


def _with_summary(dest: Path, edit: Callable[[dict], object]) -> Path:
    """A copy of the ngram throughput package whose summary.json `edit` changed, pinned again in its manifest."""
    pkg = Path(shutil.copytree(BENCH / "ngram", dest))
    summary = json.loads((pkg / "summary.json").read_text())
    edit(summary)
    data = (json.dumps(summary, indent=2) + "\n").encode()
    (pkg / "summary.json").write_bytes(data)
    manifest = json.loads((pkg / "manifest.json").read_text())
    entry = next(f for f in manifest["files"] if f["path"] == "summary.json")
    entry.update(sha256=sha256(data), bytes=len(data))
    (pkg / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return pkg


def test_show_recomputes_a_throughput_package_and_refuses_a_stored_summary_that_differs(tmp_path, cli):
    pkg = _with_summary(tmp_path / "ngram", lambda s: s["tok_s"].update(mean=s["tok_s"]["mean"] + 100.0))
    assert cli("validate", pkg).code == 0  # the bytes are pinned: only the kind's reader sees the figures differ
    r = cli("show", pkg)
    assert r.code == 1 and r.out == ""
    assert "summary.json: differs from the figures recomputed from the rows: tok_s.mean" in r.err


def test_show_checks_a_kinds_typed_extra(tmp_path, cli):
    pkg = Path(shutil.copytree(BENCH / "ngram", tmp_path / "ngram"))
    m = json.loads((pkg / "manifest.json").read_text())
    del m["provenance"]["extra"]["run"]["stall_s"]
    (pkg / "manifest.json").write_text(json.dumps(m, indent=2))
    r = cli("show", pkg)
    assert r.code == 2 and r.out == ""
    assert r.err == f"audit: error: {pkg}: manifest.json: field provenance.extra.run.stall_s: missing required field\n"


def test_a_kind_reads_back_its_own_type_and_checks_the_link_to_the_package_it_belongs_to():
    import typing

    from audit.bench import store
    from audit.packages import open_package

    # One reader per kind, given (pkg, label), and the viewer of what it gives: no wrapper per kind.
    assert store.THROUGHPUT.reader is store.read_throughput and store.TELEMETRY.reader is store.read_telemetry
    assert typing.get_type_hints(store.read_throughput)["return"] is store.Throughput
    assert store.TELEMETRY.link == kinds.Link("throughput", "throughput") and store.THROUGHPUT.link is None
    with open_package(BENCH / "graphs") as graphs, open_package(BENCH / "eager") as eager, \
            open_package(BENCH / "graphs.telemetry") as tel:
        run = store.THROUGHPUT.read(graphs, "graphs")
        assert isinstance(run, store.Throughput) and run.summary.tok_s.n
        assert store.THROUGHPUT.show(run)[0].startswith("tok/s ")
        assert isinstance(store.TELEMETRY.read(tel, linked=graphs), store.Telemetry)
        with pytest.raises(AuditError) as e:
            store.TELEMETRY.read(tel, "graphs.telemetry", linked=eager)
        assert str(e.value).startswith("graphs.telemetry: belongs to throughput package throughput-graphs-")
        assert f"not {eager.manifest.package_id} (digest {eager.digest[:12]}...)" in str(e.value)
        with pytest.raises(AuditError, match="^graphs: belongs to no package of another kind"):
            store.THROUGHPUT.read(graphs, "graphs", linked=eager)
        with pytest.raises(AuditError, match="^x: belongs to a throughput package, not to a telemetry package"):
            store.TELEMETRY.read(tel, "x", linked=tel)
        with pytest.raises(AuditError, match="^x: is a 'telemetry' package, expected 'throughput'"):
            store.THROUGHPUT.read(tel, "x")
