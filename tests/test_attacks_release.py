"""Attacks on releases (issue 11): disguised protected text, answers inferred from ids or order, weak salts.

The protected text here is synthetic (no GPQA text is printed or planted); the real GPQA Diamond
responses are used only through their ids' shape and gold letters, never their text.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import stat
import unicodedata
from pathlib import Path

import pytest
from tests.attack_tools import repin, sha256
from tests.attacks import attack
from tests.builders import make_package
from tests.verdict_helpers import make_verdict_file, package, write_verdict_file

from audit.packages import open_package

QUESTION = "Which organelle converts glucose into usable chemical energy for the cell?"
PIECE = "converts glucose into usable chemical"  # 37 characters of the protected question


def _ref(path: Path) -> dict:
    with open_package(path) as pkg:
        return {"digest": pkg.digest, "package_id": pkg.manifest.package_id, "path": path.name}


@pytest.fixture
def setup(tmp_path):
    """Items p1..p3 protected (p1 holds QUESTION), q1 public; responses; a verdict file maker."""
    items = make_package(tmp_path / "items", items=[
        {"item_id": "p1", "reference": "A", "num_choices": 4, "protected": True, "question": QUESTION},
        {"item_id": "p2", "reference": "B", "num_choices": 4, "protected": True},
        {"item_id": "p3", "reference": "C", "num_choices": 4, "protected": True},
        {"item_id": "q1", "reference": "B", "num_choices": 4}])
    resp = make_package(tmp_path / "resp", responses=[{"item_id": i, "response": "The answer is (A)."}
                                                      for i in ("p1", "p2", "p3", "q1")])
    refs = {"items_package": package(**_ref(items)), "responses_package": package(**_ref(resp))}

    def verdicts(public: dict | None = None, name: str = "results.json") -> Path:
        rows = [{"item_id": "p1", "sample": 0, "verdict": "correct", "answer": "A", "reference": "A"},
                {"item_id": "p2", "sample": 0, "verdict": "incorrect", "answer": "A", "reference": "B"},
                {"item_id": "p3", "sample": 0, "verdict": "incorrect", "answer": "A", "reference": "C"},
                {"item_id": "q1", "sample": 0, "verdict": "incorrect", "answer": "A", "reference": "B",
                 **(public or {})}]
        return write_verdict_file(tmp_path / name, make_verdict_file(rows, **refs))

    return {"dir": tmp_path, "items": items, "resp": resp, "verdicts": verdicts}


def _no_text_in(output: str, text: str) -> None:
    """Neither the text nor any 12-character piece of it, in any normal form, is printed."""
    folded = unicodedata.normalize("NFKC", output).casefold()
    plain = unicodedata.normalize("NFKC", text).casefold()
    for i in range(0, max(1, len(plain) - 12)):
        assert plain[i:i + 12] not in folded, "the error output repeats protected text"


def _refused(cli, setup, public: dict, *extra: str) -> None:
    """With --public-text the public rows' imported text is published (capped): the leak check, the second layer,
    must refuse it. Without, it is withheld: nothing of it is published (the structure, tests below)."""
    out = setup["dir"] / "rel"
    r = cli("release", setup["verdicts"](public), "-o", out, "--public-text", *extra)
    assert r.code == 2, (r.out, r.err)
    assert "leak:" in r.err and "protected item 'p1'" in r.err
    _no_text_in(r.out + r.err, PIECE)
    assert not out.exists() and not any(p.name.startswith(".rel.") for p in setup["dir"].iterdir())


def _fullwidth(s: str) -> str:
    return "".join("\u3000" if c == " " else chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s)


@attack("leak.upper-case")
def test_upper_case_protected_text_is_found(cli, setup):
    _refused(cli, setup, {"reason": f"note: {PIECE.upper()}"})


@attack("leak.nfkc")
def test_full_width_look_alikes_are_found(cli, setup):
    _refused(cli, setup, {"reason": _fullwidth(PIECE)})


@attack("leak.separators")
@pytest.mark.parametrize("sep", ["_", "-", "."])
def test_separators_instead_of_spaces_are_found(cli, setup, sep):
    _refused(cli, setup, {"reason": PIECE.replace(" ", sep)})


@attack("leak.zero-width")
def test_zero_width_characters_are_found(cli, setup):
    spaced = "".join(c + ("\u200b" if i % 10 == 9 else "") for i, c in enumerate(PIECE))
    _refused(cli, setup, {"reason": spaced})


@attack("leak.split-values")
def test_text_split_across_values_is_found(cli, setup):
    # Three values, each shorter than the 20-character window, in field order; and two around another.
    _refused(cli, setup, {"answer": "converts glucose", "rule": " into usable", "reason": " chemical energy"})
    _refused(cli, setup, {"answer": "glucose into usa", "rule": "R1", "reason": "ble chemical energy"})


@attack("leak.import-status")
def test_protected_text_in_an_imported_status_is_refused(cli, setup, tmp_path):
    table = tmp_path / "recorded.jsonl"
    table.write_text("\n".join(json.dumps(r) for r in [
        {"item_id": "p1", "sample": 0, "correct": False, "answer": "A", "status": f"graded: {PIECE}"},
        {"item_id": "p2", "sample": 0, "correct": False, "answer": "A"},
        {"item_id": "p3", "sample": 0, "correct": False, "answer": "A"},
        {"item_id": "q1", "sample": 0, "correct": False, "answer": "A"}]) + "\n")
    vf = tmp_path / "imported.json"
    r = cli("import", "verdicts", table, "--benchmark", "choice", "-o", vf, "--package", setup["resp"])
    assert r.code == 0, r.err
    out = tmp_path / "rel"
    r = cli("release", vf, "-o", out, "--items", setup["items"], "--responses", setup["resp"])
    assert r.code == 2
    _no_text_in(r.out + r.err, PIECE)
    assert not out.exists()


@attack("leak.error-echo")
@pytest.mark.parametrize("field", ["answer", "rule", "reason", "reference"])
def test_no_error_line_prints_the_text_it_found(cli, setup, field):
    out = setup["dir"] / "rel"
    r = cli("release", setup["verdicts"]({field: f"{QUESTION}"}), "-o", out, "--public-text")
    assert r.code == 2
    _no_text_in(r.out + r.err, QUESTION)
    # and verify-release, given a release carrying the text, never prints it either
    r = cli("release", setup["verdicts"]({field: "B"}, name="clean.json"), "-o", out)
    assert r.code == 0, r.err
    rows = (out / "verdicts.jsonl").read_text()
    leaky = rows.replace('"item_id":"q1"', '"item_id":"' + QUESTION + '"').encode()
    (out / "verdicts.jsonl").write_bytes(leaky)
    m = json.loads((out / "manifest.json").read_text())
    for f in m["files"]:
        if f["path"] == "verdicts.jsonl":
            f.update(sha256=sha256(leaky), bytes=len(leaky))
    (out / "manifest.json").write_text(json.dumps(m))
    r = cli("verify-release", out, "--items", setup["items"], "--responses", setup["resp"])
    assert r.code == 1
    _no_text_in(r.out + r.err, QUESTION)


# --------------------------------------------------------------------------- answer inference


def _versioned(tmp_path: Path, n_items: int = 60, *, status_of=None) -> tuple[Path, Path, Path]:
    """GPQA-shaped: item k of question i is `synth/{i:03d}-v{k}` with its gold at letter k (synthetic)."""
    rng = random.Random(11)
    items, responses, rows = [], [], []
    for i in range(n_items):
        for k in range(1, 5):
            item_id, gold = f"synth/{i:03d}-v{k}", "ABCD"[k - 1]
            items.append({"item_id": item_id, "reference": gold, "num_choices": 4, "protected": True})
            responses.append({"item_id": item_id, "response": "The answer is (A)."})
            guess = rng.choice("ABCD")
            verdict = "correct" if guess == gold else "incorrect"
            row = {"item_id": item_id, "sample": 0, "verdict": verdict, "answer": guess, "reference": gold}
            if status_of:
                row.update(status_of(gold, verdict))
            rows.append(row)
    ip = make_package(tmp_path / "items", items=items)
    rp = make_package(tmp_path / "resp", responses=responses)
    vf = write_verdict_file(tmp_path / "results.json", make_verdict_file(
        rows, items_package=package(**_ref(ip)), responses_package=package(**_ref(rp))))
    return vf, ip, rp


@attack("leak.answer-inference")
def test_ids_that_predict_the_reference_are_refused(cli, tmp_path):
    vf, ip, rp = _versioned(tmp_path)
    r = cli("release", vf, "-o", tmp_path / "rel")
    assert r.code == 2, r.err
    assert ("audit: error: verdicts.jsonl: field item_id: answer inference: item_id token 3 predicts "
            "the reference of 240 protected items 240 times (chance 25.00%; exact binomial p = ") in r.err
    assert "use --hash-ids" in r.err
    assert not (tmp_path / "rel").exists()
    # Salted ids carry nothing: the same grading releases.
    r = cli("release", vf, "-o", tmp_path / "rel", "--hash-ids")
    assert r.code == 0, r.err
    info = json.loads((tmp_path / "rel" / "release.json").read_text())
    check = info["leak_check"]["inference"]
    assert check["test"] == "leave-one-out majority vote, one-sided exact binomial test against chance"
    assert check["alpha"] == 1e-6 and check["min_lift"] == 0.1 and check["passed"] is True


@attack("release.status-encodes-answer")
def test_statuses_that_spell_the_answer_are_refused(cli, tmp_path):
    # In the statuses' vocabulary, one per gold letter: only the statistical check can see it.
    code = {"A": "no_answer", "B": "timeout", "C": "error", "D": "excluded"}
    vf, ip, rp = _versioned(tmp_path, status_of=lambda gold, v: {"verdict": "ungraded", "status": code[gold]})
    r = cli("release", vf, "-o", tmp_path / "rel", "--hash-ids")
    assert r.code == 2, r.err
    assert "answer inference: status predicts the reference of 240 protected items 240 times" in r.err
    # Outside the vocabulary: a protected row publishes one of audit's statuses or nothing.
    (tmp_path / "b").mkdir()
    vf, ip, rp = _versioned(tmp_path / "b", status_of=lambda gold, v: {"status": f"{v}-{gold.lower()}"})
    r = cli("release", vf, "-o", tmp_path / "rel", "--hash-ids")
    assert r.code == 2
    assert "field status: a protected row's status must be one of audit's statuses" in r.err


@attack("leak.answer-inference")
@pytest.mark.shared_data
@pytest.mark.slow
def test_real_gpqa_ids_with_versions_are_refused(cli, tmp_path, shared):
    src = shared("gpqa_diamond_responses/gpqa_diamond_responses.jsonl.gz")
    with gzip.open(src, "rt", encoding="utf-8") as f:
        raw = [json.loads(line) for line in f]
    models = sorted({r["model"] for r in raw})
    items, responses, rows = {}, [], []
    for r in raw:  # never printed: only ids, gold letters and extracted letters are used
        item_id = f"gpqa_diamond/{r['item_index']:03d}-v{r['version']}"
        items[item_id] = {"item_id": item_id, "reference": r["gold_letter"], "num_choices": 4, "protected": True}
        responses.append({"item_id": item_id, "sample": models.index(r["model"]), "response": r["response"]})
        letter = r["source_extracted"] if r["source_extracted"] in tuple("ABCD") else None
        rows.append({"item_id": item_id, "sample": models.index(r["model"]),
                     "verdict": "correct" if letter == r["gold_letter"] else "incorrect",
                     "status": "no_answer" if letter is None else None, "answer": letter,
                     "reference": r["gold_letter"]})
    for row in rows:
        if row["status"] is None:
            del row["status"]
    ip = make_package(tmp_path / "items", items=sorted(items.values(), key=lambda x: x["item_id"]))
    rp = make_package(tmp_path / "resp", responses=responses)
    vf = write_verdict_file(tmp_path / "results.json", make_verdict_file(
        rows, items_package=package(**_ref(ip)), responses_package=package(**_ref(rp))))
    r = cli("release", vf, "-o", tmp_path / "rel")
    assert r.code == 2
    assert "answer inference: item_id token 4 predicts the reference of 792 protected items 792 times" in r.err
    assert not (tmp_path / "rel").exists()  # salted ids release: tests/test_release.py


@attack("release.rows-reordered")
def test_verify_refuses_rows_reordered_to_follow_the_answers(cli, tmp_path):
    vf, ip, rp = _versioned(tmp_path)
    rel = tmp_path / "rel"
    salt_file = tmp_path / "salt"
    r = cli("release", vf, "-o", rel, "--hash-ids", "--salt-file", salt_file)
    assert r.code == 0, r.err
    assert cli("verify-release", rel, "--items", ip, "--salt-file", salt_file, "--responses", rp).code == 0
    # Someone republishes the rows ordered by gold letter (A items first, ...), re-pinned.
    from audit.release import hash_id, release_id_key

    salt = salt_file.read_text().strip()
    key = release_id_key(salt, json.loads((rel / "release.json").read_text())["id_context"])
    gold = {hash_id(f"synth/{i:03d}-v{k}", key): "ABCD"[k - 1] for i in range(60) for k in range(1, 5)}
    lines = (rel / "verdicts.jsonl").read_text().splitlines()
    lines.sort(key=lambda x: gold[json.loads(x)["item_id"]])
    data = ("\n".join(lines) + "\n").encode()
    (rel / "verdicts.jsonl").write_bytes(data)
    m = json.loads((rel / "manifest.json").read_text())
    for f in m["files"]:
        if f["path"] == "verdicts.jsonl":
            f.update(sha256=sha256(data), bytes=len(data))
    (rel / "manifest.json").write_text(json.dumps(m))
    r = cli("verify-release", rel, "--items", ip, "--salt-file", salt_file, "--responses", rp)
    assert r.code == 1
    assert "FAIL order" in r.out


# --------------------------------------------------------------------------- salts


@attack("salt.weak")
@pytest.mark.parametrize("salt,why", [
    ("aaaaaaaaaaaaaaaa", "shorter than 32 characters"),
    ("a" * 40, "estimated at"),
    ("0123456789abcdef" * 3, "estimated at"),
    ("abcdefghijklmnopqrstuvwxyzabcdefghijkl", "estimated at"),
    ("passwordpasswordpasswordpassword", "estimated at"),
    ("correcthorsebatterystaplecorrecthorse", "estimated at"),
    ("Summer2024!Summer2024!Summer2024!", "estimated at"),
])
def test_weak_salts_are_refused(cli, setup, salt, why):
    vf = setup["verdicts"]()
    r = cli("release", vf, "-o", setup["dir"] / "rel", "--hash-ids", "--salt", salt)
    assert r.code == 2, r.err
    assert r.err.startswith("audit: error: the salt is too weak: ") and why in r.err
    assert salt not in r.err and salt[:8] not in r.err  # the salt is a secret: never echoed


def test_strong_salts_pass(cli, setup):
    import secrets

    for salt in (secrets.token_hex(16), secrets.token_hex(32), secrets.token_urlsafe(32)):
        r = cli("release", setup["verdicts"](), "-o", setup["dir"] / "rel", "--hash-ids", "--salt", salt, "--force")
        assert r.code == 0, r.err


@attack("salt.offline-guess")
def test_no_salt_derived_check_is_published_and_the_default_salt_is_random(cli, setup):
    d = setup["dir"]
    rel = d / "rel"
    r = cli("release", setup["verdicts"](), "-o", rel, "--hash-ids")
    assert r.code == 0, r.err
    salt_file = d / "rel.salt"
    assert f"salt written to {salt_file}" in r.out
    salt = salt_file.read_text().strip()
    assert len(bytes.fromhex(salt)) == 32
    assert stat.S_IMODE(os.stat(salt_file).st_mode) == 0o600
    info = json.loads((rel / "release.json").read_text())
    assert "salt_check" not in info
    blob = b"".join(p.read_bytes() for p in rel.rglob("*") if p.is_file())
    assert salt.encode() not in blob
    # The attacker's offline guess: every salt-derived value published is an HMAC of a dataset id.
    import hashlib

    guesses = ["password", "secret-salt-2024", "aaaaaaaaaaaaaaaa", salt[:-1] + "0"]
    assert not any(hashlib.sha256(("audit-release-salt:" + g).encode()).hexdigest().encode() in blob
                   for g in guesses + [salt])
    assert cli("verify-release", rel, "--items", setup["items"], "--salt-file", salt_file).code == 0
    # A second release does not reuse the salt, and refuses to overwrite a salt file.
    r = cli("release", setup["verdicts"](), "-o", d / "rel2", "--hash-ids")
    assert r.code == 0 and (d / "rel2.salt").read_text().strip() != salt


@attack("release.replay-new-salt")
def test_an_old_release_presented_under_a_new_salt_fails_the_ids_check(cli, setup):
    import secrets

    d = setup["dir"]
    old, new = secrets.token_hex(32), secrets.token_hex(32)
    assert cli("release", setup["verdicts"](), "-o", d / "rel", "--hash-ids", "--salt", old).code == 0
    r = cli("verify-release", d / "rel", "--items", setup["items"], "--salt", new)
    assert r.code == 1
    assert "FAIL ids" in r.out
    assert old not in r.out and new not in r.out


@attack("fmt.dup-key-release-json")
def test_duplicate_key_in_release_json_fails_verification(cli, setup):
    rel = setup["dir"] / "rel"
    assert cli("release", setup["verdicts"](), "-o", rel).code == 0
    text = (rel / "release.json").read_text()
    forged = text.replace('"protected_items": 3,', '"protected_items": 0,\n  "protected_items": 3,').encode()
    assert forged != text.encode()
    (rel / "release.json").write_bytes(forged)
    m = json.loads((rel / "manifest.json").read_text())
    for f in m["files"]:
        if f["path"] == "release.json":
            f.update(sha256=sha256(forged), bytes=len(forged))
    (rel / "manifest.json").write_text(json.dumps(m))
    r = cli("verify-release", rel, "--items", setup["items"], "--responses", setup["resp"])
    assert r.code == 1
    assert "FAIL release.json   field protected_items: duplicate key in a JSON object" in r.out


def test_an_old_release_with_salt_check_still_verifies_with_a_warning(cli, setup):
    """Releases written before the hardening published salt_check: they verify, and the holder is warned."""
    import secrets

    from audit.release import salt_check

    d = setup["dir"]
    salt = secrets.token_hex(32)
    rel = d / "rel"
    assert cli("release", setup["verdicts"](), "-o", rel, "--hash-ids", "--salt", salt).code == 0
    info = json.loads((rel / "release.json").read_text())
    info = {**{k: v for k, v in info.items() if k != "leak_check"}, "salt_check": salt_check(salt),
            "leak_check": {k: v for k, v in info["leak_check"].items() if k != "inference"}}
    data = (json.dumps(info, indent=2) + "\n").encode()
    (rel / "release.json").write_bytes(data)
    m = json.loads((rel / "manifest.json").read_text())
    for f in m["files"]:
        if f["path"] == "release.json":
            f.update(sha256=sha256(data), bytes=len(data))
    (rel / "manifest.json").write_text(json.dumps(m))
    r = cli("verify-release", rel, "--items", setup["items"], "--salt", salt)
    assert r.code == 0, r.out
    assert "warning: release.json publishes salt_check" in r.out
    r = cli("verify-release", rel, "--items", setup["items"], "--salt", secrets.token_hex(32))
    assert r.code == 1 and "FAIL ids            the salt does not match release.json's salt_check" in r.out


# --------------------------------------------------------------------------- round 3 (issue 19)

import base64  # noqa: E402
import codecs  # noqa: E402


def _repin(rel: Path, name: str, data: bytes) -> None:
    """Replace one file of a release and re-pin it in the manifest (what a forger does)."""
    repin(rel, name, data, indent=None)


def _interleaved(s: str) -> str:
    return "".join(c + "q" for c in s)


ENCODINGS = {
    "base64": lambda s: base64.b64encode(s.encode()).decode(),
    "base64url": lambda s: base64.urlsafe_b64encode(s.encode()).decode().rstrip("="),
    "base32": lambda s: base64.b32encode(s.encode()).decode(),
    "hex": lambda s: s.encode().hex(),
    "HEX": lambda s: s.encode().hex().upper(),
    "rot13": lambda s: codecs.encode(s, "rot13"),
    "reversed": lambda s: s[::-1],
    "interleaved": _interleaved,
    "every third": lambda s: "".join(c + "xy" for c in s),
}


@attack("leak.encoded")
@pytest.mark.parametrize("how", sorted(ENCODINGS))
def test_encoded_protected_text_is_found(cli, setup, how):
    reason = f"note {ENCODINGS[how](QUESTION)}"
    if len(reason) > 200:  # over --public-text's cap: refused before the leak check
        r = cli("release", setup["verdicts"]({"reason": reason}), "-o", setup["dir"] / "rel", "--public-text")
        assert r.code == 2 and "field reason: longer than 200 characters" in r.err
        reason = reason[:200]
    _refused(cli, setup, {"reason": reason})


@attack("leak.encoded")
@pytest.mark.parametrize("how", ["base64", "rot13", "reversed"])
def test_verify_release_finds_encoded_text_planted_after_release(cli, setup, how):
    rel = setup["dir"] / "rel"
    assert cli("release", setup["verdicts"](), "-o", rel, "--public-text").code == 0
    rows = (rel / "public_text.jsonl").read_text()
    forged = rows.replace('"reason":"test row: incorrect"', '"reason":"' + ENCODINGS[how](QUESTION) + '"')
    assert forged != rows
    _repin(rel, "public_text.jsonl", forged.encode())
    r = cli("verify-release", rel, "--items", setup["items"], "--responses", setup["resp"])
    assert r.code == 1, r.out
    assert "FAIL leaks" in r.out and "protected item 'p1'" in r.out
    _no_text_in(r.out + r.err, PIECE)


@pytest.fixture
def wide(tmp_path):
    """p1 protected (QUESTION); 12 public items q01..q12 whose reasons a test sets; a verdict file maker."""
    items = make_package(tmp_path / "items", items=[
        {"item_id": "p1", "reference": "A", "num_choices": 4, "protected": True, "question": QUESTION}]
        + [{"item_id": f"q{n:02d}", "reference": "B", "num_choices": 4} for n in range(1, 13)])
    resp = make_package(tmp_path / "resp", responses=[{"item_id": i, "response": "The answer is (A)."}
                                                      for i in ["p1"] + [f"q{n:02d}" for n in range(1, 13)]])
    refs = {"items_package": package(**_ref(items)), "responses_package": package(**_ref(resp))}

    def verdicts(reasons: list[str], **header) -> Path:
        rows = [{"item_id": "p1", "sample": 0, "verdict": "correct", "answer": "A", "reference": "A"}]
        for n in range(1, 13):
            rows.append({"item_id": f"q{n:02d}", "sample": 0, "verdict": "incorrect", "answer": "A",
                         "reference": "B", "reason": reasons[n - 1] if n <= len(reasons) else "letter A"})
        return write_verdict_file(tmp_path / "results.json", make_verdict_file(rows, **{**refs, **header}))

    return {"dir": tmp_path, "items": items, "resp": resp, "verdicts": verdicts}


@attack("leak.spread-over-rows")
@pytest.mark.parametrize("encode", ["plain", "base64", "reversed"])
def test_pieces_spread_one_per_row_are_found(cli, wide, encode):
    text = {"plain": QUESTION, "base64": ENCODINGS["base64"](QUESTION), "reversed": QUESTION[::-1]}[encode]
    pieces = [text[i:i + 19] for i in range(0, len(text), 19)]
    assert len(pieces) <= 12 and all(len(p) <= 19 for p in pieces)
    out = wide["dir"] / "rel"
    r = cli("release", wide["verdicts"](pieces), "-o", out, "--public-text")
    assert r.code == 2, r.err
    assert "leak:" in r.err and "protected item 'p1'" in r.err and "concatenated" in r.err
    _no_text_in(r.out + r.err, PIECE)
    assert not out.exists()


@attack("leak.document-strings")
@pytest.mark.parametrize("benchmark", [base64.b64encode(QUESTION.encode()).decode(), QUESTION,
                                       QUESTION.encode().hex(),
                                       # a safe name (lowercase base32): refused as no registered or pinned name
                                       base64.b32encode(PIECE[:35].encode()).decode().lower().rstrip("=")])
def test_protected_text_in_the_benchmark_name_is_refused(cli, wide, benchmark):
    out = wide["dir"] / "rel"
    r = cli("release", wide["verdicts"]([], benchmark=benchmark), "-o", out)
    assert r.code == 2, r.err
    assert r.err.count("\n") == 1 and "benchmark" in r.err
    _no_text_in(r.out + r.err, PIECE)
    assert benchmark[:12] not in r.err
    assert not out.exists()


def test_release_json_records_the_leak_check_transformations(cli, setup):
    rel = setup["dir"] / "rel"
    assert cli("release", setup["verdicts"](), "-o", rel).code == 0
    info = json.loads((rel / "release.json").read_text())
    assert info["leak_check"]["transforms"] == "leakcheck@3"
    from audit.leaks import TRANSFORMS

    assert TRANSFORMS["leakcheck@1"] == ("identity",)
    assert {"base64", "hex", "rot13", "reversed", "rows concatenated in published order"} <= set(
        TRANSFORMS["leakcheck@2"])
    # A release written before leakcheck@2 records none: verified with the version it was written under.
    old = {**info, "leak_check": {k: v for k, v in info["leak_check"].items() if k != "transforms"}}
    _repin(rel, "release.json", (json.dumps(old, indent=2) + "\n").encode())
    r = cli("verify-release", rel, "--items", setup["items"], "--responses", setup["resp"])
    assert "ok   leaks" in r.out and "leakcheck@1" in r.out


# ---- the key in structure


def _protected_set(tmp_path: Path, n: int, rows_of, *, ids=None, policies=None) -> tuple[Path, Path, Path, dict]:
    """n protected items with random golds; rows_of(item_id, gold) gives each item's verdict rows."""
    rng = random.Random(19)
    gold = {(ids[k] if ids else f"p{k:03d}"): rng.choice("ABCD") for k in range(n)}
    items = [{"item_id": i, "reference": g, "num_choices": 4, "protected": True} for i, g in gold.items()]
    ip = make_package(tmp_path / "items", items=items)
    rows = [row for i, g in gold.items() for row in rows_of(i, g)]
    rp = make_package(tmp_path / "resp", responses=[{"item_id": r["item_id"], "sample": r["sample"],
                                                     "response": "The answer is (A)."} for r in rows
                                                    if r["item_id"] in gold])
    header = {"items_package": package(**_ref(ip)), "responses_package": package(**_ref(rp))}
    if policies is not None:
        header["policies"] = policies
    vf = write_verdict_file(tmp_path / "results.json", make_verdict_file(rows, **header))
    return vf, ip, rp, gold


