"""`audit diff` output: the readable Markdown report and the `diff_report.v1` JSON document."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from audit.diff.report import CAUSES, DiffResult, FigureChange, SideInfo, component_label, package_label
from audit.summary import pct
from audit.verdicts.models import Figure
from audit.views import bad_input_lines, visible


def _p(p: float) -> str:
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


_LINE_BREAKS = re.compile(r"[\t\n\r]+")


def _cell(v: Any, width: int = 40) -> str:
    if v is None:
        return "—"
    # Line breaks and tabs read as one space in a cell; every other invisible character is escaped, and a
    # space at either end too, so `q3`, `q3 ` and `q3\u200b` print apart.
    s = visible(_LINE_BREAKS.sub(" ", str(v)))
    if len(s) > width:
        s = s[: width - 1] + "…"
    return s.replace("|", "\\|") or "\"\""


def _scope(f: FigureChange, folded: bool = False) -> str:
    run = "all runs" if f.sample is None else f"run {f.sample}"
    if folded:
        return f"{run}, both denominators: nothing ungraded"
    den = "graded denominator" if f.denominator == "graded" else "all rows, ungraded counted wrong"
    return f"{run}, {den}"


def _counts_phrase(causes: dict[str, int]) -> str:
    return ", ".join(f"{causes[c]:,} {c}" for c in CAUSES if causes.get(c))


def _figure_paragraph(f: FigureChange, twin: FigureChange | None = None) -> str:
    """One changed figure's paragraph; `twin` is the other denominator's figure when it says the same."""
    if f.old is not None:
        recorded = f"recorded {pct(f.old.value)} ({f.old.correct:,}/{f.old.total:,})"
        if f.old_recorded is not None and not math.isclose(f.old_recorded, f.old.value, abs_tol=1e-12):
            recorded = (f"recorded {pct(f.old_recorded)} (OLD's summary; its rows give {pct(f.old.value)}, "
                        f"{f.old.correct:,}/{f.old.total:,})")
    else:
        recorded = "not recorded (no rows in OLD)"
    recomputed = (f"recomputed {pct(f.new.value)} ({f.new.correct:,}/{f.new.total:,})" if f.new is not None
                  else "not recomputed (no rows in NEW)")
    name = f"**{f.name}**" if twin is None else f"**{f.name}** = **{twin.name}**"
    parts = [f"{name} ({_scope(f, twin is not None)}): {recorded}, {recomputed}"
             + (f", Δ {f.delta_points:+.2f} points." if f.delta_points is not None else ".")]
    if f.changed:
        what = _counts_phrase(f.causes)
        parts.append(f"{f.changed:,} verdict{'s' if f.changed != 1 else ''} changed: {what}.")
    else:
        parts.append("No verdict changed.")
    flips = f"{f.to_correct:,} to correct, {f.to_incorrect:,} to incorrect"
    parts.append(f"Paired over {f.pairs:,} rows: {flips}; McNemar exact p = {_p(f.mcnemar_p)}.")
    if f.entered or f.left:
        parts.append(f"{_n(f.entered, 'row')} entered and {f.left:,} left the denominator.")
    if f.only_old or f.only_new:
        parts.append(f"{_n(f.only_old, 'row')} only in OLD, {f.only_new:,} only in NEW.")
    return " ".join(parts)


def _side_line(label: str, s: SideInfo) -> str:
    rp = s.responses_package
    resp = package_label(rp) if rp else "not named"
    return (f"- {label}: `{visible(s.path)}` — {visible(s.benchmark)}, {_n(s.rows, 'row')} ({s.rows_source}); "
            f"extractor {component_label(s.extractor)}, grader {component_label(s.grader)}; responses {resp}")


def _n(k: int, word: str) -> str:
    return f"{k:,} {word}{'' if k == 1 else 's'}"


_GUESS = re.compile(r"seeded guess ([A-Z])\b")


def guessed_letter(r: dict[str, Any]) -> str | None:
    """The letter a `random_guess` row guessed, as its reason records it (`... seeded guess G = G`)."""
    if r.get("status") != "random_guess":
        return None
    m = _GUESS.search(r.get("reason") or "")
    return m.group(1) if m else None


def _answer_cell(r: dict[str, Any]) -> str:
    guess = guessed_letter(r)
    if guess is not None and r["answer"] is None:
        return f"— (guessed {guess})"
    return _cell(r["answer"])


_DIRECTIONS = (
    ("Retractions", "Figures that fell: the rows support less than OLD recorded."),
    ("Upward revisions", "Figures that rose: the rows support more than OLD recorded (not retractions)."),
    ("Figures that moved without changing value",
     "Verdicts changed, or rows entered or left, but the value is the same or one side has no rows."),
)


def _by_direction(plan: list[tuple[FigureChange, FigureChange | None]]) -> list[
        tuple[str, str, list[tuple[FigureChange, FigureChange | None]]]]:
    """The figure paragraphs under a heading that names their direction: a rise is no retraction."""
    parts: list[list[tuple[FigureChange, FigureChange | None]]] = [[], [], []]
    for f, twin in plan:
        d = f.delta_points
        parts[0 if d is not None and d < 0 else 1 if d is not None and d > 0 else 2].append((f, twin))
    return [(title, lead, part) for (title, lead), part in zip(_DIRECTIONS, parts, strict=True) if part]


def _subject_table(r: DiffResult) -> list[str]:
    """Per subject: recorded and recomputed accuracy_all, the change, and the rows that moved."""
    if not r.subjects:
        return []

    def fig(figs: list[Figure]) -> Figure | None:
        return next((f for f in figs if f.denominator == "all"), None)

    lines = ["## By subject", "", "accuracy_all: every row counts, ungraded rows counted wrong.", "",
             "| subject | items | OLD | NEW | Δ points | changed | to correct | to incorrect |",
             "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: |"]
    for s in r.subjects:
        o, n = fig(s.old), fig(s.new)
        delta = f"{(n.value - o.value) * 100:+.2f}" if o is not None and n is not None else "—"
        lines.append(f"| {_cell(s.subject or '(no subject)')} | {s.items:,} | {_rate(o)} | {_rate(n)} | {delta} | "
                     f"{s.changed:,} | {s.to_correct:,} | {s.to_incorrect:,} |")
    return lines + [""]


def _rate(f: Figure | None) -> str:
    return "—" if f is None else f"{pct(f.value)} ({f.correct:,}/{f.total:,})"


def _verdict_cell(r: dict[str, Any]) -> str:
    return r["verdict"] if r["status"] == r["verdict"] else f"{r['verdict']} ({r['status']})"


def _note_cell(r: dict[str, Any]) -> str:
    o, n = r["old"], r["new"]
    bits = []
    if o["reference"] is not None or n["reference"] is not None:
        bits.append(f"reference {_cell(o['reference'], 12)} → {_cell(n['reference'], 12)}")
    if o["attempt"] is not None and n["attempt"] is not None and o["attempt"] != n["attempt"]:
        bits.append(f"attempt {_cell(o['attempt'])} → {_cell(n['attempt'])}")
    also = r["causes"][1:]
    if also:
        bits.append("also " + ", ".join(also))
    return "; ".join(bits)


def _repeats(f: FigureChange, overall: FigureChange | None) -> bool:
    """A run's figure that says exactly what the overall one says (a single run): not printed twice."""
    if f.sample is None or overall is None:
        return False

    def counts(x: Figure | None) -> tuple[int, int] | None:
        return None if x is None else (x.correct, x.total)

    return (counts(f.old) == counts(overall.old) and counts(f.new) == counts(overall.new)
            and f.changed == overall.changed and f.only_old == overall.only_old and f.only_new == overall.only_new)


