"""Attacks on verdict files (issue 11): tampered verdicts passed off as retractions, forged Parquet
sidecars, and the JSON + sidecar pair broken by kill -9, a full disk or concurrent writers."""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
from pathlib import Path

import pytest
from tests.attack_tools import audit_jailed, sha256
from tests.attacks import attack
from tests.builders import make_package

from audit.summary import summarize


def _mc(tmp_path: Path, n: int = 120, name: str = "resp", letter=lambda i: "ABCD"[i % 4]) -> tuple[Path, Path]:
    items = tmp_path / "items"
    if not items.exists():
        make_package(items, items=[{"item_id": f"q{i:03d}", "reference": "A", "num_choices": 4} for i in range(n)])
    resp = make_package(tmp_path / name, responses=[
        {"item_id": f"q{i:03d}", "response": f"The answer is ({letter(i)}).", "finish_reason": "stop"}
        for i in range(n)])
    return resp, items


def _grade(cli, resp: Path, items: Path, out: Path, *extra: str) -> Path:
    r = cli("grade", resp, "--items", items, "--benchmark", "choice", "-o", out, *extra)
    assert r.code == 0, r.err
    return out


def _rewrite_rows(path: Path, edit) -> None:
    """Apply `edit` to the rows of a verdict file and recompute its summary, as a careful forger would."""
    import pandas as pd

    doc = json.loads(path.read_text())
    doc["items"] = [edit(i, r) for i, r in enumerate(doc["items"])]
    df = pd.DataFrame(doc["items"])
    doc["summary"] = summarize(df[["item_id", "sample", "verdict", "status", "reason"]]).model_dump(mode="json")
    from audit.verdicts import VerdictFile, dump_verdict_file

    path.write_text(dump_verdict_file(VerdictFile.model_validate(doc)))


@attack("verdicts.inconsistent")
def test_flipped_verdicts_under_the_same_components_are_inconsistent_not_retractions(cli, tmp_path):
    resp, items = _mc(tmp_path)
    old = _grade(cli, resp, items, tmp_path / "old.json")
    new = tmp_path / "new.json"
    new.write_bytes(old.read_bytes())

    def flip(i, r):
        if i < 50:
            r = {**r, "verdict": "correct" if r["verdict"] == "incorrect" else "incorrect"}
        return r

    _rewrite_rows(new, flip)
    r = cli("diff", old, new, "--format", "json")
    assert r.code == 1
    report = json.loads(r.out)
    assert [(c["cause"], c["rows"]) for c in report["causes"]] == [("inconsistent", 50)]
    assert all(row["cause"] == "inconsistent" for row in report["changed"])
    md = cli("diff", old, new).out
    assert "50 verdicts changed: 50 inconsistent" in md
    # the figures' paragraphs (under "Retractions" or "Upward revisions", whichever way they moved)
    figures = md.split("\n## ", 1)[1].split("## Changed verdicts by cause")[0]
    assert figures.startswith(("Retractions", "Upward revisions")) and "grader" not in figures
    assert ("note: 50 rows changed verdict although both files name the same extractor, grader, policies and "
            "inputs: tampered or non-deterministic, not a retraction (cause `inconsistent`)") in md


@attack("verdicts.inconsistent")
def test_a_changed_answer_from_the_same_extractor_and_text_is_inconsistent(cli, tmp_path):
    resp, items = _mc(tmp_path, n=8)
    old = _grade(cli, resp, items, tmp_path / "old.json")
    new = tmp_path / "new.json"
    new.write_bytes(old.read_bytes())
    _rewrite_rows(new, lambda i, r: {**r, "answer": "A", "verdict": "correct", "status": "correct"}
                  if r["answer"] != "A" else r)
    report = json.loads(cli("diff", old, new, "--format", "json").out)
    assert {c["cause"] for c in report["causes"]} == {"inconsistent"}


@attack("verdicts.forged-sidecar")
def test_every_reader_checks_the_same_rows_as_the_sidecar(cli, tmp_path):
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from audit.verdicts import load_verdict_file, write_rows_parquet

    resp, items = _mc(tmp_path)
    out = _grade(cli, resp, items, tmp_path / "results.json", "--parquet")
    header = json.loads(out.read_text())
    side = out.parent / header["rows_file"]["path"]
    table = pq.read_table(side)
    flipped = pc.if_else(pc.equal(table.column("verdict"), "incorrect"), "correct", "incorrect")
    forged = table.set_column(table.schema.get_field_index("verdict"), "verdict", flipped)
    ref = write_rows_parquet(forged.to_pandas(), side)  # the forger writes a sidecar in place ...
    text = out.read_text().replace(header["rows_file"]["sha256"], ref.sha256)  # ... and re-pins it
    out.write_text(text)
    r = cli("reproduce", out)
    assert r.code != 0, r.out  # never "identical" with rows other readers see differently
    assert not r.out.startswith("identical")
    # load_verdict_file (the JSON rows) agrees with the sidecar, or refuses
    try:
        vf = load_verdict_file(out)
    except Exception as e:
        assert "differ" in str(e) or "Parquet" in str(e), e
    else:
        assert [x.verdict for x in vf.items] == forged.column("verdict").to_pylist()