@attack("release.sample-encodes-answer")
def test_sample_indices_that_spell_the_answer_are_refused(cli, tmp_path):
    vf, ip, rp, gold = _protected_set(tmp_path, 100, lambda i, g: [
        {"item_id": i, "sample": "ABCD".index(g), "verdict": "incorrect", "answer": "A", "reference": g}])
    r = cli("release", vf, "-o", tmp_path / "rel", "--hash-ids")
    # Held by structure: a release's samples are ranks in the pinned responses package, here 0 for every item.
    assert r.code == 0, r.err
    rows = [json.loads(x) for x in (tmp_path / "rel" / "verdicts.jsonl").read_text().splitlines()]
    assert {x["sample"] for x in rows} == {0}
    info = json.loads((tmp_path / "rel" / "release.json").read_text())
    assert info["structure"]["samples"] == "responses package"
    # The second layer still sees the verdict file's own indices (a release before version 2 published them).
    from audit import inference

    result = inference.check(inference.features([(i, "ABCD".index(g), "incorrect", "incorrect")
                                                 for i, g in gold.items()]), gold)
    assert any(f.feature == "sample indices" for f in result.failed)


@attack("release.order-encodes-answer")
def test_ids_whose_order_spells_the_answer_are_refused(cli, tmp_path):
    # Ids unique and opaque one by one, but sorted they put every A first, then B, C, D.
    rng = random.Random(5)
    golds = sorted(rng.choice("ABCD") for _ in range(100))
    ids = [f"{k:03d}" for k in range(100)]
    vf, ip, rp, gold = _protected_set(tmp_path, 100, lambda i, g: [
        {"item_id": i, "sample": 0, "verdict": "incorrect", "answer": "A", "reference": g}], ids=ids)
    # _protected_set draws its own golds: rebuild the items with the sorted ones
    items = [{"item_id": i, "reference": g, "num_choices": 4, "protected": True} for i, g in zip(ids, golds)]
    ip = make_package(tmp_path / "items2", items=items)
    rows = [{"item_id": i, "sample": 0, "verdict": "incorrect", "answer": "A", "reference": g}
            for i, g in zip(ids, golds)]
    vf = write_verdict_file(tmp_path / "results2.json", make_verdict_file(
        rows, items_package=package(**_ref(ip)), responses_package=package(**_ref(rp))))
    r = cli("release", vf, "-o", tmp_path / "rel")
    assert r.code == 2, r.err
    assert not (tmp_path / "rel").exists()
    # The structure alone (what the inference test sees) predicts the references: by position in 4 blocks.
    from audit import inference

    result = inference.check(inference.features([(i, 0, "incorrect", "incorrect") for i in ids]), dict(zip(ids, golds)))
    assert any(f.feature.startswith("row order: position in") for f in result.failed)
    assert not any(f.field == "item_id" for f in result.failed)


