"""Bandwidth-floor recipes: `floor.*` on `checkpoint-headers` packages (`audit floor`, `audit bundle`).

The package holds a header-only copy of the checkpoint; `audit.floor.package.read_floor` (what
`audit floor-check` runs) recomputes the floor from those headers with the recorded options and
bandwidth and compares it with `floor.json` and `floor.txt` byte for byte. Only a package that
recomputes identically gives a value; any difference is the claim's reason for not surviving.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from audit.claims.registry import Context, PackageId, RecipeArgs, Result, Series, recipe

if TYPE_CHECKING:
    from audit.floor.report import FloorReportV1


def floor_report(ctx: Context, ident: str) -> FloorReportV1:
    """The floor report of package `ident`, after its kind recomputed it identically from the checkpoint
    headers (`read_identical`: it reads only what the manifest lists, so the digest pins it all); the figures
    are parsed from the bytes compared."""
    from audit.floor.package import CHECKPOINT_HEADERS

    # Reading a large MoE checkpoint's headers takes a second or two: once per content digest and process.
    return ctx.read(ident, CHECKPOINT_HEADERS, remember=True).report


def _basis(r: FloorReportV1) -> str:
    f, bw, sh = r.floor, r.bandwidth, r.shape
    src = "NVML" if bw.source == "nvml" else "the --hbm-tbps flag"
    dtypes = ", ".join(f"{k} {v / 1e9:.2f} GB" for k, v in sorted(r.by_dtype.items(), key=lambda kv: -kv[1]))
    return (f"{sh.model_type or 'model'} ({sh.num_hidden_layers} layers): {f.bytes_per_token:,.0f} bytes per token "
            f"({dtypes}; context {r.options.context}) / ({f.gpus} GPU × {bw.tbps_per_gpu:.3f} TB/s from {src}) = "
            f"{f.ms_per_token:.3f} ms/token, {f.tokens_per_s:.1f} tok/s; recomputed from the package's headers")


OTHER_BELOW = 0.005
"""Roles under this share of the bytes per token are drawn together as `other`."""


def _by_role(r: FloorReportV1) -> Series:
    """Bytes read per token by role, stacked by the dtype the engine holds them in: where the floor comes from."""
    total = r.floor.bytes_per_token
    parts: dict[tuple[str, str], float] = {}
    for w in r.weights:
        parts[(w.role, w.engine_dtype)] = parts.get((w.role, w.engine_dtype), 0.0) + w.active_bytes
    for c in r.caches:
        parts[(c.role, c.dtype)] = parts.get((c.role, c.dtype), 0.0) + c.active_bytes
    role_bytes: dict[str, float] = {}
    for (role, _), b in parts.items():
        role_bytes[role] = role_bytes.get(role, 0.0) + b
    shown = [k for k, v in sorted(role_bytes.items(), key=lambda kv: (-kv[1], kv[0])) if v >= OTHER_BELOW * total]
    categories = tuple(shown) + (("other",) if len(shown) < len([v for v in role_bytes.values() if v > 0]) else ())
    index = {role: i for i, role in enumerate(shown)}
    dtypes = sorted({d for (_, d), b in parts.items() if b > 0}, key=lambda d: -r.by_dtype.get(d, 0.0))
    lines = []
    for d in dtypes:
        points: dict[int, float] = {}
        for (role, dt), b in parts.items():
            if dt == d and b > 0:
                i = index.get(role, len(shown))
                points[i] = points.get(i, 0.0) + b / 1e9
        lines.append((d, tuple(sorted((float(i), v) for i, v in points.items()))))
    return Series(title=f"{r.floor.bytes_per_token / 1e9:.2f} GB read per token, by role and dtype",
                  xlabel="", ylabel="GB per token", lines=tuple(lines), style="barh", categories=categories, unit="GB")


class FloorArgs(RecipeArgs):
    """Arguments of the floor recipes."""

    package: PackageId
    """A checkpoint-headers package (`audit floor ... -o`, or its `audit bundle` tarball)."""


@recipe("floor.tok_s", unit="tok/s")
def floor_tok_s(args: FloorArgs, ctx: Context) -> Result:
    """The decode bandwidth floor as a ceiling on single-sequence tok/s: 1000 / ms per token."""
    r = floor_report(ctx, args.package)
    return Result(value=r.floor.tokens_per_s, unit="tok/s", basis=_basis(r), series=_by_role(r))


@recipe("floor.ms_per_token", unit="ms")
def floor_ms_per_token(args: FloorArgs, ctx: Context) -> Result:
    """The decode bandwidth floor: bytes read per token / (GPUs × bandwidth), in ms; no decode step is faster."""
    r = floor_report(ctx, args.package)
    return Result(value=r.floor.ms_per_token, unit="ms", basis=_basis(r), series=_by_role(r))