def _pair_ok(out: Path) -> str:
    """'ok' when the verdict file and the sidecar it names agree (both pins hold, same rows), else why not."""
    from audit.verdicts import load_verdict_file, read_verdicts

    try:
        read = read_verdicts(out)
        header, table = read.header, read.rows
        vf = load_verdict_file(out)
    except Exception as e:
        return f"broken: {e}"
    if header.rows_file is None:
        return "ok"
    verdicts = [r.verdict for r in vf.items]
    return "ok" if table.column("verdict").to_pylist() == verdicts else "broken: rows differ"


_KILL_AT = """
import os, signal
count = [0]
real_replace, real_rename = os.replace, os.rename
def counting(real):
    def f(*a, **k):
        count[0] += 1
        if count[0] == {n}:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*a, **k)
    return f
os.replace, os.rename = counting(real_replace), counting(real_rename)
"""


@pytest.mark.slow
@attack("verdicts.pair-kill")
def test_kill_9_at_every_rename_leaves_the_old_or_the_new_pair(cli, tmp_path):
    resp_a, items = _mc(tmp_path)
    resp_b, _ = _mc(tmp_path, name="resp_b", letter=lambda i: "A")
    out = tmp_path / "results.json"
    _grade(cli, resp_a, items, out, "--parquet")
    old_bytes = out.read_bytes()
    new_bytes = None
    for n in range(1, 6):
        r = audit_jailed("grade", resp_b, "--items", items, "--benchmark", "choice", "-o", out, "--force",
                         "--parquet", "-q", setup=_KILL_AT.replace("{n}", str(n)))
        assert _pair_ok(out) == "ok", (n, _pair_ok(out))
        assert out.read_bytes() in (old_bytes, new_bytes) or r.returncode == 0
        if r.returncode == 0:  # not killed: the write needs fewer renames
            new_bytes = out.read_bytes()
            break
        assert r.returncode == -9
        _grade(cli, resp_a, items, out, "--parquet", "--force")  # back to the old pair
    assert new_bytes is not None


@attack("verdicts.pair-kill")
def test_a_full_disk_mid_write_leaves_the_old_pair(tmp_path, monkeypatch):
    """ENOSPC from the n-th fsync or rename of the write (where a full disk reports it): the old pair stays."""
    from audit.grade import grade_package
    from audit.specs import resolve_config

    resp_a, items = _mc(tmp_path)
    resp_b, _ = _mc(tmp_path, name="resp_b", letter=lambda i: "A")
    out = tmp_path / "results.json"
    grade_package(resp_a, resolve_config("choice"), items=items, out=out, parquet=True)
    old_bytes = out.read_bytes()
    before = sorted(p.name for p in tmp_path.iterdir())
    g = grade_package(resp_b, resolve_config("choice"), items=items)
    for fail_at in range(1, 7):
        _write_on_a_full_disk(g, out, monkeypatch, fail_at, old_bytes, before, tmp_path)
        grade_package(resp_a, resolve_config("choice"), items=items, out=out, parquet=True)  # the old pair again


def _write_on_a_full_disk(g, out, monkeypatch, fail_at, old_bytes, before, tmp_path):
    calls = [0]

    def failing(real):
        def f(*a, **k):
            calls[0] += 1
            if calls[0] == fail_at:
                raise OSError(errno.ENOSPC, "No space left on device")
            return real(*a, **k)
        return f

    for name in ("fsync", "replace", "rename"):
        monkeypatch.setattr(os, name, failing(getattr(os, name)))
    try:
        g.write(out, parquet=True)
    except OSError as e:
        assert e.errno == errno.ENOSPC
        monkeypatch.undo()
        assert out.read_bytes() == old_bytes
        assert sorted(p.name for p in tmp_path.iterdir()) == before, \
            "temporary files left behind"
        assert _pair_ok(out) == "ok", fail_at
    else:
        monkeypatch.undo()
        assert _pair_ok(out) == "ok", fail_at


