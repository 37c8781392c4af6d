"""Recipes: named computations that recompute a claim from the ledger's inputs.

A recipe is a function registered under a name, with a typed arguments model and
the unit of its value. It returns a `Result`: the value, an interval naming its
formula, what the interval is over (n), and one line on what it was computed
from. Arguments name inputs by ledger id (`PackageId`, `FileId`), never by path,
so a recipe can only read what the ledger pins; the registry finds those arguments
from their types and checks that each is listed in the claim's `sources`.

Adding a recipe is one function in a module listed in `RECIPE_MODULES` (the measurement
recipes in `recipes_bench`, `recipes_trace` and `recipes_floor` are small examples: each reads its
package with `ctx.read(id, KIND)`, through the kind's own reader, which recomputes the figures from the rows):

    class BenchRatioArgs(RecipeArgs):
        a: PackageId
        \"\"\"Baseline throughput package.\"\"\"
        b: PackageId
        \"\"\"Candidate throughput package.\"\"\"

    @recipe("bench.ratio", unit="ratio")
    def bench_ratio(args: BenchRatioArgs, ctx: Context) -> Result:
        \"\"\"Median tok/s of b over a, with ...\"\"\"
        a, b = ctx.package(args.a), ctx.package(args.b)  # validated, digest-checked; the runner closes them
        ...                                               # read a.root / path for path in a.manifest.files
        return Result(value=r, unit="ratio", interval=Interval(method=..., formula=..., low=..., high=...),
                      n=..., n_label="windows", basis="one line: what it was computed from",
                      series=Series(title=..., xlabel="window", ylabel="tok/s", lines=(("a", ...), ("b", ...))))

`ctx.read(id, KIND)` gives what the kind reads back (`Kind[V].read`: a `V`, figures recomputed), once
per content digest, refused unless the package is of that kind (`linked=ID` checks its link, telemetry to
its throughput run); `ctx.package(id)` gives the validated `audit.packages.Package` itself, whose content
digest matched the ledger; `ctx.file(id)` a path whose sha256 matched; `ctx.cache` is shared
between claims (compute a measurement once). Raise `RecipeFailed` (or let a ValueError
or the library's AuditError escape) when the inputs cannot give the value: the claim then
does not survive, with that line as the reason. A `Series` on the result gives the claim
a plot on the page (tok/s per window for both arms); an `interval` a plot of the value
with it. Units: a claim's unit must equal the recipe's unit or convert to it
(`audit.claims.units.CONVERSIONS`); a recipe whose unit depends on an argument (a counter in percent
or in W) names it with `unit_of=lambda args: ...`; `audit schemas` needs nothing (arguments are checked
against the recipe's model when a ledger is read, and listed by `audit claims recipes`).
"""

from __future__ import annotations

import contextlib
import inspect
import tempfile
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import pydantic

from audit.claims import units
from audit.errors import AuditError, error_words
from audit.models import Record
from audit.registry import Catalog, catalog
from audit.verdicts.models import Interval

if TYPE_CHECKING:
    from audit.claims.ledger import Claim, LoadedLedger, RecipeCall
    from audit.packages import Package
    from audit.packages.kinds import Kind

V = typing.TypeVar("V")

RECIPE_MODULES = ("audit.claims.recipes_grade", "audit.claims.recipes_stats", "audit.claims.recipes_bench",
                  "audit.claims.recipes_trace", "audit.claims.recipes_floor", "audit.claims.recipes_taskruns")
"""Modules that register recipes on import."""


@dataclass(frozen=True)
class InputRef:
    """Marks an argument that names a ledger input by id."""

    kind: Literal["package", "file"]


PackageId = Annotated[str, InputRef("package")]
"""An argument naming a package of the ledger's `packages`."""
FileId = Annotated[str, InputRef("file")]
"""An argument naming a file of the ledger's `files`."""


class RecipeArgs(Record):
    """Base of every recipe's arguments: strict types, unknown arguments are errors."""


class RecipeFailed(Exception):
    """The recipe could not recompute the claim from its inputs (the claim does not survive)."""


