"""Round 4, class 1 (issue 28): names taken from an input never become paths outside the output.

Every input-derived path part passes `audit.fileio.safe_part` (one component: not empty, '.', '..' or hidden,
no separator, NUL, control or invisible character, at most 255 bytes); tests/test_path_gate.py lists every
caller."""

from __future__ import annotations

import json

import pytest

from tests.attacks import attack
from tests.test_import_lm_eval_dir import COPA_DIR, STAMP


def _embedded(root, task: str):
    records = [json.loads(line) for line in (COPA_DIR / f"samples_copa_{STAMP}.jsonl").read_text().splitlines()]
    doc = json.loads((COPA_DIR / f"results_{STAMP}.json").read_text())
    doc["samples"] = {task: records}
    (root / "run").mkdir(parents=True)
    (root / "run" / f"results_{STAMP}.json").write_text(json.dumps(doc))
    return root / "run"


def _everything(root) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


@attack("names.lm-eval-task-path")
@pytest.mark.parametrize("task", ["../../x", "../escaped", "a/../../b", "/tmp/abs-task", "..", ".", "",
                                  ".hidden", "a\\..\\b", "x" * 300])
def test_an_embedded_task_name_never_leaves_the_output(cli, here, task):
    _embedded(here / "in", task)
    before = _everything(here)
    r = cli("import", "lm-eval", "in/run", "-o", "deep/pkgs")
    assert r.code == 2, r.out
    assert r.err.startswith("audit: error: ") and r.err.count("\n") == 1 and "Traceback" not in r.err
    assert "task name" in r.err
    assert _everything(here) == before  # nothing written anywhere
    assert not (here.parent / "x").exists() and not (here / "x").exists()


@attack("names.lm-eval-task-nul")
@pytest.mark.parametrize("task", ["a\x00b", "a\nb", "a\u202eb", "a\u200bb"])
def test_a_task_name_with_nul_or_invisible_characters_is_one_line(cli, here, task):
    _embedded(here / "in", task)
    r = cli("import", "lm-eval", "in/run", "-o", "pkgs")
    assert r.code == 2
    assert r.err.count("\n") == 1 and "Traceback" not in r.err and "\x00" not in r.err
    assert not (here / "pkgs").exists()


@attack("names.lm-eval-force-outside")
def test_force_never_replaces_a_package_outside_the_output(cli, here):
    # A user's package beside -o: a task named ../victim with --force replaced it.
    victim = here / "victim"
    assert cli("import", "lm-eval", str(COPA_DIR / f"samples_copa_{STAMP}.jsonl"), "--benchmark",
               "selected_choice", "-o", str(victim)).code == 0
    kept = {p.name: p.read_bytes() for p in victim.iterdir()}
    _embedded(here / "in", "../victim")
    r = cli("import", "lm-eval", "in/run", "-o", "pkgs", "--force")
    assert r.code == 2
    assert {p.name: p.read_bytes() for p in victim.iterdir()} == kept