_TWIN_FIELDS = ("old", "new", "old_recorded", "new_recorded", "delta_points", "changed", "to_correct", "to_incorrect",
                "entered", "left", "pairs", "mcnemar_p", "only_old", "only_new", "causes")
"""What two figures must share to be printed as one (everything but name and denominator)."""


def _same_figure(a: FigureChange, b: FigureChange) -> bool:
    """Both denominators of one scope say exactly the same thing (no row is ungraded on either side)."""

    def counts(x: Figure | None) -> tuple[int, int, float] | None:
        return None if x is None else (x.correct, x.total, x.value)

    return all(counts(getattr(a, k)) == counts(getattr(b, k)) if k in ("old", "new") else getattr(a, k) == getattr(b, k)
               for k in _TWIN_FIELDS)


def _paragraph_plan(figures: list[FigureChange]) -> list[tuple[FigureChange, FigureChange | None]]:
    """The figures to print, each with the other-denominator twin folded into it (or None).

    Overall figures come first (the headline), then the runs; a run's figure that
    repeats the overall one (a single run) is not printed twice; an `all` figure equal
    in every number to the `graded` one of the same scope is folded into it.
    """
    overall = {f.denominator: f for f in figures if f.sample is None}
    shown = [f for f in figures if not _repeats(f, overall.get(f.denominator))]
    shown.sort(key=lambda f: (f.sample is not None, f.sample if f.sample is not None else -1,
                              f.denominator != "graded"))
    plan: list[tuple[FigureChange, FigureChange | None]] = []
    folded: set[int | None] = set()
    for f in shown:
        if f.denominator == "all" and f.sample in folded:
            continue
        twin = None
        if f.denominator == "graded":
            other = next((x for x in shown if x.denominator == "all" and x.sample == f.sample), None)
            if other is not None and _same_figure(f, other):
                twin = other
                folded.add(f.sample)
        plan.append((f, twin))
    return plan