@dataclass(frozen=True)
class Series:
    """Data for a plot on the page: one or more named lines (e.g. tok/s per window for two arms)."""

    title: str
    xlabel: str
    ylabel: str
    lines: tuple[tuple[str, tuple[tuple[float, float], ...]], ...]
    """(label, points) per line."""
    style: Literal["line", "dots", "line+dots", "barh"] = "line"
    """`barh`: horizontal bars, one per `categories` entry, each line a stacked segment (x of a point: the
    category's index)."""
    categories: tuple[str, ...] = ()
    """Bar labels for `barh`, top to bottom."""
    unit: str | None = None
    """Unit of the y values (x for `barh`); a retracted claim's published value is drawn on the plot only in
    the same unit."""
    log_y: bool = False
    reference: float | None = None
    """A horizontal reference line (e.g. ratio 1)."""
    reference_label: str | None = None
    """The reference line's name in the legend (e.g. `vllm bench serve`); unnamed when None."""
    band: tuple[float, float] | None = None
    """A shaded horizontal band (e.g. the interval of the summary value)."""
    center: float | None = None
    """A horizontal line for the summary value."""
    y_range: tuple[float, float | None] | None = None
    """Fixed y limits (0–105 for counters in percent, so that 98 and 67 look as far apart as they are); a high end of
    None keeps matplotlib's (tok/s from 0, so that 1.003× does not look like a gap)."""
    integer_x: bool = False
    """Ticks at whole x values only (windows, steps)."""


@dataclass
class Result:
    """What a recipe computed: the value, its interval, and what it came from."""

    value: float
    unit: str
    interval: Interval | None = None
    """Uncertainty interval in `unit`, naming its formula; None when the recipe has none."""
    n: int | None = None
    """What the interval is over (items, tasks, runs): see `n_label`."""
    n_label: str = ""
    basis: str = ""
    """One line: counts, components and policies it was computed with."""
    series: Series | None = None
    figure: tuple[float, Interval] | None = None
    """(centre, interval) of the figure the value describes, when that is not the value itself (an error
    bar's half-width describes an accuracy): the page plots it."""
    grading: Any = None
    """The recomputed grading (`audit.grade.Grading`), for `audit verify`'s diff against recorded verdicts."""
    inputs: tuple[str, ...] = ()
    """Ledger ids it read (filled in by the runner)."""

    def converted(self, to_unit: str) -> Result:
        """The same result in `to_unit` (see `audit.claims.units`)."""
        f = units.factor(self.unit, to_unit)
        if f is None:
            raise RecipeFailed(f"gives {self.unit}, which does not convert to {to_unit}")
        if f == 1.0:
            return Result(**{**self.__dict__, "unit": to_unit if self.unit == units.ANY else self.unit})
        fig = self.figure
        if fig is not None:
            fig = (fig[0] * f, _scaled(fig[1], f))
        return Result(**{**self.__dict__, "value": self.value * f, "unit": to_unit,
                         "interval": _scaled(self.interval, f), "figure": fig})


def _scaled(iv: Interval | None, f: float) -> Any:
    if iv is None:
        return None
    return iv.model_copy(update={"low": iv.low * f, "high": iv.high * f, "se": None if iv.se is None else iv.se * f})


