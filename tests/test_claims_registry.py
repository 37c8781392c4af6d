"""The recipe registry: every argument documented, `audit claims recipes`, and the interface a new recipe
(`bench.ratio` and the like) uses, exercised end to end with a recipe registered by the test."""

from __future__ import annotations

import pytest

from audit.claims import registry
from audit.claims.registry import Context, PackageId, RecipeArgs, Result, Series, recipe
from audit.packages import PackageWriter, open_package


def test_every_recipe_and_argument_is_documented():
    recipes = registry.all_recipes()
    assert {r.name for r in recipes} >= {"grade.accuracy", "grade.count", "verdicts.accuracy", "verdicts.count",
                                         "stats.binomial_2se", "stats.runs_2se", "stats.clustered_t",
                                         "stats.denominator_sensitivity", "stats.paired_log_ratio", "arithmetic",
                                         "bench.tok_s", "bench.ratio", "bench.decode_tok_s", "bench.ttft_median",
                                         "bench.anchor_ratio", "bench.spec", "telemetry.mean",
                                         "trace.kernels_per_step", "trace.step_ms", "trace.kernels_over_markers",
                                         "floor.tok_s", "floor.ms_per_token"}
    for r in recipes:
        assert r.summary, r.name
        for name, f in r.args.model_fields.items():
            assert f.description, f"{r.name}: argument {name} has no docstring"


def test_recipes_command(cli):
    r = cli("claims", "recipes")
    assert (r.code, r.err) == (0, "")
    assert r.out.startswith("arithmetic -> any\n  A value computed from other claims' recomputed values.\n")
    assert "\nstats.paired_log_ratio -> ratio\n" in r.out
    assert "\nbench.ratio -> ratio\n" in r.out and "\nfloor.ms_per_token -> ms\n" in r.out
    assert "\ntelemetry.mean -> percent | W (by counter)\n" in r.out
    assert "    package (package id, required): The package holding the table of paired durations.\n" in r.out
    assert max(len(line) for line in r.out.splitlines()) <= 100


@pytest.mark.parametrize("args", [("claims", "page", "--help"), ("claims", "recipes", "--help")])
def test_subcommands_have_help(cli, args):
    r = cli(*args)
    assert r.code == 0 and r.out.startswith(f"Usage: audit {' '.join(args[:2])} ")


def test_the_decorator_refuses_untyped_recipes_and_second_registrations(monkeypatch):
    registry.get("grade.accuracy")  # the recipe modules are loaded (a worker may run this test first)
    monkeypatch.setattr(registry, "REGISTRY", registry.REGISTRY.copy())  # nothing registered here outlives the test
    with pytest.raises(TypeError):
        @recipe("test.untyped", unit="count")
        def untyped(args, ctx):  # noqa: ANN001
            return Result(0.0, "count")

    with pytest.raises(ValueError):
        @recipe("grade.accuracy", unit="fraction")
        def again(args: registry.RecipeArgs, ctx: Context) -> Result:
            return Result(0.0, "fraction")


class WindowArgs(RecipeArgs):
    """Arguments of test.tok_s."""

    a: PackageId
    """Baseline arm."""
    b: PackageId
    """Candidate arm."""


def _windows(ctx: Context, ident: str) -> list[float]:
    pkg = ctx.package(ident)
    text = (pkg.root / "windows.csv").read_text(encoding="utf-8")
    return [float(x) for x in text.split()]


def tok_s_ratio(args: WindowArgs, ctx: Context) -> Result:
    """Median tok/s of b over a, per window (what `bench.ratio` will do, in miniature)."""
    a, b = _windows(ctx, args.a), _windows(ctx, args.b)
    ma, mb = sorted(a)[len(a) // 2], sorted(b)[len(b) // 2]
    series = Series(title="tok/s per window", xlabel="window", ylabel="tok/s",
                    lines=(("a", tuple(enumerate(a))), ("b", tuple(enumerate(b)))))
    return Result(value=mb / ma, unit="ratio", basis=f"median {mb:g} / {ma:g} tok/s", series=series)


def arm(path, package_id, values):
    with PackageWriter(path, kind="throughput", package_id=package_id) as w:
        w.add_text("windows.csv", "\n".join(map(str, values)) + "\n")
    with open_package(path) as pkg:
        return pkg.digest


def test_a_new_recipe_is_one_registration(tmp_path, cli, monkeypatch):
    monkeypatch.setitem(registry.REGISTRY, "test.tok_s_ratio", registry.Recipe(
        "test.tok_s_ratio", WindowArgs, "ratio", tok_s_ratio))
    da = arm(tmp_path / "a", "arm-a", [100, 102, 98, 101, 99])
    db = arm(tmp_path / "b", "arm-b", [190, 205, 199, 201, 196])
    (tmp_path / "claims.yaml").write_text(f"""\
schema_version: 1
title: two arms
packages:
  - {{id: arm-a, path: a, sha256: {da}}}
  - {{id: arm-b, path: b, sha256: {db}}}
claims:
  - id: T1
    text: MTP doubles decode speed
    value: 2.0
    unit: ratio
    status: measured
    sources: [arm-a, arm-b]
    recipe: {{name: test.tok_s_ratio, args: {{a: arm-a, b: arm-b}}}}
    tolerance: {{relative: 0.02}}
""", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    r = cli("verify", "claims.yaml")
    assert r.code == 0, r.out + r.err
    assert "  T1  measured  2.000×    1.990×      yes\n" in r.out
    r = cli("claims", "page", "claims.yaml", "-o", "page")
    assert r.code == 0
    assert (tmp_path / "page" / "claim-T1.png").is_file()
    # The registry found the package arguments from their type: a source left out is refused.
    text = (tmp_path / "claims.yaml").read_text(encoding="utf-8").replace("sources: [arm-a, arm-b]", "sources: [arm-a]")
    (tmp_path / "claims.yaml").write_text(text, encoding="utf-8")
    r = cli("verify", "claims.yaml")
    assert (r.code, r.err) == (2, "audit: error: claims.yaml: line 12: claim T1: field sources: recipe.args.b "
                                  "reads 'arm-b', which the claim does not list in sources\n")
