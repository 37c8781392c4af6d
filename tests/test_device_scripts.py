"""The device scripts (scripts/h100_*.sh, scripts/h200_*.sh) share one copy of their shell functions,
scripts/device_lib.sh: each sources it (the H100 ones through h100_env.sh) and none defines one of them again.
Their DRY=1 modes run on a CPU; h200_trace.sh's is tested in tests/test_trace_cli.py, h100_floor.sh's here."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"
LIB = SCRIPTS / "device_lib.sh"
FUNCTIONS = ("step", "left", "dry_env", "vllm_version", "vllm_env", "install_audit", "use_audit_site", "install_wheels",
             "nvml_bandwidth", "wait_ready", "kill_after_rows", "resume_check", "follow_server_log", "server_errors",
             "validated")
DEVICE = sorted(p.name for p in [*SCRIPTS.glob("h100_*.sh"), *SCRIPTS.glob("h200_*.sh")]
                if not p.name.endswith("_prepare.sh") and p.name not in ("h100_env.sh", "h100_judge.sh"))
"""The scripts that run on a device host. Not: the CPU-side *_prepare.sh, h100_env.sh (sourced, it sources the
library), and h100_judge.sh (its own self-contained steps)."""


def test_sourcing_the_library_runs_nothing_and_defines_its_functions():
    r = subprocess.run(["bash", "-c", f". {LIB} && declare -F | cut -d' ' -f3"], capture_output=True, text=True,
                       check=True, cwd=REPO)
    assert r.stderr == "" and sorted(r.stdout.split()) == sorted(FUNCTIONS)


def test_every_device_script_sources_the_library_and_defines_none_of_its_functions():
    assert DEVICE == ["h100_floor.sh", "h100_moe.sh", "h100_mtp.sh", "h200_bench.sh", "h200_floor.sh",
                      "h200_generate.sh", "h200_moe.sh", "h200_trace.sh"]
    sources = re.compile(r"^\. scripts/(device_lib|h100_env)\.sh$", re.M)
    for name in [*DEVICE, "h100_env.sh"]:
        text = (SCRIPTS / name).read_text(encoding="utf-8")
        assert sources.search(text), name
        for fn in FUNCTIONS:
            assert not re.search(rf"^\s*{fn}\s*\(\)", text, re.M), (name, fn)
        r = subprocess.run(["bash", "-n", str(SCRIPTS / name)], capture_output=True, text=True, check=False)
        assert (r.returncode, r.stderr) == (0, ""), name
    assert "\n. scripts/device_lib.sh\n" in (SCRIPTS / "h100_env.sh").read_text(encoding="utf-8")
    # the H100 stage copies the library beside the scripts
    assert "scripts/device_lib.sh" in (SCRIPTS / "h100_prepare.sh").read_text(encoding="utf-8")


def test_step_says_the_seconds_since_start_only_when_the_script_set_it():
    def step(start: str) -> str:
        r = subprocess.run(["bash", "-c", f"{start}. {LIB}; step hello"], capture_output=True, text=True,
                           check=True, cwd=REPO)
        return r.stdout

    assert re.fullmatch(r"\n=== hello \(\+\d+ s, \d\d:\d\d:\d\d UTC\)\n", step("START=$(date +%s); "))
    assert re.fullmatch(r"\n=== hello \(\d\d:\d\d:\d\d UTC\)\n", step("unset START; "))


def test_kill_after_rows_kills_at_the_journal_size_and_says_so(tmp_path):
    journal = tmp_path / "journal.jsonl"
    writer = f"(for i in 1 2 3 4 5 6 7 8; do echo '{{}}' >> {journal}; sleep 0.2; done; sleep 30) >/dev/null 2>&1 &"
    script = f". {LIB}; {writer} kill_after_rows $! {journal} 3 200 0.05"
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True, cwd=REPO, timeout=20)
    assert re.fullmatch(r"audit killed \(rc=137\) with [34] rows journaled\n", r.stdout), r.stdout


@pytest.mark.slow
def test_h100_floor_dry_run(tmp_path):
    """DRY=1 bash scripts/h100_floor.sh: the three floors of the H100 run from the configs the stage holds
    (scripts/h200_moe_models.py, as scripts/h100_prepare.sh writes them), each re-checked, bundled, and naming
    its subject."""
    import sys

    models = tmp_path / "models"
    subprocess.run([sys.executable, "scripts/h200_moe_models.py", str(models), "--only", "qwen3-30b-a3b-fp8",
                    "mimo-7b", "--tokenizer", str(tmp_path / "none")], cwd=REPO, check=True, capture_output=True)
    out = tmp_path / "out"
    env = {**os.environ, "DRY": "1", "MODELS": str(models), "WORK": str(tmp_path / "work"), "RUN": "dry-run"}
    env.pop("START", None)
    r = subprocess.run(["bash", "scripts/h100_floor.sh", str(out)], cwd=REPO, env=env, capture_output=True,
                       text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    log = (out / "h100_floor.log").read_text(encoding="utf-8")
    assert "run dry-run, engine vllm==0.26.0" in log and "=== done (failed=0) (+" in log
    bundles = sorted(p.name for p in out.glob("*.tar.gz"))
    assert bundles == ["floor-mimo-7b-with-mtp.tar.gz", "floor-mimo-7b.tar.gz", "floor-qwen3-30b-a3b-fp8.tar.gz"]
    with tarfile.open(out / "floor-mimo-7b.tar.gz") as tf:
        member = tf.extractfile("manifest.json")
        assert member is not None
        subject = json.load(member)["provenance"]["subject"]
    assert (subject["model"], subject["weights"], subject["run"]) == ("XiaomiMiMo/MiMo-7B-RL", "headers-only",
                                                                      "dry-run")