class Context:
    """What a recipe may read: the ledger's inputs, checked, and other claims' recomputed values."""

    def __init__(self, loaded: LoadedLedger, packages: dict[str, Package], files: dict[str, Path],
                 labels: dict[str, str] | None = None):
        self.loaded = loaded
        self._packages = packages
        self._files = files
        self._labels = labels or {}
        """Private copy -> the path the ledger gives (files are read from copies made as they were hashed)."""
        self.values: dict[str, float] = {}
        """Recomputed values of the claims done so far, in each claim's unit (for arithmetic)."""
        self.cache: dict[Any, Any] = {}
        """Shared between recipes: one grading per (package, configuration)."""
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.recipe = "a recipe"
        """The name of the recipe running (`run_call` sets it), for the words of a refusal."""

    def package(self, ident: str) -> Package:
        """A package the ledger lists, validated and with the ledger's content digest."""
        try:
            return self._packages[ident]
        except KeyError:
            raise RecipeFailed(f"package {ident!r} is not available (it failed its checks)") from None

    def package_of_kind(self, ident: str, kind: str, recipe_name: str) -> Package:
        """`package(ident)`, refused unless it is a `kind` package (what `recipe_name` reads)."""
        pkg = self.package(ident)
        if pkg.kind != kind:
            raise RecipeFailed(f"package {ident} is a {pkg.kind} package; {recipe_name} reads a {kind} package")
        return pkg

    def read(self, ident: str, kind: Kind[V], *, linked: str | None = None, remember: bool = False) -> V:
        """Package `ident` read back by its kind (`kind.read`: its figures recomputed from its rows; AuditError
        turned into RecipeFailed naming the package by its path in the ledger), refused unless it is a `kind`
        package; with `linked`, the package it must belong to (`kind.link`, by content digest), itself read
        back first. Read once per content digest in this ledger; `remember` keeps it for the process (`memo`:
        for a costly read whose value holds no open package)."""
        pkg = self.package_of_kind(ident, kind.name, self.recipe)
        other = None
        if linked is not None:
            from audit.packages.kinds import get_kind

            # The package linked to reads back first (its own figures recomputed), then the link is checked.
            self.read(linked, get_kind(kind.link.kind if kind.link else kind.name))
            other = self.package(linked)
        key = ("kind.read", kind.name, pkg.digest, other.digest if other is not None else None)

        def read() -> V:
            with self.reading(ident):
                return kind.read(pkg, linked=other)

        if remember:
            value: V = memo(key, read)
            return value
        if key not in self.cache:
            self.cache[key] = read()
        cached: V = self.cache[key]
        return cached

    @contextlib.contextmanager
    def reading(self, ident: str) -> Iterator[None]:
        """Turn the library's errors while reading package `ident` into RecipeFailed, naming the package by its
        path in the ledger rather than where it was opened (a tarball is unpacked in a temporary directory):
        the same inputs give the same words."""
        try:
            yield
        except AuditError as e:
            pkg = self._packages.get(ident)
            text = str(e)
            if pkg is not None:
                for where in dict.fromkeys((str(pkg.root), str(pkg.source))):
                    text = text.replace(where, self.loaded.packages[ident].path)
            raise RecipeFailed(text) from None

    def words(self, text: str) -> str:
        """`text` with the private copies of the ledger's files named by their paths in the ledger: the same
        inputs give the same words."""
        for copy, label in self._labels.items():
            text = text.replace(copy, label)
        return text

    def package_path(self, ident: str) -> Path:
        return self.package(ident).source

    def file(self, ident: str) -> Path:
        """A file the ledger lists, with the ledger's sha256."""
        try:
            return self._files[ident]
        except KeyError:
            raise RecipeFailed(f"file {ident!r} is not available (it failed its checks)") from None

    def claim_value(self, ident: str) -> float:
        try:
            return self.values[ident]
        except KeyError:
            raise RecipeFailed(f"claim {ident} was not recomputed") from None

    @property
    def tmp(self) -> Path:
        """A private temporary directory, removed by `close()`."""
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="audit-claims-")
        return Path(self._tmp.name)

    def close(self) -> None:
        for pkg in self._packages.values():
            pkg.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


RecipeFn = Callable[[Any, Context], Result]

MEMO_SIZE = 32
_MEMO: dict[tuple[Any, ...], Any] = {}


