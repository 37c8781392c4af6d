"""The importer catalog: every importer declares its name, its formats and its command, and nothing else lists them.

A new importer is three files (its module in audit/importers/, its command in audit/cli/imports/, its test):
these tests fail when an importer has no command or no detection entry, when a command module is in no
importer's entry, when `audit import` lists anything but the catalog, and when detection or the
`import verdicts` hint would need an edit of detect.py for a new format.
"""

from __future__ import annotations

import importlib
import pkgutil

import click
import pytest

from audit.cli.import_cmd import import_group
from audit.importers import detect
from audit.importers.formats import IMPORTERS, Format, Importer, register_importer


def test_every_importer_has_a_command_module_defining_exactly_its_command():
    for name, imp in IMPORTERS.items():
        module = importlib.import_module(imp.command)
        commands = [v for v in vars(module).values() if isinstance(v, click.Command) and v is not import_group]
        assert [c.name for c in commands] == [name], (imp.command, [c.name for c in commands])
        assert import_group.commands[name] is commands[0]


def test_every_command_module_belongs_to_one_importer():
    import audit.cli.imports as pkg

    modules = {f"audit.cli.imports.{m.name}" for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")}
    assert modules - {"audit.cli.imports.common"} == {imp.command for imp in IMPORTERS.values()}
    assert len({imp.command for imp in IMPORTERS.values()}) == len(IMPORTERS)


def test_the_cli_lists_exactly_the_catalog(cli):
    r = cli("import", "--help")
    assert r.code == 0
    listed = r.out.split("Commands:\n", 1)[1].splitlines()
    assert sorted(line.split()[0] for line in listed if line.strip()) == sorted(IMPORTERS)
    assert sorted(import_group.commands) == sorted(IMPORTERS)
    assert sorted(IMPORTERS) == ["alpaca-eval", "arena-hard", "hle-judged", "inspect", "inspect-judged", "lighteval",
                                 "lm-eval", "mmlu-pro", "table", "task-runs", "verdicts"]


def test_every_importer_declares_a_format_it_reads_and_every_format_key_is_unique():
    for name, imp in IMPORTERS.items():
        assert any(f.importer == name for f in imp.formats), name
        for f in imp.formats:
            assert f.record is not None or f.document is not None or f.suffixes, f.key
    keys = [f.key for f in detect.formats()]
    assert len(keys) == len(set(keys))
    assert keys[:4] == ["verdict-file", "diff-report", "release-info", "package"]  # audit's own, first


@pytest.fixture
def new_importer():
    """An importer registered the way a new module would (removed again afterwards)."""
    fmt = Format("toy-log", "a toy harness log (toy_id, toy_answer)", "audit import toy FILE -o OUT", "toy", order=15,
                 record=lambda keys: {"toy_id", "toy_answer"} <= keys,
                 verdicts_hint="; its run's own verdicts: `audit import toy FILE --recorded OUT.json`")
    imp = register_importer(Importer("toy", "audit.cli.imports.toy", (fmt,), fields=frozenset({"toy_id"})), __name__)
    yield imp
    del IMPORTERS["toy"]


def test_a_new_importer_is_detected_from_its_entry_alone(new_importer, tmp_path):
    (fmt,) = new_importer.formats
    src = tmp_path / "toy.jsonl"
    src.write_text('{"toy_id": 1, "toy_answer": "B", "response": "x"}\n')
    assert detect.sniff(src) is fmt
    assert detect.wrong_importer(src, "lm-eval") is fmt
    assert detect.wrong_importer(src, "toy") is None
    assert detect.wrong_importer_for_verdicts(src) == (
        f"this looks like a toy harness log (toy_id, toy_answer); its run's own verdicts: `audit import toy {src} "
        f"--recorded OUT.json`")
    other = tmp_path / "other.jsonl"
    other.write_text('{"question": "q", "text": "t"}\n')
    assert detect.wrong_importer(other, "toy").what == "a table with other columns (question, text)"


def test_detection_order_is_the_declared_order():
    # A record with both lm-eval's and response-row fields is an lm-eval samples file (order 10 before 60).
    assert detect.classify_record({"doc_id": 0, "resps": [], "item_id": "a", "response": "r"}).key == "lm-eval-samples"
    assert detect.classify_record({"item_id": "a", "response": "r", "correct": True}).key == "verdicts-table"
    assert detect.classify_record({"whatever": 1}) is detect.TABLE
    assert detect.classify_document({"kind": "verdicts", "results": {}, "config": {}}) is detect.VERDICT_FILE