def _strength_section(r: DiffResult) -> list[str]:
    """What the changed verdicts rest on: each side's reads by strength, the fallback warning, possibly cut rows.

    Printed when it says something: some change rests on a fallback read, or some changed response may have
    been cut (JSON always holds the counts)."""
    pc = r.possibly_cut
    if not any(c.strength == "fallback" for c in r.strengths) and not (pc is not None and pc.rows):
        return []
    lines = ["## What the changed verdicts rest on", ""]
    fb = r.fallback
    if fb is not None:
        side = fb.side.upper()
        other = "OLD" if fb.side == "new" else "NEW"
        rules = ", ".join(f"`{x}`" for x in fb.rules) or "fallback rules"
        chance = (f"; chance for {fb.letters} letters is {pct(fb.chance)} (one-sided exact binomial p = "
                  f"{_p(fb.p_value)})" if fb.chance is not None and fb.p_value is not None else "")
        lines += [f"**Every changed verdict rests on fallback reads alone**: {side} read each of the "
                  f"{_n(fb.changed, 'changed row')} with a fallback rule ({rules} of {fb.extractor}) where {other} "
                  f"read no answer. Over all {fb.reads:,} such reads, not only the changed ones, {fb.hits:,} are "
                  f"correct: a hit rate of {pct(fb.hit_rate)}{chance}. The changes show the lucky fallback reads; the "
                  f"{fb.reads - fb.hits:,} unlucky ones kept their verdict.", ""]
    for side in ("old", "new"):
        got = [c for c in r.strengths if c.side == side]
        if got:
            lines.append(f"- {side.upper()} read them as: " + ", ".join(
                f"{c.strength} {c.rows:,} ({c.to_correct:,} to correct, {c.to_incorrect:,} to incorrect)" for c in got))
    if pc is not None:
        if pc.note:
            lines.append(f"- possibly cut: not checked ({pc.note})")
        else:
            shown = ", ".join(_cell(k, 60) for k in pc.items[:20]) + (" …" if len(pc.items) > 20 else "")
            lines.append(f"- possibly cut (a heuristic, not a verdict): {pc.rows:,} of the {pc.checked:,} changed "
                         f"rows whose text was read have no finish reason and stop mid-sentence"
                         + (f": {shown}" if pc.rows else ""))
    lines += ["", "(`statement`: the response states its answer; `format`: it matches the format asked for; "
                  "`fallback`: a read of last resort from text that states no answer; `no read`: no answer read.)", ""]
    return lines


def _bad_input_notes(r: DiffResult) -> list[str]:
    """The bad_input note of each side that has such rows, named OLD or NEW."""
    return [f"{label} {line}" for label, side in (("OLD", r.old), ("NEW", r.new))
            for line in bad_input_lines(side.bad_input)]