@attack("release.public-text-spells-key")
@pytest.mark.parametrize("order", ["published", "dataset-under-salted-ids", "digits"])
def test_a_public_row_spelling_the_protected_key_is_refused(cli, tmp_path, order):
    rng = random.Random(23)
    gold = {f"p{k:03d}": rng.choice("ABCD") for k in range(100)}
    items = [{"item_id": i, "reference": g, "num_choices": 4, "protected": True} for i, g in gold.items()]
    items.append({"item_id": "zz-public", "reference": "B", "num_choices": 4})
    ip = make_package(tmp_path / "items", items=items)
    rp = make_package(tmp_path / "resp", responses=[{"item_id": i, "response": "The answer is (A)."}
                                                    for i in list(gold) + ["zz-public"]])
    if order == "digits":
        key = "".join(str("ABCD".index(gold[i])) for i in sorted(gold))
    else:
        key = "".join(gold[i] for i in sorted(gold))
    extra = ("--public-text", "--hash-ids") if order == "dataset-under-salted-ids" else ("--public-text",)
    rows = [{"item_id": i, "sample": 0, "verdict": "incorrect", "answer": "A", "reference": g}
            for i, g in gold.items()]
    rows.append({"item_id": "zz-public", "sample": 0, "verdict": "incorrect", "answer": "A", "reference": "B",
                 "reason": "KEY" + key})
    vf = write_verdict_file(tmp_path / "results.json", make_verdict_file(
        rows, items_package=package(**_ref(ip)), responses_package=package(**_ref(rp))))
    r = cli("release", vf, "-o", tmp_path / "rel", *extra)
    assert r.code == 2, r.err
    assert "leak:" in r.err and "references of the protected items" in r.err
    assert key[:12] not in r.err
    assert not (tmp_path / "rel").exists()


