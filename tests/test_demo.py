"""The README's main command: `audit demo` on the bundled packages finds every failure mode of the lab note."""

from __future__ import annotations

import json

from audit.demo import DEFAULT_PACKAGES


def test_demo_prints_every_retraction(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = cli("demo", "--out", "out")
    assert (r.code, r.err) == (0, "")
    lines = r.out.splitlines()
    table = lines[lines.index(next(x for x in lines if x.startswith("benchmark"))):][:5]
    assert table[1:] == [
        "math500      62.50% (5/8)          87.50% (7/8)                 2  grader 2",
        "mmlu_pro     62.50% (5/8)          87.50% (7/8)                 2  extractor 2",
        "gpqa_diamond 83.33% (5/6)          50.00% (3/6)                 2  policy 2",
        "hle          83.33% (5/6)          62.50% (5/8)                 1  grader 1; +2 rows the lab left out",
    ]
    text = r.out
    assert "demo-math-01  x = 4        → x = 4        incorrect → correct    grader" in text
    assert "demo-mmlu-02  E            → C            incorrect → correct    extractor" in text
    assert "demo-gpqa-01  B            → —              correct → incorrect  policy     cut at the output ceiling" in text
    assert "demo-hle-01   3.1415       → 3.1415         correct → incorrect  grader" in text
    assert "leak check passed" in text
    # The agentic packages: the paired ratio, the +40% retraction and the sensitivity line.
    assert ("    per-task duration ratio 1.52× (t 95% 1.35–1.72 on the logs; bootstrap 1.38–1.66, seed 0); per turn "
            "1.64×") in lines
    assert ("    RETRACTED: 13.2 → 18.5 tasks/hour (+40%): 8 tasks on 8 workers, so each run's wall clock is its "
            "slowest task (2182 s, 1556 s); the +40% is one task's ratio") in lines
    assert "    excluded left out            64.62% ± 2.22 (2·sd/√K, K=6); se 1.11; t 95% [61.77%, 67.48%]" in lines
    assert "    excluded counted as failures 63.36% ± 2.21 (2·sd/√K, K=6); se 1.11; t 95% [60.52%, 66.21%]" in lines
    assert any(x.startswith("    run rep-3 mixes 2 serving setups: 82 trials") for x in lines)


def test_demo_outputs_are_checkable(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli("demo", "--out", "out").code == 0
    for bench in ("math500", "mmlu_pro", "gpqa_diamond", "hle"):
        report = json.loads((tmp_path / "out" / f"{bench}.diff.json").read_text())
        assert report["changed"], bench
        assert cli("reproduce", f"out/{bench}.json").code == 0
    r = cli("validate", "out/release-gpqa_diamond")
    assert r.code == 0
    rows = [json.loads(x) for x in (tmp_path / "out/release-gpqa_diamond/verdicts.jsonl").read_text().splitlines()]
    assert all(set(row) == {"item_id", "sample", "verdict", "status", "protected"} for row in rows)
    # The demo's packages are the project's own: they validate.
    for bench in ("math500", "mmlu_pro", "gpqa_diamond", "hle", "agentic/deepswe-baseline", "agentic/deepswe-mtp-k3",
                  "agentic/deepswe-k6"):
        assert cli("validate", DEFAULT_PACKAGES / bench).code == 0
    doc = json.loads((tmp_path / "out" / "deepswe.compare.json").read_text())
    assert (doc["ratio"]["n"], doc["throughput_bound"]) == (8, True)


def test_demo_replaces_its_own_output_but_never_another_directory(cli, tmp_path, monkeypatch):
    # `--out` is replaced: it was removed whatever it held, so `audit demo --out .` deleted the
    # working directory. Only a previous demo output (or an empty directory) is replaced now.
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    assert cli("demo", "--out", ".").code == 0
    assert cli("demo", "--out", ".").code == 0  # a previous demo output is replaced
    assert (tmp_path / "here" / "math500.json").is_file()
    (tmp_path / "here" / "notes.txt").write_text("mine", encoding="utf-8")
    r = cli("demo", "--out", ".")
    assert (r.code, r.out) == (2, "")
    assert r.err == "audit: error: .: holds files the demo did not write (first: 'notes.txt'); give another --out\n"
    assert (tmp_path / "here" / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert (tmp_path / "here" / "math500.json").is_file()
