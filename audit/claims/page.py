"""`audit claims page claims.yaml -o DIR`: the measurements page, in Markdown and static HTML.

Each claim with its status tag, its value and interval, whether it survives
`audit verify`, the recipe and what it was computed from, and relative links to
its packages; a retracted claim shows the published value struck, the correction
and the reason, and the items whose verdict changed. Plots are PNG files beside
the page (`claim-<id>.png`). The HTML has inline CSS, no script and no network
resource. The same ledger and inputs give the same bytes.
"""

from __future__ import annotations

import html
import os
import shutil
from pathlib import Path

from audit.claims import units
from audit.claims.plots import claim_plot
from audit.claims.verify import ClaimCheck, Verification, recomputed_text, recorded_text
from audit.errors import AuditError
from audit.fileio import read_document
from audit.outputs import staging_dir

Plots = dict[str, tuple[str, tuple[int, int]]]
"""Claim id → (PNG file name, (width, height))."""

HTML_NAME = "index.html"
MARKDOWN_NAME = "claims.md"
PLOT_PREFIX = "claim-"

CSS = """
:root { --ink: #1f2933; --muted: #616e7c; --line: #d9e2ec; --bg: #ffffff; --soft: #f5f7fa;
        --ok: #2f6f4f; --bad: #b44d4d; --new: #2f6f9f; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
       font: 15px/1.5 -apple-system, "Segoe UI", "DejaVu Sans", Helvetica, Arial, sans-serif; }
header, main, footer { max-width: 980px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 28px; }
h1 { font-size: 26px; margin: 0 0 6px; }
h2 { font-size: 17px; margin: 0; line-height: 1.6; }
.lede { color: var(--muted); margin: 0 0 10px; }
.verdict { font-weight: 600; }
.verdict.ok { color: var(--ok); } .verdict.bad { color: var(--bad); }
table.summary { border-collapse: collapse; width: 100%; margin: 14px 0 26px; font-size: 14px; }
table.summary th, table.summary td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line);
       vertical-align: top; }
table.summary th { color: var(--muted); font-weight: 600; }
td.num { white-space: nowrap; font-variant-numeric: tabular-nums; }
section.claim { border: 1px solid var(--line); border-radius: 8px; padding: 14px 18px; margin: 0 0 18px; }
section.claim.retracted { border-left: 4px solid var(--bad); }
section.claim.fails { background: #fdf3f3; }
.id { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; color: var(--muted); }
.tag { display: inline-block; font-size: 12px; padding: 1px 8px; border-radius: 10px; border: 1px solid;
       white-space: nowrap; }
.tag.measured { color: #2f6f9f; } .tag.single-run { color: #8a6d3b; } .tag.single-trace { color: #7a4f9a; }
.tag.arithmetic { color: #3e7c4f; } .tag.retracted { color: var(--bad); }
.tag.survives { color: var(--ok); background: #eef7f1; } .tag.fails { color: #fff; background: var(--bad);
       border-color: var(--bad); }
.value { font-size: 20px; margin: 8px 0 2px; font-variant-numeric: tabular-nums; }
.value del { color: var(--bad); } .value ins { text-decoration: none; color: var(--new); font-weight: 600; }
.interval { font-size: 14px; color: var(--muted); margin-left: 6px; }
.reason { margin: 6px 0; }
figure { margin: 10px 0; } figure img { max-width: 100%; height: auto; display: block; }
dl { display: grid; grid-template-columns: 130px 1fr; gap: 3px 12px; margin: 8px 0 0; font-size: 13.5px; }
dt { color: var(--muted); } dd { margin: 0; overflow-wrap: anywhere; }
code { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; background: var(--soft);
       padding: 1px 4px; border-radius: 4px; }
details { margin-top: 8px; font-size: 13.5px; } summary { cursor: pointer; color: var(--muted); }
details ul { margin: 6px 0 0; padding-left: 18px; }
a { color: var(--new); }
footer { color: var(--muted); font-size: 13px; padding-bottom: 30px; }
"""


def _esc(s: object) -> str:
    return html.escape(str(s), quote=True)


def _prose(s: str) -> str:
    """Escaped text with `code` spans as <code>, as Markdown would show them."""
    parts = _esc(" ".join(s.split())).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: leave the text as it is
        return "`".join(parts)
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _rel(target: Path, out: Path) -> str:
    return Path(os.path.relpath(target.resolve(), out.resolve())).as_posix()


def _input_link(v: Verification, ident: str, out: Path) -> str:
    """A relative link to an input: a package's manifest.json (a tarball itself), or the file."""
    led = v.loaded
    pkg = led.packages.get(ident)
    if pkg is not None:
        p = led.resolve(pkg.path)
        return _rel(p / "manifest.json" if p.is_dir() else p, out)
    return _rel(led.resolve(led.files[ident].path), out)