# ---- policy-derived fields: the random guess


def _guess_rows(seed: int = 12345):
    """Every row a seeded random guess (no answer extracted), graded as audit grade does."""
    from audit.grade import _guess
    from audit.verdicts import Policies

    pol = Policies(no_answer="random-guess", guess_seed=seed)

    def rows_of(item_id: str, gold: str) -> list[dict]:
        out = []
        for s in range(4):
            g, _ = _guess(pol, item_id, s, 4)
            out.append({"item_id": item_id, "sample": s, "verdict": "correct" if g == gold else "incorrect",
                        "status": "random_guess", "answer": None, "reference": gold,
                        "reason": f"no answer extracted (none); seeded guess {g}"})
        return out

    return pol, rows_of


def _recovered(rows: list[dict], seed: int) -> dict[str, str | None]:
    """The attack: recompute each published guess from the published seed, id and sample."""
    from audit.grade import _guess
    from audit.verdicts import Policies

    pol = Policies(no_answer="random-guess", guess_seed=seed)
    cands: dict[str, set[str]] = {}
    for r in rows:
        c = cands.setdefault(r["item_id"], set("ABCD"))
        if r["status"] != "random_guess" or r["verdict"] not in ("correct", "incorrect"):
            continue
        g, _ = _guess(pol, r["item_id"], r["sample"], 4)
        if r["verdict"] == "correct":
            c &= {g}
        else:
            c.discard(g)
    return {i: min(c) if len(c) == 1 else None for i, c in cands.items()}


@pytest.mark.slow
@attack("release.random-guess-key")
def test_random_guess_rows_of_protected_items_do_not_give_the_key(cli, tmp_path):
    pol, rows_of = _guess_rows()
    vf, ip, rp, gold = _protected_set(tmp_path, 200, rows_of, policies=pol)
    r = cli("release", vf, "-o", tmp_path / "rel")
    assert r.code == 2, r.err
    assert "answer inference: the random guess recomputed from the published seed, ids and samples predicts" in r.err
    assert not (tmp_path / "rel").exists()
    # Salted ids: the guess cannot be recomputed from what is published.
    r = cli("release", vf, "-o", tmp_path / "rel", "--hash-ids")
    assert r.code == 0, r.err
    rows = [json.loads(x) for x in (tmp_path / "rel" / "verdicts.jsonl").read_text().splitlines()]
    info = json.loads((tmp_path / "rel" / "release.json").read_text())
    got = _recovered(rows, info["policies"]["guess_seed"])
    from audit.release import hash_id, release_id_key

    salt = (tmp_path / "rel.salt").read_text().strip()
    key = release_id_key(salt, info["id_context"])
    pub_gold = {hash_id(i, key): g for i, g in gold.items()}
    single = [i for i in got if got[i] is not None]
    hits = sum(got[i] == pub_gold[i] for i in single)
    assert hits <= 0.25 * len(single) + 3 * (len(single) * 0.1875) ** 0.5 + 1, (hits, len(single))
    # The same attack on the dataset ids of the grading gets every key back: the test is real.
    graded = json.loads(vf.read_text())["items"]
    old = _recovered(graded, 12345)
    assert sum(old[i] == gold[i] for i in old) >= 0.75 * len(gold)  # 4 guesses an item
    assert cli("verify-release", tmp_path / "rel", "--items", ip, "--salt-file", tmp_path / "rel.salt",
               "--responses", rp).code == 0


# ---- salts


@attack("salt.file-mode")
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_a_salt_file_others_can_read_is_refused(cli, setup, mode):
    import secrets

    f = setup["dir"] / "salt"
    f.write_text(secrets.token_hex(32) + "\n")
    os.chmod(f, mode)
    r = cli("release", setup["verdicts"](), "-o", setup["dir"] / "rel", "--hash-ids", "--salt-file", f)
    assert r.code == 2
    assert r.err == (f"audit: error: {f}: the salt file is readable by group or others (mode {mode:04o}): "
                     f"run chmod 600 {f}\n")
    assert not (setup["dir"] / "rel").exists()
    r = cli("verify-release", setup["dir"] / "rel", "--items", setup["items"], "--salt-file", f)
    assert r.code == 2 and "chmod 600" in r.err
    os.chmod(f, 0o600)
    assert cli("release", setup["verdicts"](), "-o", setup["dir"] / "rel", "--hash-ids", "--salt-file", f).code == 0