@pytest.mark.slow
@attack("verdicts.pair-concurrent")
def test_concurrent_writers_never_leave_a_broken_pair(tmp_path):
    from tests.attack_tools import concurrent_pair_writer

    from audit.grade import grade_package
    from audit.specs import resolve_config

    resp_a, items = _mc(tmp_path)
    resp_b, _ = _mc(tmp_path, name="resp_b", letter=lambda i: "A")
    out = tmp_path / "results.json"
    gradings = [grade_package(p, resolve_config("choice"), items=items) for p in (resp_a, resp_b)]
    ctx = multiprocessing.get_context("spawn")
    writers, runs = 4, 10
    barrier = ctx.Barrier(writers + 1)
    errors = ctx.Queue()
    procs = [ctx.Process(target=concurrent_pair_writer, args=(gradings[w % 2], out, barrier, runs, errors))
             for w in range(writers)]
    for p in procs:
        p.start()
    broken = []
    try:
        for run in range(runs):
            barrier.wait(timeout=60)  # all start writing
            barrier.wait(timeout=60)  # all done
            state = _pair_ok(out)
            if state != "ok":
                broken.append((run, state))
    finally:
        for p in procs:
            p.join(timeout=60)
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    assert not broken, f"{len(broken)} broken pairs in {runs} runs: {broken[0]}"
    assert not failures, failures[0]
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".results")]
    assert not leftovers, leftovers
    sidecars = [p.name for p in tmp_path.iterdir() if p.name.endswith(".parquet")]
    assert len(sidecars) == 1, sidecars  # the losers cleaned up after themselves


@attack("verdicts.sidecar-path")
@pytest.mark.parametrize("path", ["../outside.parquet", "/etc/passwd", "sub/x.parquet"])
def test_a_sidecar_path_outside_the_directory_is_refused(cli, tmp_path, path):
    resp, items = _mc(tmp_path, n=8)
    out = _grade(cli, resp, items, tmp_path / "results.json", "--parquet")
    header = json.loads(out.read_text())
    out.write_text(out.read_text().replace(f'"path": "{header["rows_file"]["path"]}"', json.dumps({"path": path})[1:-1]))
    r = cli("diff", out, out)
    assert r.code == 2
    assert "field rows_file.path: must be a file name in the verdict file's directory" in r.err


@attack("verdicts.other-package-digest")
def test_a_verdict_file_claiming_another_package_digest_is_refused_by_reproduce(cli, tmp_path):
    resp, items = _mc(tmp_path, n=8)
    out = _grade(cli, resp, items, tmp_path / "results.json")
    doc = out.read_text()
    digest = json.loads(doc)["responses_package"]["digest"]
    out.write_text(doc.replace(digest, "0" * 64))
    r = cli("reproduce", out)
    assert r.code == 2
    assert "package content differs from the one graded" in r.err


# --------------------------------------------------------------------------- round 4 (issue 28), classes 2 and 7


def _uneven_frame(heavy: int, light_items: int):
    import pandas as pd

    rows = [("heavy", s, "correct" if s % 2 else "incorrect") for s in range(heavy)]
    rows += [(f"q{i}", 0, "correct") for i in range(light_items)]
    return pd.DataFrame({"item_id": [r[0] for r in rows], "sample": [r[1] for r in rows],
                         "verdict": [r[2] for r in rows], "status": "graded", "answer": "A"})


@attack("bounds.uneven-samples-cost")
def test_one_item_of_many_samples_costs_no_figure_per_sample_index():
    from audit.summary import figures

    # 20,000 samples of one item beside 10 items of one: a figure per sample index (40,002 figures, each with
    # its intervals) where the same rows spread over items make 2. Sample indices are runs only when every
    # item has each of them.
    figs = figures(_uneven_frame(20_000, 10))
    assert [f.name for f in figs] == ["accuracy", "accuracy_all"]
    assert figs[0].total == 20_010 and figs[0].correct == 10_010
    assert [iv.method for iv in figs[0].intervals] and "runs_2se" not in [iv.method for iv in figs[0].intervals]
    # Even samples still give one figure per run.
    even = figures(_uneven_frame(1, 0).assign(item_id="a").pipe(
        lambda d: d.loc[d.index.repeat(3)].assign(sample=[0, 1, 2])))
    assert [f.name for f in even] == ["accuracy[sample=0]", "accuracy[sample=1]", "accuracy[sample=2]", "accuracy",
                                      "accuracy_all[sample=0]", "accuracy_all[sample=1]", "accuracy_all[sample=2]",
                                      "accuracy_all"]