def _digest(v: Verification, ident: str) -> str:
    led = v.loaded
    entry = led.packages.get(ident) or led.files[ident]
    return entry.sha256


def _interval_text(c: ClaimCheck) -> str:
    r = c.result
    if r is None:
        return ""
    if r.interval is not None:
        iv = r.interval
        n = f", n={r.n:,} {r.n_label}" if r.n is not None else ""
        return f"{units.fmt_interval(iv.low, iv.high, c.claim.unit)} ({iv.method}{n})"
    if r.figure is not None:
        center, iv = r.figure
        unit = "percent" if c.claim.unit == "points" else c.claim.unit
        return f"of {units.fmt(center, unit)} {units.fmt_interval(iv.low, iv.high, unit)} ({iv.method})"
    return ""


# --------------------------------------------------------------------------- Markdown


_MD_ACTIVE = str.maketrans({"\\": "\\\\", "|": "\\|", "[": "\\[", "]": "\\]", "<": "&lt;", ">": "&gt;",
                            "&": "&amp;"})
"""Markdown and HTML that a ledger's text must not carry into claims.md: links and images (`[`…`](…)`), raw HTML
and autolinks (`<script>`, `<img onerror>`, `<javascript:…>`), entities, table cells; `code` spans stay (inert)."""


def _md_cell(s: str) -> str:
    """Text audit wrote (intervals, reasons) as one Markdown table-safe line."""
    return " ".join(s.split()).replace("|", "\\|")


def _md_text(s: str) -> str:
    """A ledger's text as inert Markdown on one line: the one escape every ledger text of claims.md passes."""
    parts = " ".join(s.split()).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code span, escape it all (and the backtick)
        return "\\`".join(p.translate(_MD_ACTIVE) for p in parts)
    # Inside a `code` span Markdown shows every character as it is (HTML too): only the text between is escaped.
    return "`".join(p if i % 2 else p.translate(_MD_ACTIVE) for i, p in enumerate(parts))


def render_markdown(v: Verification, out: Path, plots: Plots) -> str:
    led = v.loaded.ledger
    n, k = len(v.claims), v.survivors
    lines = [f"# {_md_text(led.title)}", ""]
    if led.description:
        lines += [_md_text(led.description), ""]
    verdict = f"All {n} claims survive" if k == n else f"{n - k} of {n} claims do not survive"
    ledger_link = _rel(v.loaded.path, out)
    lines += [f"{verdict} `audit verify {ledger_link}`: every value below was recomputed from the packages it "
              f"names, pinned by sha256.", "",
              "| id | claim | status | value | interval | recomputed | survives | sources |",
              "| --- | --- | --- | ---: | --- | ---: | --- | --- |"]
    for c in v.claims:
        cl = c.claim
        value = units.fmt(cl.value, cl.unit)
        if cl.retraction is not None:
            value = f"~~{value}~~ → {units.fmt(cl.retraction.corrected, cl.unit)}"
        sources = ", ".join(f"[{s}]({_input_link(v, s, out)})" for s in cl.sources) or "—"
        lines.append(f"| [{cl.id}](#{cl.id.lower()}) | {_md_text(cl.text)} | {cl.status} | {value} | "
                     f"{_md_cell(_interval_text(c)) or '—'} | {recomputed_text(c)} | "
                     f"{'yes' if c.survives else '**no**'} | {sources} |")
    for c in v.claims:
        cl = c.claim
        lines += ["", f"## {cl.id}", "", f"**{_md_text(cl.text)}** — _{cl.status}_", ""]
        if cl.retraction is not None:
            lines += [f"Published ~~{units.fmt(cl.value, cl.unit)}~~, corrected to "
                      f"**{units.fmt(cl.retraction.corrected, cl.unit)}**: {_md_text(cl.retraction.reason)}",
                      ""]
        else:
            lines += [f"Recorded **{units.fmt(cl.value, cl.unit)}**, recomputed {recomputed_text(c)}"
                      + (f", {_interval_text(c)}" if _interval_text(c) else "") + ".", ""]
        if cl.id in plots:
            lines += [f"![{cl.id}: {_md_text(cl.text)}]({plots[cl.id][0]})", ""]
        lines.append(f"- recipe: `{cl.recipe.call()}`")
        if c.result is not None and c.result.basis:
            lines.append(f"- computed from: {_md_cell(c.result.basis)}")
        if cl.retraction is not None and cl.retraction.published_recipe is not None:
            lines.append(f"- published value from: `{cl.retraction.published_recipe.call()}`")
        for s in cl.sources:
            lines.append(f"- source: [{s}]({_input_link(v, s, out)}) sha256 `{_digest(v, s)[:16]}…`")
        lines.append(f"- tolerance: {cl.tolerance.text(cl.unit)}")
        if cl.note:
            lines.append(f"- note: {_md_text(cl.note)}")
        for r in c.reasons:
            lines.append(f"- **does not survive**: {_md_cell(r)}")
        if c.diff:
            lines += ["", f"{_md_cell(c.diff[0])}:", ""] + [f"- {_md_cell(d)}" for d in c.diff[1:]]
    lines += ["", "---", "", f"Generated by `audit claims page` from [{v.loaded.path.name}]({ledger_link}) "
              f"(sha256 `{v.loaded.sha256[:16]}…`). Check it: `audit verify {ledger_link}`."]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- HTML