@attack("salt.reuse-links")
def test_one_salt_reused_does_not_link_two_releases(cli, setup):
    import secrets

    d = setup["dir"]
    f = d / "salt"
    f.write_text(secrets.token_hex(32) + "\n")
    os.chmod(f, 0o600)
    assert cli("release", setup["verdicts"](), "-o", d / "a", "--hash-ids", "--salt-file", f).code == 0
    vf2 = setup["verdicts"]({"reason": "letter A, reference B"}, name="other.json")  # another grading
    assert cli("release", vf2, "-o", d / "b", "--hash-ids", "--salt-file", f).code == 0
    ids = [{json.loads(x)["item_id"] for x in (d / n / "verdicts.jsonl").read_text().splitlines()} for n in "ab"]
    assert len(ids[0]) == 4 and not ids[0] & ids[1]
    for n in "ab":
        assert cli("verify-release", d / n, "--items", setup["items"], "--salt-file", f).code == 0
    info = json.loads((d / "a" / "release.json").read_text())
    assert info["id_scheme"] == "hmac-sha256/release" and len(info["id_context"]) == 64
    assert "salted: HMAC-SHA256(K, id)" in (d / "a" / "README.md").read_text()


# ---- error lines


@attack("verdicts.error-echo")
@pytest.mark.parametrize("command", ["release", "show", "diff", "reproduce"])
@pytest.mark.parametrize("field", ["verdict", "sample", "attempt"])
def test_no_error_line_prints_a_rows_value(cli, setup, command, field):
    vf = setup["verdicts"]()
    text = vf.read_text()
    value = json.dumps(QUESTION)
    was = {"verdict": '"verdict":"correct"', "sample": '"sample":0', "attempt": '"attempt":0'}[field]
    bad = text.replace(was, f'"{field}":{value}', 1)
    assert bad != text
    vf.write_text(bad)
    args = {"release": ("release", vf, "-o", setup["dir"] / "rel"), "show": ("show", vf),
            "diff": ("diff", vf, vf), "reproduce": ("reproduce", vf, "--package", setup["resp"], "--items", setup["items"])}
    r = cli(*args[command])
    assert r.code == 2, (r.out, r.err)
    assert r.err.count("\n") == 1 and r.err.startswith(f"audit: error: {vf}: row 1: field {field}: ")
    _no_text_in(r.out + r.err, QUESTION)


@attack("verdicts.bad-unicode")
@pytest.mark.parametrize("command", ["release", "show", "diff"])
@pytest.mark.parametrize("where,esc", [("answer", "\\ud800"), ("answer", "x\\udc00y"),
                                       ("reason", "\\udc00\\ud800"), ("item_id", "p\\ud83d"),
                                       ("benchmark", "te\\udfffst")])
def test_lone_surrogates_are_one_clear_line(cli, setup, command, where, esc):
    vf = setup["verdicts"]()
    text = vf.read_text()
    if where == "benchmark":
        bad = text.replace('"benchmark": "test"', f'"benchmark": "{esc}"', 1)
        expect = f"audit: error: {vf}: field benchmark: invalid Unicode: a lone surrogate (U+D"
    elif where == "item_id":
        bad = text.replace('"item_id":"p1"', f'"item_id":"{esc}"', 1)
        expect = f"audit: error: {vf}: row 1: field item_id: invalid Unicode: a lone surrogate (U+D"
    else:
        bad = text.replace('"answer":"A"', f'"{where}":"{esc}"' if where == "answer" else '"answer":"A"', 1)
        if where == "reason":
            bad = text.replace('"reason":"test row: correct"', f'"reason":"{esc}"', 1)
        expect = f"audit: error: {vf}: row 1: field {where}: invalid Unicode: a lone surrogate (U+D"
    assert bad != text
    vf.write_text(bad)
    args = {"release": ("release", vf, "-o", setup["dir"] / "rel"), "show": ("show", vf), "diff": ("diff", vf, vf)}
    r = cli(*args[command])
    assert r.code == 2, (r.out, r.err)
    assert r.err.startswith(expect) and r.err.count("\n") == 1, r.err
    assert "Traceback" not in r.err


def test_escaped_surrogate_pairs_are_valid_text(cli, setup):
    vf = setup["verdicts"]()
    text = vf.read_text()
    vf.write_text(text.replace('"reason":"test row: correct"', '"reason":"ok \\ud83d\\ude00"', 1))
    r = cli("show", vf)
    assert r.code == 0, r.err