def memo(key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
    """`compute()`, remembered in this process under `key`, which must name the content digest of every package it
    reads (a validated package's digest pins every file in it, and unlisted files are refused): the same content
    gives the same figures, so a second `verify` in one process (tests, a page after a verify) need not recompute a
    costly check. Failures are not remembered."""
    if key in _MEMO:
        _MEMO[key] = _MEMO.pop(key)  # most recently used last
        return _MEMO[key]
    value = compute()
    _MEMO[key] = value
    while len(_MEMO) > MEMO_SIZE:
        del _MEMO[next(iter(_MEMO))]
    return value


@dataclass(frozen=True)
class Recipe:
    """A registered recipe."""

    name: str
    args: type[RecipeArgs]
    unit: str
    fn: RecipeFn = field(repr=False)
    claims: Callable[[Any], list[str]] | None = field(default=None, repr=False)
    """For recipes over other claims (arithmetic): the claim ids its arguments name."""
    unit_of: Callable[[Any], str] | None = field(default=None, repr=False)
    """For recipes whose unit depends on an argument: the unit for parsed arguments (`unit` then says
    which units it can give, for `audit claims recipes`)."""

    def unit_for(self, args: RecipeArgs) -> str:
        """The unit of this recipe's value for these arguments."""
        return self.unit_of(args) if self.unit_of is not None else self.unit

    @property
    def summary(self) -> str:
        doc = inspect.getdoc(self.fn) or ""
        return doc.split("\n\n")[0].replace("\n", " ")

    def call_text(self, args: RecipeArgs) -> str:
        """`name` for recipes of one unit; `name(arg=…)` naming the argument that picks the unit otherwise."""
        if self.unit_of is None:
            return self.name
        shown = ", ".join(f"{k}={v}" for k, v in args.model_dump(exclude_defaults=False).items()
                          if isinstance(v, str) and _input_kind(type(args).model_fields[k]) is None)
        return f"{self.name}({shown})" if shown else self.name

    def parse(self, raw: dict[str, Any]) -> RecipeArgs:
        return self.args.model_validate(raw)

    def inputs(self, args: RecipeArgs) -> list[tuple[str, str, str]]:
        """(argument, kind, id) for every argument that names a ledger input."""
        out = []
        for name, f in type(args).model_fields.items():
            kind = _input_kind(f)
            if kind is None:
                continue
            value = getattr(args, name)
            for v in value if isinstance(value, list) else [value]:
                if v is not None:
                    out.append((name, kind, v))
        return out

    def claim_refs(self, args: RecipeArgs) -> list[str]:
        return self.claims(args) if self.claims else []


def _input_kind(f: Any) -> str | None:
    for m in f.metadata:
        if isinstance(m, InputRef):
            return m.kind
    return _find_ref(f.annotation)


def _find_ref(tp: Any) -> str | None:
    if typing.get_origin(tp) is Annotated:
        for m in typing.get_args(tp)[1:]:
            if isinstance(m, InputRef):
                return m.kind
    if typing.get_origin(tp) in (typing.Union, types.UnionType, list):
        for a in typing.get_args(tp):
            k = _find_ref(a)
            if k:
                return k
    return None


REGISTRY: Catalog[Recipe] = catalog("recipe", homes=RECIPE_MODULES)
"""Every recipe by name (`audit.registry`): the modules in `RECIPE_MODULES` register them on import."""


def recipe(name: str, *, unit: str, claims: Callable[[Any], list[str]] | None = None,
           unit_of: Callable[[Any], str] | None = None) -> Callable[[RecipeFn], RecipeFn]:
    """Register `fn(args, ctx) -> Result` under `name`; its first parameter's type is the arguments model.

    `unit` is the unit of its value; when that depends on the arguments, `unit_of(args)` gives it and
    `unit` lists the possibilities for the help text."""

    def deco(fn: RecipeFn) -> RecipeFn:
        hints = typing.get_type_hints(fn, include_extras=True)
        first = next(iter(inspect.signature(fn).parameters))
        model = hints.get(first)
        if not (isinstance(model, type) and issubclass(model, RecipeArgs)):
            raise TypeError(f"recipe {name}: the first parameter must be typed with a RecipeArgs model")
        existing = REGISTRY.registered(name)
        if existing is not None and existing.fn is fn:
            return fn
        REGISTRY.add(name, Recipe(name, model, unit, fn, claims, unit_of), home=fn.__module__)
        return fn

    return deco


def get(name: str) -> Recipe:
    """The recipe `name`; UnknownError (a LookupError) listing the known ones otherwise."""
    return REGISTRY[name]


def all_recipes() -> list[Recipe]:
    """Every recipe, by name."""
    return [REGISTRY[k] for k in sorted(REGISTRY)]


# --------------------------------------------------------------------------- checking a claim


def _args_error(led: LoadedLedger, claim: Claim, where: str, loc: tuple[Any, ...],
                err: pydantic.ValidationError) -> AuditError:
    e = err.errors(include_url=False)[0]
    sub = tuple(e["loc"])
    fieldname = ".".join([where, "args", *map(str, sub)])
    msg = error_words(e, "argument", quiet=("value_error",))
    return led.error(msg, claim=claim, field=fieldname, loc=loc + ("args", *sub))


def resolve_call(led: LoadedLedger, claim: Claim, call: RecipeCall, where: str,
                 loc: tuple[Any, ...]) -> tuple[Recipe, RecipeArgs]:
    """The recipe and its parsed arguments; a one-line LedgerError naming the claim and field otherwise."""
    try:
        rec = get(call.name)
    except LookupError as e:
        raise led.error(str(e.args[0]), claim=claim, field=f"{where}.name", loc=loc + ("name",)) from None
    try:
        args = rec.parse(call.args)
    except pydantic.ValidationError as e:
        raise _args_error(led, claim, where, loc, e) from None
    return rec, args


def check_claim(led: LoadedLedger, claim: Claim) -> None:
    """Everything about one claim that needs the registry: recipes, arguments, inputs, sources, units."""
    base = led.claim_loc(claim)
    calls = [("recipe", claim.recipe, base + ("recipe",))]
    if claim.retraction is not None and claim.retraction.published_recipe is not None:
        calls.append(("retraction.published_recipe", claim.retraction.published_recipe,
                      base + ("retraction", "published_recipe")))
    packages, files = led.packages, led.files
    read: dict[str, str] = {}
    for where, call, loc in calls:
        rec, args = resolve_call(led, claim, call, where, loc)
        unit = rec.unit_for(args)
        if units.factor(unit, claim.unit) is None:
            raise led.error(f"{rec.call_text(args)} gives {unit}, which does not convert to the claim's unit "
                            f"{claim.unit!r}", claim=claim, field="unit", loc=base + ("unit",))
        for argname, kind, ident in rec.inputs(args):
            known = packages if kind == "package" else files
            if ident not in known:
                section = "packages" if kind == "package" else "files"
                raise led.error(f"names {kind} {ident!r}, which `{section}` does not list", claim=claim,
                                field=f"{where}.args.{argname}", loc=loc + ("args", argname))
            read[ident] = f"{where}.args.{argname}"
        for ref in rec.claim_refs(args):
            if ref == claim.id:
                raise led.error("refers to itself", claim=claim, field=f"{where}.args", loc=loc + ("args",))
            if ref not in led.claims:
                raise led.error(f"names claim {ref!r}, which the ledger does not hold", claim=claim,
                                field=f"{where}.args", loc=loc + ("args",))
    if claim.recorded_verdicts is not None:
        if claim.recorded_verdicts not in files:
            raise led.error(f"names file {claim.recorded_verdicts!r}, which `files` does not list", claim=claim,
                            field="recorded_verdicts", loc=base + ("recorded_verdicts",))
        read[claim.recorded_verdicts] = "recorded_verdicts"
    for ident in list(read):
        f = files.get(ident)
        if f is not None and f.package is not None:
            read.setdefault(f.package, f"files.{ident}.package")
    is_arith = claim.recipe.name == "arithmetic"
    if claim.status == "arithmetic" and not is_arith:
        raise led.error("an arithmetic claim is computed by the `arithmetic` recipe", claim=claim,
                        field="recipe.name", loc=base + ("recipe", "name"))
    if is_arith and claim.status not in ("arithmetic", "retracted"):
        raise led.error(f"a claim computed by `arithmetic` has status arithmetic (not {claim.status})",
                        claim=claim, field="status", loc=base + ("status",))
    dupes = sorted({s for s in claim.sources if claim.sources.count(s) > 1})
    if dupes:
        raise led.error(f"lists {dupes[0]!r} twice", claim=claim, field="sources", loc=base + ("sources",))
    for s in claim.sources:
        if s not in packages and s not in files:
            raise led.error(f"{s!r} is neither in `packages` nor in `files`", claim=claim, field="sources",
                            loc=base + ("sources",))
        if s not in read:
            raise led.error(f"{s!r} is not read by the claim's recipes", claim=claim, field="sources",
                            loc=base + ("sources",))
    for ident, where in read.items():
        if ident not in claim.sources:
            raise led.error(f"{where} reads {ident!r}, which the claim does not list in sources", claim=claim,
                            field="sources", loc=base + ("sources",))


def claim_refs(led: LoadedLedger, claim: Claim) -> list[str]:
    """Claims that `claim`'s recipes read (arithmetic)."""
    refs: list[str] = []
    calls = [claim.recipe]
    if claim.retraction is not None and claim.retraction.published_recipe is not None:
        calls.append(claim.retraction.published_recipe)
    for call in calls:
        rec = get(call.name)
        refs += [r for r in rec.claim_refs(rec.parse(call.args)) if r not in refs]
    return refs


def claim_order(led: LoadedLedger) -> list[Claim]:
    """Claims in an order where each comes after the claims it reads; refuses cycles."""
    claims = led.claims
    order: list[Claim] = []
    state: dict[str, int] = {}

    def visit(c: Claim, chain: list[str]) -> None:
        s = state.get(c.id)
        if s == 2:
            return
        if s == 1:
            cycle = " → ".join(chain[chain.index(c.id):] + [c.id])
            raise led.error(f"arithmetic cycle {cycle}", claim=c, field="recipe.args.expr",
                            loc=led.claim_loc(c, "recipe", "args"))
        state[c.id] = 1
        for ref in claim_refs(led, c):
            visit(claims[ref], chain + [c.id])
        state[c.id] = 2
        order.append(c)

    for c in led.ledger.claims:
        visit(c, [])
    return order


def run_call(call: RecipeCall, ctx: Context) -> Result:
    """Run one recipe call (its arguments were checked when the ledger was loaded)."""
    rec = get(call.name)
    args = rec.parse(call.args)
    ctx.recipe = rec.name
    try:
        result = rec.fn(args, ctx)
    except RecipeFailed as e:
        raise RecipeFailed(ctx.words(str(e))) from None
    except AuditError as e:  # the library's one-line errors (a malformed row in an input, ...)
        raise RecipeFailed(ctx.words(str(e))) from None
    except (ArithmeticError, ValueError) as e:
        raise RecipeFailed(f"{type(e).__name__}: {e}") from None
    expected = rec.unit_for(args)
    if expected != units.ANY and result.unit != expected:  # a recipe's bug, not the inputs': say so plainly
        raise RecipeFailed(f"{rec.name} gave a value in {result.unit}, registered as {expected}")
    ids = tuple(dict.fromkeys(ident for _, _, ident in rec.inputs(args)))
    result.inputs = ids
    return result


def iter_recipe_help(width: int = 100) -> Iterator[str]:
    """`audit claims recipes`: each recipe, the unit of its value, and its arguments with their help."""
    import textwrap

    for i, rec in enumerate(all_recipes()):
        if i:
            yield ""
        yield f"{rec.name} -> {rec.unit}"
        yield from textwrap.wrap(rec.summary, width, initial_indent="  ", subsequent_indent="  ")
        for name, f in rec.args.model_fields.items():
            kind = _input_kind(f)
            tp = f"{kind} id" if kind else _type_name(f.annotation)
            if f.is_required():
                default = "required"
            elif f.default_factory is not None:
                default = f"default {typing.cast(Callable[[], Any], f.default_factory)()!r}"
            else:
                default = "optional" if f.default is None else f"default {f.default!r}"
            doc = " ".join((f.description or "").split())
            yield from textwrap.wrap(f"{name} ({tp}, {default}): {doc}", width, initial_indent="    ",
                                     subsequent_indent="      ")


def _type_name(tp: Any) -> str:
    if typing.get_origin(tp) is Literal:
        return "|".join(map(str, typing.get_args(tp)))
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in typing.get_args(tp) if a is not type(None))
    return getattr(tp, "__name__", str(tp)).replace("typing.", "")