def _html_claim(v: Verification, c: ClaimCheck, out: Path, plots: Plots) -> list[str]:
    cl = c.claim
    classes = ["claim", cl.status] + ([] if c.survives else ["fails"])
    h = [f'<section class="{" ".join(classes)}" id="{_esc(cl.id.lower())}">',
         f'<h2><span class="id">{_esc(cl.id)}</span> <span>{_prose(cl.text)}</span> '
         f'<span class="tag {_esc(cl.status)}">{_esc(cl.status)}</span> '
         + ('<span class="tag survives">survives</span>' if c.survives
            else '<span class="tag fails">does not survive</span>')
         + "</h2>"]
    if cl.retraction is not None:
        h.append(f'<p class="value"><del>{_esc(units.fmt(cl.value, cl.unit))}</del> → '
                 f'<ins>{_esc(units.fmt(cl.retraction.corrected, cl.unit))}</ins>'
                 f'<span class="interval">{_esc(_interval_text(c))}</span></p>')
        h.append(f'<p class="reason"><strong>Retracted.</strong> {_prose(cl.retraction.reason)}</p>')
    else:
        h.append(f'<p class="value">{_esc(units.fmt(cl.value, cl.unit))}'
                 f'<span class="interval">{_esc(_interval_text(c))}</span></p>')
    if cl.id in plots:
        name, (w, hgt) = plots[cl.id]
        h.append(f'<figure><img src="{_esc(name)}" width="{w}" height="{hgt}" '
                 f'alt="{_esc(cl.id)}: {_esc(cl.text)}"></figure>')
    h.append("<dl>")
    h.append(f"<dt>recomputed</dt><dd>{_esc(recomputed_text(c))}</dd>")
    h.append(f"<dt>recipe</dt><dd><code>{_esc(cl.recipe.call())}</code></dd>")
    if c.result is not None and c.result.basis:
        h.append(f"<dt>computed from</dt><dd>{_esc(c.result.basis)}</dd>")
    if cl.retraction is not None and cl.retraction.published_recipe is not None:
        pub = c.published
        got = f" gives {_esc(units.fmt(pub.value, cl.unit))}" if pub is not None else ""
        h.append(f"<dt>published value</dt><dd><code>{_esc(cl.retraction.published_recipe.call())}</code>{got}</dd>")
    for s in cl.sources:
        h.append(f'<dt>source</dt><dd><a href="{_esc(_input_link(v, s, out))}">{_esc(s)}</a> '
                 f"<code>sha256 {_esc(_digest(v, s)[:16])}…</code></dd>")
    h.append(f"<dt>tolerance</dt><dd>{_esc(cl.tolerance.text(cl.unit))}</dd>")
    if cl.note:
        h.append(f"<dt>note</dt><dd>{_prose(cl.note)}</dd>")
    for r in c.reasons:
        h.append(f'<dt>does not survive</dt><dd class="verdict bad">{_esc(r)}</dd>')
    h.append("</dl>")
    if c.diff:
        h.append(f"<details{' open' if not c.survives else ''}><summary>{_esc(c.diff[0])}</summary><ul>")
        h += [f"<li>{_esc(d)}</li>" for d in c.diff[1:]]
        h.append("</ul></details>")
    h.append("</section>")
    return h


def png_size(path: Path) -> tuple[int, int]:
    """Pixel size of a PNG from its header (width and height attributes keep the layout stable)."""
    import struct

    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise ValueError(f"{path}: not a PNG file")
    w, hgt = struct.unpack(">II", head[16:24])
    return w, hgt