def test_a_release_with_the_old_id_scheme_still_verifies(cli, setup):
    """Releases before hmac-sha256/release salted ids as HMAC(salt, id) and ran leakcheck@1: they verify."""
    import secrets

    from audit.release import ReleaseInfo, hash_id, release_id_key, render_readme

    d = setup["dir"]
    salt = secrets.token_hex(32)
    rel = d / "rel"
    assert cli("release", setup["verdicts"](), "-o", rel, "--hash-ids", "--salt", salt).code == 0
    info = json.loads((rel / "release.json").read_text())
    new_key = release_id_key(salt, info["id_context"])
    old_of = {hash_id(i, new_key): hash_id(i, salt) for i in ("p1", "p2", "p3", "q1")}
    rows = [json.loads(x) for x in (rel / "verdicts.jsonl").read_text().splitlines()]
    for x in rows:
        x["item_id"] = old_of[x["item_id"]]
    rows.sort(key=lambda x: (x["item_id"], x["sample"]))
    _repin(rel, "verdicts.jsonl", "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in rows).encode())
    old = {k: v for k, v in info.items() if k != "id_context"}
    old["id_scheme"] = "hmac-sha256"
    old["leak_check"] = {k: v for k, v in info["leak_check"].items() if k != "transforms"}
    _repin(rel, "release.json", (json.dumps(old, indent=2) + "\n").encode())
    _repin(rel, "README.md", render_readme(ReleaseInfo.model_validate(old)).encode())
    r = cli("verify-release", rel, "--items", setup["items"], "--salt", salt, "--responses", setup["resp"])
    assert r.code == 0, r.out
    assert "ok   ids            4 of the release's 4 items are in your copy" in r.out
    assert "(leakcheck@1, as release.json records)" in r.out


@attack("leak.document-strings")
def test_a_package_id_that_is_not_a_safe_name_is_refused(cli, setup):
    label = base64.b64encode(PIECE.encode()).decode().rstrip("=").replace("/", "-").replace("+", ".")
    r = cli("release", setup["verdicts"](), "-o", setup["dir"] / "rel", "--id", label)
    assert r.code == 2
    assert r.err == ("audit: error: --id: a release's package id is published: it must match "
                     "[a-z0-9][a-z0-9_.:/+-]{0,63}; this one does not\n")
    assert not (setup["dir"] / "rel").exists()


@attack("verdicts.bad-unicode")
@pytest.mark.parametrize("command", ["release", "show", "diff"])
@pytest.mark.parametrize("raw", [b"\xed\xa0\x80", b"x\xff", b"\xc0\xaf"])
def test_bytes_that_are_not_utf8_are_one_clear_line(cli, setup, command, raw):
    vf = setup["verdicts"]()
    data = vf.read_bytes()
    bad = data.replace(b'"answer":"A"', b'"answer":"' + raw + b'"', 1)
    assert bad != data
    vf.write_bytes(bad)
    args = {"release": ("release", vf, "-o", setup["dir"] / "rel"), "show": ("show", vf), "diff": ("diff", vf, vf)}
    r = cli(*args[command])
    assert r.code == 2, (r.out, r.err)
    assert r.err.startswith(f"audit: error: {vf}: row 1: field answer: not valid UTF-8 at byte "), r.err
    assert r.err.count("\n") == 1


@attack("verdicts.error-echo")
@pytest.mark.parametrize("command", ["release", "show", "diff"])
def test_a_duplicate_row_is_named_by_row_not_by_its_id(cli, tmp_path, command):
    rows = [{"item_id": QUESTION, "sample": 0, "verdict": "correct"}, {"item_id": "q2", "sample": 0, "verdict": "correct"}]
    vf = make_verdict_file(rows)
    vf = vf.model_copy(update={"items": [vf.items[0], vf.items[0], vf.items[1]]})
    path = write_verdict_file(tmp_path / "dup.json", vf)
    args = {"release": ("release", path, "-o", tmp_path / "rel", "--public"), "show": ("show", path),
            "diff": ("diff", path, path)}
    r = cli(*args[command])
    assert r.code == 2
    assert r.err == f"audit: error: {path}: row 2: field items: duplicate row: the item_id and sample of row 1\n"


# --------------------------------------------------------------------------- round 4 (issue 28 class 5): structure
#
# A list of encodings can always be outrun, so each attack here is judged by what the release *publishes*: it holds
# when no file of the release carries the planted value (the release refused, or wrote nothing of it), whatever
# the leak check knows. The structure that holds them: in a release holding a protected item, every published
# value is closed-vocabulary or comes from the pinned packages (release_row.v2), and sample indices are ranks in
# the pinned responses package.

import urllib.parse  # noqa: E402
import zlib  # noqa: E402

_HOMOGLYPHS = str.maketrans("aceiopxy", "\u0430\u0441\u0435\u0456\u043e\u0440\u0445\u0443")  # Cyrillic look-alikes


def _caesar(s: str, k: int) -> str:
    return "".join(chr((ord(c) - base + k) % 26 + base) if c.isascii() and c.isalpha() else c
                   for c in s for base in [65 if c.isupper() else 97])


NEW_ENCODINGS = {
    "base85": lambda s: base64.b85encode(s.encode()).decode(),
    "ascii85": lambda s: base64.a85encode(s.encode()).decode(),
    "caesar 3": lambda s: _caesar(s, 3),
    "caesar 11": lambda s: _caesar(s, 11),
    "every 4th character": lambda s: "".join(c + "xyz" for c in s),
    "zlib": lambda s: base64.b64encode(zlib.compress(s.encode())).decode(),
    "reversed words": lambda s: " ".join(reversed(s.split())),
    "homoglyphs": lambda s: s.translate(_HOMOGLYPHS),
    "percent-encoding": lambda s: urllib.parse.quote(s, safe=""),
    "base64 of the reversed text": lambda s: base64.b64encode(s[::-1].encode()).decode(),
    "base32 of rot13": lambda s: base64.b32encode(codecs.encode(s, "rot13").encode()).decode(),
    "decimal code points": lambda s: " ".join(str(ord(c)) for c in s),
}


def _published_values(rel: Path) -> list[str]:
    """Every string a release publishes: each file's text, and every decoded string value of its JSON rows and
    documents (JSON escapes undone), and of a dataset folder's Parquet."""
    out: list[str] = []
    for p in sorted(rel.rglob("*")):
        if not p.is_file():
            continue
        if p.suffix == ".parquet":
            import pyarrow.parquet as pq

            out += [str(v) for row in pq.read_table(p).to_pylist() for v in row.values() if v is not None]
            continue
        text = p.read_text(encoding="utf-8", errors="replace")
        out.append(text)
        docs = [json.loads(x) for x in text.splitlines() if x.strip()] if p.suffix == ".jsonl" else \
            [json.loads(text)] if p.suffix == ".json" else []
        stack: list = list(docs)
        while stack:
            x = stack.pop()
            if isinstance(x, dict):
                stack += list(x.values())
            elif isinstance(x, list):
                stack += x
            elif isinstance(x, str):
                out.append(x)
    return out


def _carries(rel: Path, pieces: list[str]) -> bool:
    values = _published_values(rel) if rel.exists() else []
    return any(piece in v for piece in pieces for v in values)


def _case(tmp_path: Path, public: list[dict], *, n_protected: int = 1, golds: str = "") -> dict:
    """p1 (QUESTION) and further protected items p02.. with the given golds; one public item q01.. per dict in
    `public`, each row updated with it; items, responses and a verdict file."""
    prot = [("p1", "A")] + [(f"p{k + 2:02d}", g) for k, g in enumerate(golds or "BCD"[:n_protected - 1])]
    items = [{"item_id": i, "reference": g, "num_choices": 4, "protected": True,
              **({"question": QUESTION} if i == "p1" else {})} for i, g in prot]
    items += [{"item_id": f"q{n:02d}", "reference": "B", "num_choices": 4} for n in range(1, len(public) + 1)]
    ip = make_package(tmp_path / "items", items=items)
    rp = make_package(tmp_path / "resp", responses=[{"item_id": it["item_id"], "response": "The answer is (A)."}
                                                    for it in items])
    rows = [{"item_id": i, "sample": 0, "verdict": "incorrect" if g != "A" else "correct", "answer": "A",
             "reference": g} for i, g in prot]
    rows += [{"item_id": f"q{n:02d}", "sample": 0, "verdict": "incorrect", "answer": "A", "reference": "B",
              "reason": "letter A, reference B", **extra} for n, extra in enumerate(public, 1)]
    vf = write_verdict_file(tmp_path / "results.json", make_verdict_file(
        rows, items_package=package(**_ref(ip)), responses_package=package(**_ref(rp))))
    return {"vf": vf, "items": ip, "resp": rp, "rel": tmp_path / "rel", "golds": dict(prot)}


@attack("release.public-text-encoded")
@pytest.mark.parametrize("how", sorted(NEW_ENCODINGS))
def test_a_public_reason_carries_no_encoding_of_protected_text(cli, tmp_path, how):
    planted = NEW_ENCODINGS[how](QUESTION)
    case = _case(tmp_path, [{"reason": planted}, {}])
    r = cli("release", case["vf"], "-o", case["rel"])
    assert r.code in (0, 2), r.err
    assert not _carries(case["rel"], [planted]), f"the release publishes the protected text as {how}"
    _no_text_in(r.out + r.err, PIECE)


@attack("release.public-text-pieces")
@pytest.mark.parametrize("layout", ["reverse order", "two fields"])
def test_public_rows_carry_no_pieces_of_protected_text(cli, tmp_path, layout):
    if layout == "reverse order":  # 19-character pieces, the last first: the column in published order is reversed
        pieces = [QUESTION[i:i + 19] for i in range(0, len(QUESTION), 19)][::-1]
        public = [{"reason": p} for p in pieces]
    else:  # 9-character pieces, alternately the row's answer and reason: no row or column holds two in a row
        pieces = [QUESTION[i:i + 9] for i in range(0, len(QUESTION), 9)]
        public = [{"answer": pieces[k], "reason": pieces[k + 1] if k + 1 < len(pieces) else "x"}
                  for k in range(0, len(pieces), 2)]
    case = _case(tmp_path, public)
    r = cli("release", case["vf"], "-o", case["rel"])
    assert r.code in (0, 2), r.err
    assert not _carries(case["rel"], [p for p in pieces if len(p) >= 8]), f"pieces published ({layout})"


@attack("release.public-text-planted")
@pytest.mark.parametrize("how", ["base85", "homoglyphs"])
def test_free_text_planted_in_a_public_row_after_release_fails_verification(cli, tmp_path, how):
    case = _case(tmp_path, [{}, {}])
    assert cli("release", case["vf"], "-o", case["rel"]).code == 0
    rel = case["rel"]
    rows = [json.loads(x) for x in (rel / "verdicts.jsonl").read_text().splitlines()]
    public = next(x for x in rows if not x.get("protected"))
    public["reason"] = NEW_ENCODINGS[how](QUESTION)
    _repin(rel, "verdicts.jsonl", "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in rows).encode())
    r = cli("verify-release", rel, "--items", case["items"], "--responses", case["resp"])
    assert r.code == 1, r.out
    _no_text_in(r.out + r.err, PIECE)


@attack("release.short-key")
@pytest.mark.parametrize("order", ["published", "reversed"])
def test_a_short_key_in_a_public_reason_is_not_published(cli, tmp_path, order):
    golds = "BDCADBACDBC"  # 12 protected items with p1: a key of 12 letters, under the 20-character window
    case = _case(tmp_path, [{}], n_protected=12, golds=golds)
    key = "".join(case["golds"][i] for i in sorted(case["golds"]))
    key = key if order == "published" else key[::-1]
    (tmp_path / "b").mkdir()
    case = _case(tmp_path / "b", [{"reason": f"see {key}"}], n_protected=12, golds=golds)
    r = cli("release", case["vf"], "-o", case["rel"])
    assert r.code in (0, 2), r.err
    assert not _carries(case["rel"], [key]), "the protected key is published"
    assert key not in r.out + r.err


def _key_set(tmp_path: Path, n: int, row_of) -> tuple[Path, Path, Path, dict[str, str]]:
    """n protected items p000.. with random golds, one row each from row_of(position, item, gold, golds)."""
    rng = random.Random(28)
    ids = [f"p{k:03d}" for k in range(n)]
    gold = {i: rng.choice("ABCD") for i in ids}
    ip = make_package(tmp_path / "items", items=[{"item_id": i, "reference": g, "num_choices": 4, "protected": True}
                                                 for i, g in gold.items()])
    rows = [row_of(k, i, gold[i], [gold[j] for j in ids]) for k, i in enumerate(ids)]
    rp = make_package(tmp_path / "resp", responses=[{"item_id": r["item_id"], "sample": r["sample"],
                                                     "response": "The answer is (A)."} for r in rows])
    vf = write_verdict_file(tmp_path / "results.json", make_verdict_file(
        rows, items_package=package(**_ref(ip)), responses_package=package(**_ref(rp))))
    return vf, ip, rp, gold


def _recovered_share(rel: Path, gold: dict[str, str], decode) -> float:
    """Share of protected items whose gold `decode(rows by published order, position)` recovers from the release."""
    if not rel.exists():
        return 0.0
    rows = [json.loads(x) for x in (rel / "verdicts.jsonl").read_text().splitlines()]
    hits = sum(decode(rows, k) == gold[row["item_id"]] for k, row in enumerate(rows) if row["item_id"] in gold)
    return hits / len(gold)


@attack("release.neighbour-status-key")
def test_a_key_carried_by_the_next_items_status_is_refused(cli, tmp_path):
    code = {"A": "no_answer", "B": "timeout", "C": "error", "D": "excluded"}
    back = {v: k for k, v in code.items()}
    vf, ip, rp, gold = _key_set(tmp_path, 120, lambda k, i, g, golds: {
        "item_id": i, "sample": 0, "verdict": "ungraded", "status": code[golds[k - 1]] if k else "excluded"})
    rel = tmp_path / "rel"
    r = cli("release", vf, "-o", rel)
    assert r.code in (0, 2), r.err
    share = _recovered_share(rel, gold, lambda rows, k: back.get(rows[k + 1]["status"]) if k + 1 < len(rows) else None)
    assert share < 0.5, f"the next item's status gives {share:.0%} of the keys"
    assert r.code == 2 and "answer inference: status of the next protected item" in r.err


@attack("release.sample-modulo-key")
def test_a_key_carried_by_sample_indices_modulo_4_carries_nothing(cli, tmp_path):
    vf, ip, rp, gold = _key_set(tmp_path, 120, lambda k, i, g, golds: {
        "item_id": i, "sample": 4 * k + "ABCD".index(g), "verdict": "incorrect", "answer": "A", "reference": g})
    rel = tmp_path / "rel"
    r = cli("release", vf, "-o", rel)
    assert r.code in (0, 2), r.err
    share = _recovered_share(rel, gold, lambda rows, k: "ABCD"[rows[k]["sample"] % 4])
    assert share < 0.5, f"sample indices modulo 4 give {share:.0%} of the keys"
    # The second layer sees the same feature in a release that publishes the verdict file's indices.
    from audit import inference

    feats = inference.features([(i, 4 * k + "ABCD".index(g), "incorrect", "incorrect")
                                for k, (i, g) in enumerate(gold.items())])
    assert any(f.feature == "sample indices modulo 4" for f in inference.check(feats, gold).failed)


@attack("release.hf-parquet-planted")
@pytest.mark.parametrize("forgery", ["extra column", "changed value", "extra row", "metadata"])
def test_a_dataset_folders_parquet_is_verified(cli, tmp_path, forgery):
    import pyarrow as pa
    import pyarrow.parquet as pq

    case = _case(tmp_path, [{}, {}])
    out = tmp_path / "hf"
    assert cli("release", case["vf"], "-o", out, "--format", "hf").code == 0
    # The dataset card's own commands work on the folder it names.
    assert cli("validate", out).code == 0
    ok = cli("verify-release", out, "--items", case["items"], "--responses", case["resp"])
    assert ok.code == 0, ok.out
    assert "ok   parquet" in ok.out
    data = out / "data" / "verdicts.parquet"
    table = pq.read_table(data)
    planted = NEW_ENCODINGS["base85"](QUESTION)
    if forgery == "extra column":
        table = table.append_column("note", pa.array([planted] * table.num_rows))
    elif forgery == "changed value":
        statuses = table.column("status").to_pylist()
        statuses[0] = "error" if statuses[0] != "error" else "timeout"
        table = table.set_column(table.schema.get_field_index("status"), "status", pa.array(statuses))
    elif forgery == "extra row":
        table = pa.concat_tables([table, table.slice(0, 1)])
    else:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), b"note": planted.encode()})
    pq.write_table(table, data)
    r = cli("verify-release", out, "--items", case["items"], "--responses", case["resp"])
    assert r.code == 1, r.out
    assert "FAIL parquet" in r.out
    _no_text_in(r.out + r.err, PIECE)


