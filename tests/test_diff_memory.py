"""`diff_files` on gradings in memory (`VerdictRows`): the same report as on the files, nothing written."""

from __future__ import annotations

import pandas as pd
import pytest

from audit.diff import VerdictRows, diff_files
from audit.errors import AuditError
from audit.verdicts import read_verdicts
from tests.test_diff import NEW_POLICIES, NEW_ROWS, OLD_ROWS, R
from tests.verdict_helpers import component, make_verdict_file, write_verdict_file


def _files(tmp_path):
    old = make_verdict_file(OLD_ROWS, extractor=component("mmlu_pro.lmeval", "1"))
    new = make_verdict_file(NEW_ROWS, extractor=component("mmlu_pro.official", "f418b11"),
                            grader=component("test.grader", "2"), policies=NEW_POLICIES)
    write_verdict_file(tmp_path / "old.json", old)
    write_verdict_file(tmp_path / "new.json", new)
    return tmp_path / "old.json", tmp_path / "new.json"


def _in_memory(path, form: str) -> VerdictRows:
    read = read_verdicts(path)
    header, table, source = read.header, read.rows, read.source
    rows = {"arrow": table, "pandas": table.to_pandas(), "columns": table.to_pydict()}[form]
    return VerdictRows(header, rows, label=str(path), base_dir=path.parent, rows_source=source)


@pytest.mark.parametrize("form", ["arrow", "pandas", "columns"])
def test_in_memory_rows_give_the_files_report(tmp_path, form):
    old, new = _files(tmp_path)
    on_disk = diff_files(old, new).to_report()
    assert diff_files(_in_memory(old, form), _in_memory(new, form)).to_report() == on_disk
    assert diff_files(old, _in_memory(new, form)).to_report() == on_disk


def test_in_memory_rows_are_checked_as_a_reader_checks_them(tmp_path):
    old, _ = _files(tmp_path)
    header = read_verdicts(old).header
    twice = pd.DataFrame([R("q1", 0, "correct", status="correct", reason="r")] * 2)
    with pytest.raises(AuditError, match="same item_id and sample"):
        diff_files(old, VerdictRows(header, twice, label="twice"))
    no_reason = pd.DataFrame([R("q1", 0, "correct", status="correct")])
    with pytest.raises(AuditError, match=r"lack column\(s\) reason"):
        diff_files(old, VerdictRows(header, no_reason, label="no reason"))
    odd = pd.DataFrame([R("q1", 0, "right", status="correct", reason="r")])
    with pytest.raises(AuditError, match="verdict must be one of"):
        diff_files(old, VerdictRows(header, odd, label="odd"))
