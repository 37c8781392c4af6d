"""`audit release` / `audit verify-release` on a real `audit grade` of the 6,336 GPQA Diamond responses.

The responses and items are imported with `audit import table` as gzip'd packages under
pytest's tmp and graded with benchmark `choice` (`choice.freeform@1`). GPQA text is never
printed: no assertion compares response text directly (each containment check is reduced
to a boolean first), and fixtures hand tests paths and counts, never texts.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest
from tests.attacks import attack
from tests.builders import make_package

from audit.leaks import LeakIndex, ProtectedText

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]  # ~20 s in all: each release indexes 6,336 responses

GPQA = "gpqa_diamond_responses/gpqa_diamond_responses.jsonl.gz"
ITEM_ID = "item_id=gpqa-{item_index:03d}-v{version}"
SALT = "7add16efb133513abd8e72912a5716f31afc70fd9885bc81801827f22fe7b167"  # 32 random bytes, fixed for tests
# GPQA's ids name the version, which puts the gold at letter v: a release publishes salted ids.


def _audit(*args: object) -> None:
    from audit.cli import main

    assert main([str(a) for a in args]) == 0, args


def _source() -> list[dict]:
    from tests.conftest import shared_path

    with gzip.open(shared_path(GPQA), "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _item_id(r: dict) -> str:
    return f"gpqa-{r['item_index']:03d}-v{r['version']}"


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _nothing_written(parent: Path, name: str) -> bool:
    return not (parent / name).exists() and not any(p.name.startswith(f".{name}.") for p in parent.iterdir())


def _verdict_rows(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["items"]


@pytest.fixture(scope="module")
def gpqa(tmp_path_factory):
    """Gzip'd packages and two gradings: every item protected, and version 1 of every question public."""
    from tests.conftest import shared_path

    src = shared_path(GPQA)
    d = tmp_path_factory.mktemp("gpqa_real")
    _audit("import", "table", src, "-o", d / "responses", "--kind", "responses", "--gzip",
           "--benchmark", "gpqa_diamond", "--map", ITEM_ID, "--sample-from", "model")
    _audit("import", "table", src, "-o", d / "items", "--kind", "items", "--gzip", "--dedupe", "--map", ITEM_ID,
           "--map", "reference=gold_letter", "--const", "protected=true", "--const", "num_choices=4")
    _audit("grade", d / "responses", "--items", d / "items", "--benchmark", "choice", "-o", d / "results.json", "-q")

    # A mixed items package (ids and letters only, no GPQA text): version 1 public, versions 2-4 protected,
    # so public rows publish the grading's own answers, rules and reasons beside protected responses.
    keys = sorted({(r["item_index"], r["version"], r["gold_letter"]) for r in _source()})
    with gzip.open(d / "mixed.jsonl.gz", "wt", encoding="utf-8") as f:
        for i, v, gold in keys:
            f.write(json.dumps({"item_index": i, "version": v, "gold_letter": gold, "protected": v != 1}) + "\n")
    _audit("import", "table", d / "mixed.jsonl.gz", "-o", d / "items-mixed", "--kind", "items", "--gzip",
           "--map", ITEM_ID, "--map", "reference=gold_letter", "--const", "num_choices=4")
    _audit("grade", d / "responses", "--items", d / "items-mixed", "--benchmark", "choice",
           "-o", d / "results-mixed.json", "-q")
    return d


# --------------------------------------------------------------------------- the release passes and verifies


