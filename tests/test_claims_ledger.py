"""Reading claims.yaml: YAML tricks refused, every bad field one line naming file, line, claim and field (exit 2)."""

from __future__ import annotations

import os

import pytest
from tests.claims_helpers import MINI, PACKAGES

from audit.claims.ledger import load_ledger, parse_expression


@pytest.fixture
def mini(tmp_path, monkeypatch):
    """A one-claim ledger beside a link-free copy of the demo's GPQA package; cwd is its folder."""
    import shutil

    shutil.copytree(PACKAGES / "demo-lab-note" / "gpqa_diamond", tmp_path / "demo-lab-note" / "gpqa_diamond")
    (tmp_path / "claims.yaml").write_text(MINI, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "claims.yaml"


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def refused(cli, path) -> str:
    r = cli("verify", path)
    assert (r.code, r.out) == (2, ""), r
    assert r.err.count("\n") == 1, r.err
    return r.err.removeprefix("audit: error: ").rstrip("\n")


def test_the_mini_ledger_verifies(cli, mini):
    r = cli("verify", "claims.yaml")
    assert r.code == 0, r.out + r.err
    assert r.out.endswith("All 1 claims survive.\n")


# --------------------------------------------------------------------------- YAML tricks


@pytest.mark.parametrize("text, message", [
    # Duplicate keys: YAML keeps the last silently; a ledger must not.
    (MINI.replace("    value: 50.00\n", "    value: 50.00\n    value: 83.33\n"),
     "claims.yaml: line 11: duplicate key 'value' (first on line 10)"),
    (MINI + "title: Another title\n", "claims.yaml: line 18: duplicate key 'title' (first on line 2)"),
    # Anchors and aliases: the billion-laughs bomb, and values that silently repeat another.
    ("a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n",
     "claims.yaml: line 1: anchor &a is not allowed (no anchors or aliases in a ledger)"),
    (MINI.replace("    unit: percent\n", "    unit: *u\n"),
     "claims.yaml: line 11: alias *u is not allowed (no anchors or aliases in a ledger)"),
    # Tags: Python objects, binary data, local tags.
    ("!!python/object/apply:os.system ['touch pwned']\n",
     "claims.yaml: line 1: tag tag:yaml.org,2002:python/object/apply:os.system is not allowed (plain YAML values only)"),
    (MINI.replace("title: A small ledger", "title: !!binary aGVsbG8="),
     "claims.yaml: line 2: tag tag:yaml.org,2002:binary is not allowed (plain YAML values only)"),
    (MINI.replace("    value: 50.00", "    value: !!float 50"),
     "claims.yaml: line 10: tag tag:yaml.org,2002:float is not allowed (plain YAML values only)"),
    (MINI.replace("title: A small ledger", "title: !mine x"),
     "claims.yaml: line 2: tag !mine is not allowed (plain YAML values only)"),
    # A merge key merges a mapping into another without an alias.
    (MINI.replace("    tolerance: {absolute: 0.005}", "    tolerance: {<<: {absolute: 0.005}}"),
     "claims.yaml: line 17: merge key << is not allowed"),
    ("? [a, b]\n: 1\n", "claims.yaml: line 1: key ['a', 'b'] is not text"),
    ("1: one\n", "claims.yaml: line 1: key 1 is not text"),
    (MINI + "---\n" + MINI, "claims.yaml: line 18: not valid YAML: expected a single document in the stream but found another document"),
    ("", "claims.yaml: empty document"),
    ("- a\n- b\n", "claims.yaml: expected a mapping at the top, found list"),
    ("a: [1, 2\n", "claims.yaml: line 2: not valid YAML: while parsing a flow sequence expected ',' or ']', but got '<stream end>'"),
    ("a: " + "[" * 5000 + "]" * 5000 + "\n", "claims.yaml: not valid YAML: nested too deeply"),
])
@pytest.mark.slow
def test_yaml_tricks_are_refused(cli, mini, text, message):
    write(mini, text)
    assert refused(cli, "claims.yaml") == message


def test_a_huge_ledger_is_refused_before_parsing(cli, mini):
    write(mini, "a: " + "x" * (1024 * 1024) + "\n")
    assert refused(cli, "claims.yaml") == "claims.yaml: larger than the 1,048,576-byte limit for a ledger"


def test_not_utf8(cli, mini):
    mini.write_bytes(MINI.encode().replace(b"small", b"sm\xffall"))
    assert refused(cli, "claims.yaml") == "claims.yaml: not valid UTF-8 at byte 29"


def test_numbers_as_json_writes_them(mini):
    # YAML 1.1 reads 5e1 as text; a ledger written as JSON must read as JSON does.
    write(mini, MINI.replace("    value: 50.00", "    value: 5e1").replace("absolute: 0.005", "absolute: 5e-3"))
    c = load_ledger(mini).ledger.claims[0]
    assert (c.value, c.tolerance.absolute) == (50.0, 0.005)
    import yaml

    assert yaml.safe_load("a: 1e-3") == {"a": "1e-3"}  # the stock SafeLoader is left as it was


def test_dates_stay_text_and_yes_is_not_an_id(cli, mini):
    write(mini, MINI.replace("title: A small ledger", "title: 2026-11-29"))
    assert load_ledger(mini).ledger.title == "2026-11-29"
    write(mini, MINI.replace("  - id: G1", "  - id: yes"))
    assert refused(cli, "claims.yaml") == ("claims.yaml: line 8: claim #1: field id: Input should be a valid string "
                                           "(got True)")


# --------------------------------------------------------------------------- fields


@pytest.mark.parametrize("old, new, message", [
    ("    value: 50.00\n", "", "line 8: claim G1: field value: missing required field"),
    ("    value: 50.00", "    value: .nan", "line 10: claim G1: field value: Input should be a finite number (got nan)"),
    ("    value: 50.00", '    value: "50"', "line 10: claim G1: field value: Input should be a valid number (got '50')"),
    ("    value: 50.00", "    value: 50.00\n    colour: red", "line 11: claim G1: field colour: unknown field"),
    ("    status: single-run", "    status: guessed",
     "line 12: claim G1: field status: Input should be 'measured', 'single-run', 'single-trace', 'arithmetic' or "
     "'retracted' (got 'guessed')"),
    ("    tolerance: {absolute: 0.005}", "    tolerance: {}",
     "line 17: claim G1: field tolerance: give exactly one of absolute or relative"),
    ("    tolerance: {absolute: 0.005}", "    tolerance: {absolute: 0.005, relative: 0.01}",
     "line 17: claim G1: field tolerance: give exactly one of absolute or relative"),
    ("    tolerance: {absolute: 0.005}", "    tolerance: {absolute: -1}",
     "line 17: claim G1: field tolerance.absolute: Input should be greater than or equal to 0 (got -1)"),
    ("    tolerance: {absolute: 0.005}\n", "",
     "line 8: claim G1: field tolerance: missing required field"),
    ("    status: single-run", "    status: retracted",
     "line 8: claim G1: a retracted claim needs `retraction` (corrected value and reason)"),
    ("  - id: G1", "  - id: 1st", "line 8: claim 1st: field id: String should match pattern "
                                  "'^[A-Za-z][A-Za-z0-9_]{0,39}$' (got '1st')"),
    ("    sha256: 83d7", "    sha256: 83D7",
     "line 6: package demo-lab-note-gpqa_diamond: field sha256: String should match pattern '^[0-9a-f]{64}$' "
     "(got '83D7a2cf406f427206964e8011166b63d113eca09a835927d7e553f4...)"),
    ("schema_version: 1", "schema_version: 2",
     "line 1: field schema_version: schema_version 2 is newer than this audit reads (1); upgrade audit"),
    ("schema_version: 1\n", "", "line 1: field schema_version: missing or non-integer schema_version"),
])
def test_bad_fields_name_line_claim_and_field(cli, mini, old, new, message):
    text = MINI.replace(old, new)
    assert text != MINI
    write(mini, text)
    assert refused(cli, "claims.yaml") == f"claims.yaml: {message}"


@pytest.mark.parametrize("old, new, message", [
    ("      name: grade.accuracy", "      name: grade.accuracyy",
     "line 15: claim G1: field recipe.name: unknown recipe 'grade.accuracyy' (known: {recipes})"),
    ("benchmark: gpqa_diamond,", "benchmark: gpqa,",
     "line 16: claim G1: field recipe.args.benchmark: unknown benchmark 'gpqa' (known: {benchmarks})"),
    ("figure: accuracy_all}", "figure: accuracy_all, colour: red}",
     "line 16: claim G1: field recipe.args.colour: unknown argument"),
    ("figure: accuracy_all}", "figure: accuracy_all, policy: {truncation: maybe}}",
     "line 16: claim G1: field recipe.args.policy.truncation: Input should be 'wrong' or 'exclude' (got 'maybe')"),
    ("figure: accuracy_all}", "figure: accuracy_all, policy: {temperature: 0}}",
     "line 16: claim G1: field recipe.args.policy: unknown policy 'temperature' (known: truncation, resampling, "
     "no_answer, guess_seed, exclude, scope, at_budget, judge_error)"),
    ("figure: accuracy_all}", "figure: accuracy_all, grader: math.equiv@99}",
     "line 16: claim G1: field recipe.args.grader: unknown grader 'math.equiv@99' (known: {graders})"),
    ("args: {package: demo-lab-note-gpqa_diamond,", "args: {package: demo-lab-note-hle,",
     "line 16: claim G1: field recipe.args.package: names package 'demo-lab-note-hle', which `packages` does not "
     "list"),
    ("    unit: percent", "    unit: tok/s",
     "line 11: claim G1: field unit: grade.accuracy gives fraction, which does not convert to the claim's unit "
     "'tok/s'"),
    ("    sources: [demo-lab-note-gpqa_diamond]", "    sources: []",
     "line 13: claim G1: field sources: recipe.args.package reads 'demo-lab-note-gpqa_diamond', which the claim "
     "does not list in sources"),
    ("    sources: [demo-lab-note-gpqa_diamond]", "    sources: [demo-lab-note-gpqa_diamond, demo-lab-note-gpqa_diamond]",
     "line 13: claim G1: field sources: lists 'demo-lab-note-gpqa_diamond' twice"),
    ("    sources: [demo-lab-note-gpqa_diamond]", "    sources: [demo-lab-note-gpqa_diamond, elsewhere]",
     "line 13: claim G1: field sources: 'elsewhere' is neither in `packages` nor in `files`"),
    # Inputs are named by ledger id, never by path: a path where an id belongs names nothing.
    ("args: {package: demo-lab-note-gpqa_diamond,", "args: {package: ../../etc,",
     "line 16: claim G1: field recipe.args.package: names package '../../etc', which `packages` does not list"),
    ("figure: accuracy_all}", "figure: accuracy_all, items: /etc/passwd}",
     "line 16: claim G1: field recipe.args.items: names package '/etc/passwd', which `packages` does not list"),
    ("    status: single-run", "    status: arithmetic",
     "line 15: claim G1: field recipe.name: an arithmetic claim is computed by the `arithmetic` recipe"),
])
def test_bad_recipes_name_line_claim_and_field(cli, mini, old, new, message):
    # The known benchmarks, graders and recipes are whatever is registered: the line lists every one, sorted.
    from audit import graders
    from audit.claims.registry import all_recipes
    from audit.specs import SPECS

    message = message.format(benchmarks=", ".join(sorted(SPECS)), graders=", ".join(sorted(graders.REGISTRY.keys())),
                             recipes=", ".join(r.name for r in all_recipes()))
    text = MINI.replace(old, new)
    assert text != MINI
    write(mini, text)
    got = refused(cli, "claims.yaml")
    assert got == f"claims.yaml: {message}"


SECOND = """\
  - id: G2
    text: second
    value: 1
    unit: count
    status: arithmetic
    recipe: {{name: arithmetic, args: {{expr: "{expr}"}}}}
    tolerance: {{absolute: 0}}
"""


@pytest.mark.parametrize("expr, message", [
    ("G2 + 1", "line 23: claim G2: field recipe.args: refers to itself"),
    ("G9 + 1", "line 23: claim G2: field recipe.args: names claim 'G9', which the ledger does not hold"),
    ("G1 ** 2", "line 23: claim G2: field recipe.args.expr: Pow is not allowed (numbers, claim ids, + - * /, "
                "parentheses and abs, min, max, sqrt, log, exp only)"),
    ("__import__('os').system('x')", "line 23: claim G2: field recipe.args.expr: Call is not allowed (numbers, "
                                     "claim ids, + - * /, parentheses and abs, min, max, sqrt, log, exp only)"),
    ("G1.real", "line 23: claim G2: field recipe.args.expr: Attribute is not allowed (numbers, claim ids, + - * /, "
                "parentheses and abs, min, max, sqrt, log, exp only)"),
    ("G1 +", "line 23: claim G2: field recipe.args.expr: not an arithmetic expression: invalid syntax"),
    ("1" * 401, "line 23: claim G2: field recipe.args.expr: longer than 400 characters"),
])
def test_bad_arithmetic(cli, mini, expr, message):
    write(mini, MINI + SECOND.format(expr=expr))
    assert refused(cli, "claims.yaml") == f"claims.yaml: {message}"


def test_arithmetic_cycles_are_refused(cli, mini):
    text = MINI + SECOND.format(expr="G3 + 1") + SECOND.format(expr="G2 - 1").replace("G2", "G3", 1)
    write(mini, text)
    assert refused(cli, "claims.yaml") == "claims.yaml: line 23: claim G2: field recipe.args.expr: arithmetic cycle G2 → G3 → G2"


def test_parse_expression_names_claims_in_order():
    assert parse_expression("max(B2, B1) - B2 / 100")[1] == ["B2", "B1"]


# --------------------------------------------------------------------------- paths


@pytest.mark.parametrize("path, message", [
    ("../gpqa", "'../gpqa': path has an empty, '.' or '..' component"),
    ("/etc", "'/etc': absolute path"),
    ("demo-lab-note/../../x", "'demo-lab-note/../../x': path has an empty, '.' or '..' component"),
    ("C:/x", "'C:/x': absolute path"),
    ("a\\\\b", "'a\\\\b': path has a backslash or NUL character"),
])
def test_paths_stay_inside_the_ledgers_folder(cli, mini, path, message):
    write(mini, MINI.replace("path: demo-lab-note/gpqa_diamond", f'path: "{path}"'))
    assert refused(cli, "claims.yaml") == (
        f"claims.yaml: line 5: field packages.demo-lab-note-gpqa_diamond.path: {message}: ledger paths are "
        f"relative to the ledger's folder and stay inside it")


def test_a_symbolic_link_out_of_the_folder_is_refused(cli, mini, tmp_path):
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    os.rename(tmp_path / "demo-lab-note", outside)
    os.symlink(outside, tmp_path / "demo-lab-note")
    assert refused(cli, "claims.yaml") == (
        "claims.yaml: line 5: field packages.demo-lab-note-gpqa_diamond.path: 'demo-lab-note/gpqa_diamond': "
        "resolves outside the ledger's folder (through a symbolic link)")


def test_a_table_path_inside_a_package_is_checked_too(cli, mini):
    text = MINI.replace("""    recipe:
      name: grade.accuracy
      args: {package: demo-lab-note-gpqa_diamond, benchmark: gpqa_diamond, figure: accuracy_all}""", """    recipe:
      name: stats.paired_log_ratio
      args: {package: demo-lab-note-gpqa_diamond, file: ../../../etc/passwd.csv, numerator: a, denominator: b}""")
    write(mini, text.replace("unit: percent", "unit: ratio"))
    assert refused(cli, "claims.yaml") == (
        "claims.yaml: line 16: claim G1: field recipe.args.file: path has an empty, '.' or '..' component: a path "
        "inside the package, as its manifest lists it")


def test_duplicate_ids(cli, mini):
    write(mini, MINI + MINI[MINI.index("  - id: G1"):])
    assert refused(cli, "claims.yaml") == "claims.yaml: line 18: claim G1: field id: claim id is used twice"


def test_missing_ledger(cli, tmp_path):
    r = cli("verify", tmp_path / "nope.yaml")
    assert (r.code, r.err) == (2, f"audit: error: {tmp_path / 'nope.yaml'}: no such file\n")