def render_markdown(result: DiffResult, max_items: int = 20) -> str:
    """The human report: header, a paragraph per changed figure under a heading that names its direction
    (retractions are the figures that fell), per-subject figures, changed rows by cause, the rules in words.

    At most `max_items` rows are printed per cause and per one-sided list. Overall figures
    come first; a run's figure that repeats the overall one (a single run) is printed once,
    as the overall figure; the two denominator variants of one scope are printed as one
    paragraph when every number agrees (nothing ungraded). JSON keeps every figure.
    """
    r = result
    n_changed, n_old, n_new = r.changed.num_rows, r.only_old.num_rows, r.only_new.num_rows
    lines = ["# audit diff", "", _side_line("OLD", r.old), _side_line("NEW", r.new)]
    lines.append(f"- rows: {r.aligned:,} compared, {n_changed:,} verdict{'s' if n_changed != 1 else ''} changed, "
                 f"{n_old:,} only in OLD, {n_new:,} only in NEW")
    for note in r.notes:
        lines.append(f"- note: {visible(note)}")
    lines.append("")
    if not r.has_changes:
        lines.append("No figure and no verdict changed.")
        lines += ["", *_bad_input_notes(r)] if _bad_input_notes(r) else []
        if r.other_changes:
            lines += ["", f"{_n(r.other_changes, 'row')} kept the verdict with a different answer, status, attempt "
                          f"or reference (see --format json)."]
        return "\n".join(lines) + "\n"
    plan = _paragraph_plan(r.figures)
    for title, lead, part in _by_direction(plan):
        lines += [f"## {title}", "", lead, ""]
        for f, twin in part:
            lines += [_figure_paragraph(f, twin), ""]
    if not plan:
        lines += ["No figure changed.", ""]
    if notes := _bad_input_notes(r):
        lines += [*notes, ""]
    lines += _strength_section(r)
    lines += _subject_table(r)
    if n_changed:
        lines += ["## Changed verdicts by cause", "", "| cause | rows | transitions |", "| --- | ---: | --- |"]
        for cc in r.causes:
            trans = ", ".join(f"{k.replace('->', ' → ')} {v:,}" for k, v in cc.transitions.items())
            lines.append(f"| {cc.cause} | {cc.rows:,} | {trans} |")
        lines.append("")
        for cc in r.causes:
            lines += [f"### {cc.cause} ({cc.rows:,})", "",
                      "| item_id | sample | old answer | new answer | old rule | new rule | old verdict | "
                      "new verdict | note |",
                      "| --- | ---: | --- | --- | --- | --- | --- | --- | --- |"]
            for row in r.changed_rows(cc.cause, limit=max_items):
                o, n = row["old"], row["new"]
                lines.append(f"| {_cell(row['item_id'])} | {row['sample']} | {_answer_cell(o)} | "
                             f"{_answer_cell(n)} | {_cell(o['rule'])} | {_cell(n['rule'])} | {_verdict_cell(o)} | "
                             f"{_verdict_cell(n)} | {_note_cell(row)} |")
            if cc.rows > max_items:
                lines.append(f"| … {cc.rows - max_items:,} more (all are in --format json) | | | | | | | | |")
            lines.append("")
    if r.rules:
        lines += ["Rules in the changed rows, in words:", ""]
        lines += [f"- `{visible(w.rule)}` ({visible(w.extractor)}): {w.words}" for w in r.rules]
        lines.append("")
    if n_old or n_new:
        lines += ["## Rows in one file only", "", "| file | item_id | sample | verdict |", "| --- | --- | ---: | --- |"]
        for label, which, count in (("OLD", "old", n_old), ("NEW", "new", n_new)):
            for row in r.one_sided_rows(which, limit=max_items):
                lines.append(f"| {label} | {_cell(row['item_id'])} | {row['sample']} | {_verdict_cell(row)} |")
            if count > max_items:
                lines.append(f"| {label} | … {count - max_items:,} more | | |")
        lines.append("")
    if r.other_changes:
        lines += [f"{_n(r.other_changes, 'further row')} kept the verdict with a different answer, status, attempt "
                  f"or reference (see --format json).", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


_ROW_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
"""Same output as `audit.fileio.dumps`."""


def render_json(result: DiffResult) -> str:
    """The `diff_report.v1` document: header keys indented, one row per line in the row lists; stable bytes."""
    head = json.dumps(result.header(), ensure_ascii=False, indent=2, allow_nan=False)
    encode = _ROW_ENCODER.encode  # one encoder for all rows (json.dumps builds one per call)
    parts = []
    for key, rows in (("changed", result.changed_rows()), ("only_old", result.one_sided_rows("old")),
                      ("only_new", result.one_sided_rows("new"))):
        body = "[\n" + ",\n".join("    " + encode(row) for row in rows) + "\n  ]" if rows else "[]"
        parts.append(f'  "{key}": {body}')
    tail = json.dumps(result.tail(), ensure_ascii=False, indent=2, allow_nan=False)
    return head[:-2] + ",\n" + ",\n".join(parts) + ",\n" + tail[2:] + "\n"