def render_html(v: Verification, out: Path, plots: Plots) -> str:
    led = v.loaded.ledger
    n, k = len(v.claims), v.survivors
    ledger_link = _rel(v.loaded.path, out)
    verdict = (f'<span class="verdict ok">All {n} claims survive</span>' if k == n else
               f'<span class="verdict bad">{n - k} of {n} claims do not survive</span>')
    h = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
         '<meta name="viewport" content="width=device-width, initial-scale=1">',
         f"<title>{_esc(led.title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>", "<header>",
         f"<h1>{_esc(led.title)}</h1>"]
    if led.description:
        h.append(f'<p class="lede">{_prose(led.description)}</p>')
    h.append(f"<p>{verdict} <code>audit verify {_esc(ledger_link)}</code>: every value below was recomputed "
             f"from the packages it names, pinned by sha256.</p>")
    h.append("</header>")
    h.append("<main>")
    h.append('<table class="summary"><thead><tr><th>id</th><th>claim</th><th>status</th><th>value</th>'
             "<th>recomputed</th><th>survives</th></tr></thead><tbody>")
    for c in v.claims:
        cl = c.claim
        if cl.retraction is not None:
            value = (f"<del>{_esc(units.fmt(cl.value, cl.unit))}</del> → "
                     f"{_esc(units.fmt(cl.retraction.corrected, cl.unit))}")
        else:
            value = _esc(recorded_text(c))
        h.append(f'<tr><td><a href="#{_esc(cl.id.lower())}">{_esc(cl.id)}</a></td><td>{_prose(cl.text)}</td>'
                 f'<td><span class="tag {_esc(cl.status)}">{_esc(cl.status)}</span></td>'
                 f'<td class="num">{value}</td><td class="num">{_esc(recomputed_text(c))}</td>'
                 f"<td>{'yes' if c.survives else '<strong>no</strong>'}</td></tr>")
    h.append("</tbody></table>")
    for c in v.claims:
        h += _html_claim(v, c, out, plots)
    h.append("</main>")
    h.append(f'<footer>Generated by <code>audit claims page</code> from <a href="{_esc(ledger_link)}">'
             f"{_esc(v.loaded.path.name)}</a> (sha256 <code>{_esc(v.loaded.sha256[:16])}…</code>). "
             f"Markdown: <a href=\"{MARKDOWN_NAME}\">{MARKDOWN_NAME}</a>.</footer>")
    h += ["</body>", "</html>"]
    return "\n".join(h) + "\n"


# --------------------------------------------------------------------------- writing


_MARKS = {HTML_NAME: "Generated by <code>audit claims page</code>", MARKDOWN_NAME: "Generated by `audit claims page`"}


def _check_page_files(out: Path) -> None:
    """Refuse to replace a file of the page's names that this command did not write: an index.html or
    claims.md without the page's footer, or claim plots with no page of ours beside them."""
    if not out.is_dir():
        return
    files = _page_files(out)
    ours = False
    for p in files:
        if p.name in _MARKS:
            # A regular file of at most MAX_DOCUMENT_BYTES (a page is well under it; a larger file is not ours).
            data = read_document(p)[0] if p.is_file() and not p.is_symlink() else None
            text = (data or b"").decode("utf-8", errors="replace")
            if _MARKS[p.name] not in text:
                raise AuditError("not replaced: it was not written by `audit claims page` (move it, or write the "
                                 "page to another folder)", path=str(p))
            ours = True
    plots = [p for p in files if p.name not in _MARKS]
    if plots and not ours:
        raise AuditError("not replaced: claim plots with no page of `audit claims page` beside them (move them, "
                         "or write the page to another folder)", path=str(plots[0]))


def _page_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir()
                  if p.name in (HTML_NAME, MARKDOWN_NAME) or (p.name.startswith(PLOT_PREFIX) and p.suffix == ".png"))


def write_page(v: Verification, out: str | os.PathLike[str]) -> list[str]:
    """Write the page into `out` (created if missing); return the names written, sorted.

    Everything is built in a hidden sibling directory first, then moved in file by file; a
    previous page's plots that this one no longer has are removed; other files in `out` (a
    screenshot, a README) are left alone.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise AuditError("exists and is not a directory", path=str(out))
    if not out.parent.is_dir():
        raise AuditError("parent directory does not exist", path=str(out.parent))
    _check_page_files(out)
    out.mkdir(exist_ok=True)
    tmp = staging_dir(out, "partial")
    try:
        plots: Plots = {}
        for c in v.claims:
            name = f"{PLOT_PREFIX}{c.claim.id}.png"
            if claim_plot(tmp / name, c):
                plots[c.claim.id] = (name, png_size(tmp / name))
        # Links are relative to `out`, where the page will live.
        (tmp / MARKDOWN_NAME).write_text(render_markdown(v, out, plots), encoding="utf-8", newline="\n")
        (tmp / HTML_NAME).write_text(render_html(v, out, plots), encoding="utf-8", newline="\n")
        written = sorted(p.name for p in tmp.iterdir())
        for stale in _page_files(out):
            if stale.name not in written:
                stale.unlink()
        for name in written:
            os.replace(tmp / name, out / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return written