def test_release_of_the_real_grading_passes_the_leak_check_and_verifies(gpqa, cli):
    d = gpqa
    assert sorted(p.name for p in (d / "responses").iterdir()) == ["manifest.json", "responses.jsonl.gz"]
    graded = _verdict_rows(d / "results.json")
    statuses: dict[str, int] = {}
    for v in graded:
        statuses[v["status"]] = statuses.get(v["status"], 0) + 1
    assert statuses == {"correct": 2903, "incorrect": 2809, "no_answer": 624}

    out = d / "release"
    r = cli("release", d / "results.json", "-o", out, "--hash-ids", "--salt", SALT)
    assert r.code == 0, r.err
    package_id = r.out.split("release package ")[1].split(",")[0]
    # 7,128 protected strings: 792 references and 6,336 responses (the items hold no question text).
    assert r.out == (f"wrote {out}: release package {package_id}, 6,336 rows, 792 items (792 protected); "
                     f"leak check passed (7,128 protected strings)\n")
    assert cli("validate", out).code == 0
    rows = [json.loads(x) for x in (out / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 6336
    assert all(set(x) == {"item_id", "sample", "verdict", "status", "protected"} and x["protected"] for x in rows)
    from audit.release import hash_id, release_id_key

    key = release_id_key(SALT, json.loads((out / "release.json").read_text())["id_context"])
    assert [(x["item_id"], x["sample"], x["verdict"], x["status"]) for x in rows] == \
        sorted((hash_id(v["item_id"], key), v["sample"], v["verdict"], v["status"]) for v in graded)

    # Independently of the leak check: no 24-character piece of any response is in any file.
    blob = b"\n".join(_files(out).values()).decode("utf-8")
    rng = random.Random(7)
    pieces = [t[i:i + 24] for t in (x["response"] for x in _source()) if len(t) > 200
              for i in rng.sample(range(len(t) - 24), 2)]
    windows = {blob[i:i + 24] for i in range(len(blob) - 23)}  # a set lookup per piece, not a scan
    leaked = sum(p in windows for p in pieces)
    assert len(pieces) > 12000 and leaked == 0

    info = json.loads((out / "release.json").read_text(encoding="utf-8"))
    recorded = json.loads((d / "results.json").read_text(encoding="utf-8"))
    # Recomputed from the released rows. The verdict file (schema 3) stores Wilson and Clopper-Pearson beside
    # binomial_2se; the release publishes the intervals its own schema has, which must agree where both give one.
    def methods(figures):
        return [{**f, "intervals": {i["method"]: i for i in f.get("intervals") or []}} for f in figures]

    released, graded = methods(info["figures"]), methods(recorded["summary"]["figures"])
    assert len(released) == len(graded)
    for r, g in zip(released, graded, strict=True):
        assert {k: v for k, v in r.items() if k != "intervals"} == {k: v for k, v in g.items() if k != "intervals"}
        assert r["intervals"] and all(g["intervals"][m] == i for m, i in r["intervals"].items())
    assert info["extractor"]["name"] == "choice.freeform" and info["grader"]["name"] == "choice"
    inferred = info["leak_check"].pop("inference")
    assert info["leak_check"] == {"min_chars": 20, "protected_items": 792, "protected_texts": 7128,
                                  "responses_checked": True, "transforms": "leakcheck@3"}
    assert inferred["passed"] and inferred["items"] == 792 and inferred["alpha"] == 1e-6

    v = cli("verify-release", out, "--items", d / "items", "--responses", d / "responses", "--salt", SALT)
    assert v.code == 0 and v.out.endswith("\nverified: 13 of 13 checks passed\n"), v.out
    assert "ok   leaks          no protected text from your copy (7,128 strings, responses included) in any file" \
        in v.out

    # A holder's check catches text planted after the release, even with the manifest rewritten to match.
    import shutil

    from audit.fileio import sha256_file

    tampered = d / "release-tampered"
    shutil.copytree(out, tampered)
    victim = next(x for x in _source() if len(x["response"]) > 400)
    with (tampered / "README.md").open("a", encoding="utf-8") as f:
        f.write("\nNote: " + " ".join(victim["response"][100:140].split()) + "\n")
    manifest = json.loads((tampered / "manifest.json").read_text(encoding="utf-8"))
    digest, size = sha256_file(tampered / "README.md")
    manifest["files"] = [{**f, "sha256": digest, "bytes": size} if f["path"] == "README.md" else f
                         for f in manifest["files"]]
    (tampered / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    t = cli("verify-release", tampered, "--items", d / "items", "--responses", d / "responses", "--salt", SALT)
    assert t.code == 1 and t.err == "NOT verified: 11 of 13 checks passed\n"
    failed = [line.split()[1] for line in t.out.splitlines() if line.startswith("FAIL")]
    assert failed == ["readme", "leaks"]
    leak_line = next(line for line in t.out.splitlines() if line.startswith("FAIL leaks"))
    note_row = len((out / "README.md").read_text(encoding="utf-8").splitlines()) + 2
    # (The first one listed may be another response sharing 20+ characters with the planted piece.)
    assert f" leaks, first: README.md: row {note_row}: leak: " in leak_line and "of protected item 'gpqa-" in leak_line

    # A responses package holding none of the release's items checks nothing: no false assurance.
    make_package(d / "other-responses", responses=[{"item_id": "other", "response": "The answer is (A)."}])
    w = cli("verify-release", out, "--items", d / "items", "--responses", d / "other-responses", "--salt", SALT)
    assert w.code == 1
    assert (f"FAIL leaks          {d / 'other-responses'} holds no response of the release's protected items "
            f"(another package?)") in w.out


# --------------------------------------------------------------------------- no false positives on real output


def _policy_reasons(tmp: Path) -> set[str]:
    """Every reason and rule `audit grade` writes for a `choice` grading, from a small public package that
    reaches each branch: correct, wrong, outside the options, no answer, cut at the ceiling, no text, not sent,
    missing, excluded by policy, seeded guess, unreadable reference."""
    items = [{"item_id": f"p{i}", "reference": "A", "num_choices": 4} for i in range(1, 9)]
    items += [{"item_id": "p9", "reference": "A", "num_choices": 2},
              {"item_id": "p10", "reference": "not a letter", "num_choices": 4}]
    responses = [
        {"item_id": "p1", "response": "The answer is (A)."},
        {"item_id": "p2", "response": "The answer is (B)."},
        {"item_id": "p3", "response": "Thinking about it, the answer is", "finish_reason": "length",
         "max_tokens": 4096},
        {"item_id": "p4", "response": None, "error": "HTTP 500 from the server"},
        {"item_id": "p5", "response": None, "excluded": "content filter"},
        {"item_id": "p6", "response": "I cannot tell."},
        {"item_id": "p8", "response": "The answer is (A)."},
        {"item_id": "p9", "response": "The answer is (C)."},
        {"item_id": "p10", "response": "The answer is (A)."},
    ]
    make_package(tmp / "branches", responses=responses, items=items)
    reasons: set[str] = set()
    for i, policies in enumerate((("exclude=p8",), ("truncation=exclude", "no_answer=random-guess"))):
        out = tmp / f"branches-{i}.json"
        _audit("grade", tmp / "branches", "--benchmark", "choice", "--policy", "scope=items", "-o", out, "-q",
               *(x for p in policies for x in ("--policy", p)))
        for row in _verdict_rows(out):
            reasons.update(x for x in (row["reason"], row["rule"], row["answer"], row["status"]) if x)
    return reasons


def test_grading_reasons_cannot_trip_the_leak_check(gpqa, cli, tmp_path):
    """Public rows publish reason, rule and answer: none of what `audit grade` writes there matches a real
    GPQA response (helper-5's worry: ordinary English of 20+ characters in a reason)."""
    d = gpqa
    index = LeakIndex([ProtectedText(_item_id(r), "response", r["response"]) for r in _source()])
    published = set()
    for name in ("results.json", "results-mixed.json"):
        for row in _verdict_rows(d / name):
            published.update(x for x in (row["reason"], row["rule"], row["answer"], row["status"]) if x)
    branches = _policy_reasons(tmp_path)
    assert {"letter B, reference A", "no answer extracted (none)", "no response for this item in sample 0",
            "excluded by policy (--policy exclude=...)", "cut at the output ceiling (max_tokens=4096); never credited",
            "cut at the output ceiling (max_tokens=4096); excluded by policy", "no response text: HTTP 500 from the "
            "server", "not sent: content filter", "C is outside the item's 2 options A–B",
            "reference 'not a letter' is not a single letter"} <= branches
    values = sorted(published | branches)
    assert len([v for v in values if len(v) >= 20]) >= 15
    found = index.find(values)
    assert len(found) == 0, [values[v] for v, _, _ in found]  # our own phrases only: safe to print

    # End to end: 1,584 public rows (version 1) beside 594 protected items' 4,752 responses.
    out = d / "release-mixed"
    r = cli("release", d / "results-mixed.json", "-o", out, "--hash-ids", "--salt", SALT)
    assert r.code == 0, r.err
    assert r.out.endswith(", 6,336 rows, 792 items (594 protected); leak check passed (5,346 protected strings)\n")
    rows = [json.loads(x) for x in (out / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()]
    public = [x for x in rows if not x.get("protected")]
    from audit.release import hash_id, release_id_key

    key = release_id_key(SALT, json.loads((out / "release.json").read_text())["id_context"])
    v1 = {hash_id(f"gpqa-{i:03d}-v1", key) for i in range(198)}
    # Structural: the public rows publish closed vocabulary only (their reasons and rules are withheld) ...
    assert len(public) == 1584 and all(x["item_id"] in v1 and "reason" not in x for x in public)
    structure = json.loads((out / "release.json").read_text())["structure"]
    assert structure["public_text"] == "withheld" and structure["withheld"]["reason"] == 1584
    v = cli("verify-release", out, "--items", d / "items-mixed", "--responses", d / "responses", "--salt", SALT)
    assert v.code == 0, v.out
    # ... and with --public-text they publish audit grade's own phrases, which pass the leak check.
    out = d / "release-mixed-text"
    r = cli("release", d / "results-mixed.json", "-o", out, "--hash-ids", "--salt", SALT, "--public-text")
    assert r.code == 0, r.err
    texts = [json.loads(x) for x in (out / "public_text.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(texts) == 1584 and all(x["item_id"] in v1 and x["reason"] for x in texts)
    v = cli("verify-release", out, "--items", d / "items-mixed", "--responses", d / "responses", "--salt", SALT)
    assert v.code == 0, v.out


# --------------------------------------------------------------------------- planted leaks fail


def _public_rows(path: Path) -> list[tuple[str, int]]:
    """(item id, sample) of the public rows (version-1 items) in published order: the rows of public_text.jsonl."""
    return sorted((x["item_id"], x["sample"]) for x in _verdict_rows(path) if x["item_id"].endswith("-v1"))


def _plant(src: Path, dst: Path, edit) -> None:
    """A copy of a verdict file with one row edited (same folder, so its package paths still resolve)."""
    doc = json.loads(src.read_text(encoding="utf-8"))
    for row in doc["items"]:
        if edit(row):
            break
    else:
        raise AssertionError("no row edited")
    dst.write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")


def test_planted_response_text_in_a_public_reason_fails_and_writes_nothing(gpqa, cli):
    d = gpqa
    victim = next(r for r in _source() if r["version"] == 2 and len(r["response"]) > 400)
    snippet = " ".join(victim["response"][200:260].split())  # reflowed: still caught
    target = "gpqa-005-v1"

    def edit(row: dict) -> bool:
        if row["item_id"] == target and row["sample"] == 3:
            row["reason"] = "the model wrote: " + snippet
            return True
        return False

    _plant(d / "results-mixed.json", d / "planted-text.json", edit)
    r = cli("release", d / "planted-text.json", "-o", d / "rel-text", "--public-text")
    assert r.code == 2 and r.out == ""
    row = 1 + _public_rows(d / "results-mixed.json").index((target, 3))  # the row of public_text.jsonl
    lines = r.err.splitlines()
    assert any(line.startswith(f"audit: error: public_text.jsonl: row {row}: field reason: leak: ")
               and "of the response (sample " in line and f"of protected item '{_item_id(victim)}'" in line
               for line in lines)
    assert all(line.startswith("audit: error: public_text.jsonl: row ") for line in lines)
    shown = snippet[:20] in r.err
    assert not shown  # the report names the leak, never the text
    assert _nothing_written(d, "rel-text")


def test_planted_reference_beside_its_id_fails(gpqa, cli):
    d = gpqa
    rows = _verdict_rows(d / "results-mixed.json")
    # A public row (answered A, its gold) whose reason names a protected item and that item's gold letter
    # (version 2 of a question puts the gold at B).
    planted = next((x["item_id"], x["sample"]) for x in rows if x["item_id"] == "gpqa-017-v1" and x["answer"] == "A")
    row = 1 + _public_rows(d / "results-mixed.json").index(planted)  # the row of public_text.jsonl

    def edit(x: dict) -> bool:
        if x["item_id"] == "gpqa-017-v1" and x["answer"] == "A":
            x["reason"] = "same question as gpqa-017-v2, whose key is B"
            return True
        return False

    _plant(d / "results-mixed.json", d / "planted-ref.json", edit)
    r = cli("release", d / "planted-ref.json", "-o", d / "rel-ref", "--public-text")
    assert r.code == 2
    assert r.err == (f"audit: error: public_text.jsonl: row {row}: field reason: leak: the reference answer of "
                     f"protected item 'gpqa-017-v2' beside its id\n")
    assert _nothing_written(d, "rel-ref")


def test_a_release_bug_that_publishes_protected_rows_in_full_fails(gpqa, cli, monkeypatch):
    import audit.release.build as rel

    real = rel._closed_row

    def leaky(r, release_id, rank, protected, item, reference_field):  # a bug that publishes protected rows in full
        return real(r, release_id, rank, False, item, reference_field)

    monkeypatch.setattr(rel, "_closed_row", leaky)
    r = cli("release", gpqa / "results.json", "-o", gpqa / "rel-bug")
    assert r.code == 2
    lines = r.err.splitlines()
    # Every row now carries its reference beside its id: rule 2 on the first 100, then a count.
    assert lines[0].startswith("audit: error: verdicts.jsonl: row 1: field ")
    assert lines[0].endswith(": leak: the reference answer of protected item 'gpqa-000-v1' beside its id")
    assert len(lines) == 101 and lines[-1].startswith("audit: error: verdicts.jsonl: leak: ")
    assert lines[-1].endswith(" more leaks in this file not listed")
    assert _nothing_written(gpqa, "rel-bug")


# --------------------------------------------------------------------------- the random guess (issue 19)


def _recover(rows: list[dict], seed: int) -> dict[str, str | None]:
    """The attack on a release: recompute every published random guess from the published seed, id and
    sample; a `correct` verdict names the reference, an `incorrect` one rules the letter out."""
    from audit.inference import draw

    left: dict[str, set[str]] = {}
    for x in rows:
        c = left.setdefault(x["item_id"], set("ABCD"))
        if x["status"] == "random_guess":
            g = draw(seed, x["item_id"], x["sample"], 4)
            if x["verdict"] == "correct":
                c &= {g}
            else:
                c.discard(g)
    return {i: next(iter(c)) if len(c) == 1 else None for i, c in left.items()}


@attack("release.random-guess-key")
def test_real_random_guess_release_does_not_give_the_key(cli, tmp_path):
    """The issue's attack: 6,336 real responses graded `--policy no_answer=random-guess`, released with
    dataset ids that carry nothing (not GPQA's `-v{k}`): the guesses gave 782 of 792 keys back."""
    import hashlib

    from tests.conftest import shared_path

    src = shared_path(GPQA)
    opaque = tmp_path / "gpqa-opaque.jsonl.gz"  # gzip'd, under tmp, never printed
    with gzip.open(src, "rt", encoding="utf-8") as f, gzip.open(opaque, "wt", encoding="utf-8") as g:
        for line in f:
            r = json.loads(line)
            r["uid"] = hashlib.sha256(f"{r['item_index']}/{r['version']}".encode()).hexdigest()[:12]
            g.write(json.dumps(r) + "\n")
    _audit("import", "table", opaque, "-o", tmp_path / "responses", "--kind", "responses", "--gzip",
           "--benchmark", "gpqa_diamond", "--map", "item_id=gpqa-{uid}", "--sample-from", "model")
    _audit("import", "table", opaque, "-o", tmp_path / "items", "--kind", "items", "--gzip", "--dedupe",
           "--map", "item_id=gpqa-{uid}", "--map", "reference=gold_letter", "--const", "protected=true",
           "--const", "num_choices=4")
    vf = tmp_path / "results.json"
    _audit("grade", tmp_path / "responses", "--items", tmp_path / "items", "--benchmark", "gpqa_diamond",
           "--policy", "no_answer=random-guess", "-o", vf, "-q")
    graded = _verdict_rows(vf)
    gold = {x["item_id"]: x["reference"] for x in graded}
    n_guess = sum(x["status"] == "random_guess" for x in graded)
    assert len(gold) == 792 and n_guess > 6000
    # What the old release published (id, sample, verdict, status, seed 12345) gives the key back.
    old = _recover(graded, 12345)
    recovered_before = sum(old[i] == gold[i] for i in gold)
    assert recovered_before >= 750

    r = cli("release", vf, "-o", tmp_path / "rel")
    assert r.code == 2
    assert ("answer inference: the random guess recomputed from the published seed, ids and samples predicts the "
            "reference of 792 protected items " in r.err and "use --hash-ids" in r.err)
    assert _nothing_written(tmp_path, "rel")

    r = cli("release", vf, "-o", tmp_path / "rel", "--hash-ids", "--salt", SALT)
    assert r.code == 0, r.err
    rows = [json.loads(x) for x in (tmp_path / "rel" / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()]
    info = json.loads((tmp_path / "rel" / "release.json").read_text(encoding="utf-8"))
    from audit.release import hash_id, release_id_key

    key = release_id_key(SALT, info["id_context"])
    pub_gold = {hash_id(i, key): g for i, g in gold.items()}
    got = _recover(rows, info["policies"]["guess_seed"])
    named = [i for i in got if got[i] is not None]
    hits = sum(got[i] == pub_gold[i] for i in named)
    # At chance: a quarter of the items the attack names, within 3 standard deviations.
    assert hits <= 0.25 * len(named) + 3 * (len(named) * 0.1875) ** 0.5, (hits, len(named))
    v = cli("verify-release", tmp_path / "rel", "--items", tmp_path / "items", "--responses", tmp_path / "responses",
            "--salt", SALT)
    assert v.code == 0, v.out
    print(f"random-guess rows {n_guess}; keys recovered: dataset ids {recovered_before}/792, "
          f"salted ids {hits}/{len(named)} named")