def _as_version_1(rel: Path, *, protected_status: str | None = None, info_version: int = 1) -> None:
    """Rewrite a structural release as audit wrote releases before version 2 (release_row.v1 rows with public
    reasons, release_info.v1, leakcheck@2), re-pinned; optionally a protected row's status made free text."""
    from audit.release import ReleaseInfo, render_readme

    rows = [json.loads(x) for x in (rel / "verdicts.jsonl").read_text().splitlines()]
    for x in rows:
        if not x["protected"]:
            x.update(rule="letter", reason=f"letter {x['answer']}, reference {x['reference']}")
    if protected_status is not None:
        next(x for x in rows if x["protected"])["status"] = protected_status
    _repin(rel, "verdicts.jsonl", "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in rows).encode())
    m = json.loads((rel / "manifest.json").read_text())
    next(f for f in m["files"] if f["path"] == "verdicts.jsonl")["schema"] = "release_row.v1"
    (rel / "manifest.json").write_text(json.dumps(m))
    info = json.loads((rel / "release.json").read_text())
    if info_version == 1:
        info.pop("structure")
    info["schema_version"] = info_version
    info["leak_check"]["transforms"] = "leakcheck@2"
    if protected_status is not None:
        from collections import Counter

        info["statuses"] = dict(sorted(Counter(x["status"] for x in rows).items()))
    _repin(rel, "release.json", (json.dumps(info, indent=2) + "\n").encode())
    if info_version == 1:
        _repin(rel, "README.md", render_readme(ReleaseInfo.model_validate(info)).encode())


def test_a_version_1_release_still_verifies_and_is_flagged(cli, tmp_path):
    case = _case(tmp_path, [{}, {}])
    assert cli("release", case["vf"], "-o", case["rel"]).code == 0
    _as_version_1(case["rel"])
    r = cli("verify-release", case["rel"], "--items", case["items"], "--responses", case["resp"])
    assert r.code == 0, r.out
    assert ("ok   structure      warning: a version-1 release (release_row.v1): 2 public rows publish free text "
            "beside 1 protected items, checked by the leak check alone; publish a new release") in r.out
    assert "(leakcheck@2, as release.json records)" in r.out


@attack("release.public-text-planted")
def test_a_version_1_release_whose_protected_status_is_free_text_fails(cli, tmp_path):
    case = _case(tmp_path, [{}])
    assert cli("release", case["vf"], "-o", case["rel"]).code == 0
    _as_version_1(case["rel"], protected_status=NEW_ENCODINGS["base85"](PIECE))
    r = cli("verify-release", case["rel"], "--items", case["items"], "--responses", case["resp"])
    assert r.code == 1
    assert ("FAIL structure      1 protected rows publish a status that is not one of audit's (free text beside a "
            "protected item)") in r.out
    _no_text_in(r.out + r.err, PIECE)


@attack("release.public-text-planted")
def test_version_2_release_json_over_version_1_rows_fails(cli, tmp_path):
    # The rows downgraded to the schema that has free-text fields, release.json left at version 2: no audit writes it.
    case = _case(tmp_path, [{}])
    assert cli("release", case["vf"], "-o", case["rel"]).code == 0
    _as_version_1(case["rel"], info_version=2)
    r = cli("verify-release", case["rel"], "--items", case["items"], "--responses", case["resp"])
    assert r.code == 1
    # release.json without its structure is refused by its own schema
    info = json.loads((case["rel"] / "release.json").read_text())
    _repin(case["rel"], "release.json", (json.dumps({k: v for k, v in info.items() if k != "structure"}, indent=2)
                                         + "\n").encode())
    r2 = cli("verify-release", case["rel"], "--items", case["items"], "--responses", case["resp"])
    assert r2.code == 1 and "FAIL release.json   does not follow release_info.v2" in r2.out
    assert "FAIL structure      release.json is version 2 but its rows are release_row.v1" in r.out, r.out


@attack("release.short-key")
@pytest.mark.parametrize("form", ["word", "letters", "digits", "reversed"])
def test_a_short_key_in_published_public_text_is_refused(cli, tmp_path, form):
    """The second layer, for what --public-text publishes: short keys are leaks at any length from 3 items."""
    golds = "BDCADBA"  # 8 protected items with p1
    case = _case(tmp_path, [{}], n_protected=8, golds=golds)
    refs = [case["golds"][i] for i in sorted(case["golds"])]
    key = {"word": "".join(refs), "letters": " ".join(refs), "digits": "".join(str("ABCD".index(g)) for g in refs),
           "reversed": "".join(refs[::-1])}[form]
    (tmp_path / "b").mkdir()
    case = _case(tmp_path / "b", [{"reason": f"key: {key}."}], n_protected=8, golds=golds)
    r = cli("release", case["vf"], "-o", case["rel"], "--public-text")
    assert r.code == 2, r.err
    assert "public_text.jsonl: row 1: field reason: leak: the references of the protected items in " in r.err
    assert "spelled out" in r.err and key not in r.err
    assert not case["rel"].exists()
    # audit's own phrases hold no run of three one-letter words: the same release with them passes.
    (tmp_path / "c").mkdir()
    case = _case(tmp_path / "c", [{"reason": "letter A, reference B"}], n_protected=8, golds=golds)
    assert cli("release", case["vf"], "-o", case["rel"], "--public-text").code == 0


@attack("release.public-neighbour-key")
def test_a_key_carried_by_the_public_item_published_next_is_refused(cli, tmp_path):
    # Public item pNNNq sorts right after protected pNNN; its answer (an option letter: closed vocabulary) is the key.
    rng = random.Random(31)
    ids = [f"p{k:03d}" for k in range(120)]
    gold = {i: rng.choice("ABCD") for i in ids}
    items = [{"item_id": i, "reference": g, "num_choices": 4, "protected": True} for i, g in gold.items()]
    items += [{"item_id": f"{i}q", "reference": "A", "num_choices": 4} for i in ids]
    ip = make_package(tmp_path / "items", items=items)
    rp = make_package(tmp_path / "resp", responses=[{"item_id": it["item_id"], "response": "(A)"} for it in items])
    rows = [{"item_id": i, "sample": 0, "verdict": "incorrect", "status": "no_answer", "reference": g}
            for i, g in gold.items()]  # the protected rows themselves say nothing
    shift = dict(zip("ABCD", "BCDA", strict=True))  # the key shifted by one letter: no list of spellings has it
    rows += [{"item_id": f"{i}q", "sample": 0, "verdict": "correct" if shift[g] == "A" else "incorrect",
              "answer": shift[g], "reference": "A"} for i, g in gold.items()]
    vf = write_verdict_file(tmp_path / "results.json", make_verdict_file(
        rows, items_package=package(**_ref(ip)), responses_package=package(**_ref(rp))))
    rel = tmp_path / "rel"
    r = cli("release", vf, "-o", rel)
    assert r.code in (0, 2), r.err
    back = {v: k for k, v in shift.items()}
    share = _recovered_share(rel, gold, lambda rows, k: back.get(rows[k + 1].get("answer")) if k + 1 < len(rows)
                             else None)
    assert share < 0.5, f"the public neighbour's answer gives {share:.0%} of the keys"
    assert "answer inference: rows of the next item in published order, public or protected" in r.err


@attack("release.hf-parquet-planted")
@pytest.mark.parametrize("forgery", ["unused dictionary entry", "statistics", "page index", "bytes before the footer"])
def test_a_dataset_folders_parquet_hides_no_bytes(cli, tmp_path, forgery):
    """Text a reader never shows: an entry of a column's dictionary no row uses, a row group's min/max
    statistics, a page index, bytes after the last page. Every byte must be a page or the footer."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    case = _case(tmp_path, [{}, {}])
    out = tmp_path / "hf"
    assert cli("release", case["vf"], "-o", out, "--format", "hf").code == 0
    data = out / "data" / "verdicts.parquet"
    table = pq.read_table(data)
    planted = NEW_ENCODINGS["base85"](QUESTION)
    if forgery == "unused dictionary entry":
        col = table.column("reference").combine_chunks()
        values = col.to_pylist()
        dictionary = pa.array(sorted({v for v in values if v is not None}) + [planted])
        index = {v: i for i, v in enumerate(dictionary.to_pylist())}
        forged = pa.DictionaryArray.from_arrays(pa.array([index.get(v) for v in values], pa.int32()), dictionary)
        table = table.set_column(table.schema.get_field_index("reference"), "reference", forged)
        pq.write_table(table, data)
    elif forgery == "statistics":  # the footer's max of item_id replaced by a value of the same length no row has
        pq.write_table(table, data)
        raw = data.read_bytes()
        cut = len(raw) - 8 - int.from_bytes(raw[-8:-4], "little")
        top = max(table.column("item_id").to_pylist()).encode()
        assert top in raw[cut:]
        data.write_bytes(raw[:cut] + raw[cut:].replace(top, b"z" * len(top)))
    elif forgery == "page index":
        pq.write_table(table, data, write_page_index=True)
    else:
        raw = data.read_bytes()
        footer_len = int.from_bytes(raw[-8:-4], "little")
        cut = len(raw) - 8 - footer_len
        data.write_bytes(raw[:cut] + planted.encode() + raw[cut:])
    r = cli("verify-release", out, "--items", case["items"], "--responses", case["resp"])
    assert r.code == 1, r.out
    assert "FAIL parquet" in r.out
    _no_text_in(r.out + r.err, PIECE)


@attack("release.sample-modulo-key")
def test_without_the_responses_samples_are_ranked_in_the_verdict_file(cli, tmp_path):
    vf, ip, rp, gold = _key_set(tmp_path, 40, lambda k, i, g, golds: {
        "item_id": i, "sample": 4 * k + "ABCD".index(g), "verdict": "incorrect", "answer": "A", "reference": g})
    rel = tmp_path / "rel"
    r = cli("release", vf, "-o", rel, "--items", ip, "--no-response-check")
    assert r.code == 0, r.err
    rows = [json.loads(x) for x in (rel / "verdicts.jsonl").read_text().splitlines()]
    assert {x["sample"] for x in rows} == {0}
    assert json.loads((rel / "release.json").read_text())["structure"]["samples"] == "verdict file"
    assert cli("verify-release", rel, "--items", ip).code == 0


@pytest.mark.parametrize("edit,message", [
    ({"sample": 7}, "row 2: field sample: 1 graded rows have no response in the responses package (this is the "
                    "first): a release's samples are the responses package's"),
    ({"reference": "C"}, "row 2: field reference: a public row was graded against another reference than the items "
                         "package's"),
    ({"status": "graded by hand"}, "row 2: field status: in a release holding protected items, every row's status "
                                   "must be one of audit's statuses"),
])
def test_a_structural_release_refuses_what_the_pinned_packages_contradict(cli, tmp_path, edit, message):
    case = _case(tmp_path, [edit])
    r = cli("release", case["vf"], "-o", case["rel"])
    assert r.code == 2 and message in r.err, r.err
    assert r.err.count("\n") == 1 and not case["rel"].exists()


def test_a_dataset_folders_parquet_is_compared_byte_for_byte(cli, tmp_path):
    """Under the pyarrow that wrote it, the Parquet file is regenerated from the rows and compared whole: even a
    re-encoding that hides nothing a reader could find (zstd pages) is not the release's file."""
    import pyarrow.parquet as pq

    case = _case(tmp_path, [{}, {}])
    out = tmp_path / "hf"
    assert cli("release", case["vf"], "-o", out, "--format", "hf").code == 0
    ok = cli("verify-release", out, "--items", case["items"])
    assert ok.code == 0 and "nothing else (byte for byte); the card is the release's" in ok.out, ok.out
    data = out / "data" / "verdicts.parquet"
    pq.write_table(pq.read_table(data), data, compression="zstd")
    r = cli("verify-release", out, "--items", case["items"])
    assert r.code == 1 and "FAIL parquet" in r.out and "its bytes are not what the release's rows give" in r.out


@attack("release.attempt-code-points")
@pytest.mark.parametrize("responses", ["as graded", "crafted to match"])
def test_public_attempt_numbers_carry_no_text(cli, tmp_path, responses):
    # 75 public rows whose attempts are the question's code points: no string anywhere, so no text check sees it.
    codes = [ord(c) for c in QUESTION]
    ids = [f"q{n:03d}" for n in range(len(codes))]
    items = [{"item_id": "p1", "reference": "A", "num_choices": 4, "protected": True, "question": QUESTION}]
    items += [{"item_id": i, "reference": "B", "num_choices": 4} for i in ids]
    ip = make_package(tmp_path / "items", items=items)
    attempts = dict(zip(ids, codes, strict=True)) if responses == "crafted to match" else {}
    rp = make_package(tmp_path / "resp", responses=[
        {"item_id": it["item_id"], "attempt": attempts.get(it["item_id"], 0), "response": "(A)"} for it in items])
    rows = [{"item_id": "p1", "sample": 0, "verdict": "correct", "answer": "A", "reference": "A"}]
    rows += [{"item_id": i, "sample": 0, "attempt": a, "verdict": "incorrect", "answer": "A", "reference": "B"}
             for i, a in zip(ids, codes, strict=True)]
    vf = write_verdict_file(tmp_path / "results.json", make_verdict_file(
        rows, items_package=package(**_ref(ip)), responses_package=package(**_ref(rp))))
    rel = tmp_path / "rel"
    r = cli("release", vf, "-o", rel)
    assert r.code in (0, 2), r.err
    if rel.exists():
        published = [json.loads(x).get("attempt") for x in (rel / "verdicts.jsonl").read_text().splitlines()]
        assert "".join(chr(a) for a in published if a) != QUESTION, "the attempts spell the protected question"
        assert set(published) <= {None, 0}
    else:
        assert "field attempt: the responses package holds no such attempt of this row's sample" in r.err


@attack("release.header-names")
def test_release_json_publishes_no_name_the_verdict_file_chose(cli, tmp_path):
    from tests.verdict_helpers import component

    hidden = base64.b32encode(PIECE[:20].encode()).decode().lower().rstrip("=")  # a safe name, and text
    case = _case(tmp_path, [{}])
    with open_package(case["resp"]) as rp, open_package(case["items"]) as ip:
        refs = {"responses_package": package(rp.digest, hidden, "resp"),
                "items_package": package(ip.digest, hidden, "items")}
    rows = [{"item_id": "p1", "sample": 0, "verdict": "correct", "answer": "A", "reference": "A"},
            {"item_id": "q01", "sample": 0, "verdict": "incorrect", "answer": "A", "reference": "B"}]
    vf = write_verdict_file(tmp_path / "named.json", make_verdict_file(
        rows, extractor=component(hidden, "1"), grader=component("choice", "1"), **refs))
    r = cli("release", vf, "-o", case["rel"])
    assert r.code in (0, 2), r.err
    assert not _carries(case["rel"], [hidden]), "release.json publishes the verdict file's own names"
    if r.code == 0:
        info = json.loads((case["rel"] / "release.json").read_text())
        assert info["extractor"] is None and info["structure"]["withheld"]["components"] == 2
        with open_package(case["resp"]) as rp:
            assert (info["responses_package"]["package_id"], info["responses_package"]["digest"]) == (
                rp.manifest.package_id, rp.digest)
